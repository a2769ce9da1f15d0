#include <doctest/doctest.h>

#include <cmath>

#include "attn/engine/core/error.hpp"
#include "attn/lessons/concepts/temperature.hpp"

using namespace attn;

TEST_CASE("temperature: two scores [1, 0] by hand: p = 1/(1 + e^(-1/T)), binary entropy") {
  const TemperatureResult r = run_temperature({1.0, 0.0}, {0.5, 1.0, 3.0});
  REQUIRE(r.points.size() == 3);
  for (const TemperaturePoint& p : r.points) {
    CAPTURE(p.temperature);
    const double a = 1.0 / (1.0 + std::exp(-1.0 / p.temperature)), b = 1 - a;
    CHECK(p.weights[0] == doctest::Approx(a));
    CHECK(p.max_weight == doctest::Approx(a));
    CHECK(p.entropy == doctest::Approx(-a * std::log(a) - b * std::log(b)));
    // Var_p(s) for s in {1, 0} is a b; dH/dT = a b / T^3.
    CHECK(p.entropy_slope == doctest::Approx(a * b / std::pow(p.temperature, 3)));
  }
}

TEST_CASE("temperature: entropy rises strictly with T, the max weight falls, slope matches a finite difference") {
  const TemperatureResult r = run_temperature(kDefaultScores, kDefaultTemperatures);
  CHECK(r.entropy_increasing);
  CHECK(r.max_weight_decreasing);
  for (std::size_t i = 1; i < r.points.size(); ++i) {
    CHECK(r.points[i].entropy > r.points[i - 1].entropy);
    CHECK(r.points[i].entropy <= r.entropy_at_infinity);
  }
  CHECK(r.entropy_at_infinity == doctest::Approx(std::log(5.0)));
  CHECK(r.entropy_at_zero == 0.0);
  // dH/dT against a central difference of H computed by the library at T +- h.
  const double T = 1.5, h = 1e-4;
  const TemperatureResult fd = run_temperature(kDefaultScores, {T - h, T, T + h});
  const double numeric = (fd.points[2].entropy - fd.points[0].entropy) / (2 * h);
  CHECK(fd.points[1].entropy_slope == doctest::Approx(numeric).epsilon(1e-5));
}

TEST_CASE("temperature: equal scores stay uniform - ties at the max set the T -> 0 limit") {
  const TemperatureResult flat = run_temperature({0.3, 0.3, 0.3}, {0.1, 1, 10});
  CHECK_FALSE(flat.entropy_increasing);
  for (const TemperaturePoint& p : flat.points) CHECK(p.entropy == doctest::Approx(std::log(3.0)));
  const TemperatureResult tie = run_temperature({2, 2, 0}, {0.05, 20, 1});
  CHECK(tie.entropy_at_zero == doctest::Approx(std::log(2.0)));
  CHECK(tie.points.front().temperature == 0.05);  // sorted
  CHECK(tie.points.front().entropy == doctest::Approx(std::log(2.0)).epsilon(1e-6));
}

TEST_CASE("temperature: bad input is an input error") {
  CHECK_THROWS_AS(run_temperature({1.0}, {1.0}), InputError);
  CHECK_THROWS_AS(run_temperature({1.0, 2.0}, {0.0}), InputError);
  CHECK_THROWS_AS(run_temperature({1.0, 2.0}, {-1.0}), InputError);
  CHECK_THROWS_AS(run_temperature({1.0, INFINITY}, {1.0}), InputError);
  CHECK_THROWS_AS(run_temperature({1.0, 2.0}, {}), InputError);
  CHECK_THROWS_AS(run_temperature({1.0, 2.0}, {1e-300}), InputError);  // slope / T^3 would overflow
  CHECK_THROWS_AS(run_temperature({1.0, 1e308}, {0.5}), InputError);
  // The extremes allowed still give finite numbers.
  const TemperatureResult r = run_temperature({1e6, -1e6, 0}, {1e-3, 1e6});
  for (const TemperaturePoint& p : r.points) {
    CHECK(std::isfinite(p.entropy));
    CHECK(std::isfinite(p.entropy_slope));
  }
}
