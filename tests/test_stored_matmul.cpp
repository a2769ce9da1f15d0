// stored_matmul and stored_gemm (engine/core/stored_matrix.hpp): products on weights as a
// safetensors file stores them, against a float64 reference on the exactly widened values, and
// their kernels, thread counts and row counts against each other bit for bit.
#include <doctest/doctest.h>

#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "attn/engine/core/stored_matrix.hpp"
#include "engine/attention/flash/microkernels.hpp"
#include "engine/core/stored_matmul.hpp"

using namespace attn;

namespace {

// A [rows, cols] matrix stored as `type`, and the float values it holds (widened by hand:
// bfloat16 by its bits, float16 through the test's own decoding).
struct StoredTestMatrix {
  std::vector<unsigned char> bytes;
  std::vector<double> values;
  StoredMatrix view;
};

double half_value(std::uint16_t h) {  // IEEE binary16, finite values, from its fields
  const int exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ff;
  const double magnitude = exponent == 0 ? std::ldexp(mantissa, -24) : std::ldexp(1024 + mantissa, exponent - 25);
  return (h & 0x8000) ? -magnitude : magnitude;
}

StoredTestMatrix make_stored(StoredType type, std::size_t rows, std::size_t cols, std::mt19937& rng) {
  StoredTestMatrix m;
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const std::size_t width = type == StoredType::f32 ? 4 : 2;
  m.bytes.resize(rows * cols * width + 1);  // +1: stored one byte in, as a file need not align it
  for (std::size_t i = 0; i < rows * cols; ++i) {
    const float f = normal(rng);
    unsigned char* at = m.bytes.data() + 1 + i * width;
    if (type == StoredType::f32) {
      std::memcpy(at, &f, 4);
      m.values.push_back(f);
    } else if (type == StoredType::bf16) {
      const std::uint16_t h = std::uint16_t(std::bit_cast<std::uint32_t>(f) >> 16);  // truncated: any bits will do
      std::memcpy(at, &h, 2);
      m.values.push_back(std::bit_cast<float>(std::uint32_t(h) << 16));
    } else {
      const std::uint16_t h = std::uint16_t(std::uniform_int_distribution<int>(0, 0x7bff)(rng) |
                                            (normal(rng) < 0 ? 0x8000 : 0));  // any finite half
      std::memcpy(at, &h, 2);
      m.values.push_back(half_value(h));
    }
  }
  m.view = {m.bytes.data() + 1, type, rows, cols};
  return m;
}

std::vector<float> random_rows(std::size_t m, std::size_t cols, std::mt19937& rng) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(m * cols);
  for (float& v : x) v = normal(rng);
  return x;
}

}  // namespace

TEST_CASE("stored matmul: float16 widened exactly, by hand") {
  CHECK(half_to_float(0x3c00) == 1.0f);
  CHECK(half_to_float(0xc000) == -2.0f);
  CHECK(half_to_float(0x7bff) == 65504.0f);         // the largest finite half
  CHECK(half_to_float(0x0001) == std::ldexp(1.0f, -24));  // the smallest subnormal
  CHECK(half_to_float(0x0400) == std::ldexp(1.0f, -14));  // the smallest normal
  CHECK(std::isinf(half_to_float(0x7c00)));
  CHECK(std::isnan(half_to_float(0x7e00)));
  CHECK(bf16_to_float(0x3f80) == 1.0f);
  CHECK(bf16_to_float(0xc040) == -3.0f);
}

