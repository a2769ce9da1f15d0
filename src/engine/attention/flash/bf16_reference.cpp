// sdpa_bf16_reference (flash.hpp): the plain bfloat16 attention, row by row in float64, that
// FlashPrecision::bfloat16 is judged against. Only two things are bfloat16 in it, the inputs
// and the weights P, the two roundings the kernel cannot avoid; the rest is exact enough to
// leave them the whole error.
#include <algorithm>
#include <bit>
#include <cmath>
#include <vector>

#include "attn/engine/attention/flash.hpp"
#include "attn/engine/attention/tile_math.hpp"

namespace attn {
namespace {

float bf16_rounded(float x) {
  std::uint16_t bits;
  round_to_bf16(&x, 1, &bits, Bf16Rounding::portable);
  return std::bit_cast<float>(std::uint32_t(bits) << 16);
}

}  // namespace

// q [H, Lq, d], k [Hkv, Lk, d], v [Hkv, Lk, dv] -> [H, Lq, dv].
Tensor3 sdpa_bf16_reference(const Tensor3& q, const Tensor3& k, const Tensor3& v, const Mask3* allowed, bool causal,
                            std::optional<double> scale) {
  check_head_shapes(shape_of(q), shape_of(k), shape_of(v), allowed);
  const double a = resolved_scale(scale, q.shape(2));
  const Tensor3 qb = from_bf16(to_bf16(q)), kb = from_bf16(to_bf16(k)), vb = from_bf16(to_bf16(v));
  const std::size_t H = q.shape(0), Lq = q.shape(1), d = q.shape(2), Lk = k.shape(1), dv = v.shape(2);
  const std::size_t group = H / k.shape(0);
  Tensor3 out = xt::zeros<float>({H, Lq, dv});
  std::vector<double> s(Lk), o(dv);
  for (std::size_t h = 0; h < H; ++h)
    for (std::size_t i = 0; i < Lq; ++i) {
      const std::size_t g = h / group;
      double m = -INFINITY;
      for (std::size_t j = 0; j < Lk; ++j) {
        const bool ok = (!causal || tile::causal_visible(long(i), long(j), long(Lq), long(Lk))) &&
                        (!allowed || (*allowed)(allowed->shape(0) == 1 ? 0 : h, i, j));
        double dot = 0;
        for (std::size_t c = 0; ok && c < d; ++c) dot += double(qb(h, i, c)) * double(kb(g, j, c));
        s[j] = ok ? a * dot : -INFINITY;
        m = std::max(m, s[j]);
      }
      if (m == -INFINITY) continue;  // every key masked: zeros
      double z = 0;
      for (std::size_t j = 0; j < Lk; ++j) z += (s[j] = std::exp(s[j] - m));
      std::fill(o.begin(), o.end(), 0.0);
      for (std::size_t j = 0; j < Lk; ++j) {
        const double p = bf16_rounded(float(s[j] / z));  // P in bfloat16, as the kernel's P V reads it
        for (std::size_t c = 0; c < dv; ++c) o[c] += p * double(vb(g, j, c));
      }
      for (std::size_t c = 0; c < dv; ++c) out(h, i, c) = float(o[c]);
    }
  return out;
}

}  // namespace attn
