// The efficient-attention family on one head (lessons/concepts/approximations.hpp): each
// method's weights recomputed here in float64 from its definition, the errors recomputed from
// those weights, and the kept cells counted by hand.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

#include "attn/engine/core/error.hpp"
#include "attn/engine/core/random.hpp"
#include "attn/lessons/concepts/approximations.hpp"
#include "support.hpp"

using namespace attn;

namespace {

struct Qkv {
  Tensor3 q, k, v;
};

Qkv random_qkv(std::size_t L, std::size_t d, std::uint64_t seed) {
  Rng rng(seed);
  auto draw = [&] {
    Tensor3 t = Tensor3::from_shape({1, L, d});
    for (float& x : t) x = float(rng.normal());
    return t;
  };
  Qkv r{draw(), draw(), draw()};
  return r;
}

double dot(const Tensor3& a, std::size_t i, const Tensor3& b, std::size_t j) {
  double s = 0;
  for (std::size_t c = 0; c < a.shape(2); ++c) s += double(a(0, i, c)) * double(b(0, j, c));
  return s;
}

// Row-normalised weights of `score` over the keys `keep` allows (j <= i always).
template <class Score, class Keep>
std::vector<std::vector<double>> weights_by_hand(std::size_t L, Score score, Keep keep) {
  std::vector<std::vector<double>> w(L, std::vector<double>(L, 0.0));
  for (std::size_t i = 0; i < L; ++i) {
    double sum = 0;
    for (std::size_t j = 0; j <= i; ++j)
      if (keep(i, j)) sum += w[i][j] = score(i, j);
    for (double& x : w[i]) x /= sum;
  }
  return w;
}

double max_gap(const Tensor2& got, const std::vector<std::vector<double>>& want) {
  double m = 0;
  for (std::size_t i = 0; i < want.size(); ++i)
    for (std::size_t j = 0; j < want.size(); ++j) m = std::max(m, std::fabs(double(got(i, j)) - want[i][j]));
  return m;
}

const ApproximationRun& run_of(const ApproximationsLesson& a, const std::string& family) {
  for (const ApproximationRun& r : a.runs)
    if (r.family == family) return r;
  throw std::runtime_error("no run of family " + family);
}

}  // namespace

TEST_CASE("approximations: window, strided and linear weights equal their definitions, computed here") {
  const std::size_t L = 10, d = 8;
  const Qkv x = random_qkv(L, d, 7);
  const double scale = 1 / std::sqrt(double(d));
  const ApproximationsLesson a = run_approximations(x.q, x.k, x.v, scale, std::vector<std::string>(L, "t"), "a test head");
  REQUIRE(a.runs.size() == 5);
  CHECK(a.window == 4);  // ceil(sqrt(10))
  CHECK(a.stride == 4);
  auto softmax_score = [&](std::size_t i, std::size_t j) { return std::exp(scale * dot(x.q, i, x.k, j)); };
  const auto exact = weights_by_hand(L, softmax_score, [](std::size_t, std::size_t) { return true; });
  const auto window = weights_by_hand(L, softmax_score, [](std::size_t i, std::size_t j) { return i - j < 4; });
  const auto strided =
      weights_by_hand(L, softmax_score, [](std::size_t i, std::size_t j) { return i - j < 4 || (i - j) % 4 == 0; });
  auto phi = [](double t) { return t > 0 ? t + 1 : std::exp(t); };  // elu(t) + 1
  const auto linear = weights_by_hand(
      L,
      [&](std::size_t i, std::size_t j) {
        double s = 0;
        for (std::size_t c = 0; c < d; ++c) s += phi(x.q(0, i, c)) * phi(x.k(0, j, c));
        return s;
      },
      [](std::size_t, std::size_t) { return true; });
  CHECK(max_gap(run_of(a, "exact").weights, exact) < 1e-6);
  CHECK(max_gap(run_of(a, "window").weights, window) < 1e-6);
  CHECK(max_gap(run_of(a, "sparse").weights, strided) < 1e-6);
  CHECK(max_gap(run_of(a, "linear").weights, linear) < 1e-6);

  // The errors, from those weights: max |A - P| and the outputs' relative Frobenius norm.
  const std::pair<std::string, std::vector<std::vector<double>>> cases[] = {
      {"window", window}, {"sparse", strided}, {"linear", linear}};
  for (const auto& c : cases) {
    const std::string& family = c.first;
    const std::vector<std::vector<double>>& w = c.second;
    double gap = 0, diff = 0, norm = 0;
    for (std::size_t i = 0; i < L; ++i) {
      for (std::size_t j = 0; j < L; ++j) gap = std::max(gap, std::fabs(w[i][j] - exact[i][j]));
      for (std::size_t c = 0; c < d; ++c) {
        double o = 0, e = 0;
        for (std::size_t j = 0; j < L; ++j) o += w[i][j] * x.v(0, j, c), e += exact[i][j] * x.v(0, j, c);
        diff += (o - e) * (o - e), norm += e * e;
      }
    }
    CAPTURE(family);
    CHECK(run_of(a, family).weight_error == doctest::Approx(gap).epsilon(1e-4));
    CHECK(run_of(a, family).output_error == doctest::Approx(std::sqrt(diff / norm)).epsilon(1e-4));
  }
  CHECK(run_of(a, "exact").weight_error == 0);
  CHECK(run_of(a, "exact").output_error == 0);
}