TEST_CASE("stored matmul: every stored type against float64, odd shapes, with and without a bias") {
  std::mt19937 rng(7);
  for (StoredType type : {StoredType::f32, StoredType::bf16, StoredType::f16})
    for (std::size_t cols : {1, 15, 16, 17, 100, 576})
      for (std::size_t rows : {1, 3, 4, 5, 67})
        for (std::size_t m : {1, 2, 3, 4, 5, 9}) {
          const StoredTestMatrix w = make_stored(type, rows, cols, rng);
          const std::vector<float> x = random_rows(m, cols, rng), bias = random_rows(1, rows, rng);
          const bool with_bias = (rows + m) % 2 == 0;
          std::vector<float> y(m * (rows + 3), -1.0f);  // ldy > rows: the gap must stay untouched
          stored_matmul(x.data(), m, w.view, with_bias ? bias.data() : nullptr, y.data(), rows + 3, 0);
          for (std::size_t i = 0; i < m; ++i) {
            for (std::size_t r = 0; r < rows; ++r) {
              double exact = with_bias ? bias[r] : 0, magnitude = std::fabs(exact);
              for (std::size_t k = 0; k < cols; ++k) {
                exact += double(x[i * cols + k]) * w.values[r * cols + k];
                magnitude += std::fabs(double(x[i * cols + k]) * w.values[r * cols + k]);
              }
              // float32 sums of `cols` terms: within cols * 2^-24 of their magnitude, with room.
              CAPTURE(cols);
              CAPTURE(rows);
              CAPTURE(m);
              CHECK(std::fabs(y[i * (rows + 3) + r] - exact) <= 2.0 * double(cols + 1) * 0x1.0p-24 * magnitude + 1e-30);
            }
            for (std::size_t r = rows; r < rows + 3; ++r) CHECK(y[i * (rows + 3) + r] == -1.0f);
          }
        }
}

TEST_CASE("stored matmul: the AVX-512, AVX2 and portable kernels, and 1 or 2 threads, give the same bits") {
  std::mt19937 rng(11);
  const std::pair<const char*, detail::StoredRowsKernel> vectors[] = {{"avx512", detail::stored_rows_avx512()},
                                                                      {"avx2", detail::stored_rows_avx2()}};
  const detail::StoredRowsKernel generic = detail::stored_rows_generic();
  for (StoredType type : {StoredType::f32, StoredType::bf16, StoredType::f16})
    for (std::size_t cols : {7, 16, 24, 31, 33, 45, 576})  // tails of 0, 1, 7, 8, 13 and 15 lanes
      for (std::size_t m : {1, 2, 3, 6}) {  // every blocking of rows of x (and of W: 133 rows)
        CAPTURE(cols);
        CAPTURE(m);
        const std::size_t rows = 133;
        const StoredTestMatrix w = make_stored(type, rows, cols, rng);
        const std::vector<float> x = random_rows(m, cols, rng);
        std::vector<float> one(m * rows), two(m * rows), portable(m * rows);
        stored_matmul(x.data(), m, w.view, nullptr, one.data(), rows, 1);
        stored_matmul(x.data(), m, w.view, nullptr, two.data(), rows, 2);
        CHECK(std::memcmp(one.data(), two.data(), one.size() * 4) == 0);
        generic(x.data(), m, w.view, 0, rows, portable.data(), rows);
        CHECK(std::memcmp(one.data(), portable.data(), one.size() * 4) == 0);
        for (const auto& vector_kernel : vectors) {  // not a structured binding: clang 14 cannot CAPTURE one
          const std::string isa = vector_kernel.first;
          const detail::StoredRowsKernel kernel = vector_kernel.second;
          if (!kernel) continue;  // not compiled in, or this CPU lacks the instructions
          CAPTURE(isa);
          std::vector<float> vector(m * rows, -1.0f);
          kernel(x.data(), m, w.view, 0, rows, vector.data(), rows);
          CHECK(std::memcmp(vector.data(), portable.data(), vector.size() * 4) == 0);
        }
      }
}

