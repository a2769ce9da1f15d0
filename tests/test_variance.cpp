#include <doctest/doctest.h>

#include <cmath>
#include <numeric>

#include "attn/engine/core/error.hpp"
#include "attn/engine/core/random.hpp"
#include "attn/lessons/concepts/variance.hpp"

using namespace attn;

namespace {

// The large-S standard errors, written independently of the library's exact form:
// Var(q.k) = d, E[(q.k)^4] = 3d^2 + 6d, so Var(s^2) ~ (mu4 - sigma^4)/S = (2d^2 + 6d)/S.
double se_var(double d, double S) { return std::sqrt((2 * d * d + 6 * d) / S); }
double se_mean(double d, double S) { return std::sqrt(d / S); }

// Each check allows 4 standard errors: with 4 x 4 = 16 estimates in a sweep the chance that a
// correct implementation fails one, for some seed, is about 16 * 6.3e-5 = 1e-3 (normal tails);
// the seed is fixed, so the test is deterministic as well.
constexpr double kZ = 4.0;

VarianceConfig small_sweep() {
  VarianceConfig c;
  c.d_ks = {4, 16, 64, 256};
  c.samples = 4000;
  c.keys = 32;
  c.seed = 42;
  return c;
}

}  // namespace

TEST_CASE("variance: the derived standard error of the sample variance matches replications") {
  // 400 independent experiments of S = 50 pairs at d = 4: the spread of their sample variances
  // is what sample_variance_se predicts. The std of 400 draws is itself uncertain by ~4-6%
  // here (kurtosis of s^2 included), so 15% is about 3 of those.
  const std::size_t d = 4, S = 50, R = 400;
  Rng rng(2024);
  std::vector<double> vars;
  for (std::size_t r = 0; r < R; ++r) {
    std::vector<double> z(S);
    for (double& x : z) {
      x = 0;
      for (std::size_t i = 0; i < d; ++i) x += rng.normal() * rng.normal();
    }
    const double m = std::accumulate(z.begin(), z.end(), 0.0) / S;
    double ss = 0;
    for (double x : z) ss += (x - m) * (x - m);
    vars.push_back(ss / (S - 1));
  }
  const double mv = std::accumulate(vars.begin(), vars.end(), 0.0) / R;
  double ss = 0;
  for (double v : vars) ss += (v - mv) * (v - mv);
  const double observed_sd = std::sqrt(ss / (R - 1));
  const double predicted = sample_variance_se(d, S);
  CHECK(observed_sd == doctest::Approx(predicted).epsilon(0.15));
  CHECK(mv == doctest::Approx(double(d)).epsilon(0.05));  // s^2 is unbiased: E s^2 = d
  // For large S the exact form approaches the simplified (2d^2 + 6d)/S.
  CHECK(sample_variance_se(64, 1000000) == doctest::Approx(se_var(64, 1e6)).epsilon(1e-5));
}

TEST_CASE("variance: Var(q.k) is d_k and Var(q.k/sqrt(d_k)) is 1, within sampling error") {
  const VarianceResult r = run_variance(small_sweep());
  REQUIRE(r.rows.size() == 4);
  for (const VarianceRow& x : r.rows) {
    CAPTURE(x.d_k);
    const double d = double(x.d_k), S = double(x.samples);
    CHECK(std::fabs(x.mean_unscaled) <= kZ * se_mean(d, S));
    CHECK(std::fabs(x.var_unscaled - d) <= kZ * se_var(d, S));
    CHECK(std::fabs(x.mean_scaled) <= kZ * se_mean(1, S));
    CHECK(std::fabs(x.var_scaled - 1.0) <= kZ * se_var(d, S) / d);
    // The scaled values are the unscaled ones divided by sqrt(d_k), nothing else.
    CHECK(x.var_scaled * d == doctest::Approx(x.var_unscaled).epsilon(1e-9));
    CHECK(x.var_unscaled_theory == d);
    CHECK(x.var_unscaled_se == doctest::Approx(se_var(d, S)).epsilon(0.01));
    // And the claim that fails: without the scale, the variance is nowhere near 1.
    if (x.d_k >= 16) CHECK(std::fabs(x.var_unscaled - 1.0) > kZ * se_var(d, S));
  }
}

