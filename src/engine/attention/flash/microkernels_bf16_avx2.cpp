// The bfloat16 products of the flash kernel where the CPU has AVX2 and FMA but no AVX512_BF16
// (compiled with -mavx2 -mfma; see CMakeLists.txt): Zen 2 and 3, and most laptops. Layouts:
// microkernels_bf16.hpp. Without a bfloat16 dot product the multiply-adds are float32 FMAs, as
// many as the float32 kernels do, and the widening besides, so this runs below their speed, not
// twice it: what bfloat16 saves here is memory. On a Zen 3 EPYC, 0.67-0.93x the float32 flash
// speed (n = 4096), where the portable kernels, widening one element at a time through scalar
// code, ran at 0.12-0.14x.
//
// Bits: widening a bfloat16 is exact (its 16 bits become a float32's high half), and so is the
// product of two widened values (8-bit significands: 16 bits of product), so an FMA adds each
// product with the one rounding of the portable kernels' acc += a * b, in their order: each
// pair's odd element first, then its even one, as vdpbf16ps does. The same bits as the portable
// kernels but where a product underflows or overflows float32 (there the portable product
// rounds first).
#include "microkernels_bf16.hpp"

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <memory>

namespace attn::flash {
namespace {

constexpr std::size_t MR = Bf16Kernels::kRows;  // 6 rows x 2 registers (16 keys or columns): 12 accumulators
constexpr std::size_t W = 8;                    // float32 lanes of a ymm register

// Eight pairs of bfloat16s as float32: the pairs' odd elements (the high halves of the 32-bit
// lanes, the low halves cleared) or their even ones (the low halves, shifted up). Shifts, not a
// mask: the blockings use 15 of the 16 registers, and a mask held in the last one made GCC
// spill accumulators to the stack (Q K^T ran 1.4x the float32 kernel's time).
inline __m256 odd_of(const std::uint16_t* pairs) {
  const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(pairs));
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_srli_epi32(x, 16), 16));
}
inline __m256 even_of(const std::uint16_t* pairs) {
  const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(pairs));
  return _mm256_castsi256_ps(_mm256_slli_epi32(x, 16));
}

// n bfloat16s widened into float32 (8 at a time where whole), for the broadcasts of Q and P:
// read once a call, where widening each broadcast would spend two instructions per FMA pair.
void widen_into(const std::uint16_t* x, std::size_t n, float* out) {
  std::size_t i = 0;
  for (; i + W <= n; i += W) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i));
    _mm256_storeu_ps(out + i, _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16)));
  }
  for (; i < n; ++i) out[i] = std::bit_cast<float>(std::uint32_t(x[i]) << 16);
}

// This thread's float32 copy of a call's Q or P: O(tile) memory, kept for the next call up to
// kKeepFloats (a default tile's P, 192 x 768, is 576 KiB); a larger one (a tile of up to 2^24
// scores, 64 MiB) is given back when the call ends (let_go). A bare array, not a std::vector:
// this file is compiled with -mavx2, and a vector's member templates instantiated here could be
// the copy the linker keeps for the whole program, AVX2 instructions and all.
constexpr std::size_t kKeepFloats = std::size_t(1) << 20;
struct WidenedBuffer {
  std::unique_ptr<float[]> data;
  std::size_t size = 0;
};
thread_local WidenedBuffer widened_buffer;

float* widened(const std::uint16_t* x, std::size_t rows, std::size_t ld, std::size_t n) {
  WidenedBuffer& buffer = widened_buffer;
  if (buffer.size < rows * ld) {
    buffer.data.reset(new float[rows * ld]);
    buffer.size = rows * ld;
  }
  for (std::size_t r = 0; r < rows; ++r) widen_into(x + r * ld, n, buffer.data.get() + r * ld);
  return buffer.data.get();
}

void let_go() {
  if (widened_buffer.size > kKeepFloats) widened_buffer = WidenedBuffer{};
}

// 16 keys of one 64-key panel for a block of MR rows: per pair c of dims, the panel's two
// registers of odd dims against each row's odd dim, then the same for the even dims.
void qk_block(const float* qw, std::size_t dp, const std::uint16_t* kp, float scale, float* s, std::size_t lds) {
  constexpr std::size_t PW = Bf16Kernels::kKeyPanel;
  __m256 acc[MR][2];
  for (auto& row : acc) row[0] = row[1] = _mm256_setzero_ps();
  for (std::size_t c = 0; c < dp / 2; ++c) {
    const std::uint16_t* kc = kp + c * 2 * PW;
    __m256 k0 = odd_of(kc), k1 = odd_of(kc + 2 * W);
#pragma GCC unroll 8
    for (std::size_t r = 0; r < MR; ++r) {
      const __m256 qb = _mm256_broadcast_ss(qw + r * dp + 2 * c + 1);
      acc[r][0] = _mm256_fmadd_ps(qb, k0, acc[r][0]);
      acc[r][1] = _mm256_fmadd_ps(qb, k1, acc[r][1]);
    }
    k0 = even_of(kc), k1 = even_of(kc + 2 * W);
#pragma GCC unroll 8
    for (std::size_t r = 0; r < MR; ++r) {
      const __m256 qb = _mm256_broadcast_ss(qw + r * dp + 2 * c);
      acc[r][0] = _mm256_fmadd_ps(qb, k0, acc[r][0]);
      acc[r][1] = _mm256_fmadd_ps(qb, k1, acc[r][1]);
    }
  }
  const __m256 sc = _mm256_set1_ps(scale);
#pragma GCC unroll 8
  for (std::size_t r = 0; r < MR; ++r) {
    _mm256_storeu_ps(s + r * lds, _mm256_mul_ps(acc[r][0], sc));
    _mm256_storeu_ps(s + r * lds + W, _mm256_mul_ps(acc[r][1], sc));
  }
}

