// What the flash kernel does not hand back: the attention weights (recomputed for the JSON
// contract, as FlashAttention's backward pass recomputes them), and attend_f64, the backend
// choice mha() runs with.
#include <cmath>
#include <vector>

#include "../sdpa_f64.hpp"
#include "attn/error.hpp"
#include "attn/flash.hpp"
#include "attn/softmax.hpp"
#include "attn/tile_math.hpp"

namespace attn {
namespace {

// The weights of a flash run, which the kernel never forms: for every row the kernel attended
// (lse > -inf), softmax of scale * q_i . k_j over the visible keys, recomputed in float64 and
// normalised by the row's own sum; rows the kernel found fully masked (lse = -inf) are zero.
// The row's own sum, not exp(s - lse): a float32 lse of 1e4 is off by 1e-3 and would skew
// every weight of its row by as much.
template <class T>
xt::xtensor<double, 3> weights_from_lse_f64(const xt::xtensor<T, 3>& q, const xt::xtensor<T, 3>& k,
                                            const xt::xtensor<double, 2>& lse, const Mask3* allowed,
                                            bool causal, double scale) {
  const std::size_t H = q.shape(0), Lq = q.shape(1), d = q.shape(2), Lk = k.shape(1);
  const std::size_t group = H / k.shape(0);
  xt::xtensor<double, 3> w = xt::zeros<double>({H, Lq, Lk});
  std::vector<double> row(Lk);
  for (std::size_t h = 0; h < H; ++h)
    for (std::size_t i = 0; i < Lq; ++i) {
      if (lse(h, i) == -INFINITY) continue;  // fully masked row: all zero
      for (std::size_t j = 0; j < Lk; ++j) {
        const bool visible =
            (!causal || tile::causal_visible(long(i), long(j), long(Lq), long(Lk))) &&
            (!allowed || (*allowed)(allowed->shape(0) == 1 ? 0 : h, i, j));
        double s = 0;
        for (std::size_t c = 0; visible && c < d; ++c) s += double(q(h, i, c)) * double(k(h / group, j, c));
        row[j] = visible ? s * scale : -INFINITY;
      }
      softmax_row_inplace(row.data(), Lk);
      for (std::size_t j = 0; j < Lk; ++j) w(h, i, j) = row[j];
    }
  return w;
}

}  // namespace

Tensor3 weights_from_lse(const Tensor3& q, const Tensor3& k, const xt::xtensor<double, 2>& lse,
                         const Mask3* allowed, bool causal, std::optional<double> scale) {
  return xt::cast<float>(weights_from_lse_f64(q, k, lse, allowed, causal,
                                              scale.value_or(1.0 / std::sqrt(double(q.shape(2))))));
}

namespace detail {

SdpaF64 attend_f64(const TensorD3& q, const TensorD3& k, const TensorD3& v, const Mask3* allowed,
                   const SdpaOptions& options, const std::optional<FlashOptions>& flash) {
  if (!flash) return sdpa_f64(q, k, v, allowed, options);
  if (options.dropout_p > 0) throw InputError("dropout: not supported by backend \"flash\"");
  if (options.window) throw InputError("window: not supported by backend \"flash\"");
  if (!options.alibi_slopes.empty()) throw InputError("alibi: not supported by backend \"flash\"");
  FlashOptions fo = *flash;
  fo.causal = options.causal;
  // Temperature divides the scaled scores, so it folds into the scale.
  fo.scale = options.scale.value_or(1.0 / std::sqrt(double(q.shape(2)))) / options.temperature;
  SdpaF64 r;
  if (fo.precision == FlashPrecision::float64) {
    FlashF64 f = flash_f64(q, k, v, allowed, fo);
    r.output = std::move(f.output);
    r.lse = std::move(f.lse);
  } else {
    const FlashResult f = flash_attention(xt::cast<float>(q), xt::cast<float>(k), xt::cast<float>(v), allowed, fo);
    r.output = xt::cast<double>(f.output);
    r.lse = xt::cast<double>(f.lse);
  }
  // The kernel never forms the weights: recompute them (rows it found fully masked stay 0).
  r.weights = weights_from_lse_f64(q, k, r.lse, allowed, fo.causal, *fo.scale);
  return r;
}

}  // namespace detail
}  // namespace attn