TEST_CASE("variance: unscaled softmax saturates with d_k, scaled does not") {
  const VarianceResult r = run_variance(small_sweep());
  for (std::size_t i = 1; i < r.rows.size(); ++i) {
    const VarianceRow &a = r.rows[i - 1], &b = r.rows[i];
    CAPTURE(b.d_k);
    CHECK(b.max_weight_unscaled > a.max_weight_unscaled);
    CHECK(b.entropy_unscaled < a.entropy_unscaled);
    CHECK(std::fabs(b.entropy_scaled - a.entropy_scaled) < 0.2);
  }
  const VarianceRow& last = r.rows.back();  // d_k = 256: scores with std 16
  CHECK(last.max_weight_unscaled > 0.8);
  CHECK(last.jacobian_unscaled < 0.5 * last.jacobian_scaled);  // the vanishing gradient
  CHECK(r.entropy_uniform == doctest::Approx(std::log(32.0)));
  CHECK(last.softmax_rows == 4000 / 32);
}

TEST_CASE("variance: a row depends only on (seed, d_k), not on the rest of the sweep") {
  VarianceConfig alone = small_sweep();
  alone.d_ks = {64};
  const VarianceRow a = run_variance(alone).rows[0];
  const VarianceRow b = run_variance(small_sweep()).rows[2];
  CHECK(a.var_unscaled == b.var_unscaled);
  CHECK(a.entropy_unscaled == b.entropy_unscaled);
  alone.seed = 43;
  CHECK(run_variance(alone).rows[0].var_unscaled != a.var_unscaled);
}

TEST_CASE("variance: bad configurations are input errors") {
  VarianceConfig c = small_sweep();
  c.d_ks = {};
  CHECK_THROWS_AS(run_variance(c), InputError);
  c.d_ks = {8, 0};
  CHECK_THROWS_AS(run_variance(c), InputError);
  c = small_sweep();
  c.samples = 1;
  CHECK_THROWS_AS(run_variance(c), InputError);
  c = small_sweep();
  c.d_ks = {65536};
  c.samples = 100000000;
  CHECK_THROWS_WITH_AS(run_variance(c), doctest::Contains("too large"), InputError);
}

TEST_CASE("variance: the JSON has the contract's fields") {
  VarianceConfig c = small_sweep();
  c.d_ks = {8};
  c.samples = 100;
  const Json j = variance_json(run_variance(c));
  REQUIRE(j["rows"].size() == 1);
  for (const char* f : {"d_k", "samples", "mean_unscaled", "var_unscaled", "mean_scaled", "var_scaled"})
    CHECK(j["rows"][0].contains(f));
  CHECK(j["rows"][0]["d_k"] == 8);
  CHECK(j["rows"][0]["samples"] == 100);
}

TEST_CASE("variance: the unscaled Jacobian norm's rise is found where the rows put it, and stated") {
  VarianceResult r;
  auto row = [](std::size_t d_k, double unscaled, double scaled) {
    VarianceRow x;
    x.d_k = d_k;
    x.jacobian_unscaled = unscaled;
    x.jacobian_scaled = scaled;
    return x;
  };
  // By hand: rises to 0.33 at d_k = 16, above the scaled 0.18 up to 64, below from 128.
  r.rows = {row(1, 0.16, 0.16), row(4, 0.24, 0.17), row(16, 0.33, 0.18), row(64, 0.20, 0.18), row(128, 0.15, 0.19)};
  const auto rise = jacobian_rise(r);
  REQUIRE(rise);
  CHECK(rise->peak_d_k == 16);
  CHECK(rise->peak == 0.33);
  CHECK(rise->last_above_d_k == 64);
  CHECK(rise->first_below_d_k == 128);
  const std::string s = jacobian_rise_sentence(*rise);
  CHECK(s.find("0.33 at d_k = 16") != std::string::npos);
  CHECK(s.find("up to d_k = 64 and is below from d_k = 128") != std::string::npos);
  // Falling from the start: no rise to explain.
  r.rows = {row(64, 0.20, 0.18), row(128, 0.15, 0.19)};
  CHECK(!jacobian_rise(r));
  // Still above at the end of the sweep: the crossing is not claimed.
  r.rows = {row(1, 0.16, 0.16), row(16, 0.33, 0.18)};
  REQUIRE(jacobian_rise(r));
  CHECK(jacobian_rise(r)->first_below_d_k == 0);
  CHECK(jacobian_rise_sentence(*jacobian_rise(r)).find("below from") == std::string::npos);
}
