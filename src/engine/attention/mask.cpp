#include "attn/engine/attention/mask.hpp"

#include <algorithm>

#include "attn/engine/core/error.hpp"

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
  // Query i sits at position p = i + Lk - Lq, which is negative for the first rows when
  // Lq > Lk. Stay in unsigned arithmetic with both sides shifted by Lq (a = p + Lq = i + Lk
  // fits, since the mask itself was allocated) so that no window, however wide (SIZE_MAX is
  // "unbounded"), wraps to a negative long or overflows p + right.
  for (std::size_t i = 0; i < Lq; ++i) {
    const std::size_t a = i + Lk;
    // First key: p - left, or 0 when that is before the sequence.
    const std::size_t first = a >= Lq && a - Lq >= left ? a - Lq - left : 0;
    // Last key: p + right, saturated at Lk - 1; none at all when p + right < 0.
    if (a < Lq && right < Lq - a) continue;
    const std::size_t reach = a >= Lq ? a - Lq : 0;   // max(p, 0)
    const std::size_t back = a >= Lq ? 0 : Lq - a;    // max(-p, 0), <= right here
    const std::size_t room = Lk - 1 - std::min(reach, Lk - 1);
    const std::size_t last = right - back >= room ? Lk - 1 : reach + (right - back);
    for (std::size_t j = first; j <= last && j < Lk; ++j) allowed(i, j) = true;
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
