// stored_matmul's AVX-512 kernel (compiled with -mavx512f -mavx512bw -mavx512vl; see
// CMakeLists.txt), chosen at run time when the CPU has those instructions.
#include "stored_matmul.hpp"

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__)
#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#include "stored_lanes.hpp"
#include "transpose_simd.hpp"

namespace attn::detail {
namespace {

// 16 weights from k on, widened to float32 in the register: bfloat16 shifted into a float's
// high half, float16 by vcvtph2ps, float32 as it is. Lanes outside `mask` are 0.
template <StoredType T>
__m512 widen16(const unsigned char* row, std::size_t k, __mmask16 mask) {
  if constexpr (T == StoredType::f32) {
    const float* p = reinterpret_cast<const float*>(row) + k;
    return mask == 0xffff ? _mm512_loadu_ps(p) : _mm512_maskz_loadu_ps(mask, p);
  } else {
    const auto* p = reinterpret_cast<const std::uint16_t*>(row) + k;
    const __m256i h = mask == 0xffff ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))
                                     : _mm256_maskz_loadu_epi16(mask, p);
    if constexpr (T == StoredType::bf16) return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
    else return _mm512_cvtph_ps(h);
  }
}

// add_lanes (stored_lanes.hpp) in registers: lane j plus lane j + 8, then + 4, + 2, + 1.
float add_lanes(__m512 v) {
  const __m256 a = _mm256_add_ps(_mm512_castps512_ps256(v),
                                 _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
  const __m128 b = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
  const __m128 c = _mm_add_ps(b, _mm_movehl_ps(b, b));
  return _mm_cvtss_f32(_mm_add_ss(c, _mm_shuffle_ps(c, c, 1)));
}

// R rows of W x M rows of x: R * M accumulators of 16 lanes (at most 16 of the 32 registers),
// each weight loaded once for the M rows of x. The last partial 16 lanes are masked, their
// accumulators left as they were (a masked fused multiply-add), as the portable kernel does.
template <StoredType T, std::size_t R, std::size_t M>
void tile(const float* x, std::size_t cols, const unsigned char* w, std::size_t row_bytes, float* y,
          std::size_t ldy) {
  __m512 acc[R][M];
  for (std::size_t r = 0; r < R; ++r)
    for (std::size_t i = 0; i < M; ++i) acc[r][i] = _mm512_setzero_ps();
  std::size_t k = 0;
  for (; k + kStoredLanes <= cols; k += kStoredLanes) {  // whole lanes: no masks, accumulators stay in registers
    __m512 xv[M];
    for (std::size_t i = 0; i < M; ++i) xv[i] = _mm512_loadu_ps(x + i * cols + k);
    for (std::size_t r = 0; r < R; ++r) {
      // The next tile's rows at the same columns: its R short streams start loading while this
      // tile's are read (a row is a few KB; the hardware prefetcher barely ramps up on each).
      _mm_prefetch(reinterpret_cast<const char*>(w + (r + R) * row_bytes) + k * (T == StoredType::f32 ? 4 : 2),
                   _MM_HINT_T0);
      const __m512 wv = widen16<T>(w + r * row_bytes, k, __mmask16(0xffff));
      for (std::size_t i = 0; i < M; ++i) acc[r][i] = _mm512_fmadd_ps(wv, xv[i], acc[r][i]);
    }
  }
  if (k < cols) {
    const __mmask16 mask = __mmask16((1u << (cols - k)) - 1);
    __m512 xv[M];
    for (std::size_t i = 0; i < M; ++i) xv[i] = _mm512_maskz_loadu_ps(mask, x + i * cols + k);
    for (std::size_t r = 0; r < R; ++r) {
      const __m512 wv = widen16<T>(w + r * row_bytes, k, mask);
      for (std::size_t i = 0; i < M; ++i) acc[r][i] = _mm512_mask3_fmadd_ps(wv, xv[i], acc[r][i], mask);
    }
  }
  for (std::size_t r = 0; r < R; ++r)
    for (std::size_t i = 0; i < M; ++i) y[i * ldy + r] = add_lanes(acc[r][i]);
}

// Rows of x four at a time (then the rest), rows of W four at a time (then one at a time).
template <StoredType T, std::size_t M>
void rows_for(const float* x, const StoredMatrix& w, std::size_t r0, std::size_t r1, float* y, std::size_t ldy) {
  const std::size_t row_bytes = w.cols * w.element_bytes();
  const auto* base = static_cast<const unsigned char*>(w.data);
  std::size_t r = r0;
  if constexpr (M == 1)  // one row of x (a decode step): 8 rows of W in flight, 8 accumulators
    for (; r + 8 <= r1; r += 8) tile<T, 8, M>(x, w.cols, base + r * row_bytes, row_bytes, y + r, ldy);
  for (; r + 4 <= r1; r += 4) tile<T, 4, M>(x, w.cols, base + r * row_bytes, row_bytes, y + r, ldy);
  for (; r < r1; ++r) tile<T, 1, M>(x, w.cols, base + r * row_bytes, row_bytes, y + r, ldy);
}

void rows_avx512(const float* x, std::size_t m, const StoredMatrix& w, std::size_t r0, std::size_t r1, float* y,
                 std::size_t ldy) {
  on_stored_type(w.type, [&](auto t) {
    on_x_row_blocks(m, [&](auto M, std::size_t i) {
      rows_for<decltype(t)::value, decltype(M)::value>(x + i * w.cols, w, r0, r1, y + i * ldy, ldy);
    });
  });
}

// 16 weights at a time, the last ones masked; a float is not finite when its exponent bits are
// all ones, whatever the stored type it came from (widening is exact).
template <StoredType T>
bool widen_typed(const unsigned char* row, std::size_t n, float* out) {
  const __m512i exponent = _mm512_set1_epi32(0x7f800000);
  __mmask16 bad = 0;
  for (std::size_t k = 0; k < n; k += kStoredLanes) {
    const __mmask16 mask = n - k >= kStoredLanes ? __mmask16(0xffff) : __mmask16((1u << (n - k)) - 1);
    const __m512 v = widen16<T>(row, k, mask);
    _mm512_mask_storeu_ps(out + k, mask, v);
    bad |= _mm512_mask_cmpeq_epi32_mask(mask, _mm512_and_si512(_mm512_castps_si512(v), exponent), exponent);
  }
  return bad == 0;
}

bool widen_avx512(const StoredMatrix& w, std::size_t row, std::size_t col, std::size_t n, float* out) {
  const auto* at = static_cast<const unsigned char*>(w.data) + (row * w.cols + col) * w.element_bytes();
  return on_stored_type(w.type, [&](auto t) { return widen_typed<decltype(t)::value>(at, n, out); });
}

// 16 x 16 blocks: up to 16 rows of W widened (rows past `rows` are 0), transposed in registers,
// stored as up to 16 rows of out (masked to `rows` lanes).
template <StoredType T>
bool widen_transposed_typed(const StoredMatrix& w, std::size_t row, std::size_t rows, std::size_t col,
                            std::size_t depth, float* out, std::size_t ldo) {
  const __m512i exponent = _mm512_set1_epi32(0x7f800000);
  const std::size_t row_bytes = w.cols * w.element_bytes();
  const auto* base = static_cast<const unsigned char*>(w.data) + row * row_bytes;
  __mmask16 bad = 0;
  for (std::size_t t0 = 0; t0 < rows; t0 += kStoredLanes) {
    const std::size_t n = std::min(kStoredLanes, rows - t0);
    const __mmask16 lanes = n == kStoredLanes ? __mmask16(0xffff) : __mmask16((1u << n) - 1);
    for (std::size_t c0 = 0; c0 < depth; c0 += kStoredLanes) {
      const std::size_t m = std::min(kStoredLanes, depth - c0);
      const __mmask16 mask = m == kStoredLanes ? __mmask16(0xffff) : __mmask16((1u << m) - 1);
      __m512 r[16];
      for (std::size_t t = 0; t < kStoredLanes; ++t) {
        r[t] = t < n ? widen16<T>(base + (t0 + t) * row_bytes, col + c0, mask) : _mm512_setzero_ps();
        bad |= _mm512_cmpeq_epi32_mask(_mm512_and_si512(_mm512_castps_si512(r[t]), exponent), exponent);
      }
      transpose16(r);
      for (std::size_t c = 0; c < m; ++c) _mm512_mask_storeu_ps(out + (c0 + c) * ldo + t0, lanes, r[c]);
    }
  }
  return bad == 0;
}

bool widen_transposed_avx512(const StoredMatrix& w, std::size_t row, std::size_t rows, std::size_t col,
                             std::size_t depth, float* out, std::size_t ldo) {
  return on_stored_type(w.type, [&](auto t) {
    return widen_transposed_typed<decltype(t)::value>(w, row, rows, col, depth, out, ldo);
  });
}

template <StoredType T>
bool stream_typed(const float* x, std::size_t m, const StoredMatrix& w, std::size_t j0, std::size_t j1,
                  const float* bias, float* y, std::size_t ldy) {
  const __m512i exponent = _mm512_set1_epi32(0x7f800000);
  const std::size_t n = j1 - j0, K = w.rows, row_bytes = w.cols * w.element_bytes();
  const auto* first = static_cast<const unsigned char*>(w.data) + j0 * w.element_bytes();
  start_from_bias(m, j0, j1, bias, y, ldy);
  __mmask16 bad = 0;
  const std::size_t whole = n / kStoredLanes * kStoredLanes;
  const __mmask16 tail = __mmask16((1u << (n - whole)) - 1);
  for (std::size_t k = 0; k < K; ++k) {
    const unsigned char* row = first + k * row_bytes;
    // Whole vectors unmasked: a masked store costs several times a plain one on AMD's Zen 4/5.
    for (std::size_t j = 0; j < whole; j += kStoredLanes) {
      const __m512 wv = widen16<T>(row, j, __mmask16(0xffff));
      bad |= _mm512_cmpeq_epi32_mask(_mm512_and_si512(_mm512_castps_si512(wv), exponent), exponent);
      for (std::size_t i = 0; i < m; ++i) {
        float* out = y + i * ldy + j0 + j;
        _mm512_storeu_ps(out, _mm512_fmadd_ps(_mm512_set1_ps(x[i * K + k]), wv, _mm512_loadu_ps(out)));
      }
    }
    if (tail) {
      const __m512 wv = widen16<T>(row, whole, tail);
      bad |= _mm512_mask_cmpeq_epi32_mask(tail, _mm512_and_si512(_mm512_castps_si512(wv), exponent), exponent);
      for (std::size_t i = 0; i < m; ++i) {
        float* out = y + i * ldy + j0 + whole;
        const __m512 acc = _mm512_maskz_loadu_ps(tail, out);
        _mm512_mask_storeu_ps(out, tail, _mm512_fmadd_ps(_mm512_set1_ps(x[i * K + k]), wv, acc));
      }
    }
  }
  return bad == 0;
}

bool stream_avx512(const float* x, std::size_t m, const StoredMatrix& w, std::size_t j0, std::size_t j1,
                   const float* bias, float* y, std::size_t ldy) {
  return on_stored_type(w.type,
                        [&](auto t) { return stream_typed<decltype(t)::value>(x, m, w, j0, j1, bias, y, ldy); });
}

bool avx512_supported() {
  static const bool supported = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl");
  }();
  return supported;
}

}  // namespace

StoredRowsKernel stored_rows_avx512() { return avx512_supported() ? rows_avx512 : nullptr; }
StoredWidenKernel stored_widen_avx512() { return avx512_supported() ? widen_avx512 : nullptr; }
StoredWidenTransposedKernel stored_widen_transposed_avx512() {
  return avx512_supported() ? widen_transposed_avx512 : nullptr;
}
StoredStreamKernel stored_stream_avx512() { return avx512_supported() ? stream_avx512 : nullptr; }

}  // namespace attn::detail
#else
attn::detail::StoredRowsKernel attn::detail::stored_rows_avx512() { return nullptr; }
attn::detail::StoredWidenKernel attn::detail::stored_widen_avx512() { return nullptr; }
attn::detail::StoredWidenTransposedKernel attn::detail::stored_widen_transposed_avx512() { return nullptr; }
attn::detail::StoredStreamKernel attn::detail::stored_stream_avx512() { return nullptr; }
#endif