void qk_avx2(const std::uint16_t* q, std::size_t dp, std::size_t rows, const std::uint16_t* panels,
             std::size_t npanels, float scale, float* s, std::size_t lds) {
  constexpr std::size_t PW = Bf16Kernels::kKeyPanel;
  const float* qw = widened(q, rows, dp, dp);
  for (std::size_t p = 0; p < npanels; ++p)  // the panel (8 KiB at d = 64) stays in L1 while the rows pass
    for (std::size_t t0 = 0; t0 < PW; t0 += 2 * W)
      for (std::size_t i0 = 0; i0 < rows; i0 += MR)
        qk_block(qw + i0 * dp, dp, panels + p * dp * PW + 2 * t0, scale, s + i0 * lds + p * PW + t0, lds);
  let_go();
}

// Key pairs per pass, as the AVX-512 kernel's: 128 pairs of a 16-column strip of V (8 KiB) stay
// in L1 while every row block of the tile passes.
constexpr std::size_t kSlicePairs = 128;

// Output columns [c0, c0 + 16) of every row block, pairs [0, pairs) of P (widened) and V.
void pv_strip(const float* pw, std::size_t ldp, std::size_t rows, std::size_t pairs, const std::uint16_t* v,
              std::size_t dvp, std::size_t c0, const float* alpha, float* o, std::size_t ldo) {
  for (std::size_t k0 = 0; k0 < pairs; k0 += kSlicePairs) {
    const std::size_t k1 = std::min(pairs, k0 + kSlicePairs);
    for (std::size_t i0 = 0; i0 < rows; i0 += MR) {
      __m256 acc[MR][2];
#pragma GCC unroll 8
      for (std::size_t r = 0; r < MR; ++r) {
        // The rescale of Algorithm 1, line 12, folded into the first slice's accumulator load.
        const __m256 a = _mm256_set1_ps(k0 == 0 ? alpha[i0 + r] : 1.0f);
        acc[r][0] = _mm256_mul_ps(_mm256_loadu_ps(o + (i0 + r) * ldo + c0), a);
        acc[r][1] = _mm256_mul_ps(_mm256_loadu_ps(o + (i0 + r) * ldo + c0 + W), a);
      }
      for (std::size_t k2 = k0; k2 < k1; ++k2) {
        const std::uint16_t* vk = v + (k2 * dvp + c0) * 2;
        const float* pk = pw + i0 * ldp + 2 * k2;
        __m256 v0 = odd_of(vk), v1 = odd_of(vk + 2 * W);  // key 2 k2 + 1
#pragma GCC unroll 8
        for (std::size_t r = 0; r < MR; ++r) {
          const __m256 pb = _mm256_broadcast_ss(pk + r * ldp + 1);
          acc[r][0] = _mm256_fmadd_ps(pb, v0, acc[r][0]);
          acc[r][1] = _mm256_fmadd_ps(pb, v1, acc[r][1]);
        }
        v0 = even_of(vk), v1 = even_of(vk + 2 * W);  // key 2 k2
#pragma GCC unroll 8
        for (std::size_t r = 0; r < MR; ++r) {
          const __m256 pb = _mm256_broadcast_ss(pk + r * ldp);
          acc[r][0] = _mm256_fmadd_ps(pb, v0, acc[r][0]);
          acc[r][1] = _mm256_fmadd_ps(pb, v1, acc[r][1]);
        }
      }
#pragma GCC unroll 8
      for (std::size_t r = 0; r < MR; ++r) {
        _mm256_storeu_ps(o + (i0 + r) * ldo + c0, acc[r][0]);
        _mm256_storeu_ps(o + (i0 + r) * ldo + c0 + W, acc[r][1]);
      }
    }
  }
}

void pv_avx2(const std::uint16_t* p, std::size_t ldp, std::size_t rows, std::size_t keys, const std::uint16_t* v,
             std::size_t dvp, const float* alpha, float* o, std::size_t ldo) {
  const std::size_t pairs = bf16_even(keys) / 2;
  const float* pw = widened(p, rows, ldp, 2 * pairs);  // P's keys and the zero after an odd count
  for (std::size_t c0 = 0; c0 < dvp; c0 += Bf16Kernels::kColumns)
    pv_strip(pw, ldp, rows, pairs, v, dvp, c0, alpha, o, ldo);
  let_go();
}

}  // namespace

const Bf16Kernels* bf16_kernels_avx2() {
  static const Bf16Kernels set{"avx2", "6x2", &qk_avx2, &pv_avx2};
  static const bool usable = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  }();
  return usable ? &set : nullptr;
}

}  // namespace attn::flash
#else
const attn::flash::Bf16Kernels* attn::flash::bf16_kernels_avx2() { return nullptr; }
#endif
