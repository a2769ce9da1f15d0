// stored_gemm's panels widened with AVX2 and F16C (compiled with -mavx2 -mf16c; see
// CMakeLists.txt), chosen at run time where the CPU has those and no AVX-512. The portable
// widen reads one element at a time through the stored type's switch: on a Zen 3 EPYC (AVX2,
// no AVX-512) it took 41 % of GPT-2 small's forward pass on float16 weights.
#include "stored_matmul.hpp"

#if defined(__AVX2__) && defined(__F16C__)
#include <cpuid.h>
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "transpose_simd.hpp"

namespace attn::detail {
namespace {

constexpr std::size_t kW = 8;  // floats to a register

// n <= 8 weights from `at`, widened to float32 in the register (lanes from n on are 0):
// bfloat16 shifted into a float's high half, float16 by vcvtph2ps, float32 as it is. All exact.
template <StoredType T>
__m256 widen8(const unsigned char* at, std::size_t n) {
  constexpr std::size_t bytes = T == StoredType::f32 ? 4 : 2;
  alignas(32) unsigned char part[kW * 4];
  if (n < kW) {  // a tail: its lanes past n read as 0 (a full load zeroes nothing)
    std::memset(part, 0, sizeof part);
    at = static_cast<const unsigned char*>(std::memcpy(part, at, n * bytes));
  }
  if constexpr (T == StoredType::f32) {
    return _mm256_loadu_ps(reinterpret_cast<const float*>(at));
  } else {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(at));
    if constexpr (T == StoredType::bf16) return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
    else return _mm256_cvtph_ps(h);
  }
}

// All ones in a lane whose float is not finite (its exponent bits all ones, whatever the stored
// type it came from, since widening is exact).
__m256i not_finite(__m256 v) {
  const __m256i exponent = _mm256_set1_epi32(0x7f800000);
  return _mm256_cmpeq_epi32(_mm256_and_si256(_mm256_castps_si256(v), exponent), exponent);
}

void store_first(float* out, __m256 v, std::size_t n) {
  if (n == kW) return _mm256_storeu_ps(out, v);
  alignas(32) float lanes[kW];
  _mm256_store_ps(lanes, v);
  std::copy(lanes, lanes + n, out);
}

template <StoredType T>
bool widen_typed(const unsigned char* row, std::size_t n, float* out) {
  constexpr std::size_t bytes = T == StoredType::f32 ? 4 : 2;
  __m256i bad = _mm256_setzero_si256();
  for (std::size_t k = 0; k < n; k += kW) {
    const __m256 v = widen8<T>(row + k * bytes, std::min(kW, n - k));
    store_first(out + k, v, std::min(kW, n - k));
    bad = _mm256_or_si256(bad, not_finite(v));
  }
  return _mm256_testz_si256(bad, bad);
}

bool widen_avx2(const StoredMatrix& w, std::size_t row, std::size_t col, std::size_t n, float* out) {
  const auto* at = static_cast<const unsigned char*>(w.data) + (row * w.cols + col) * w.element_bytes();
  return on_stored_type(w.type, [&](auto t) { return widen_typed<decltype(t)::value>(at, n, out); });
}

// 8 x 8 blocks: up to 8 rows of W widened (rows past `rows` are 0), transposed in registers,
// stored as up to 8 rows of out (their first `rows` lanes).
template <StoredType T>
bool widen_transposed_typed(const StoredMatrix& w, std::size_t row, std::size_t rows, std::size_t col,
                            std::size_t depth, float* out, std::size_t ldo) {
  const std::size_t bytes = w.element_bytes(), row_bytes = w.cols * bytes;
  const auto* base = static_cast<const unsigned char*>(w.data) + row * row_bytes + col * bytes;
  __m256i bad = _mm256_setzero_si256();
  for (std::size_t t0 = 0; t0 < rows; t0 += kW) {
    const std::size_t n = std::min(kW, rows - t0);
    for (std::size_t c0 = 0; c0 < depth; c0 += kW) {
      const std::size_t m = std::min(kW, depth - c0);
      __m256 r[kW];
      for (std::size_t t = 0; t < kW; ++t) {
        r[t] = t < n ? widen8<T>(base + (t0 + t) * row_bytes + c0 * bytes, m) : _mm256_setzero_ps();
        bad = _mm256_or_si256(bad, not_finite(r[t]));
      }
      transpose8(r);
      for (std::size_t c = 0; c < m; ++c) store_first(out + (c0 + c) * ldo + t0, r[c], n);
    }
  }
  return _mm256_testz_si256(bad, bad);
}

bool widen_transposed_avx2(const StoredMatrix& w, std::size_t row, std::size_t rows, std::size_t col,
                           std::size_t depth, float* out, std::size_t ldo) {
  return on_stored_type(w.type, [&](auto t) {
    return widen_transposed_typed<decltype(t)::value>(w, row, rows, col, depth, out, ldo);
  });
}

// F16C from cpuid (leaf 1, ECX bit 29): clang 14's __builtin_cpu_supports has no "f16c".
bool avx2_supported() {
  static const bool supported = [] {
    __builtin_cpu_init();
    unsigned a = 0, b = 0, c = 0, d = 0;
    return __builtin_cpu_supports("avx2") && __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C) != 0;
  }();
  return supported;
}

}  // namespace

StoredWidenKernel stored_widen_avx2() { return avx2_supported() ? widen_avx2 : nullptr; }
StoredWidenTransposedKernel stored_widen_transposed_avx2() {
  return avx2_supported() ? widen_transposed_avx2 : nullptr;
}

}  // namespace attn::detail
#else
attn::detail::StoredWidenKernel attn::detail::stored_widen_avx2() { return nullptr; }
attn::detail::StoredWidenTransposedKernel attn::detail::stored_widen_transposed_avx2() { return nullptr; }
#endif