TEST_CASE("stored gemm: the AVX-512, AVX2 and portable streams of a few rows give the same bits and see every weight") {
  std::mt19937 rng(19);
  const std::pair<const char*, detail::StoredStreamKernel> vectors[] = {{"avx512", detail::stored_stream_avx512()},
                                                                        {"avx2", detail::stored_stream_avx2()}};
  const detail::StoredStreamKernel generic = detail::stored_stream_generic();
  const std::size_t K = 37, N = 83;
  for (StoredType type : {StoredType::f32, StoredType::bf16, StoredType::f16})
    for (std::size_t m : {1, 3}) {
      const StoredTestMatrix w = make_stored(type, K, N, rng);  // [in, out]
      const std::vector<float> x = random_rows(m, K, rng), bias = random_rows(1, N, rng);
      // Column ranges off the registers' edges: whole registers and a tail, a tail alone, all.
      for (const auto& range : {std::pair<std::size_t, std::size_t>{5, 30}, {16, 19}, {0, N}})
        for (const float* b : {static_cast<const float*>(nullptr), bias.data()}) {
          const std::size_t j0 = range.first, j1 = range.second;
          CAPTURE(j0);
          CAPTURE(m);
          std::vector<float> portable(m * N, -1.0f);
          REQUIRE(generic(x.data(), m, w.view, j0, j1, b, portable.data(), N));
          for (std::size_t i = 0; i < m; ++i)  // the plain fused loop
            for (std::size_t j = j0; j < j1; ++j) {
              float acc = b ? b[j] : 0.0f;
              for (std::size_t k = 0; k < K; ++k) acc = std::fma(x[i * K + k], float(w.values[k * N + j]), acc);
              CHECK(acc == portable[i * N + j]);
            }
          for (const auto& vector_kernel : vectors) {
            const std::string isa = vector_kernel.first;
            const detail::StoredStreamKernel kernel = vector_kernel.second;
            if (!kernel) continue;
            CAPTURE(isa);
            std::vector<float> vector(m * N, -1.0f);  // columns outside [j0, j1) stay -1
            REQUIRE(kernel(x.data(), m, w.view, j0, j1, b, vector.data(), N));
            CHECK(std::memcmp(vector.data(), portable.data(), vector.size() * 4) == 0);
          }
        }
      // A weight that is not finite, in a whole register's column or a tail's, in the first row
      // or the last: every kernel says so.
      const std::size_t width = type == StoredType::f32 ? 4 : 2;
      const std::uint32_t inf32 = 0x7f800000u;
      const std::uint16_t inf16 = type == StoredType::bf16 ? 0x7f80 : 0x7c00;
      for (const std::size_t at : {std::size_t(2), std::size_t(N + 28), (K - 1) * N + 82}) {
        unsigned char* p = const_cast<unsigned char*>(static_cast<const unsigned char*>(w.view.data)) + at * width;
        std::vector<unsigned char> saved(p, p + width);
        std::memcpy(p, type == StoredType::f32 ? static_cast<const void*>(&inf32) : &inf16, width);
        CAPTURE(at);
        std::vector<float> y(m * N);
        CHECK_FALSE(generic(x.data(), m, w.view, 0, N, nullptr, y.data(), N));
        for (const auto& vector_kernel : vectors)
          if (vector_kernel.second) CHECK_FALSE(vector_kernel.second(x.data(), m, w.view, 0, N, nullptr, y.data(), N));
        std::memcpy(p, saved.data(), width);
      }
    }
}

namespace {

// W's weight on input k for output j, laid out as `layout` says.
double weight(const StoredTestMatrix& w, StoredLayout layout, std::size_t k, std::size_t j) {
  return layout == StoredLayout::in_out ? w.values[k * w.view.cols + j] : w.values[j * w.view.cols + k];
}

// A K x N product's matrix stored as `layout` lays it out.
StoredTestMatrix make_weights(StoredType type, StoredLayout layout, std::size_t K, std::size_t N, std::mt19937& rng) {
  return layout == StoredLayout::in_out ? make_stored(type, K, N, rng) : make_stored(type, N, K, rng);
}

// y = x W + bias in float64 on the widened values, with the magnitude of its terms (for the
// float32 error bound).
struct GemmReference {
  std::vector<double> exact, magnitude;
};
GemmReference gemm_reference(const std::vector<float>& x, std::size_t m, std::size_t K, std::size_t N,
                             const StoredTestMatrix& w, StoredLayout layout, const float* bias) {
  GemmReference r{std::vector<double>(m * N), std::vector<double>(m * N)};
  for (std::size_t i = 0; i < m; ++i)
    for (std::size_t j = 0; j < N; ++j) {
      double exact = bias ? bias[j] : 0, magnitude = std::fabs(exact);
      for (std::size_t k = 0; k < K; ++k) {
        const double term = double(x[i * K + k]) * weight(w, layout, k, j);
        exact += term;
        magnitude += std::fabs(term);
      }
      r.exact[i * N + j] = exact;
      r.magnitude[i * N + j] = magnitude;
    }
  return r;
}

void doubled_plus_one(float* y, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) y[i] = 2.0f * y[i] + 1.0f;
}

constexpr StoredLayout kLayouts[] = {StoredLayout::in_out, StoredLayout::out_in};

}  // namespace