TEST_CASE("approximations: the cells each method keeps, counted by hand") {
  const std::size_t L = 6;  // window = stride = ceil(sqrt(6)) = 3
  const Qkv x = random_qkv(L, 4, 3);
  const ApproximationsLesson a = run_approximations(x.q, x.k, x.v, 0.5, std::vector<std::string>(L, "t"), "h");
  CHECK(run_of(a, "exact").visible == 21);   // 1 + 2 + ... + 6
  CHECK(run_of(a, "window").visible == 15);  // 1 + 2 + 3 + 3 + 3 + 3
  // rows 0..5: 1, 2, 3, then 3 local keys and one at distance 3 for p = 3, 4, 5
  CHECK(run_of(a, "sparse").visible == 18);
  CHECK(run_of(a, "linear").visible == 21);
  CHECK(!run_of(a, "window").allowed(5, 2));
  CHECK(run_of(a, "sparse").allowed(5, 2));
  CHECK(!run_of(a, "sparse").allowed(5, 1));
  CHECK(!run_of(a, "exact").allowed(2, 3));
}

TEST_CASE("approximations: a sentence no longer than the window is exact under it") {
  const Qkv x = random_qkv(3, 4, 5);  // window 2 < 3 tokens: not exact; at 2 tokens it is
  const Qkv two = random_qkv(2, 4, 5);
  const ApproximationsLesson a = run_approximations(two.q, two.k, two.v, 0.5, {"a", "b"}, "h");
  CHECK(run_of(a, "window").output_error == 0);
  CHECK(run_of(a, "sparse").output_error == 0);
  CHECK(run_approximations(x.q, x.k, x.v, 0.5, {"a", "b", "c"}, "h").runs[1].output_error > 0);
}

TEST_CASE("approximations: performer's error falls as its features grow") {
  const Qkv x = random_qkv(12, 8, 11);
  ApproximationsConfig few, many;
  few.features = 2;
  many.features = 4096;
  const std::vector<std::string> t(12, "t");
  const double e_few = run_of(run_approximations(x.q, x.k, x.v, 0.35, t, "h", few), "performer").output_error;
  const double e_many = run_of(run_approximations(x.q, x.k, x.v, 0.35, t, "h", many), "performer").output_error;
  CHECK(e_many < e_few / 4);
}

TEST_CASE("approximations: refuses shapes it cannot read") {
  const Qkv x = random_qkv(4, 4, 1);
  CHECK_THROWS_AS(run_approximations(x.q, x.k, x.v, 0.5, {"a"}, "h"), InputError);
  const Qkv y = random_qkv(5, 4, 1);
  CHECK_THROWS_AS(run_approximations(x.q, y.k, x.v, 0.5, std::vector<std::string>(4, "t"), "h"), InputError);
  ApproximationsConfig none;
  none.features = 0;
  CHECK_THROWS_AS(run_approximations(x.q, x.k, x.v, 0.5, std::vector<std::string>(4, "t"), "h", none), InputError);
}
