// The activations on vectors: both are x sigmoid(z), and sigmoid's exp runs on the flash
// kernel's vector exp2 (microkernels_impl.hpp: a degree-6 polynomial, relative error 7.3e-9).
#include "attn/engine/core/activation.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "attention/flash/microkernels.hpp"

namespace attn {
namespace {

enum class Gate { gelu_tanh, silu };

// z for x: GELU's 2u = 2 sqrt(2/pi) (x + 0.044715 x^3), SiLU's x.
template <Gate G>
float gate_argument(float x) {
  constexpr float k = float(std::numbers::sqrt2 * std::numbers::inv_sqrtpi);  // sqrt(2 / pi)
  if constexpr (G == Gate::gelu_tanh) return 2.0f * (k * (x + 0.044715f * x * x * x));
  else return x;
}

// The two elementwise passes around the exp, compiled for AVX-512 as well as the baseline (this
// file targets the baseline, as the engine's others; the loader picks the clone the CPU runs),
// so that they run 16 values a register: on an Emerald Rapids Xeon GPT-2 small's 64-token pass
// went from 141-154 ms to 125-132 (alternated), where one value at a time through a function
// pointer and the C library's expf had taken 10 % of it. As everywhere in the engine, the
// float32 bits may differ between instruction sets (the AVX-512 clone may fuse x + c x^3).
// An AVX2 clone too, 8 values a register where the baseline's SSE2 does 4 (CPUs without
// AVX-512); without FMA among its targets it fuses nothing, so it gives the baseline's bits.
// This file is compiled with -fno-trapping-math (CMakeLists.txt): times_sigmoid's multiply in
// one branch otherwise kept its loop scalar in every clone but AVX-512's (GCC will not do on
// all lanes a multiply that may raise a flag); the flag changes no value, only which
// floating-point exception flags may be raised.
#if defined(__x86_64__) && defined(__GNUC__)
#define ATTN_ACTIVATION_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define ATTN_ACTIVATION_CLONES
#endif

ATTN_ACTIVATION_CLONES void arguments(Gate g, const float* x, std::size_t n, float* z, float* t) {
  constexpr float kLog2e = std::numbers::log2e_v<float>;
  for (std::size_t j = 0; j < n; ++j) {
    z[j] = g == Gate::gelu_tanh ? gate_argument<Gate::gelu_tanh>(x[j]) : gate_argument<Gate::silu>(x[j]);
    t[j] = -std::fabs(z[j]) * kLog2e;
  }
}

ATTN_ACTIVATION_CLONES void times_sigmoid(float* x, std::size_t n, const float* z, const float* t) {
  for (std::size_t j = 0; j < n; ++j) x[j] = (z[j] >= 0.0f ? x[j] : x[j] * t[j]) / (1.0f + t[j]);
}

// y[i] = x[i] sigmoid(z(x[i])), in chunks that stay in L1. With t = 2^(-|z| log2 e) = e^-|z|,
// in (0, 1]: sigmoid(z) = 1 / (1 + t) for z >= 0 and t / (1 + t) for z < 0, so the exp only
// meets arguments <= 0 (the vector exp2 takes no others) and neither side overflows or cancels.
// The exp2 flushes results under 2^-126 to 0, so far left (GELU below about x = -10, SiLU below
// x = -87.3) the output is -0 where the exact value is a float of about 1e-37 or less. A NaN x
// gives NaN; x = -inf gives NaN, as x / (1 + exp(-z)) does (-inf / inf).
void gated(Gate g, float* y, std::size_t n) {
  const flash::Microkernels<float>& mk = flash::best_microkernels<float>();
  constexpr std::size_t kChunk = 256;
  alignas(64) float z[kChunk], t[kChunk];
  for (std::size_t i0 = 0; i0 < n; i0 += kChunk) {
    const std::size_t c = std::min(kChunk, n - i0);
    arguments(g, y + i0, c, z, t);
    mk.exp2_sum(t, c, 0.0f);  // t = 2^t in place (the sum it returns is not needed)
    times_sigmoid(y + i0, c, z, t);
  }
}

}  // namespace

void gelu_tanh(float* y, std::size_t n) { gated(Gate::gelu_tanh, y, n); }

void silu(float* y, std::size_t n) { gated(Gate::silu, y, n); }

}  // namespace attn
