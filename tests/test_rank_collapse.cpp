// The rank-collapse engine (attention_stack.hpp) and lesson (rank_collapse.hpp): the residual
// and the layers against closed forms, the skip setting against the toy model's own float32
// forward pass, the fits on curves whose kind is known. scripts/check_rank_collapse.py checks
// the printed numbers against float64 NumPy (CTest: rank_collapse_vs_numpy).
#include <doctest/doctest.h>

#include <cmath>

#include "attn/engine/attention/attention_stack.hpp"
#include "attn/engine/core/error.hpp"
#include "attn/engine/training/toy_backprop.hpp"
#include "attn/engine/models/toy_model.hpp"
#include "attn/lessons/concepts/rank_collapse.hpp"
#include "support.hpp"

using namespace attn;
using namespace attn::test;

namespace {

// One layer whose attention is uniform (W_q = W_k = 0) and whose values pass X through
// (W_v = W_o = I): SA(X) = 1 xbar^T, every row the mean row.
StackLayer uniform_identity_layer(std::size_t D) {
  StackLayer l;
  l.w_q = l.w_k = xt::zeros<float>({D, D});
  l.w_v = l.w_o = xt::eye<float>(D);
  l.w_1 = l.w_2 = xt::eye<float>(D);  // relu(X) as the MLP
  return l;
}

}  // namespace

TEST_CASE("relative_residual: ||X - 1 xbar^T||_F / ||X||_F against hand-worked matrices") {
  CHECK(relative_residual(xt::xtensor<double, 2>{{1.0, 2.0}, {1.0, 2.0}, {1.0, 2.0}}) == 0.0);
  CHECK(relative_residual(xt::xtensor<double, 2>{{1.0, 0.0}, {-1.0, 0.0}}) == doctest::Approx(1.0));
  // column [1, 3]: mean 2, residual sqrt(2), norm sqrt(10)
  CHECK(relative_residual(xt::xtensor<double, 2>{{1.0}, {3.0}}) == doctest::Approx(std::sqrt(0.2)).epsilon(1e-15));
  CHECK(relative_residual(xt::zeros<double>({3, 2})) == 0.0);
}

TEST_CASE("stack_residuals: a uniform layer collapses X in one step, a skip keeps its centred part") {
  const Tensor2 x{{1, 2}, {3, -1}, {0, 5}};
  const std::vector<StackLayer> one{uniform_identity_layer(2)};
  const double r0 = relative_residual(xt::cast<double>(x));
  // attention only: SA(X) = 1 xbar^T, every row the same
  const std::vector<double> a = stack_residuals(x, one, StackSetting::attention_only, 1, false);
  REQUIRE(a.size() == 2);
  CHECK(a[0] == doctest::Approx(r0));
  CHECK(a[1] < 1e-15);
  // skip: X + 1 xbar^T has the same centred part as X and norm ||X + 1 xbar^T||_F
  const xt::xtensor<double, 2> xd = xt::cast<double>(x);
  const xt::xtensor<double, 1> mean = xt::mean(xd, {0});
  xt::xtensor<double, 2> shifted = xd;
  for (std::size_t i = 0; i < 3; ++i) xt::row(shifted, i) += mean;
  const double centred = r0 * std::sqrt(xt::sum(xd * xd)());
  const std::vector<double> s = stack_residuals(x, one, StackSetting::skip, 1, false);
  CHECK(s[1] == doctest::Approx(centred / std::sqrt(xt::sum(shifted * shifted)())).epsilon(1e-14));
  // skip + MLP: then X + relu(X); the MLP alone after the collapse keeps it collapsed
  CHECK(stack_residuals(x, one, StackSetting::mlp, 1, false)[1] < 1e-15);
  xt::xtensor<double, 2> both = shifted + xt::maximum(shifted, 0.0);
  CHECK(stack_residuals(x, one, StackSetting::skip_mlp, 1, false)[1] ==
        doctest::Approx(relative_residual(both)).epsilon(1e-14));
  // shapes refused
  CHECK_THROWS_AS(stack_residuals(x, one, StackSetting::attention_only, 3, false), InputError);
  StackLayer no_mlp = one[0];
  no_mlp.w_1 = Tensor2{};
  CHECK_THROWS_AS(stack_residuals(x, {no_mlp}, StackSetting::mlp, 1, false), InputError);
}

