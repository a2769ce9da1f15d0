#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "attn/engine/core/error.hpp"
#include "attn/engine/attention/mask.hpp"
#include "attn/engine/core/random.hpp"
#include "attn/engine/attention/sdpa.hpp"
#include "support.hpp"

using namespace attn;
using namespace attn::test;

namespace {

Tensor3 heads_from_json(const Json& j) {
  DenseArray a = parse_array(j, "t");
  if (a.shape.size() == 2) a.shape.insert(a.shape.begin(), 1);
  return to_tensor<3>(a);
}

struct AttendCase {
  Tensor3 q, k, v;
  std::optional<Mask3> mask;
  SdpaOptions options;
};

AttendCase attend_case_from(const Json& in) {
  AttendCase c{heads_from_json(in["q"]), heads_from_json(in["k"]), heads_from_json(in["v"]), {}, {}};
  if (in.contains("mask")) {
    DenseArray m = parse_array(in["mask"], "mask", true);
    if (m.shape.size() == 2) m.shape.insert(m.shape.begin(), 1);
    Mask3 mask = Mask3::from_shape({m.shape[0], m.shape[1], m.shape[2]});
    std::transform(m.data.begin(), m.data.end(), mask.begin(), [](float x) { return x != 0; });
    c.mask = mask;
  }
  c.options.causal = in.value("causal", false);
  if (in.contains("scale")) c.options.scale = in["scale"].get<double>();
  return c;
}

// The "plain float32 computation" of FlashAttention's tolerance rule: textbook loops with
// float accumulators, -inf masking.
SdpaResult plain_float32(const AttendCase& c) {
  const std::size_t H = c.q.shape(0), Lq = c.q.shape(1), d = c.q.shape(2);
  const std::size_t Hkv = c.k.shape(0), Lk = c.k.shape(1), dv = c.v.shape(2);
  const float scale = c.options.scale ? float(*c.options.scale) : 1.0f / std::sqrt(float(d));
  const Mask2 causal = causal_allowed(Lq, Lk);
  SdpaResult r{xt::zeros<float>({H, Lq, dv}), xt::zeros<float>({H, Lq, Lk}), xt::zeros<float>({H, Lq})};
  for (std::size_t h = 0; h < H; ++h) {
    const std::size_t g = h / (H / Hkv);
    for (std::size_t i = 0; i < Lq; ++i) {
      float m = -INFINITY;
      for (std::size_t j = 0; j < Lk; ++j) {
        float s = 0;
        for (std::size_t c2 = 0; c2 < d; ++c2) s += c.q(h, i, c2) * c.k(g, j, c2);
        s *= scale;
        const bool ok = (!c.mask || (*c.mask)(c.mask->shape(0) == 1 ? 0 : h, i, j)) &&
                        (!c.options.causal || causal(i, j));
        r.weights(h, i, j) = ok ? s : -INFINITY;
        m = std::max(m, r.weights(h, i, j));
      }
      if (m == -INFINITY) {
        for (std::size_t j = 0; j < Lk; ++j) r.weights(h, i, j) = 0;
        r.lse(h, i) = -INFINITY;
        continue;
      }
      float z = 0;
      for (std::size_t j = 0; j < Lk; ++j) z += (r.weights(h, i, j) = std::exp(r.weights(h, i, j) - m));
      for (std::size_t j = 0; j < Lk; ++j) r.weights(h, i, j) /= z;
      r.lse(h, i) = m + std::log(z);
      for (std::size_t j = 0; j < Lk; ++j)
        for (std::size_t c2 = 0; c2 < dv; ++c2) r.output(h, i, c2) += r.weights(h, i, j) * c.v(g, j, c2);
    }
  }
  return r;
}

void check_against_golden(const std::string& name) {
  const Json g = load_golden(name);
  CAPTURE(name);
  const AttendCase c = attend_case_from(g["input"]);
  const SdpaResult r = sdpa(c.q, c.k, c.v, c.mask ? &*c.mask : nullptr, c.options);
  const SdpaResult f32 = plain_float32(c);
  for (const char* field : {"output", "weights", "lse"}) {
    CAPTURE(field);
    const std::vector<double> ref = flat(g["expected"][field]);
    const auto& ours = std::string(field) == "output" ? flat_tensor(r.output)
                       : std::string(field) == "weights" ? flat_tensor(r.weights) : flat_tensor(r.lse);
    const auto& plain = std::string(field) == "output" ? flat_tensor(f32.output)
                        : std::string(field) == "weights" ? flat_tensor(f32.weights) : flat_tensor(f32.lse);
    const double err = max_abs_diff(ours, ref), err_plain = max_abs_diff(plain, ref);
    CAPTURE(err);
    CAPTURE(err_plain);
    double magnitude = 1;
    for (double x : ref) if (std::isfinite(x)) magnitude = std::max(magnitude, std::fabs(x));
    // FlashAttention's rule (at most 2x the error of plain float32), with a floor of one
    // float32 rounding for the cases where plain float32 happens to be exact.
    CHECK(err <= 2 * err_plain + 2 * magnitude * std::numeric_limits<float>::epsilon());
  }
}

}  // namespace