TEST_CASE("stored gemm: x W + bias, W stored [in, out] or [out, in], every type against float64, off every block edge") {
  std::mt19937 rng(5);
  // m around the kernel's 6-row blocks, K around the 128-row widened chunks and the 16 x 16
  // transposed blocks, N around the 64-column panels and the 4-panel work items.
  for (StoredLayout layout : kLayouts)
    for (StoredType type : {StoredType::f32, StoredType::bf16, StoredType::f16})
      for (const auto& shape : {std::array<std::size_t, 3>{1, 1, 1}, {5, 7, 3}, {6, 128, 64}, {7, 129, 65},
                                {13, 300, 257}, {64, 200, 520}, {200, 33, 70}}) {
        const std::size_t m = shape[0], K = shape[1], N = shape[2];  // not a structured binding: CAPTURE takes them
        const StoredTestMatrix w = make_weights(type, layout, K, N, rng);
        const std::vector<float> x = random_rows(m, K, rng), bias = random_rows(1, N, rng);
        CAPTURE(int(layout));
        CAPTURE(m);
        CAPTURE(K);
        CAPTURE(N);
        for (bool with_bias : {false, true}) {
          const std::size_t ldy = N + 2;
          std::vector<float> y(m * ldy, -1.0f);  // ldy > N: the gap must stay untouched
          CHECK(stored_gemm(x.data(), m, w.view, layout, with_bias ? bias.data() : nullptr, y.data(), ldy, 0));
          const GemmReference ref = gemm_reference(x, m, K, N, w, layout, with_bias ? bias.data() : nullptr);
          bool within = true, gap_kept = true;
          for (std::size_t i = 0; i < m; ++i) {
            for (std::size_t j = 0; j < N; ++j)  // K float32 fused multiply-adds: within (K + 1) 2^-24 of the magnitude
              within &= std::fabs(y[i * ldy + j] - ref.exact[i * N + j]) <=
                        double(K + 1) * 0x1.0p-24 * ref.magnitude[i * N + j] + 1e-30;
            gap_kept &= y[i * ldy + N] == -1.0f && y[i * ldy + N + 1] == -1.0f;
          }
          CHECK(within);
          CHECK(gap_kept);
        }
        std::vector<float> y(m * N);
        REQUIRE(stored_gemm(x.data(), m, w.view, layout, bias.data(), y.data(), N, 2, doubled_plus_one));
        const GemmReference ref = gemm_reference(x, m, K, N, w, layout, bias.data());
        bool within = true;
        for (std::size_t i = 0; i < m * N; ++i)
          within &= std::fabs(y[i] - (2.0 * ref.exact[i] + 1.0)) <= 2.0 * double(K + 2) * 0x1.0p-24 * ref.magnitude[i] + 1e-6;
        CHECK(within);  // the activation is applied to every output, once
      }
}

TEST_CASE("stored gemm: each output is its bias then its terms fused in k order, whatever the threads or rows") {
  std::mt19937 rng(9);
  const std::size_t m = 37, K = 300, N = 200;
  for (StoredLayout layout : kLayouts) {
    const StoredTestMatrix w = make_weights(StoredType::f16, layout, K, N, rng);
    const std::vector<float> x = random_rows(m, K, rng), bias = random_rows(1, N, rng);
    std::vector<float> one(m * N), three(m * N), row(N);
    REQUIRE(stored_gemm(x.data(), m, w.view, layout, bias.data(), one.data(), N, 1));
    REQUIRE(stored_gemm(x.data(), m, w.view, layout, bias.data(), three.data(), N, 3));
    CHECK(std::memcmp(one.data(), three.data(), one.size() * 4) == 0);
    // Where the kernels' multiply-adds are fused (AVX2 and AVX-512, from GCC or clang), a row
    // computed alone (a decode step's path) has the bits of the same row among 37, and both
    // those of the plain fused loop below; the portable kernels on a CPU without FMA may round
    // each product separately.
    if (std::string(flash::best_microkernels<float>().isa) == "generic") continue;
    bool rows_alone = true;
    for (std::size_t i = 0; i < m; i += 6) {
      REQUIRE(stored_gemm(x.data() + i * K, 1, w.view, layout, bias.data(), row.data(), N, 2));
      rows_alone &= std::memcmp(row.data(), one.data() + i * N, N * 4) == 0;
    }
    CHECK(rows_alone);
    bool exact = true;
    for (std::size_t i = 0; i < m; ++i)
      for (std::size_t j = 0; j < N; ++j) {
        float acc = bias[j];
        for (std::size_t k = 0; k < K; ++k) acc = std::fma(x[i * K + k], float(weight(w, layout, k, j)), acc);
        exact &= acc == one[i * N + j];
      }
    CHECK(exact);
  }
}

