// stored_matmul (stored_matrix.hpp): the rows of W split across threads, each block of rows run
// by the widest kernel this CPU has (stored_matmul_avx512.cpp, stored_matmul_avx2.cpp) or the
// portable one below.
#include "stored_matmul.hpp"

#include <bit>
#include <cmath>
#include <cstring>

#include "platform/parallel.hpp"
#include "stored_lanes.hpp"

namespace attn {

float half_to_float(std::uint16_t h) {
  const std::uint32_t sign = std::uint32_t(h & 0x8000u) << 16;
  const std::uint32_t exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ffu;
  std::uint32_t bits;
  if (exponent == 0x1f) {
    bits = sign | 0x7f800000u | (mantissa << 13);
  } else if (exponent != 0) {
    bits = sign | ((exponent + 112) << 23) | (mantissa << 13);
  } else {  // zero or subnormal: mantissa * 2^-24
    const float value = float(mantissa) * 0x1.0p-24f;
    return sign ? -value : value;
  }
  return std::bit_cast<float>(bits);
}

namespace detail {
namespace {

float stored_value(const StoredMatrix& w, std::size_t r, std::size_t k) {
  const std::size_t i = r * w.cols + k;
  std::uint16_t h;
  switch (w.type) {
    case StoredType::f32: {
      float f;
      std::memcpy(&f, static_cast<const unsigned char*>(w.data) + 4 * i, 4);
      return f;
    }
    case StoredType::bf16:
      std::memcpy(&h, static_cast<const unsigned char*>(w.data) + 2 * i, 2);
      return bf16_to_float(h);
    case StoredType::f16:
      std::memcpy(&h, static_cast<const unsigned char*>(w.data) + 2 * i, 2);
      return half_to_float(h);
  }
  return 0;
}

// The lanes of the vector kernels written out: lane j of output (i, r) sums k = j, j + 16, ...
// by fused multiply-adds, then the lanes are added pairwise (stored_lanes.hpp).
void rows_generic(const float* x, std::size_t m, const StoredMatrix& w, std::size_t r0, std::size_t r1, float* y,
                  std::size_t ldy) {
  for (std::size_t r = r0; r < r1; ++r)
    for (std::size_t i = 0; i < m; ++i) {
      float lanes[kStoredLanes] = {};
      for (std::size_t k = 0; k < w.cols; ++k)
        lanes[k % kStoredLanes] = std::fma(stored_value(w, r, k), x[i * w.cols + k], lanes[k % kStoredLanes]);
      y[i * ldy + r] = add_lanes(lanes);
    }
}

bool widen_generic(const StoredMatrix& w, std::size_t row, std::size_t col, std::size_t n, float* out) {
  bool finite = true;
  for (std::size_t k = 0; k < n; ++k) finite &= std::isfinite(out[k] = stored_value(w, row, col + k));
  return finite;
}

bool widen_transposed_generic(const StoredMatrix& w, std::size_t row, std::size_t rows, std::size_t col,
                              std::size_t depth, float* out, std::size_t ldo) {
  bool finite = true;
  for (std::size_t t = 0; t < rows; ++t)
    for (std::size_t c = 0; c < depth; ++c) finite &= std::isfinite(out[c * ldo + t] = stored_value(w, row + t, col + c));
  return finite;
}

bool stream_generic(const float* x, std::size_t m, const StoredMatrix& w, std::size_t j0, std::size_t j1,
                    const float* bias, float* y, std::size_t ldy) {
  start_from_bias(m, j0, j1, bias, y, ldy);
  bool finite = true;
  for (std::size_t k = 0; k < w.rows; ++k)
    for (std::size_t j = j0; j < j1; ++j) {
      const float v = stored_value(w, k, j);
      finite &= std::isfinite(v);
      for (std::size_t i = 0; i < m; ++i) y[i * ldy + j] = std::fma(x[i * w.rows + k], v, y[i * ldy + j]);
    }
  return finite;
}

StoredRowsKernel best_kernel() {
  static const StoredRowsKernel kernel = [] {
    const StoredRowsKernel avx512 = stored_rows_avx512(), avx2 = stored_rows_avx2();
    return avx512 ? avx512 : avx2 ? avx2 : stored_rows_generic();
  }();
  return kernel;
}

}  // namespace

StoredRowsKernel stored_rows_generic() { return rows_generic; }
StoredWidenKernel stored_widen_generic() { return widen_generic; }
StoredWidenTransposedKernel stored_widen_transposed_generic() { return widen_transposed_generic; }
StoredStreamKernel stored_stream_generic() { return stream_generic; }

}  // namespace detail

const char* stored_matmul_isa() {
  const detail::StoredRowsKernel kernel = detail::best_kernel();
  return kernel == detail::stored_rows_generic() ? "generic" : kernel == detail::stored_rows_avx2() ? "avx2" : "avx512";
}

void stored_matmul(const float* x, std::size_t m, const StoredMatrix& w, const float* bias, float* y, std::size_t ldy,
                   std::size_t threads) {
  // Blocks of 64 rows: 48-96 KiB of a bfloat16 matrix 384-768 wide, many per thread for balance.
  constexpr std::size_t kBlock = 64;
  const std::size_t blocks = (w.rows + kBlock - 1) / kBlock;
  const detail::StoredRowsKernel kernel = detail::best_kernel();
  detail::parallel_items(blocks, detail::thread_count(threads, blocks), [&](std::size_t, std::size_t b) {
    const std::size_t r0 = b * kBlock, r1 = std::min(w.rows, r0 + kBlock);
    kernel(x, m, w, r0, r1, y, ldy);
    if (bias)
      for (std::size_t i = 0; i < m; ++i)
        for (std::size_t r = r0; r < r1; ++r) y[i * ldy + r] += bias[r];
  });
}

}  // namespace attn
