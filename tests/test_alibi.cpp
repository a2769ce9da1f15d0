// ALiBi: the slopes of the paper's reference code, the bias matrix, and the kernel's use of it.
#include <doctest/doctest.h>

#include <cmath>

#include "attn/engine/positions/alibi.hpp"
#include "attn/engine/core/error.hpp"
#include "attn/engine/attention/sdpa.hpp"
#include "support.hpp"

using namespace attn;
using namespace attn::test;

TEST_CASE("alibi: 8 heads have slopes 1/2, 1/4, ..., 1/256") {
  CHECK(alibi_slopes(8) == std::vector<double>{1. / 2, 1. / 4, 1. / 8, 1. / 16, 1. / 32, 1. / 64, 1. / 128, 1. / 256});
  CHECK(alibi_slopes(1) == std::vector<double>{1. / 256});
  CHECK(alibi_slopes(2) == std::vector<double>{1. / 16, 1. / 256});
}

TEST_CASE("alibi: 6 heads use the paper's interpolation, computed by hand") {
  // closest power of two below 6 is 4: 2^(-8/4 (h+1)) = 1/4, 1/16, 1/64, 1/256;
  // next power 8 gives 1/2, 1/4, ..., 1/256, of which [0::2] = 1/2, 1/8, 1/32, ... -> first 6 - 4 = 2.
  CHECK(alibi_slopes(6) == std::vector<double>{1. / 4, 1. / 16, 1. / 64, 1. / 256, 1. / 2, 1. / 8});
  // 12 heads: the 8 of H = 8, then 16-head slopes 2^(-k/2), k = 1..16, at [0::2][:4] = k = 1, 3, 5, 7.
  const std::vector<double> s12 = alibi_slopes(12);
  REQUIRE(s12.size() == 12);
  for (int h = 0; h < 8; ++h) CHECK(s12[h] == std::ldexp(1.0, -(h + 1)));
  for (int i = 0; i < 4; ++i) CHECK(s12[8 + i] == doctest::Approx(std::pow(2.0, -(2 * i + 1) / 2.0)).epsilon(1e-15));
  CHECK_THROWS_AS(alibi_slopes(0), InputError);
}

TEST_CASE("alibi: bias = -m |i - j|, bottom-right aligned so a decode row is the last full row") {
  const std::vector<double> slopes = {0.5, 0.25};
  const Tensor3 b = alibi_bias(slopes, 4, 4);
  CHECK(b(0, 3, 0) == -1.5f);
  CHECK(b(1, 3, 1) == -0.5f);
  CHECK(b(0, 2, 2) == 0.0f);
  CHECK(!std::signbit(b(0, 2, 2)));
  CHECK(b(0, 0, 3) == -1.5f);  // symmetric beyond the causal half
  const Tensor3 row = alibi_bias(slopes, 1, 4);
  CHECK(xt::view(row, xt::all(), 0, xt::all()) == xt::view(b, xt::all(), 3, xt::all()));
}

TEST_CASE("alibi: sdpa adds the bias to the scaled scores before masking and softmax") {
  const Tensor3 q = {{{1, 0}, {0, 1}, {1, 1}}};
  const Tensor3 k = {{{1, 0}, {0, 1}, {1, 1}}};
  const Tensor3 v = {{{1, 0}, {0, 1}, {2, 3}}};
  SdpaOptions o;
  o.causal = true;
  o.score_mod.alibi = variants::AlibiBias{{0.5}};
  const SdpaResult r = sdpa(q, k, v, nullptr, o);
  // Expected, written out: s_ij = q_i . k_j / sqrt(2) - 0.5 (i - j) for j <= i.
  for (std::size_t i = 0; i < 3; ++i) {
    double e[3] = {0, 0, 0}, z = 0;
    for (std::size_t j = 0; j <= i; ++j) {
      const double qk = q(0, i, 0) * k(0, j, 0) + q(0, i, 1) * k(0, j, 1);
      e[j] = std::exp(qk / std::sqrt(2.0) - 0.5 * static_cast<double>(i - j));
      z += e[j];
    }
    for (std::size_t j = 0; j < 3; ++j) CHECK(r.weights(0, i, j) == doctest::Approx(e[j] / z).epsilon(1e-6));
  }
  SdpaOptions two = o;
  two.score_mod.alibi = variants::AlibiBias{{0.5, 0.25}};  // one head, two slopes
  CHECK_THROWS_WITH_AS(sdpa(q, k, v, nullptr, two), doctest::Contains("alibi: expected"),
                       InputError);
}
