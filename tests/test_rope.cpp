// RoPE: the closed form, relative positions, norms, the two styles, and the NumPy reference.
#include <doctest/doctest.h>

#include <cmath>

#include "attn/engine/core/error.hpp"
#include "attn/engine/core/random.hpp"
#include "attn/engine/positions/rope.hpp"
#include "attn/lessons/concepts/rope_lesson.hpp"
#include "support.hpp"

using namespace attn;
using namespace attn::test;

namespace {

std::vector<double> random_vector(Rng& rng, std::size_t d) {
  std::vector<double> v(d);
  for (double& e : v) e = rng.normal();
  return v;
}

std::vector<double> rotate(std::vector<double> x, std::int64_t pos, RopeStyle style) {
  return rope_rotated(std::move(x), pos, 10000, style);
}

double dot(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0;
  for (std::size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

void check_vector(const std::vector<double>& got, const std::vector<double>& want, double tol = 1e-12) {
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    CAPTURE(i);
    CHECK(std::fabs(got[i] - want[i]) <= tol);
  }
}

}  // namespace

TEST_CASE("rope: pair i turns by pos * base^(-2i/d), on dims (i, i+d/2) or (2i, 2i+1)") {
  // d = 4: theta_0 = 1 rad per token, theta_1 = 10000^(-2/4) = 0.01.
  const double c = std::cos(1.0), s = std::sin(1.0);
  check_vector(rotate({1, 0, 0, 0}, 1, RopeStyle::Half), {c, 0, s, 0});
  check_vector(rotate({1, 0, 0, 0}, 1, RopeStyle::Interleaved), {c, s, 0, 0});
  check_vector(rotate({0, 1, 0, 0}, 100, RopeStyle::Half), {0, c, 0, s});
  check_vector(rotate({0, 0, 1, 0}, 100, RopeStyle::Interleaved), {0, 0, c, s});
  // The second dim of a pair turns the same way: (0, 1) -> (-sin, cos).
  check_vector(rotate({0, 0, 1, 0}, 1, RopeStyle::Half), {-s, 0, c, 0});
  check_vector(rotate({3, -1, 2, 5}, 0, RopeStyle::Half), {3, -1, 2, 5});  // position 0: identity
  const std::vector<double> theta = rope_frequencies(8, 10000);
  check_vector(theta, {1.0, 0.1, 0.01, 0.001}, 1e-15);
}

TEST_CASE("rope: every head of one call turns as that head alone would, to its row's position") {
  // x [3 heads, 2 rows, d = 4] in one call: row l of every head at positions[l], bit for bit
  // the one-vector rotation; the inverse turns each back. Fewer than d/2 frequencies: an error.
  Rng rng(7);
  const std::vector<std::int64_t> positions = {5, 300};
  std::vector<double> x(3 * 2 * 4);
  for (double& e : x) e = rng.normal();
  for (const RopeStyle style : {RopeStyle::Half, RopeStyle::Interleaved}) {
    std::vector<double> y = x;
    apply_rope_inplace(y, 4, positions, 10000, style);
    for (std::size_t h = 0; h < 3; ++h)
      for (std::size_t l = 0; l < 2; ++l) {
        const std::size_t at = (h * 2 + l) * 4;
        const std::vector<double> alone = rope_rotated({x.begin() + long(at), x.begin() + long(at + 4)}, positions[l],
                                                       10000, style);
        for (std::size_t c = 0; c < 4; ++c) CHECK(y[at + c] == alone[c]);
      }
    apply_rope_inverse_inplace(y, 4, positions, 10000, style);
    for (std::size_t i = 0; i < x.size(); ++i) CHECK(y[i] == doctest::Approx(x[i]).epsilon(1e-12));
  }
  const std::vector<double> one_frequency = {1.0};
  CHECK_THROWS_WITH_AS(apply_rope_inplace(x, 4, positions, one_frequency, RopeStyle::Half),
                       doctest::Contains("expected d / 2 = 2 frequencies, got 1"), InputError);
}

TEST_CASE("rope: mha turns by the frequencies it is given, forward and backward") {
  // rope.frequencies = rope_frequencies(d, 500000), base left at 10000, must be base 500000 bit
  // for bit (mha once rotated by rope.base alone and ignored the frequencies a model gave it).
  const MhaWeights w = init_mha_weights(8, 2, 2, 3);  // d = 4
  Rng rng(11);
  Tensor2 x = Tensor2::from_shape({5, 8}), dy = Tensor2::from_shape({5, 8});
  for (float& e : x) e = float(rng.normal());
  for (float& e : dy) e = float(rng.normal());
  MhaOptions by_base, by_frequencies, plain;
  by_base.num_heads = by_frequencies.num_heads = plain.num_heads = 2;
  RopeOptions rope;
  plain.rope = rope;
  rope.frequencies = rope_frequencies(4, 500000);
  by_frequencies.rope = rope;
  rope.frequencies.clear();
  rope.base = 500000;
  by_base.rope = rope;
  const Tensor2 a = mha(x, x, x, w, nullptr, by_base).output, b = mha(x, x, x, w, nullptr, by_frequencies).output;
  CHECK(a == b);
  CHECK(a != mha(x, x, x, w, nullptr, plain).output);
  const MhaGradients ga = mha_self_backward(x, w, nullptr, dy, by_base);
  const MhaGradients gb = mha_self_backward(x, w, nullptr, dy, by_frequencies);
  CHECK(ga.grad_query == gb.grad_query);
  CHECK(ga.grad_w_q == gb.grad_w_q);
  CHECK(ga.grad_w_k == gb.grad_w_k);
}

TEST_CASE("rope: the score rope(q, i) . rope(k, j) depends only on i - j") {
  for (RopeStyle style : {RopeStyle::Half, RopeStyle::Interleaved}) {
    CAPTURE(rope_style_name(style));
    Rng rng(7);
    const std::vector<double> q = random_vector(rng, 16), k = random_vector(rng, 16);
    auto score = [&](std::int64_t i, std::int64_t j) { return dot(rotate(q, i, style), rotate(k, j, style)); };
    for (std::int64_t offset : {-7, -1, 0, 2, 5, 40}) {
      CAPTURE(offset);
      const std::int64_t i0 = offset >= 0 ? offset : 0, j0 = offset >= 0 ? 0 : -offset;
      const double reference = score(i0, j0);
      for (std::int64_t shift : {1, 3, 10, 250, 4096}) {
        CAPTURE(shift);
        CHECK(std::fabs(score(i0 + shift, j0 + shift) - reference) <= 1e-10);
      }
    }
    // ... and it does depend on the offset (a RoPE that did nothing would pass the loop above).
    CHECK(std::fabs(score(2, 0) - score(0, 0)) > 1e-3);
    CHECK(std::fabs(score(0, 0) - dot(q, k)) <= 1e-12);
  }
}

TEST_CASE("rope: rotation preserves the norm of the vector and of every pair") {
  Rng rng(3);
  for (RopeStyle style : {RopeStyle::Half, RopeStyle::Interleaved}) {
    const std::vector<double> x = random_vector(rng, 10);
    for (std::int64_t pos : {1, 17, 123456}) {
      const std::vector<double> y = rotate(x, pos, style);
      CHECK(std::fabs(dot(y, y) - dot(x, x)) <= 1e-12 * dot(x, x));
      for (std::size_t i = 0; i < 5; ++i) {
        const auto [a, b] = rope_pair(style, i, 10);
        CHECK(std::hypot(y[a], y[b]) == doctest::Approx(std::hypot(x[a], x[b])).epsilon(1e-12));
      }
    }
  }
}

TEST_CASE("rope: the two styles are one rotation up to the de-interleaving permutation") {
  CHECK(interleaved_to_half_permutation(8) == std::vector<std::size_t>{0, 2, 4, 6, 1, 3, 5, 7});
  Rng rng(11);
  const std::size_t d = 12;
  const std::vector<std::size_t> perm = interleaved_to_half_permutation(d);
  auto permute = [&](const std::vector<double>& v) {
    std::vector<double> p(d);
    for (std::size_t m = 0; m < d; ++m) p[m] = v[perm[m]];
    return p;
  };
  const std::vector<double> x = random_vector(rng, d);
  for (std::int64_t pos : {0, 1, 5, 999}) {
    CAPTURE(pos);
    check_vector(rotate(permute(x), pos, RopeStyle::Half), permute(rotate(x, pos, RopeStyle::Interleaved)));
  }
  // Without the permutation the two styles disagree: the layouts really differ.
  const std::vector<double> h = rotate(x, 3, RopeStyle::Half), i = rotate(x, 3, RopeStyle::Interleaved);
  double differ = 0;
  for (std::size_t m = 0; m < d; ++m) differ = std::max(differ, std::fabs(h[m] - i[m]));
  CHECK(differ > 1e-2);
}

TEST_CASE("rope: interleaved mha == half mha with W_q, W_k rows permuted per head (HF's conversion)") {
  const std::size_t D = 16, L = 6, H = 4, Hkv = 2, d = D / H;
  const MhaWeights w = init_mha_weights(D, H, Hkv, 5, /*with_bias=*/false);
  // Row h*d + m of the new W takes row h*d + perm[m] of the old: each head's q (and k) comes
  // out de-interleaved.
  const std::vector<std::size_t> perm = interleaved_to_half_permutation(d);
  auto permute_rows = [&](const Tensor2& src) {
    Tensor2 out = src;
    for (std::size_t h = 0; h < src.shape(0) / d; ++h)
      for (std::size_t m = 0; m < d; ++m) xt::view(out, h * d + m, xt::all()) = xt::view(src, h * d + perm[m], xt::all());
    return out;
  };
  MhaWeights permuted = w;
  permuted.w_q = permute_rows(w.w_q);
  permuted.w_k = permute_rows(w.w_k);
  Tensor2 x = Tensor2::from_shape({L, D});
  Rng rng(9);
  for (float& e : x) e = static_cast<float>(rng.normal());
  MhaOptions o;
  o.num_heads = H;
  o.num_kv_heads = Hkv;
  o.attention.causal = true;
  o.rope = RopeOptions{10000, RopeStyle::Interleaved, {3, 4, 5, 9, 10, 11}, {}};
  const MhaResult a = mha(x, x, x, w, nullptr, o);
  o.rope->style = RopeStyle::Half;
  const MhaResult b = mha(x, x, x, permuted, nullptr, o);
  CHECK(max_abs_diff(flat_tensor(a.output), flat_tensor(b.output)) < 1e-6);
  CHECK(max_abs_diff(flat_tensor(a.weights), flat_tensor(b.weights)) < 1e-6);
  const MhaResult unpermuted = mha(x, x, x, w, nullptr, o);  // half on the original weights
  CHECK(max_abs_diff(flat_tensor(a.weights), flat_tensor(unpermuted.weights)) > 1e-4);
}

TEST_CASE("rope: shifting every position_id by a constant leaves self-attention unchanged") {
  const std::size_t D = 8, L = 5;
  const MhaWeights w = init_mha_weights(D, 2, 1, 21, true);
  Tensor2 x = Tensor2::from_shape({L, D});
  Rng rng(4);
  for (float& e : x) e = static_cast<float>(rng.normal());
  MhaOptions o;
  o.num_heads = 2;
  o.num_kv_heads = 1;
  o.rope = RopeOptions{};
  const MhaResult a = mha(x, x, x, w, nullptr, o);
  o.rope->position_ids = {1000, 1001, 1002, 1003, 1004};
  const MhaResult b = mha(x, x, x, w, nullptr, o);
  CHECK(max_abs_diff(flat_tensor(a.output), flat_tensor(b.output)) < 1e-5);
  o.rope->position_ids = {0, 2, 4, 6, 8};  // different gaps: different attention
  const MhaResult c = mha(x, x, x, w, nullptr, o);
  CHECK(max_abs_diff(flat_tensor(a.weights), flat_tensor(c.weights)) > 1e-4);
}

TEST_CASE("rope: mha matches the float64 NumPy reference (both styles, position_ids, GQA/MQA, cross)") {
  for (const char* name : {"mha_rope_half", "mha_rope_interleaved_ids", "mha_rope_gqa_causal", "mha_rope_cross"}) {
    CAPTURE(name);
    check_mha_golden(name);
  }
}

TEST_CASE("rope: bad options are input errors that name the field") {
  const MhaWeights w = init_mha_weights(6, 2, 2, 1);  // d = 3
  const Tensor2 x = xt::zeros<float>({3, 6});
  MhaOptions o;
  o.num_heads = 2;
  o.rope = RopeOptions{};
  CHECK_THROWS_WITH_AS(mha(x, x, x, w, nullptr, o), doctest::Contains("rope: head dim d = 3 is odd"), InputError);
  o.num_heads = 3;  // d = 2
  o.num_kv_heads = 3;
  const MhaWeights w3 = init_mha_weights(6, 3, 3, 1);
  o.rope->position_ids = {0, 1};
  CHECK_THROWS_WITH_AS(mha(x, x, x, w3, nullptr, o),
                       doctest::Contains("rope.position_ids: expected 3 integers (one per query, Lq), got 2"),
                       InputError);
  o.rope->position_ids = {0, -1, 2};
  CHECK_THROWS_WITH_AS(mha(x, x, x, w3, nullptr, o), doctest::Contains("rope.position_ids: expected integers >= 0"),
                       InputError);
  o.rope->position_ids = {};
  o.rope->base = 0;
  CHECK_THROWS_WITH_AS(mha(x, x, x, w3, nullptr, o), doctest::Contains("rope.base"), InputError);
  CHECK_THROWS_WITH_AS(parse_rope_style("sideways"), doctest::Contains("rope.style: expected \"half\""), InputError);
}

TEST_CASE("rope lesson: constant diagonals, the permutation, and the traced pair's circle") {
  RopeLessonConfig c;
  c.head_dim = 8;
  c.positions = 6;
  c.pair = 1;
  c.style = RopeStyle::Interleaved;
  const RopeLesson r = rope_lesson(c);
  CHECK(r.by_offset.size() == 11);
  CHECK(r.max_spread < 1e-12);
  CHECK(r.permutation_max_diff < 1e-12);
  CHECK(r.scores[4][1] == doctest::Approx(r.scores[5][2]).epsilon(1e-12));
  for (const RopeRotationPoint& p : r.rotation) {  // theta_1 = 10000^(-2/8) = 0.1
    CHECK(p.x == doctest::Approx(std::cos(0.1 * static_cast<double>(p.position))).epsilon(1e-12));
    CHECK(p.y == doctest::Approx(std::sin(0.1 * static_cast<double>(p.position))).epsilon(1e-12));
  }
  c.pair = 4;
  CHECK_THROWS_AS(rope_lesson(c), InputError);
}
