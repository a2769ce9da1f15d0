// score_mod_math.hpp (the per-score modifier math the CUDA kernels run) against ScoreMod, the
// descriptor every CPU backend applies: the same score and slope for the soft-cap, ALiBi and
// both, in double exactly and in float within float rounding, over scores near 0, moderate and
// far past the cap, both signs of the ALiBi distance and of the slope.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "attn/engine/attention/score_mod_math.hpp"
#include "attn/engine/attention/variant.hpp"

using namespace attn;

namespace {

// Scores from 0 (both signs) through 1e-30 .. 1e4, each with both signs.
std::vector<double> scores() {
  std::vector<double> xs = {0.0, -0.0};
  for (double a : {1e-30, 1e-7, 1e-3, 0.1, 0.5, 1.0, 2.0, 3.75, 7.0, 19.0, 50.0, 120.0, 1e4})
    for (double s : {1.0, -1.0}) xs.push_back(s * a);
  return xs;
}

// Query i of an Lq x Lk problem at position p = i + Lk - Lq, key j: distances of both signs.
struct Pair {
  long p, j;
};
const Pair kPairs[] = {{5, 5}, {9, 2}, {3, 10}, {1000, 0}, {0, 1000}};

ScoreMod make_mod(double cap, const std::vector<double>& slopes) {
  ScoreMod m;
  if (cap > 0) m.softcap = variants::SoftCap{cap};
  if (!slopes.empty()) m.alibi = variants::AlibiBias{slopes};
  return m;
}

// Every score, pair and head of `mod` through both: double exactly; float within a few float
// roundings of the double result, relative to the larger of the score and the bias (so a soft-cap
// near 0 is held to x's own size), plus x's own rounding to float. Returns how many were compared.
int compare(double cap, const std::vector<double>& slopes) {
  const ScoreMod mod = make_mod(cap, slopes);
  const std::size_t heads = slopes.empty() ? 1 : slopes.size();
  const double eps = std::numeric_limits<float>::epsilon();
  int n = 0;
  for (std::size_t h = 0; h < heads; ++h) {
    const double m = slopes.empty() ? 0.0 : slopes[h];
    for (const Pair& at : kPairs)
      for (double x : scores()) {
        const ScoreMod::Sloped want = mod.apply_with_slope(x, h, at.p, at.j);
        const tile::ModifiedScore<double> got = tile::modify_score(x, cap, m, at.p - at.j);
        INFO("cap " << cap << ", slope " << m << ", p " << at.p << ", j " << at.j << ", x " << x);
        CHECK(got.score == want.score);
        CHECK(got.slope == want.slope);
        const tile::ModifiedScore<float> f = tile::modify_score(float(x), float(cap), float(m), at.p - at.j);
        const double unit = std::max(std::fabs(want.score), std::fabs(m * double(at.p - at.j)));
        const double input = std::fabs(double(float(x)) - x);  // x itself rounded to float
        CHECK(std::fabs(double(f.score) - want.score) <= 4 * eps * unit + input);
        CHECK(std::fabs(double(f.slope) - want.slope) <= 8 * eps);
        ++n;
      }
  }
  return n;
}

}  // namespace

TEST_CASE("score_mod_math: the soft-cap, ALiBi and both match ScoreMod's score and slope") {
  CHECK(compare(0.0, {}) > 0);                         // no modifier: x itself, slope 1
  for (double cap : {0.5, 5.0, 30.0, 50.0}) CHECK(compare(cap, {}) > 0);
  CHECK(compare(0.0, {0.5, 0.0625, -0.25, 1.0 / 256}) > 0);
  CHECK(compare(50.0, {0.5, 0.0625, -0.25, 1.0 / 256}) > 0);
  CHECK(compare(2.0, {1.0, 0.125}) > 0);
}

TEST_CASE("score_mod_math: what each modifier does, by hand") {
  // The soft-cap is odd, about x near 0 (slope 1), and saturates at +-c with slope 0.
  const auto near0 = tile::modify_score(1e-7, 5.0, 0.0, 0);
  CHECK(near0.score == doctest::Approx(1e-7).epsilon(1e-12));
  CHECK(near0.slope == doctest::Approx(1.0).epsilon(1e-12));
  CHECK(tile::modify_score(-3.0, 5.0, 0.0, 0).score == -tile::modify_score(3.0, 5.0, 0.0, 0).score);
  CHECK(tile::modify_score(1e4, 5.0, 0.0, 0).score == doctest::Approx(5.0));
  CHECK(tile::modify_score(-1e4f, 5.0f, 0.0f, 0).score == -5.0f);
  CHECK(tile::modify_score(1e4f, 5.0f, 0.0f, 0).slope == 0.0f);  // float: tanh rounds to 1
  CHECK(tile::modify_score(2.0, 2.0, 0.0, 0).slope == doctest::Approx(1 - std::tanh(1.0) * std::tanh(1.0)));
  // ALiBi: a key behind the query (p > j) is lowered by m (p - j), one ahead raised; slope 1.
  CHECK(tile::modify_score(1.0, 0.0, 0.5, 4).score == -1.0);
  CHECK(tile::modify_score(1.0, 0.0, 0.5, -4).score == 3.0);
  CHECK(tile::modify_score(1.0, 0.0, 0.5, 4).slope == 1.0);
  CHECK(tile::modify_score(1.0f, 0.0f, 0.25f, 0).score == 1.0f);  // the key at the query's own position
  // Both: the cap first, then the bias, which the cap does not bound.
  const auto both = tile::modify_score(100.0, 5.0, 1.0, -3);
  CHECK(both.score == doctest::Approx(5.0 * std::tanh(20.0) + 3.0));
  CHECK(both.score > 5.0);
  CHECK(both.slope == doctest::Approx(1 - std::tanh(20.0) * std::tanh(20.0)));
}
