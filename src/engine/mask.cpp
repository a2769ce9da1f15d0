#include "attn/engine/mask.hpp"

#include "attn/engine/error.hpp"

namespace attn {

Mask2 causal_allowed(std::size_t Lq, std::size_t Lk) {
  return sliding_window_allowed(Lq, Lk, Lk, 0);
}

Mask3 padding_allowed(std::span<const std::size_t> lengths, std::size_t L) {
  Mask3 allowed = xt::zeros<bool>({lengths.size(), L, L});
  for (std::size_t b = 0; b < lengths.size(); ++b) {
    if (lengths[b] > L) {
      throw InputError("padding length " + std::to_string(lengths[b]) + " of sequence " +
                       std::to_string(b) + " exceeds the padded length " + std::to_string(L));
    }
    for (std::size_t i = 0; i < L; ++i)
      for (std::size_t j = 0; j < lengths[b]; ++j) allowed(b, i, j) = true;
  }
  return allowed;
}

Mask2 sliding_window_allowed(std::size_t Lq, std::size_t Lk, std::size_t left,
                             std::size_t right) {
  Mask2 allowed = xt::zeros<bool>({Lq, Lk});
  // Work in signed positions: with Lq > Lk the first rows sit before key 0.
  const long offset = static_cast<long>(Lk) - static_cast<long>(Lq);
  for (std::size_t i = 0; i < Lq; ++i) {
    const long p = static_cast<long>(i) + offset;
    for (std::size_t j = 0; j < Lk; ++j) {
      const long jj = static_cast<long>(j);
      allowed(i, j) = jj >= p - static_cast<long>(left) && jj <= p + static_cast<long>(right);
    }
  }
  return allowed;
}

Mask2 graph_allowed(std::size_t n, std::span<const std::pair<std::size_t, std::size_t>> edges,
                    bool directed, bool self_loops) {
  Mask2 allowed = xt::zeros<bool>({n, n});
  for (const auto& [a, b] : edges) {
    if (a >= n || b >= n) {
      throw InputError("edge (" + std::to_string(a) + ", " + std::to_string(b) +
                       ") names a node outside 0.." + std::to_string(n - 1));
    }
    allowed(a, b) = true;
    if (!directed) allowed(b, a) = true;
  }
  if (self_loops)
    for (std::size_t i = 0; i < n; ++i) allowed(i, i) = true;
  return allowed;
}

}  // namespace attn