TEST_CASE("stack_residuals: skip + causal is the toy model's own residual stream") {
  const ToyModel model = init_toy_model({11, 16, 2, 3, 9}, 4);
  const std::vector<std::int32_t> tokens{3, 1, 4, 1, 5, 9, 2, 6, 5};
  const ToyForward f = toy_forward(model, tokens);  // float32, the model's own path
  Tensor2 x0 = Tensor2::from_shape({tokens.size(), 16});
  for (std::size_t i = 0; i < tokens.size(); ++i)
    for (std::size_t c = 0; c < 16; ++c) x0(i, c) = model.embed(tokens[i], c) + model.pos(i, c);
  std::vector<StackLayer> layers;
  for (const ToyLayer& l : model.layers) layers.push_back({l.w_q, l.w_k, l.w_v, l.w_o, {}, {}});
  const std::vector<double> r = stack_residuals(x0, layers, StackSetting::skip, 2, true);
  REQUIRE(r.size() == f.residual.size());
  for (std::size_t l = 0; l < r.size(); ++l) {
    CAPTURE(l);
    CHECK(r[l] == doctest::Approx(relative_residual(xt::cast<double>(f.residual[l]))).epsilon(1e-5));
  }
  // and not the stream without the skip
  CHECK(std::fabs(stack_residuals(x0, layers, StackSetting::attention_only, 2, true)[3] - r[3]) > 1e-3);
}

TEST_CASE("fit_collapse: recovers b of r_l = exp(-a b^l) and rejects an exponential fall") {
  std::vector<double> doubly, single;
  for (int l = 0; l <= 8; ++l) {
    doubly.push_back(std::exp(-0.05 * std::pow(3.0, l)));  // r_5 = 5e-6, r_6 = exp(-36.45) = 1.5e-16
    single.push_back(std::pow(0.3, l + 0.01));
  }
  const CollapseFit d = fit_collapse(doubly);
  CHECK(d.first == 1);
  CHECK(d.last == 5);  // r_6 is below round-off
  CHECK(d.growth == doctest::Approx(3.0).epsilon(1e-12));
  CHECK(d.rms_doubly < 1e-12);
  CHECK(d.doubly_exponential);
  const CollapseFit s = fit_collapse(single);
  CHECK(std::exp(s.beta) == doctest::Approx(0.3).epsilon(1e-12));
  CHECK(s.rms_exponential < 1e-12);
  CHECK_FALSE(s.doubly_exponential);
  CHECK(fit_collapse({0.9, 1e-20}).points == 0);  // nothing above round-off past r_0
}

TEST_CASE("run_rank_collapse: pure attention collapses doubly exponentially, skips keep the rank") {
  RankCollapseConfig c;
  c.layers = 10;
  const RankCollapseResult r = run_rank_collapse(c);
  for (const SettingResidual& s : r.settings) {
    REQUIRE(s.r.size() == 11);
    CHECK(s.r[0] == r.settings[0].r[0]);  // the same X_0 in every setting
  }
  CHECK(r.pure_attention_doubly_exponential);
  CHECK(r.settings[0].layer_at_floor.has_value());
  CHECK(r.skip_keeps_rank);
  CHECK(r.settings[1].smallest > 1e6 * r.settings[0].smallest);
  // seeded: the same numbers again
  CHECK(run_rank_collapse(c).settings[3].r == r.settings[3].r);
  c.heads = 5;
  CHECK_THROWS_AS(run_rank_collapse(c), InputError);
}