TEST_CASE("sdpa: hand-derived single query") {
  // q = [1, 0], keys [1, 0] and [0, 1], d = 2: scores [1/sqrt2, 0].
  const Tensor3 q = {{{1, 0}}}, k = {{{1, 0}, {0, 1}}}, v = {{{1, 2}, {3, 4}}};
  const SdpaResult r = sdpa(q, k, v);
  const double a = std::exp(1 / std::sqrt(2.0));
  CHECK(r.weights(0, 0, 0) == doctest::Approx(a / (a + 1)));
  CHECK(r.weights(0, 0, 1) == doctest::Approx(1 / (a + 1)));
  CHECK(r.output(0, 0, 0) == doctest::Approx((a * 1 + 3) / (a + 1)));
  CHECK(r.output(0, 0, 1) == doctest::Approx((a * 2 + 4) / (a + 1)));
  CHECK(r.lse(0, 0) == doctest::Approx(std::log(a + 1)));
}

TEST_CASE("sdpa: equal keys give a uniform average of the values") {
  const Tensor3 q = {{{3, -1, 2}}}, k = {{{1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}}};
  const Tensor3 v = {{{0}, {4}, {8}, {12}}};
  const SdpaResult r = sdpa(q, k, v);
  CHECK(r.output(0, 0, 0) == doctest::Approx(6.0));
  for (std::size_t j = 0; j < 4; ++j) CHECK(r.weights(0, 0, j) == doctest::Approx(0.25));
}

TEST_CASE("sdpa: matches the float64 NumPy reference under FlashAttention's 2x rule") {
  for (const char* name : {"attend_2d", "attend_heads", "attend_causal_rect", "attend_causal_tall",
                           "attend_mask_heads", "attend_scale", "attend_huge", "attend_gqa"}) {
    check_against_golden(name);
  }
}

TEST_CASE("sdpa: fully masked row -> zero weights, zero output, lse -inf (not uniform, not NaN)") {
  const Tensor3 q = {{{1, 2}, {3, 4}}}, k = {{{1, 0}, {0, 1}}}, v = {{{5, 6}, {7, 8}}};
  const Mask3 allowed = {{{false, false}, {true, false}}};
  const SdpaResult r = sdpa(q, k, v, &allowed);
  CHECK(r.weights(0, 0, 0) == 0.0f);
  CHECK(r.weights(0, 0, 1) == 0.0f);
  CHECK(r.output(0, 0, 0) == 0.0f);
  CHECK(r.output(0, 0, 1) == 0.0f);
  CHECK(std::isinf(r.lse(0, 0)));
  CHECK(count_fully_masked_rows(r.lse) == 1);
  CHECK(r.weights(0, 1, 0) == 1.0f);
  CHECK(r.output(0, 1, 0) == 5.0f);
}