TEST_CASE("stored gemm: the AVX-512, AVX2 and portable widenings, straight and transposed, give the same floats") {
  std::mt19937 rng(17);
  struct Vector {
    const char* isa;
    detail::StoredWidenKernel straight;
    detail::StoredWidenTransposedKernel transposed;
  };
  // Null where not compiled in or where this CPU lacks the instructions; the portable one always.
  const Vector vectors[] = {{"avx512", detail::stored_widen_avx512(), detail::stored_widen_transposed_avx512()},
                            {"avx2", detail::stored_widen_avx2(), detail::stored_widen_transposed_avx2()}};
  const detail::StoredWidenKernel generic = detail::stored_widen_generic();
  const detail::StoredWidenTransposedKernel generic_t = detail::stored_widen_transposed_generic();
  for (StoredType type : {StoredType::f32, StoredType::bf16, StoredType::f16}) {
    const StoredTestMatrix w = make_stored(type, 70, 45, rng);
    for (auto [row, rows, col, depth] : {std::array<std::size_t, 4>{0, 70, 0, 45}, {3, 17, 5, 33}, {64, 6, 40, 5},
                                         {0, 16, 0, 16}, {69, 1, 44, 1}, {8, 9, 7, 8}}) {
      const std::size_t ldo = 80;
      std::vector<float> a(depth * ldo, -7.0f), line(depth + 3, -7.0f);
      CHECK(generic_t(w.view, row, rows, col, depth, a.data(), ldo));
      CHECK(generic(w.view, row, col, depth, line.data()));
      bool values = true;  // the transposition, and the straight row, by the test's own decoding
      for (std::size_t c = 0; c < depth; ++c) {
        values &= line[c] == float(w.values[row * 45 + col + c]);
        for (std::size_t t = 0; t < ldo; ++t)
          values &= t < rows ? a[c * ldo + t] == float(w.values[(row + t) * 45 + col + c]) : a[c * ldo + t] == -7.0f;
      }
      CHECK(values);
      for (const Vector& v : vectors) {
        if (!v.straight) continue;
        CAPTURE(v.isa);
        std::vector<float> b(depth * ldo, -7.0f), line_b(depth + 3, -7.0f);
        CHECK(v.transposed(w.view, row, rows, col, depth, b.data(), ldo));
        CHECK(std::memcmp(a.data(), b.data(), a.size() * 4) == 0);  // and nothing outside the block written
        CHECK(v.straight(w.view, row, col, depth, line_b.data()));
        CHECK(std::memcmp(line.data(), line_b.data(), line.size() * 4) == 0);  // nor past the row's end
      }
    }
  }
  // Every finite bfloat16 and float16 bit pattern (subnormals, signed zeros, the largest),
  // straight and as one transposed row.
  for (StoredType type : {StoredType::bf16, StoredType::f16}) {
    std::vector<std::uint16_t> bits;
    for (std::uint32_t h = 0; h < 0x10000; ++h)
      if (((h >> (type == StoredType::bf16 ? 7 : 10)) & (type == StoredType::bf16 ? 0xff : 0x1f)) !=
          (type == StoredType::bf16 ? 0xffu : 0x1fu))
        bits.push_back(std::uint16_t(h));
    const StoredMatrix all{bits.data(), type, 1, bits.size()};
    std::vector<float> want(bits.size());
    CHECK(generic(all, 0, 0, bits.size(), want.data()));
    for (const Vector& v : vectors) {
      if (!v.straight) continue;
      CAPTURE(v.isa);
      std::vector<float> got(bits.size()), got_t(bits.size());
      CHECK(v.straight(all, 0, 0, bits.size(), got.data()));
      CHECK(std::memcmp(want.data(), got.data(), want.size() * 4) == 0);
      CHECK(v.transposed(all, 0, 1, 0, bits.size(), got_t.data(), 1));
      CHECK(std::memcmp(want.data(), got_t.data(), want.size() * 4) == 0);
    }
  }
  // An infinity or a NaN at any place of a 10 x 19 matrix (past a block of 8 rows or columns
  // too) is reported by every kernel, straight (its row) and transposed (all rows), every type.
  for (StoredType type : {StoredType::f32, StoredType::bf16, StoredType::f16}) {
    const std::size_t R = 10, C = 19, width = type == StoredType::f32 ? 4 : 2;
    const std::uint32_t one32 = 0x3f800000u, bad32[2] = {0x7f800000u, 0x7fc00000u};
    const std::uint16_t one16 = type == StoredType::bf16 ? 0x3f80 : 0x3c00;
    const std::uint16_t bad16[2] = {std::uint16_t(type == StoredType::bf16 ? 0x7f80 : 0x7c00),
                                    std::uint16_t(type == StoredType::bf16 ? 0x7fc0 : 0x7e00)};
    std::vector<unsigned char> bytes(R * C * width);
    auto put = [&](std::size_t at, bool bad, int which) {
      if (type == StoredType::f32) std::memcpy(bytes.data() + at * 4, bad ? &bad32[which] : &one32, 4);
      else std::memcpy(bytes.data() + at * 2, bad ? &bad16[which] : &one16, 2);
    };
    for (std::size_t at = 0; at < R * C; ++at) put(at, false, 0);
    const StoredMatrix m{bytes.data(), type, R, C};
    std::vector<float> out(R * C);
    for (const Vector& v : vectors) {
      if (!v.straight) continue;
      CAPTURE(v.isa);
      for (std::size_t at = 0; at < R * C; ++at)
        for (int which = 0; which < 2; ++which) {
          CAPTURE(at);
          put(at, true, which);
          CHECK_FALSE(v.straight(m, at / C, 0, C, out.data()));
          CHECK_FALSE(v.transposed(m, 0, R, 0, C, out.data(), R));
          put(at, false, 0);
        }
      CHECK(v.straight(m, 0, 0, C, out.data()));
      CHECK(v.transposed(m, 0, R, 0, C, out.data(), R));
    }
  }
}

