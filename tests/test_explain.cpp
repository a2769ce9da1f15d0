#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "attn/engine/core/error.hpp"
#include "attn/lessons/concepts/explain.hpp"

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
    CHECK(r.row_max(i) == doctest::Approx(m).epsilon(1e-5));
    for (std::size_t j = 0; j < L; ++j) {
      if (r.allowed(i, j)) CHECK(r.shifted(i, j) == doctest::Approx(row[j] - m).epsilon(1e-5).scale(1));
      else CHECK(std::isinf(r.shifted(i, j)));
      CHECK(r.shifted(i, j) <= 0.0f);
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

TEST_CASE("explain: JSON has the six steps, -inf as null, and the check") {
  const Json j = explain_json(explain_attention({}));
  REQUIRE(j["steps"].size() == 6);
  CHECK(j["steps"][0]["name"] == "scores");
  CHECK(j["steps"][2]["matrix"][0][1].is_null());   // blocked: -inf
  CHECK(j["steps"][2]["mask"][0][1] == 0);
  CHECK(j["steps"][3]["name"] == "shifted");
  CHECK(j["steps"][3]["matrix"][0][0] == 0.0);      // the only key of row 0 is its max
  CHECK(j["steps"][4]["row_sums"].size() == 4);
  CHECK(j["steps"][5]["name"] == "output");
  CHECK(j["check"]["max_abs_diff"].get<double>() <= 1e-6);
  CHECK(!j.contains("online"));
  CHECK(!j.contains("jacobian"));
}

TEST_CASE("explain --online: the recurrence key by key, ending on the softmax row and the output row") {
  ExplainConfig c;
  c.sentence = "The cat sat on the mat";
  c.online = true;
  c.row = 4;
  const ExplainResult r = explain_attention(c);
  REQUIRE(r.online);
  const OnlineTrace& o = *r.online;
  REQUIRE(o.steps.size() == 6);
  // By hand: after key j, m is the max of the scores seen so far and l = sum exp(s - m) over them.
  double m = -INFINITY;
  for (std::size_t j = 0; j < 6; ++j) {
    CAPTURE(j);
    const OnlineStep& s = o.steps[j];
    CHECK(s.masked == (j > 4));
    if (s.masked) continue;
    const double m_before = m;
    m = std::max(m, double(r.scaled(4, j)));
    CHECK(s.m == doctest::Approx(m));
    if (j > 0) CHECK(s.rescale == doctest::Approx(std::exp(m_before - m)));
    double l = 0;
    for (std::size_t k = 0; k <= j; ++k) l += std::exp(double(r.scaled(4, k)) - m);
    CHECK(s.l == doctest::Approx(l));
  }
  CHECK(o.steps[5].l == o.steps[4].l);  // a masked key changes nothing
  for (std::size_t j = 0; j < 6; ++j) CHECK(o.weights[j] == doctest::Approx(r.weights(4, j)).epsilon(1e-6));
  CHECK(o.max_weight_diff < 1e-6);
  CHECK(o.max_output_diff < 1e-5);
  const Json j = explain_json(r);
  CHECK(j["online"]["steps"][5]["m"] == j["online"]["steps"][4]["m"]);
  CHECK(j["online"]["steps"][0]["rescale"] == 0.0);  // nothing before the first key
}

TEST_CASE("explain --jacobian: diag(p) - p p^T by hand on two keys, p - y, and the finite-difference check") {
  ExplainConfig c;  // causal: row 1 sees keys 0 and 1 only
  c.jacobian = true;
  c.row = 1;
  c.target = 0;
  const ExplainResult r = explain_attention(c);
  REQUIRE(r.jacobian);
  const JacobianLesson& J = *r.jacobian;
  const double p0 = r.weights(1, 0), p1 = r.weights(1, 1);
  // Two keys: d p0 / d s0 = p0 (1 - p0) = p0 p1, d p0 / d s1 = -p0 p1, and the same for p1.
  CHECK(J.jacobian(0, 0) == doctest::Approx(p0 * p1).epsilon(1e-5));
  CHECK(J.jacobian(0, 1) == doctest::Approx(-p0 * p1).epsilon(1e-5));
  CHECK(J.jacobian(1, 1) == doctest::Approx(p0 * p1).epsilon(1e-5));
  for (std::size_t k = 0; k < 4; ++k) {
    CHECK(J.jacobian(2, k) == 0.0f);  // masked keys: no weight, no derivative
    CHECK(J.jacobian(k, 3) == 0.0f);
  }
  CHECK(J.max_fd_diff < 1e-8);
  CHECK(J.max_row_sum < 1e-15);
  REQUIRE(J.grad_ce.size() == 4);
  CHECK(J.grad_ce[0] == doctest::Approx(p0 - 1).epsilon(1e-6));
  CHECK(J.grad_ce[1] == doctest::Approx(p1).epsilon(1e-6));
  CHECK(J.grad_ce[2] == 0.0);
  CHECK(J.max_ce_fd_diff < 1e-8);
  c.target = 2;  // row 1 may not attend to key 2
  CHECK_THROWS_AS(explain_attention(c), InputError);
  c.target.reset();
  c.row = 4;
  CHECK_THROWS_AS(explain_attention(c), InputError);
}

TEST_CASE("explain --symmetry: x x^T is symmetric to the last bit, Q K^T is not, nor are the weights") {
  ExplainConfig c;
  c.symmetry = true;
  const ExplainResult r = explain_attention(c);
  REQUIRE(r.symmetry);
  CHECK(r.symmetry->scores_no_projection == 0.0);
  CHECK(r.symmetry->scores_with_projection > 1e-3);
  CHECK(r.symmetry->weights_no_projection > 1e-3);
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
