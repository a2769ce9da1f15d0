// stored_matmul (engine/core/stored_matrix.hpp): products on weights as a safetensors file stores
// them, against a float64 reference on the exactly widened values, and its kernels against each
// other bit for bit.
#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "attn/engine/core/stored_matrix.hpp"
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

TEST_CASE("stored matmul: the AVX-512 and portable kernels, and 1 or 2 threads, give the same bits") {
  std::mt19937 rng(11);
  const detail::StoredRowsKernel avx512 = detail::stored_rows_avx512(), generic = detail::stored_rows_generic();
  for (StoredType type : {StoredType::f32, StoredType::bf16, StoredType::f16})
    for (std::size_t cols : {7, 16, 33, 576}) {
      const std::size_t rows = 133, m = 6;
      const StoredTestMatrix w = make_stored(type, rows, cols, rng);
      const std::vector<float> x = random_rows(m, cols, rng);
      std::vector<float> one(m * rows), two(m * rows), portable(m * rows), vector(m * rows);
      stored_matmul(x.data(), m, w.view, nullptr, one.data(), rows, 1);
      stored_matmul(x.data(), m, w.view, nullptr, two.data(), rows, 2);
      CHECK(std::memcmp(one.data(), two.data(), one.size() * 4) == 0);
      generic(x.data(), m, w.view, 0, rows, portable.data(), rows);
      CHECK(std::memcmp(one.data(), portable.data(), one.size() * 4) == 0);
      if (!avx512) continue;  // not compiled in, or this CPU lacks AVX-512
      avx512(x.data(), m, w.view, 0, rows, vector.data(), rows);
      CHECK(std::memcmp(vector.data(), portable.data(), vector.size() * 4) == 0);
    }
}