TEST_CASE("stored gemm: a weight that is not finite is reported, wherever it is, in every type and layout") {
  std::mt19937 rng(13);
  const std::size_t m = 3, K = 130, N = 70;
  const std::vector<float> x = random_rows(m, K, rng);
  std::vector<float> y(m * N);
  for (StoredLayout layout : kLayouts)
    for (StoredType type : {StoredType::f32, StoredType::bf16, StoredType::f16}) {
      StoredTestMatrix w = make_weights(type, layout, K, N, rng);
      CHECK(stored_gemm(x.data(), m, w.view, layout, nullptr, y.data(), N, 2));
      const std::size_t width = type == StoredType::f32 ? 4 : 2;
      // +infinity, then a NaN, in each type's bits.
      const std::uint32_t f32_bits[2] = {0x7f800000u, 0x7fc00000u};
      const std::uint16_t bf16_bits[2] = {0x7f80, 0x7fc0}, f16_bits[2] = {0x7c00, 0x7e00};
      for (std::size_t at : {std::size_t(0), w.view.cols - 1, 64 * w.view.cols + 65, K * N - 1})
        for (int which = 0; which < 2; ++which) {  // first, a row's last, past the first panel or chunk, last
          unsigned char* p = const_cast<unsigned char*>(static_cast<const unsigned char*>(w.view.data)) + at * width;
          std::vector<unsigned char> saved(p, p + width);
          if (type == StoredType::f32) std::memcpy(p, &f32_bits[which], 4);
          else std::memcpy(p, type == StoredType::bf16 ? &bf16_bits[which] : &f16_bits[which], 2);
          CAPTURE(at);
          CHECK_FALSE(stored_gemm(x.data(), m, w.view, layout, nullptr, y.data(), N, 2));
          std::memcpy(p, saved.data(), width);
        }
      CHECK(stored_gemm(x.data(), m, w.view, layout, nullptr, y.data(), N, 2));
    }
}
