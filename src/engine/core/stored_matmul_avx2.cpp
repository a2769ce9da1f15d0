// stored_matmul's and stored_gemm's kernels for AVX2, FMA and F16C (compiled with -mavx2 -mfma
// -mf16c; see CMakeLists.txt), chosen at run time where the CPU has those and no AVX-512. The
// portable kernels read one element at a time through the stored type's switch, and where the
// compiler may not assume FMA, std::fma is a call into libm: on a Zen 3 EPYC (AVX2, no AVX-512)
// the portable widen took 41 % of GPT-2 small's forward pass on float16 weights, and a
// generate step of a SmolLM2-135M-shaped bfloat16 folder ran at 0.05 of a streaming read of
// its weights (2.8 tokens/s) in the portable rows kernel, 91 % of it in rows_generic and fmaf.
#include "stored_matmul.hpp"

#if defined(__AVX2__) && defined(__F16C__) && defined(__FMA__)
#include <cpuid.h>
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "stored_lanes.hpp"
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

// stored_matmul's rows: the lanes of the other kernels (stored_lanes.hpp), 16 of them as two
// registers (lanes 0-7 and 8-15): lane j of output (i, r) sums k = j, j + 16, ... by fused
// multiply-adds, then the lanes are added pairwise. The same bits as the portable and AVX-512
// kernels (tests/test_stored_matmul.cpp).
struct Lanes16 {
  __m256 lo, hi;
};

// add_lanes (stored_lanes.hpp) in registers: lane j plus lane j + 8, then + 4, + 2, + 1.
float add_lanes(Lanes16 v) {
  const __m256 a = _mm256_add_ps(v.lo, v.hi);
  const __m128 b = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
  const __m128 c = _mm_add_ps(b, _mm_movehl_ps(b, b));
  return _mm_cvtss_f32(_mm_add_ss(c, _mm_shuffle_ps(c, c, 1)));
}

// R rows of W x M rows of x: R * M accumulators of two registers each, each weight widened once
// for the M rows of x. The last partial 16 lanes come through zero-padded copies, and their
// accumulators keep the lanes past the row's end as they were (a blend), as the portable kernel
// leaves them.
template <StoredType T, std::size_t R, std::size_t M>
void tile(const float* x, std::size_t cols, const unsigned char* w, std::size_t row_bytes, float* y,
          std::size_t ldy) {
  constexpr std::size_t bytes = T == StoredType::f32 ? 4 : 2;
  Lanes16 acc[R][M];
  for (std::size_t r = 0; r < R; ++r)
    for (std::size_t i = 0; i < M; ++i) acc[r][i] = {_mm256_setzero_ps(), _mm256_setzero_ps()};
  std::size_t k = 0;
  for (; k + kStoredLanes <= cols; k += kStoredLanes) {
    Lanes16 xv[M];
    for (std::size_t i = 0; i < M; ++i) xv[i] = {_mm256_loadu_ps(x + i * cols + k), _mm256_loadu_ps(x + i * cols + k + kW)};
    for (std::size_t r = 0; r < R; ++r) {
      // The next tile's rows at the same columns, as the AVX-512 kernel asks for them.
      _mm_prefetch(reinterpret_cast<const char*>(w + (r + R) * row_bytes + k * bytes), _MM_HINT_T0);
      const unsigned char* at = w + r * row_bytes + k * bytes;
      const __m256 lo = widen8<T>(at, kW), hi = widen8<T>(at + kW * bytes, kW);
      for (std::size_t i = 0; i < M; ++i)
        acc[r][i] = {_mm256_fmadd_ps(lo, xv[i].lo, acc[r][i].lo), _mm256_fmadd_ps(hi, xv[i].hi, acc[r][i].hi)};
    }
  }
  if (const std::size_t n = cols - k; n > 0) {
    alignas(32) float lanes_in[kStoredLanes];  // 1 where the lane is a column of the row
    for (std::size_t j = 0; j < kStoredLanes; ++j) lanes_in[j] = j < n ? 1.0f : 0.0f;
    const __m256 in_lo = _mm256_cmp_ps(_mm256_load_ps(lanes_in), _mm256_setzero_ps(), _CMP_NEQ_OQ);
    const __m256 in_hi = _mm256_cmp_ps(_mm256_load_ps(lanes_in + kW), _mm256_setzero_ps(), _CMP_NEQ_OQ);
    Lanes16 xv[M];
    for (std::size_t i = 0; i < M; ++i) {
      alignas(32) float part[kStoredLanes] = {};
      std::copy(x + i * cols + k, x + i * cols + cols, part);
      xv[i] = {_mm256_load_ps(part), _mm256_load_ps(part + kW)};
    }
    for (std::size_t r = 0; r < R; ++r) {
      const unsigned char* at = w + r * row_bytes + k * bytes;
      const __m256 lo = widen8<T>(at, std::min(n, kW)), hi = n > kW ? widen8<T>(at + kW * bytes, n - kW) : _mm256_setzero_ps();
      for (std::size_t i = 0; i < M; ++i) {
        Lanes16& a = acc[r][i];
        a = {_mm256_blendv_ps(a.lo, _mm256_fmadd_ps(lo, xv[i].lo, a.lo), in_lo),
             _mm256_blendv_ps(a.hi, _mm256_fmadd_ps(hi, xv[i].hi, a.hi), in_hi)};
      }
    }
  }
  for (std::size_t r = 0; r < R; ++r)
    for (std::size_t i = 0; i < M; ++i) y[i * ldy + r] = add_lanes(acc[r][i]);
}

