#pragma once
// Private to the engine: stored_matmul's kernels, one per instruction set (stored_matmul.cpp).
#include <type_traits>

#include "attn/engine/core/stored_matrix.hpp"

namespace attn::detail {

// f(std::integral_constant<StoredType, T>{}) for the stored type T: how the vector kernels pick
// their instantiation for a matrix, once a call.
template <class F>
decltype(auto) on_stored_type(StoredType type, F&& f) {
  switch (type) {
    case StoredType::bf16: return f(std::integral_constant<StoredType, StoredType::bf16>{});
    case StoredType::f16: return f(std::integral_constant<StoredType, StoredType::f16>{});
    case StoredType::f32: break;
  }
  return f(std::integral_constant<StoredType, StoredType::f32>{});
}

// f(std::integral_constant<std::size_t, M>{}, i) for the rows of x in blocks of M from row i:
// blocks of 4, then one of the 3, 2 or 1 left (the vector kernels' register blocking of x).
template <class F>
void on_x_row_blocks(std::size_t m, F&& f) {
  std::size_t i = 0;
  for (; i + 4 <= m; i += 4) f(std::integral_constant<std::size_t, 4>{}, i);
  switch (m - i) {
    case 3: f(std::integral_constant<std::size_t, 3>{}, i); break;
    case 2: f(std::integral_constant<std::size_t, 2>{}, i); break;
    case 1: f(std::integral_constant<std::size_t, 1>{}, i); break;
    default: break;
  }
}

// y[i * ldy + r] = sum over k of x[i * W.cols + k] * W[r, k], for rows r in [r0, r1) and i < m.
// The sum runs over k in lanes of 16 (lane j takes k = j, j + 16, ...), then adds the 16 lanes
// pairwise, in every implementation, so that all give the same bits.
using StoredRowsKernel = void (*)(const float* x, std::size_t m, const StoredMatrix& w, std::size_t r0,
                                  std::size_t r1, float* y, std::size_t ldy);

StoredRowsKernel stored_rows_generic();
StoredRowsKernel stored_rows_avx512();  // null when not compiled in
StoredRowsKernel stored_rows_avx2();    // AVX2 + FMA + F16C (stored_matmul_avx2.cpp); null the same way

// out[0..n) = W[row, col .. col + n) widened to float32 exactly; false when one of them is not
// finite (stored_gemm's panels).
using StoredWidenKernel = bool (*)(const StoredMatrix& w, std::size_t row, std::size_t col, std::size_t n,
                                   float* out);

StoredWidenKernel stored_widen_generic();
StoredWidenKernel stored_widen_avx512();  // null when not compiled in
StoredWidenKernel stored_widen_avx2();    // AVX2 + FMA + F16C; null the same way

// The same, transposed: out[c * ldo + t] = W[row + t, col + c] for t < rows, c < depth (rows of W
// become columns of out: stored_gemm's panels of a matrix stored [out, in]). out is not written
// elsewhere.
using StoredWidenTransposedKernel = bool (*)(const StoredMatrix& w, std::size_t row, std::size_t rows,
                                             std::size_t col, std::size_t depth, float* out, std::size_t ldo);

StoredWidenTransposedKernel stored_widen_transposed_generic();
StoredWidenTransposedKernel stored_widen_transposed_avx512();  // null when not compiled in
StoredWidenTransposedKernel stored_widen_transposed_avx2();

// The stream kernels' start: y[i, j] = bias[j], or 0 without a bias, for i < m and j in [j0, j1).
// Internal to each file: one compiled for AVX-512 must not lend its copy to the portable one.
static inline void start_from_bias(std::size_t m, std::size_t j0, std::size_t j1, const float* bias, float* y, std::size_t ldy) {
  for (std::size_t i = 0; i < m; ++i)
    for (std::size_t j = j0; j < j1; ++j) y[i * ldy + j] = bias ? bias[j] : 0.0f;
}

// y[i, j] for j in [j0, j1), i < m, W stored [K, N] (in, out): y starts from bias (or 0) and adds
// x[i, k] W[k, j] for k = 0, 1, ... by fused multiply-adds, so each output has the bits of
// stored_gemm's. Streams each row of W once, in order, accumulating in y (rows of x few enough
// that y's columns stay in L1): a decode step's few rows. Returns false when a weight was not
// finite.
using StoredStreamKernel = bool (*)(const float* x, std::size_t m, const StoredMatrix& w, std::size_t j0,
                                    std::size_t j1, const float* bias, float* y, std::size_t ldy);

StoredStreamKernel stored_stream_generic();
StoredStreamKernel stored_stream_avx512();  // null when not compiled in
StoredStreamKernel stored_stream_avx2();    // AVX2 + FMA + F16C; null the same way

}  // namespace attn::detail
