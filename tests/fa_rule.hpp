#pragma once
// FlashAttention's accuracy rule (Dao et al., tests/test_flash_attn.py): a kernel's error
// against a float64 reference may be at most 2x the error of a plain float32 computation of
// the same thing. This is the plain float32 computation, shared by the CPU and CUDA tests.
#include <algorithm>
#include <cmath>
#include <vector>

#include "attn/engine/core/tensor.hpp"
#include "attn/engine/attention/tile_math.hpp"
#include "attn/engine/attention/variant.hpp"

namespace attn::test {

// A plain computation's score for dot = q.k of head h, query i, key j: dot * scale, where `scale`
// has 1 / T folded in; with a score modifier (variant.hpp), mod(scale T dot) / T as sdpa.cpp
// applies it, the modifier taken in double and rounded to float (a float32 evaluation of tanh
// is within a rounding of it). `slope` is the modifier's derivative there, for dS.
struct PlainScore {
  float scale;
  const ScoreMod* mod = nullptr;
  float temperature = 1;
  ScoreMod::Sloped at(float dot, std::size_t h, std::size_t i, std::size_t j, std::size_t Lq, std::size_t Lk) const {
    if (!mod || !mod->any()) return {double(dot * scale), 1.0};
    const ScoreMod::Sloped m =
        mod->apply_with_slope(double(dot * (scale * temperature)), h, long(i) + long(Lk) - long(Lq), long(j));
    return {double(float(m.score) / temperature), double(float(m.slope))};
  }
};

// Plain float32 backward of the same attention (the baseline of the rule for gradients): the
// weights from float scores, D = rowsum(P o dP), every product accumulated in float.
struct PlainGrads {
  Tensor3 dq, dk, dv;
};
// With `mod` (and the temperature folded into `scale`), P comes from the modified scores and dS
// is multiplied by the modifier's slope.
inline PlainGrads plain_float32_backward(const Tensor3& q, const Tensor3& k, const Tensor3& v, const Mask3* allowed,
                                         bool causal, float scale, const Tensor3& dO, const ScoreMod* mod = nullptr,
                                         float temperature = 1) {
  const PlainScore score{scale, mod, temperature};
  const std::size_t H = q.shape(0), Lq = q.shape(1), d = q.shape(2), Lk = k.shape(1), dv = v.shape(2);
  const std::size_t group = H / k.shape(0);
  PlainGrads g{xt::zeros<float>(q.shape()), xt::zeros<float>(k.shape()), xt::zeros<float>(v.shape())};
  std::vector<float> p(Lk), dp(Lk), slope(Lk, 1.0f);
  for (std::size_t h = 0; h < H; ++h)
    for (std::size_t i = 0; i < Lq; ++i) {
      const std::size_t kh = h / group;
      float m = -INFINITY;
      for (std::size_t j = 0; j < Lk; ++j) {
        float acc = 0;
        for (std::size_t c = 0; c < d; ++c) acc += q(h, i, c) * k(kh, j, c);
        const bool ok = (!causal || tile::causal_visible(long(i), long(j), long(Lq), long(Lk))) &&
                        (!allowed || (*allowed)(allowed->shape(0) == 1 ? 0 : h, i, j));
        const ScoreMod::Sloped s = score.at(acc, h, i, j, Lq, Lk);
        p[j] = ok ? float(s.score) : -INFINITY;
        slope[j] = float(s.slope);
        m = std::max(m, p[j]);
      }
      if (m == -INFINITY) continue;
      float z = 0, D = 0;
      for (std::size_t j = 0; j < Lk; ++j) z += (p[j] = std::exp(p[j] - m));
      for (std::size_t j = 0; j < Lk; ++j) {
        p[j] /= z;
        float acc = 0;
        for (std::size_t c = 0; c < dv; ++c) acc += dO(h, i, c) * v(kh, j, c);
        dp[j] = acc;
        D += p[j] * acc;
      }
      for (std::size_t j = 0; j < Lk; ++j) {
        const float ds = p[j] * (dp[j] - D) * slope[j] * scale;
        for (std::size_t c = 0; c < d; ++c) {
          g.dq(h, i, c) += ds * k(kh, j, c);
          g.dk(kh, j, c) += ds * q(h, i, c);
        }
        for (std::size_t c = 0; c < dv; ++c) g.dv(kh, j, c) += p[j] * dO(h, i, c);
      }
    }
  return g;
}

// Plain attention in a 16-bit type (the baseline of the rule for the float16/bfloat16 kernels,
// as FlashAttention's tests build it from PyTorch ops in that type): inputs already rounded to
// the type; each score accumulated in float and rounded to it, the softmax in float and its
// weights rounded to it, each output accumulated in float and rounded to it. `round` rounds one
// float to the 16-bit type and back. With `mod`, the rounded score is modified (PlainScore).
template <class Round>
Tensor3 plain_16bit_output(const Tensor3& q, const Tensor3& k, const Tensor3& v, const Mask3* allowed,
                           bool causal, float scale, Round round, const ScoreMod* mod = nullptr,
                           float temperature = 1) {
  const PlainScore score{scale, mod, temperature};
  const std::size_t H = q.shape(0), Lq = q.shape(1), d = q.shape(2), Lk = k.shape(1), dv = v.shape(2);
  const std::size_t group = H / k.shape(0);
  Tensor3 o = xt::zeros<float>({H, Lq, dv});
  std::vector<float> s(Lk);
  std::vector<float> acc(dv);
  for (std::size_t h = 0; h < H; ++h)
    for (std::size_t i = 0; i < Lq; ++i) {
      float m = -INFINITY;
      for (std::size_t j = 0; j < Lk; ++j) {
        float dot = 0;
        for (std::size_t c = 0; c < d; ++c) dot += q(h, i, c) * k(h / group, j, c);
        const bool ok = (!causal || tile::causal_visible(long(i), long(j), long(Lq), long(Lk))) &&
                        (!allowed || (*allowed)(allowed->shape(0) == 1 ? 0 : h, i, j));
        s[j] = ok ? float(score.at(round(dot), h, i, j, Lq, Lk).score) : -INFINITY;
        m = std::max(m, s[j]);
      }
      if (m == -INFINITY) continue;
      float z = 0;
      for (std::size_t j = 0; j < Lk; ++j) z += (s[j] = std::exp(s[j] - m));
      std::fill(acc.begin(), acc.end(), 0.0f);
      for (std::size_t j = 0; j < Lk; ++j) {
        const float p = round(s[j] / z);
        for (std::size_t c = 0; c < dv; ++c) acc[c] += p * v(h / group, j, c);
      }
      for (std::size_t c = 0; c < dv; ++c) o(h, i, c) = round(acc[c]);
    }
  return o;
}

// Plain float32 attention (the baseline of FlashAttention's rule): float accumulators, the
// same computation as plain_16bit_output with nothing rounded.
inline Tensor3 plain_float32_output(const Tensor3& q, const Tensor3& k, const Tensor3& v,
                                    const Mask3* allowed, bool causal, float scale, const ScoreMod* mod = nullptr,
                                    float temperature = 1) {
  return plain_16bit_output(q, k, v, allowed, causal, scale, [](float x) { return x; }, mod, temperature);
}

}  // namespace attn::test