// Rows of W four at a time for one row of x (a decode step: 8 accumulator registers, 4 streams
// of W in flight), two at a time for two rows of x, one at a time for more; the rest one by one.
template <StoredType T, std::size_t M>
void rows_for(const float* x, const StoredMatrix& w, std::size_t r0, std::size_t r1, float* y, std::size_t ldy) {
  constexpr std::size_t R = M == 1 ? 4 : M == 2 ? 2 : 1;
  const std::size_t row_bytes = w.cols * w.element_bytes();
  const auto* base = static_cast<const unsigned char*>(w.data);
  std::size_t r = r0;
  for (; r + R <= r1; r += R) tile<T, R, M>(x, w.cols, base + r * row_bytes, row_bytes, y + r, ldy);
  for (; r < r1; ++r) tile<T, 1, M>(x, w.cols, base + r * row_bytes, row_bytes, y + r, ldy);
}

void rows_avx2(const float* x, std::size_t m, const StoredMatrix& w, std::size_t r0, std::size_t r1, float* y,
               std::size_t ldy) {
  on_stored_type(w.type, [&](auto t) {
    on_x_row_blocks(m, [&](auto M, std::size_t i) {
      rows_for<decltype(t)::value, decltype(M)::value>(x + i * w.cols, w, r0, r1, y + i * ldy, ldy);
    });
  });
}

// stored_gemm's few rows against W stored [in, out]: y[i, j] = bias[j] (or 0), then
// fma(x[i, k], W[k, j], y[i, j]) for k = 0, 1, ...: each row of W read once, in order, 8 columns
// a register (the last ones through widen8's zero-padded copy, stored lane by lane).
template <StoredType T>
bool stream_typed(const float* x, std::size_t m, const StoredMatrix& w, std::size_t j0, std::size_t j1,
                  const float* bias, float* y, std::size_t ldy) {
  const std::size_t n = j1 - j0, K = w.rows, bytes = w.element_bytes(), row_bytes = w.cols * bytes;
  const auto* first = static_cast<const unsigned char*>(w.data) + j0 * bytes;
  start_from_bias(m, j0, j1, bias, y, ldy);
  __m256i bad = _mm256_setzero_si256();
  const std::size_t whole = n / kW * kW;
  for (std::size_t k = 0; k < K; ++k) {
    const unsigned char* row = first + k * row_bytes;
    for (std::size_t j = 0; j < whole; j += kW) {
      const __m256 wv = widen8<T>(row + j * bytes, kW);
      bad = _mm256_or_si256(bad, not_finite(wv));
      for (std::size_t i = 0; i < m; ++i) {
        float* out = y + i * ldy + j0 + j;
        _mm256_storeu_ps(out, _mm256_fmadd_ps(_mm256_set1_ps(x[i * K + k]), wv, _mm256_loadu_ps(out)));
      }
    }
    if (whole < n) {
      const __m256 wv = widen8<T>(row + whole * bytes, n - whole);
      bad = _mm256_or_si256(bad, not_finite(wv));
      alignas(32) float lanes[kW];
      _mm256_store_ps(lanes, wv);
      for (std::size_t i = 0; i < m; ++i) {
        float* out = y + i * ldy + j0;
        // __builtin_fmaf, not std::fma: an inline function this file (compiled with -mfma) emitted
        // out of line could be the copy the linker keeps for the portable files too.
        for (std::size_t j = whole; j < n; ++j) out[j] = __builtin_fmaf(x[i * K + k], lanes[j - whole], out[j]);
      }
    }
  }
  return _mm256_testz_si256(bad, bad);
}

bool stream_avx2(const float* x, std::size_t m, const StoredMatrix& w, std::size_t j0, std::size_t j1,
                 const float* bias, float* y, std::size_t ldy) {
  return on_stored_type(w.type, [&](auto t) { return stream_typed<decltype(t)::value>(x, m, w, j0, j1, bias, y, ldy); });
}

// AVX2 and FMA, and F16C from cpuid (leaf 1, ECX bit 29): clang 14's __builtin_cpu_supports has no
// "f16c".
bool avx2_supported() {
  static const bool supported = [] {
    __builtin_cpu_init();
    unsigned a = 0, b = 0, c = 0, d = 0;
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __get_cpuid(1, &a, &b, &c, &d) &&
           (c & bit_F16C) != 0;
  }();
  return supported;
}

}  // namespace

StoredRowsKernel stored_rows_avx2() { return avx2_supported() ? rows_avx2 : nullptr; }
StoredWidenKernel stored_widen_avx2() { return avx2_supported() ? widen_avx2 : nullptr; }
StoredWidenTransposedKernel stored_widen_transposed_avx2() {
  return avx2_supported() ? widen_transposed_avx2 : nullptr;
}
StoredStreamKernel stored_stream_avx2() { return avx2_supported() ? stream_avx2 : nullptr; }

}  // namespace attn::detail
#else
attn::detail::StoredRowsKernel attn::detail::stored_rows_avx2() { return nullptr; }
attn::detail::StoredStreamKernel attn::detail::stored_stream_avx2() { return nullptr; }
attn::detail::StoredWidenKernel attn::detail::stored_widen_avx2() { return nullptr; }
attn::detail::StoredWidenTransposedKernel attn::detail::stored_widen_transposed_avx2() { return nullptr; }
#endif
