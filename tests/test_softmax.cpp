#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "attn/engine/attention/softmax.hpp"

using namespace attn;
constexpr float kInf = std::numeric_limits<float>::infinity();

TEST_CASE("softmax: hand-derived row [0, ln 2, ln 5] -> [1/8, 2/8, 5/8]") {
  const Tensor2 s = {{0.0f, std::log(2.0f), std::log(5.0f)}};
  Tensor1 lse;
  const Tensor2 p = softmax_rows(s, &lse);
  CHECK(p(0, 0) == doctest::Approx(0.125).epsilon(1e-6));
  CHECK(p(0, 1) == doctest::Approx(0.25).epsilon(1e-6));
  CHECK(p(0, 2) == doctest::Approx(0.625).epsilon(1e-6));
  CHECK(lse(0) == doctest::Approx(std::log(8.0)).epsilon(1e-6));
}

TEST_CASE("softmax: huge scores do not overflow (max subtraction)") {
  // exp(1000) overflows even in float64; softmax([1000, 1001]) = [1/(1+e), e/(1+e)].
  const Tensor2 s = {{1000.0f, 1001.0f}, {-1000.0f, -1001.0f}};
  Tensor1 lse;
  const Tensor2 p = softmax_rows(s, &lse);
  const double e = std::exp(1.0);
  CHECK(p(0, 0) == doctest::Approx(1 / (1 + e)));
  CHECK(p(0, 1) == doctest::Approx(e / (1 + e)));
  CHECK(p(1, 0) == doctest::Approx(e / (1 + e)));
  CHECK(lse(0) == doctest::Approx(1001.0 + std::log1p(std::exp(-1.0))));
}

TEST_CASE("softmax: -inf is an exact zero weight, and the rest renormalises") {
  const Tensor2 s = {{1.0f, -kInf, 1.0f, -kInf}};
  const Tensor2 p = softmax_rows(s);
  CHECK(p(0, 1) == 0.0f);
  CHECK(p(0, 3) == 0.0f);
  CHECK(p(0, 0) == doctest::Approx(0.5));
  CHECK(p(0, 2) == doctest::Approx(0.5));
}

TEST_CASE("softmax: a fully masked row is all zeros with lse -inf, never NaN or uniform") {
  const Tensor2 s = {{-kInf, -kInf, -kInf}, {0.0f, 0.0f, 0.0f}};
  Tensor1 lse;
  const Tensor2 p = softmax_rows(s, &lse);
  for (std::size_t j = 0; j < 3; ++j) {
    CHECK(p(0, j) == 0.0f);
    CHECK(p(1, j) == doctest::Approx(1.0 / 3));
  }
  CHECK(std::isinf(lse(0)));
  CHECK(lse(0) < 0);
  CHECK(lse(1) == doctest::Approx(std::log(3.0)));
}
