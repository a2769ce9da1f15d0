// The bfloat16 products of the flash kernel on AVX512_BF16's vdpbf16ps (compiled with
// -mavx512bf16 where the compiler takes it; see CMakeLists.txt). Layouts and blocking:
// microkernels_bf16.hpp. Each vdpbf16ps does 16 lanes x 2 bfloat16 products into float32
// accumulators: the float32 kernels' FMA count for the same work, halved.
#include "microkernels_bf16.hpp"

#if defined(__AVX512BF16__) && defined(__AVX512F__)
#include <immintrin.h>

#include <algorithm>
#include <cstring>

namespace attn::flash {
namespace {

constexpr std::size_t MR = Bf16Kernels::kRows;  // 6 rows x 4 registers: 24 accumulators
constexpr std::size_t NR = 4;

// One 32-bit pair of bfloat16s, broadcast to every lane.
inline __m512bh pair_broadcast(const std::uint16_t* x) {
  std::uint32_t bits;
  std::memcpy(&bits, x, 4);
  return (__m512bh)_mm512_set1_epi32(int(bits));
}

inline __m512bh load_pairs(const std::uint16_t* x) { return (__m512bh)_mm512_loadu_si512(x); }

// Per pair c of dims: 4 loads of the panel (16 keys' pairs each), 6 broadcasts of a query's
// pair, 24 vdpbf16ps. The 64 x dp panel (8 KiB at d = 64) stays in L1 while the rows pass.
void qk_avx512(const std::uint16_t* q, std::size_t dp, std::size_t rows, const std::uint16_t* panels,
               std::size_t npanels, float scale, float* s, std::size_t lds) {
  constexpr std::size_t PW = Bf16Kernels::kKeyPanel;
  const __m512 sc = _mm512_set1_ps(scale);
  for (std::size_t p = 0; p < npanels; ++p) {
    const std::uint16_t* kp = panels + p * dp * PW;
    for (std::size_t i0 = 0; i0 < rows; i0 += MR) {
      __m512 acc[MR][NR];
#pragma GCC unroll 8
      for (std::size_t r = 0; r < MR; ++r)
#pragma GCC unroll 4
        for (std::size_t v = 0; v < NR; ++v) acc[r][v] = _mm512_setzero_ps();
      const std::uint16_t* qr = q + i0 * dp;
      for (std::size_t c = 0; c < dp / 2; ++c) {
        __m512bh kb[NR];
#pragma GCC unroll 4
        for (std::size_t v = 0; v < NR; ++v) kb[v] = load_pairs(kp + (c * PW + v * 16) * 2);
#pragma GCC unroll 8
        for (std::size_t r = 0; r < MR; ++r) {
          const __m512bh qb = pair_broadcast(qr + r * dp + 2 * c);
#pragma GCC unroll 4
          for (std::size_t v = 0; v < NR; ++v) acc[r][v] = _mm512_dpbf16_ps(acc[r][v], qb, kb[v]);
        }
      }
#pragma GCC unroll 8
      for (std::size_t r = 0; r < MR; ++r)
#pragma GCC unroll 4
        for (std::size_t v = 0; v < NR; ++v)
          _mm512_storeu_ps(s + (i0 + r) * lds + p * PW + v * 16, _mm512_mul_ps(acc[r][v], sc));
    }
  }
}

// Key pairs per pass: 128 pairs of V rows (32 KiB at d_v = 64, as the float kernel's 128 keys)
// stay in L1 while every row block of the tile passes.
constexpr std::size_t kSlicePairs = 128;

// NV registers of output columns (16 each) for every row block; v and o start at the block's
// first column. Per key pair: NV loads of V, MR broadcasts of P pairs, MR x NV vdpbf16ps.
template <std::size_t NV>
void pv_columns(const std::uint16_t* p, std::size_t ldp, std::size_t rows, std::size_t pairs,
                const std::uint16_t* v, std::size_t dvp, const float* alpha, float* o, std::size_t ldo) {
  for (std::size_t k0 = 0; k0 < pairs; k0 += kSlicePairs) {
    const std::size_t k1 = std::min(pairs, k0 + kSlicePairs);
    for (std::size_t i0 = 0; i0 < rows; i0 += MR) {
      __m512 acc[MR][NV];
#pragma GCC unroll 8
      for (std::size_t r = 0; r < MR; ++r) {
        // The rescale of Algorithm 1, line 12, folded into the first slice's accumulator load.
        const __m512 a = _mm512_set1_ps(k0 == 0 ? alpha[i0 + r] : 1.0f);
#pragma GCC unroll 4
        for (std::size_t c = 0; c < NV; ++c) acc[r][c] = _mm512_mul_ps(_mm512_loadu_ps(o + (i0 + r) * ldo + c * 16), a);
      }
      for (std::size_t k2 = k0; k2 < k1; ++k2) {
        __m512bh vb[NV];
#pragma GCC unroll 4
        for (std::size_t c = 0; c < NV; ++c) vb[c] = load_pairs(v + (k2 * dvp + c * 16) * 2);
#pragma GCC unroll 8
        for (std::size_t r = 0; r < MR; ++r) {
          const __m512bh pb = pair_broadcast(p + (i0 + r) * ldp + 2 * k2);
#pragma GCC unroll 4
          for (std::size_t c = 0; c < NV; ++c) acc[r][c] = _mm512_dpbf16_ps(acc[r][c], pb, vb[c]);
        }
      }
#pragma GCC unroll 8
      for (std::size_t r = 0; r < MR; ++r)
#pragma GCC unroll 4
        for (std::size_t c = 0; c < NV; ++c) _mm512_storeu_ps(o + (i0 + r) * ldo + c * 16, acc[r][c]);
    }
  }
}

void pv_avx512(const std::uint16_t* p, std::size_t ldp, std::size_t rows, std::size_t keys, const std::uint16_t* v,
               std::size_t dvp, const float* alpha, float* o, std::size_t ldo) {
  const std::size_t pairs = bf16_even(keys) / 2;
  std::size_t c0 = 0;
  for (; c0 + NR * 16 <= dvp; c0 += NR * 16) pv_columns<NR>(p, ldp, rows, pairs, v + 2 * c0, dvp, alpha, o + c0, ldo);
  for (; c0 < dvp; c0 += 16) pv_columns<1>(p, ldp, rows, pairs, v + 2 * c0, dvp, alpha, o + c0, ldo);
}

}  // namespace

const Bf16Kernels* bf16_kernels_avx512() {
  static const Bf16Kernels set{"avx512bf16", "6x4", &qk_avx512, &pv_avx512};
  static const bool usable = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bf16");
  }();
  return usable ? &set : nullptr;
}

}  // namespace attn::flash
#else
const attn::flash::Bf16Kernels* attn::flash::bf16_kernels_avx512() { return nullptr; }
#endif
