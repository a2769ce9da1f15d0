#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "attn/engine/error.hpp"
#include "attn/lessons/explain.hpp"

using namespace attn;

namespace {

// Recomputes the five steps from Q, K, V with plain loops in double, as a textbook writes them.
void check_steps_by_hand(const ExplainResult& r) {
  const std::size_t L = r.tokens.size(), d = r.config.d_model;
  const double scale = 1.0 / std::sqrt(double(d));
  CHECK(r.scale == doctest::Approx(scale));
  for (std::size_t i = 0; i < L; ++i) {
    std::vector<double> row(L);
    double m = -INFINITY;
    for (std::size_t j = 0; j < L; ++j) {
      double s = 0;
      for (std::size_t c = 0; c < d; ++c) s += double(r.q(i, c)) * double(r.k(j, c));
      CHECK(r.scores(i, j) == doctest::Approx(s).epsilon(1e-5));
      CHECK(r.scaled(i, j) == doctest::Approx(s * scale).epsilon(1e-5));
      const bool visible = !r.config.causal || j <= i;
      CHECK(r.allowed(i, j) == visible);
      row[j] = visible ? s * scale : -INFINITY;
      if (visible) CHECK(r.masked(i, j) == doctest::Approx(row[j]).epsilon(1e-5));
      else CHECK(std::isinf(r.masked(i, j)));
      m = std::max(m, row[j]);
    }
    double z = 0;
    for (double& x : row) z += (x = std::exp(x - m));
    for (std::size_t j = 0; j < L; ++j) CHECK(r.weights(i, j) == doctest::Approx(row[j] / z).epsilon(1e-5));
    CHECK(r.row_sums(i) == doctest::Approx(1.0).epsilon(1e-6));
    for (std::size_t c = 0; c < d; ++c) {
      double o = 0;
      for (std::size_t j = 0; j < L; ++j) o += row[j] / z * double(r.v(j, c));
      CHECK(r.output(i, c) == doctest::Approx(o).epsilon(1e-5));
    }
  }
}

}  // namespace

TEST_CASE("explain: every step equals a by-hand computation - the last equals attn::sdpa") {
  const ExplainResult r = explain_attention({});
  REQUIRE(r.tokens.size() == 4);  // 我 / 喜欢 / 深度 / 学习
  CHECK(r.tokens[1] == "喜欢");
  check_steps_by_hand(r);
  // Step by step rounds to float32 after each step; one sdpa call runs in float64. Values are
  // O(1), so they agree to a few float32 ulps.
  CHECK(r.max_abs_diff <= 1e-6);
  CHECK(r.weights(0, 1) == 0.0f);  // causal: the first query sees only itself
  CHECK(r.weights(0, 0) == 1.0f);
}

TEST_CASE("explain: no mask, another sentence and width") {
  ExplainConfig c;
  c.sentence = "The cat sat on the mat";
  c.causal = false;
  c.d_model = 3;
  const ExplainResult r = explain_attention(c);
  REQUIRE(r.tokens.size() == 6);
  check_steps_by_hand(r);
  CHECK(r.max_abs_diff <= 1e-6);
}

TEST_CASE("explain: JSON has the five steps, -inf as null, and the check") {
  const Json j = explain_json(explain_attention({}));
  REQUIRE(j["steps"].size() == 5);
  CHECK(j["steps"][0]["name"] == "scores");
  CHECK(j["steps"][2]["matrix"][0][1].is_null());   // blocked: -inf
  CHECK(j["steps"][2]["mask"][0][1] == 0);
  CHECK(j["steps"][3]["row_sums"].size() == 4);
  CHECK(j["check"]["max_abs_diff"].get<double>() <= 1e-6);
}

TEST_CASE("explain: bad input is an input error") {
  ExplainConfig c;
  c.sentence = "";
  CHECK_THROWS_AS(explain_attention(c), InputError);
  c.sentence = "a b c d e";
  c.max_tokens = 3;
  CHECK_THROWS_AS(explain_attention(c), InputError);
  c.max_tokens = 16;
  c.d_model = 0;
  CHECK_THROWS_AS(explain_attention(c), InputError);
}
