#pragma once
// Square transposes of registers, for the files compiled for AVX-512 (16 floats a register) or
// AVX2 (8): stored_matmul's transposed widening and the flash kernel's packing of K. Static:
// each file compiled for its instruction set keeps its own copy, so no copy compiled for
// AVX-512 can stand in for another at link time.
#include <cstddef>

#if defined(__AVX2__) || defined(__AVX512F__)
#include <immintrin.h>
#endif

namespace attn::detail {

#if defined(__AVX512F__)
// r[j] <- column j of the 16 x 16 block whose rows r holds: 32-bit, then 64-bit interleaves
// within 128-bit lanes, then two rounds of 128-bit lane shuffles.
static inline void transpose16(__m512 (&r)[16]) {
  __m512 a[16], b[16];
  for (std::size_t i = 0; i < 8; ++i) {  // lane L: rows 2i, 2i+1 at columns 4L, 4L+1 (lo) or 4L+2, 4L+3 (hi)
    a[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    a[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  for (std::size_t i = 0; i < 4; ++i) {  // b[4i + c], lane L: rows 4i .. 4i+3 at column 4L + c
    const __m512d lo0 = _mm512_castps_pd(a[4 * i]), lo1 = _mm512_castps_pd(a[4 * i + 2]);
    const __m512d hi0 = _mm512_castps_pd(a[4 * i + 1]), hi1 = _mm512_castps_pd(a[4 * i + 3]);
    b[4 * i] = _mm512_castpd_ps(_mm512_unpacklo_pd(lo0, lo1));
    b[4 * i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(lo0, lo1));
    b[4 * i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(hi0, hi1));
    b[4 * i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(hi0, hi1));
  }
  for (std::size_t c = 0; c < 4; ++c) {  // column 4L + c gathers lane L of b[c], b[4+c], b[8+c], b[12+c]
    const __m512 e0 = _mm512_shuffle_f32x4(b[c], b[4 + c], _MM_SHUFFLE(2, 0, 2, 0));
    const __m512 e1 = _mm512_shuffle_f32x4(b[c], b[4 + c], _MM_SHUFFLE(3, 1, 3, 1));
    const __m512 f0 = _mm512_shuffle_f32x4(b[8 + c], b[12 + c], _MM_SHUFFLE(2, 0, 2, 0));
    const __m512 f1 = _mm512_shuffle_f32x4(b[8 + c], b[12 + c], _MM_SHUFFLE(3, 1, 3, 1));
    r[c] = _mm512_shuffle_f32x4(e0, f0, _MM_SHUFFLE(2, 0, 2, 0));
    r[4 + c] = _mm512_shuffle_f32x4(e1, f1, _MM_SHUFFLE(2, 0, 2, 0));
    r[8 + c] = _mm512_shuffle_f32x4(e0, f0, _MM_SHUFFLE(3, 1, 3, 1));
    r[12 + c] = _mm512_shuffle_f32x4(e1, f1, _MM_SHUFFLE(3, 1, 3, 1));
  }
}

#endif

#if defined(__AVX2__)
// r[j] <- column j of the 8 x 8 block whose rows r holds: the same three rounds as transpose16,
// the last across the two 128-bit lanes.
static inline void transpose8(__m256 (&r)[8]) {
  __m256 a[8], b[8];
  for (std::size_t i = 0; i < 4; ++i) {
    a[2 * i] = _mm256_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    a[2 * i + 1] = _mm256_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  for (std::size_t i = 0; i < 2; ++i) {  // b[4i + c], lane L: rows 4i .. 4i+3 at column 4L + c
    const __m256d lo0 = _mm256_castps_pd(a[4 * i]), lo1 = _mm256_castps_pd(a[4 * i + 2]);
    const __m256d hi0 = _mm256_castps_pd(a[4 * i + 1]), hi1 = _mm256_castps_pd(a[4 * i + 3]);
    b[4 * i] = _mm256_castpd_ps(_mm256_unpacklo_pd(lo0, lo1));
    b[4 * i + 1] = _mm256_castpd_ps(_mm256_unpackhi_pd(lo0, lo1));
    b[4 * i + 2] = _mm256_castpd_ps(_mm256_unpacklo_pd(hi0, hi1));
    b[4 * i + 3] = _mm256_castpd_ps(_mm256_unpackhi_pd(hi0, hi1));
  }
  for (std::size_t c = 0; c < 4; ++c) {  // column c: lane 0 of b[c] and b[4+c]; column 4 + c: lane 1
    r[c] = _mm256_permute2f128_ps(b[c], b[4 + c], 0x20);
    r[4 + c] = _mm256_permute2f128_ps(b[c], b[4 + c], 0x31);
  }
}
#endif

}  // namespace attn::detail
