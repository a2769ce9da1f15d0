// What the flash kernel does not hand back: the attention weights, recomputed for the JSON
// contract as FlashAttention's backward pass recomputes them.
#include <cmath>
#include <vector>

#include "attention/sdpa_f64.hpp"
#include "attn/engine/core/error.hpp"
#include "attn/engine/attention/flash.hpp"
#include "attn/engine/attention/softmax.hpp"
#include "attn/engine/attention/tile_math.hpp"
#include "platform/parallel.hpp"

namespace attn {
namespace {

// The weights of a flash run, which the kernel never forms: for every row the kernel attended
// (lse > -inf), softmax of scale * q_i . k_j over the visible keys, recomputed in float64 and
// normalised by the row's own sum; rows the kernel found fully masked (lse = -inf) are zero.
// The row's own sum, not exp(s - lse): a float32 lse of 1e4 is off by 1e-3 and would skew
// every weight of its row by as much.
// q . k in float64, in four interleaved partial sums (c mod 4) added pairwise at the end: one
// running sum waits on every previous addition (4 cycles each), four keep the adder busy.
template <class T>
double dot(const T* q, const T* k, std::size_t d) {
  double part[4] = {0, 0, 0, 0};
  std::size_t c = 0;
  for (; c + 4 <= d; c += 4)
    for (std::size_t p = 0; p < 4; ++p) part[p] += double(q[c + p]) * double(k[c + p]);
  for (; c < d; ++c) part[c % 4] += double(q[c]) * double(k[c]);
  return (part[0] + part[1]) + (part[2] + part[3]);
}

template <class T>
xt::xtensor<double, 3> recompute_rows(const xt::xtensor<T, 3>& q, const xt::xtensor<T, 3>& k,
                                      const xt::xtensor<double, 2>& lse, const Mask3* allowed, bool causal,
                                      double scale, const ScoreMod* mod, double temperature, std::size_t threads) {
  const std::size_t H = q.shape(0), Lq = q.shape(1), d = q.shape(2), Lk = k.shape(1);
  const std::size_t group = H / k.shape(0);
  const bool modded = mod && mod->any();  // on scale * q.k, before the temperature (variant.hpp)
  xt::xtensor<double, 3> w = xt::zeros<double>({H, Lq, Lk});
  // One head per work item: each row is computed alone, so the bits do not depend on the threads.
  detail::parallel_items(H, detail::thread_count(threads, H), [&](std::size_t, std::size_t h) {
    std::vector<double> row(Lk);
    for (std::size_t i = 0; i < Lq; ++i) {
      if (lse(h, i) == -INFINITY) continue;  // fully masked row: all zero
      const T* qi = q.data() + (h * Lq + i) * d;
      for (std::size_t j = 0; j < Lk; ++j) {
        const bool visible =
            (!causal || tile::causal_visible(long(i), long(j), long(Lq), long(Lk))) &&
            (!allowed || (*allowed)(allowed->shape(0) == 1 ? 0 : h, i, j));
        if (!visible) {
          row[j] = -INFINITY;
          continue;
        }
        const double s = dot(qi, k.data() + (h / group * Lk + j) * d, d);
        row[j] = modded ? mod->apply(s * scale * temperature, h, long(i) + long(Lk) - long(Lq), long(j)) / temperature
                        : s * scale;
      }
      softmax_row_inplace(row.data(), Lk);
      std::copy(row.begin(), row.end(), w.data() + (h * Lq + i) * Lk);
    }
  });
  return w;
}

}  // namespace

namespace detail {

TensorD3 recompute_weights_f64(const TensorD3& q, const TensorD3& k, const TensorD2& lse,
                               const Mask3* allowed, bool causal, double scale, const ScoreMod* score_mod,
                               double temperature) {
  return recompute_rows<double>(q, k, lse, allowed, causal, scale, score_mod, temperature, 1);
}

}  // namespace detail

Tensor3 recompute_weights(const Tensor3& q, const Tensor3& k, const xt::xtensor<double, 2>& lse,
                          const Mask3* allowed, bool causal, std::optional<double> scale,
                          const ScoreMod* score_mod, double temperature, std::size_t threads) {
  return xt::cast<float>(recompute_rows(q, k, lse, allowed, causal, resolved_scale(scale, q.shape(2)), score_mod,
                                        temperature, threads));
}

}  // namespace attn
