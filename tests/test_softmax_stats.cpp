#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "attn/engine/core/random.hpp"
#include "attn/lessons/concepts/softmax_stats.hpp"

using namespace attn;

TEST_CASE("softmax_stats: the uniform row: max 1/n, entropy ln n, ||J||F = sqrt(n-1)/n") {
  for (std::size_t n : {2u, 3u, 8u, 64u}) {
    const std::vector<double> p(n, 1.0 / n);
    CHECK(max_weight(p) == doctest::Approx(1.0 / n));
    CHECK(entropy_nats(p) == doctest::Approx(std::log(double(n))));
    // J = I/n - 11^T/n^2: diagonal (n-1)/n^2 (n times), off-diagonal -1/n^2 (n(n-1) times).
    const double fro2 = n * std::pow((n - 1.0) / (n * n), 2) + n * (n - 1.0) * std::pow(1.0 / (n * n), 2);
    CHECK(softmax_jacobian_frobenius(p) == doctest::Approx(std::sqrt(fro2)));
    CHECK(softmax_jacobian_frobenius(p) == doctest::Approx(std::sqrt(n - 1.0) / n));
  }
}

TEST_CASE("softmax_stats: a one-hot row has entropy 0 and a zero Jacobian (the vanishing gradient)") {
  const std::vector<double> p = {0, 1, 0, 0};
  CHECK(max_weight(p) == 1.0);
  CHECK(entropy_nats(p) == 0.0);
  CHECK(softmax_jacobian_frobenius(p) == 0.0);
  // Two equal halves: J = [[1/4, -1/4], [-1/4, 1/4]], Frobenius norm sqrt(4/16) = 1/2.
  CHECK(softmax_jacobian_frobenius(std::vector<double>{0.5, 0.5}) == doctest::Approx(0.5));
}

TEST_CASE("softmax_stats: ||J||F^2 = sum p^2 - 2 sum p^3 + (sum p^2)^2 on random rows") {
  Rng rng(7);
  for (int trial = 0; trial < 20; ++trial) {
    std::vector<double> s(5 + trial % 7);
    for (double& x : s) x = 3 * rng.normal();
    const std::vector<double> p = softmax_of(s);
    double s2 = 0, s3 = 0, sum = 0;
    for (double x : p) {
      s2 += x * x;
      s3 += x * x * x;
      sum += x;
    }
    CHECK(sum == doctest::Approx(1.0));
    CHECK(softmax_jacobian_frobenius(p) == doctest::Approx(std::sqrt(s2 - 2 * s3 + s2 * s2)));
  }
}

TEST_CASE("softmax_stats: softmax_of applies the factor before the softmax") {
  // softmax([0, ln 3] * 1) = [1/4, 3/4]; with factor 1/2: [1, sqrt 3] / (1 + sqrt 3).
  const std::vector<double> s = {0.0, std::log(3.0)};
  const std::vector<double> p = softmax_of(s), half = softmax_of(s, 0.5);
  CHECK(p[1] == doctest::Approx(0.75));
  CHECK(half[1] == doctest::Approx(std::sqrt(3.0) / (1 + std::sqrt(3.0))));
}

TEST_CASE("softmax_stats: the Jacobian norm from the scores stays exact when the top weight rounds to 1") {
  // Scores (0, -60): p1 = e^-60 / (1 + e^-60) ~ 8.8e-27 and p0 rounds to 1.0 in double. By hand
  // J = [[a, -a], [-a, a]] with a = p0 p1, so ||J||F = 2a. From the rounded weights the diagonal
  // p0 (1 - p0) is 0 and the norm comes out sqrt(3) a: 13 % low.
  const double e = std::exp(-60.0), a = e / ((1 + e) * (1 + e));
  const std::vector<double> scores = {0.0, -60.0};
  CHECK(softmax_jacobian_frobenius_of_scores(scores) == doctest::Approx(2 * a).epsilon(1e-12));
  CHECK(softmax_jacobian_frobenius(softmax_of(scores)) == doctest::Approx(std::sqrt(3.0) * a).epsilon(1e-12));
  // The factor scales the scores: (0, -60) at factor 1/2 is (0, -30).
  const double e2 = std::exp(-30.0);
  CHECK(softmax_jacobian_frobenius_of_scores(scores, 0.5) == doctest::Approx(2 * e2 / ((1 + e2) * (1 + e2))));
  // Away from saturation both ways agree.
  Rng rng(3);
  std::vector<double> s(9);
  for (double& x : s) x = rng.normal();
  CHECK(softmax_jacobian_frobenius_of_scores(s, 0.7) == doctest::Approx(softmax_jacobian_frobenius(softmax_of(s, 0.7))));
}