TEST_CASE("sdpa: GQA equals MHA with the key/value heads repeated") {
  Rng rng(3);
  auto randn = [&](std::size_t a, std::size_t b, std::size_t c) {
    Tensor3 t = Tensor3::from_shape({a, b, c});
    for (float& x : t) x = float(rng.normal());
    return t;
  };
  const Tensor3 q = randn(6, 4, 5), k = randn(2, 7, 5), v = randn(2, 7, 3);
  const Tensor3 k_rep = xt::concatenate(xt::xtuple(xt::view(k, xt::range(0, 1)), xt::view(k, xt::range(0, 1)),
                                                   xt::view(k, xt::range(0, 1)), xt::view(k, xt::range(1, 2)),
                                                   xt::view(k, xt::range(1, 2)), xt::view(k, xt::range(1, 2))), 0);
  const Tensor3 v_rep = xt::concatenate(xt::xtuple(xt::view(v, xt::range(0, 1)), xt::view(v, xt::range(0, 1)),
                                                   xt::view(v, xt::range(0, 1)), xt::view(v, xt::range(1, 2)),
                                                   xt::view(v, xt::range(1, 2)), xt::view(v, xt::range(1, 2))), 0);
  const SdpaResult gqa = sdpa(q, k, v), full = sdpa(q, k_rep, v_rep);
  CHECK(gqa.output == full.output);
  CHECK(gqa.weights == full.weights);
}

TEST_CASE("sdpa: temperature T divides the scores, like a scale of scale/T") {
  const Tensor3 q = {{{1, 2}, {0, -1}}}, k = {{{1, 0}, {0.5, 1}, {-1, 2}}}, v = {{{1}, {2}, {3}}};
  SdpaOptions hot;
  hot.temperature = 4.0;
  SdpaOptions scaled;
  scaled.scale = 1 / std::sqrt(2.0) / 4.0;
  CHECK(xt::allclose(sdpa(q, k, v, nullptr, hot).weights, sdpa(q, k, v, nullptr, scaled).weights));
  // A higher temperature flattens: the largest weight of a row shrinks.
  CHECK(xt::amax(sdpa(q, k, v, nullptr, hot).weights)() < xt::amax(sdpa(q, k, v).weights)());
}

TEST_CASE("sdpa: dropout is off by default, seeded, and unbiased in expectation") {
  constexpr std::size_t L = 64;
  const Tensor3 q = xt::zeros<float>({std::size_t{1}, L, std::size_t{4}}), k = xt::zeros<float>({std::size_t{1}, L, std::size_t{4}});
  const Tensor3 v = xt::ones<float>({std::size_t{1}, L, std::size_t{1}});
  SdpaOptions o;
  o.dropout_p = 0.25;
  o.dropout_seed = 11;
  const SdpaResult a = sdpa(q, k, v, nullptr, o), b = sdpa(q, k, v, nullptr, o);
  CHECK(a.weights == b.weights);  // same seed, same mask
  std::size_t zeros = 0;
  for (float w : a.weights) zeros += w == 0.0f;
  const double frac = double(zeros) / double(L * L);
  CHECK(frac == doctest::Approx(0.25).epsilon(0.2));  // 4096 draws: sd of the fraction ~ 0.007
  CHECK(xt::mean(a.output)() == doctest::Approx(1.0).epsilon(0.05));  // kept weights scaled 1/(1-p)
  CHECK(xt::allclose(sdpa(q, k, v).output, v));  // default: no dropout, exact average
}

TEST_CASE("sdpa: shape errors name the field and both shapes") {
  const Tensor3 q = xt::zeros<float>({2, 3, 4}), k = xt::zeros<float>({2, 5, 4});
  const Tensor3 v_bad = xt::zeros<float>({2, 6, 4}), k_bad_d = xt::zeros<float>({2, 5, 3});
  CHECK_THROWS_WITH_AS(sdpa(q, k, v_bad), doctest::Contains("v: expected shape [2, 5, dv]"), InputError);
  CHECK_THROWS_WITH_AS(sdpa(q, k_bad_d, k_bad_d), doctest::Contains("got [2, 5, 3]"), InputError);
  const Tensor3 k3 = xt::zeros<float>({3, 5, 4});
  CHECK_THROWS_WITH_AS(sdpa(q, k3, k3), doctest::Contains("dividing"), InputError);
  const Mask3 m = xt::ones<bool>({1, 3, 4});
  CHECK_THROWS_WITH_AS(sdpa(q, k, k, &m), doctest::Contains("mask: expected shape [3, 5]"), InputError);
  SdpaOptions cold;
  cold.temperature = 0;
  CHECK_THROWS_AS(sdpa(q, k, k, nullptr, cold), InputError);
}
