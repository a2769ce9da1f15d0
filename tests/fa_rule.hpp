#pragma once
// FlashAttention's accuracy rule (Dao et al., tests/test_flash_attn.py): a kernel's error
// against a float64 reference may be at most 2x the error of a plain float32 computation of
// the same thing. This is the plain float32 computation, shared by the CPU and CUDA tests.
#include <algorithm>
#include <cmath>
#include <vector>

#include "attn/engine/core/tensor.hpp"
#include "attn/engine/attention/tile_math.hpp"

namespace attn::test {

// Plain float32 backward of the same attention (the baseline of the rule for gradients): the
// weights from float scores, D = rowsum(P o dP), every product accumulated in float.
struct PlainGrads {
  Tensor3 dq, dk, dv;
};
inline PlainGrads plain_float32_backward(const Tensor3& q, const Tensor3& k, const Tensor3& v, const Mask3* allowed,
                                         bool causal, float scale, const Tensor3& dO) {
  const std::size_t H = q.shape(0), Lq = q.shape(1), d = q.shape(2), Lk = k.shape(1), dv = v.shape(2);
  const std::size_t group = H / k.shape(0);
  PlainGrads g{xt::zeros<float>(q.shape()), xt::zeros<float>(k.shape()), xt::zeros<float>(v.shape())};
  std::vector<float> p(Lk), dp(Lk);
  for (std::size_t h = 0; h < H; ++h)
    for (std::size_t i = 0; i < Lq; ++i) {
      const std::size_t kh = h / group;
      float m = -INFINITY;
      for (std::size_t j = 0; j < Lk; ++j) {
        float acc = 0;
        for (std::size_t c = 0; c < d; ++c) acc += q(h, i, c) * k(kh, j, c);
        const bool ok = (!causal || tile::causal_visible(long(i), long(j), long(Lq), long(Lk))) &&
                        (!allowed || (*allowed)(allowed->shape(0) == 1 ? 0 : h, i, j));
        p[j] = ok ? acc * scale : -INFINITY;
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
        const float ds = p[j] * (dp[j] - D) * scale;
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
// float to the 16-bit type and back.
template <class Round>
Tensor3 plain_16bit_output(const Tensor3& q, const Tensor3& k, const Tensor3& v, const Mask3* allowed,
                           bool causal, float scale, Round round) {
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
        s[j] = ok ? round(dot) * scale : -INFINITY;
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
                                    const Mask3* allowed, bool causal, float scale) {
  return plain_16bit_output(q, k, v, allowed, causal, scale, [](float x) { return x; });
}

}  // namespace attn::test
