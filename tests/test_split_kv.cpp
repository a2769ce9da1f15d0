// The split-KV lesson (split_kv.hpp): the merge of chunk partials equals softmax V over all keys,
// against a naive float64 reference written here from the equations, under FlashAttention's
// rule (at most 2x the error of a plain float32 computation, fa_rule.hpp), for odd chunkings,
// a chunk whose keys are all masked, and C = n.
#include <doctest/doctest.h>

#include <cmath>

#include "attn/engine/core/error.hpp"
#include "attn/engine/core/random.hpp"
#include "attn/lessons/concepts/split_kv.hpp"
#include "fa_rule.hpp"
#include "support.hpp"

using namespace attn;
using namespace attn::test;

namespace {

struct Inputs {
  Tensor1 q;
  Tensor2 k, v;
  std::vector<bool> allowed;
  double scale;
};

Inputs random_inputs(std::size_t n, std::size_t d, std::size_t dv, std::uint64_t seed, double spread = 1.0) {
  Rng rng(seed);
  Inputs in{xt::view(randn(rng, 1, 1, d, spread), 0, 0, xt::all()), xt::view(randn(rng, 1, n, d), 0, xt::all(), xt::all()),
            xt::view(randn(rng, 1, n, dv), 0, xt::all(), xt::all()), std::vector<bool>(n, true), 1.0 / std::sqrt(double(d))};
  return in;
}

// softmax(q K^T * scale) V in float64, masked keys skipped; 0 when none is visible.
std::vector<double> reference64(const Inputs& in) {
  const std::size_t n = in.k.shape(0), d = in.q.size(), dv = in.v.shape(1);
  std::vector<double> s(n, -INFINITY), out(dv, 0.0);
  double m = -INFINITY;
  for (std::size_t j = 0; j < n; ++j) {
    if (!in.allowed[j]) continue;
    double dot = 0;
    for (std::size_t c = 0; c < d; ++c) dot += double(in.q(c)) * double(in.k(j, c));
    s[j] = dot * in.scale;
    m = std::max(m, s[j]);
  }
  if (m == -INFINITY) return out;
  double z = 0;
  for (std::size_t j = 0; j < n; ++j) z += in.allowed[j] ? std::exp(s[j] - m) : 0.0;
  for (std::size_t j = 0; j < n; ++j)
    if (in.allowed[j])
      for (std::size_t c = 0; c < dv; ++c) out[c] += std::exp(s[j] - m) / z * double(in.v(j, c));
  return out;
}

// FlashAttention's tolerance: twice the plain float32 error, and at least a few float32 ulps.
double fa_tolerance(const Inputs& in, const std::vector<double>& ref) {
  const std::size_t n = in.k.shape(0), d = in.q.size(), dv = in.v.shape(1);
  Tensor3 q3 = Tensor3::from_shape({1, 1, d}), k3 = Tensor3::from_shape({1, n, d}), v3 = Tensor3::from_shape({1, n, dv});
  std::copy(in.q.begin(), in.q.end(), q3.begin());
  std::copy(in.k.begin(), in.k.end(), k3.begin());
  std::copy(in.v.begin(), in.v.end(), v3.begin());
  Mask3 mask = Mask3::from_shape({1, 1, n});
  for (std::size_t j = 0; j < n; ++j) mask(0, 0, j) = in.allowed[j];
  const Tensor3 plain = plain_float32_output(q3, k3, v3, &mask, false, float(in.scale));
  return 2 * max_abs_diff(flat_tensor(plain), ref) + 4e-7;
}

void check_merge(const Inputs& in, std::size_t chunks) {
  const SplitKvLesson s = split_kv_merge(in.q, in.k, in.v, in.allowed, in.scale, chunks);
  const std::vector<double> ref = reference64(in);
  CAPTURE(chunks);
  REQUIRE(s.chunks.size() == chunks);
  // The chunks cover 0..n-1 in order, none empty, sizes within one of each other.
  std::size_t next = 0, smallest = in.k.shape(0), largest = 0;
  for (const SplitKvChunk& c : s.chunks) {
    CHECK(c.first == next);
    next = c.end;
    smallest = std::min(smallest, c.end - c.first);
    largest = std::max(largest, c.end - c.first);
  }
  CHECK(next == in.k.shape(0));
  CHECK(smallest >= 1);
  CHECK(largest - smallest <= 1);
  const double tol = fa_tolerance(in, ref);
  CHECK(max_abs_diff(s.merged, ref) <= tol);
  CHECK(max_abs_diff(s.one_pass, ref) <= tol);
  CHECK(s.max_abs_diff == doctest::Approx(max_abs_diff(s.merged, s.one_pass)));
  for (double x : s.merged) CHECK(std::isfinite(x));
  // The factors are exp(m_i - m) (0 for an empty chunk), the merged l their weighted sum.
  double l = 0, top = 0;
  for (const SplitKvChunk& c : s.chunks) {
    const double expected = c.visible ? std::exp(c.m - s.m) : 0.0;
    CHECK(c.factor == doctest::Approx(expected).epsilon(1e-5));
    l += c.factor * c.l;
    top = std::max(top, c.factor);
  }
  CHECK(l == doctest::Approx(s.l).epsilon(1e-5));
  if (s.m != -INFINITY) CHECK(top == 1.0);  // the chunk holding the max is not rescaled
}

}  // namespace

TEST_CASE("split-kv merge equals softmax V in float64 for 1, 3 and 16 chunks of 37 keys") {
  const Inputs in = random_inputs(37, 8, 5, 7);
  for (std::size_t chunks : {1, 3, 16}) check_merge(in, chunks);
}

TEST_CASE("split-kv merge with one key per chunk (C = n), and d = 1") {
  check_merge(random_inputs(16, 4, 3, 11), 16);
  check_merge(random_inputs(5, 1, 1, 12), 5);
  check_merge(random_inputs(1, 3, 2, 13), 1);
}

TEST_CASE("split-kv merge with large scores: the rescale keeps every exp in range") {
  // Scores near 300: exp(300) overflows float32; only the max subtraction keeps it finite.
  check_merge(random_inputs(23, 16, 4, 21, 75.0), 4);
}

TEST_CASE("split-kv chunk whose keys are all masked merges without NaN") {
  Inputs in = random_inputs(12, 6, 4, 31);
  for (std::size_t j = 4; j < 8; ++j) in.allowed[j] = false;  // chunk 1 of 3
  in.allowed[9] = false;                                      // and one key of chunk 2
  const SplitKvLesson s = split_kv_merge(in.q, in.k, in.v, in.allowed, in.scale, 3);
  REQUIRE(s.chunks[1].visible == 0);
  CHECK(s.chunks[1].m == -INFINITY);
  CHECK(s.chunks[1].l == 0);
  CHECK(s.chunks[1].factor == 0);
  for (double x : s.chunks[1].o) CHECK(x == 0);
  CHECK(s.chunks[2].visible == 3);
  check_merge(in, 3);
  // The masked keys in the chunk list as -inf scores.
  CHECK(s.scores[5] == -INFINITY);
  CHECK(std::isfinite(s.scores[3]));
}

TEST_CASE("split-kv with every key masked: output 0, lse -inf, no NaN") {
  Inputs in = random_inputs(6, 3, 2, 41);
  in.allowed.assign(6, false);
  const SplitKvLesson s = split_kv_merge(in.q, in.k, in.v, in.allowed, in.scale, 2);
  CHECK(s.m == -INFINITY);
  CHECK(s.lse == -INFINITY);
  CHECK(s.l == 0);
  for (double x : s.merged) CHECK(x == 0);
  for (double x : s.one_pass) CHECK(x == 0);
  CHECK(s.max_abs_diff == 0);
}

TEST_CASE("split-kv check can fail: merging without the rescale misses the reference") {
  // Sum o_i / sum l_i ignores that each chunk counted from its own max: with chunks whose maxima
  // differ this is wrong, and the tolerance above must see it.
  const Inputs in = random_inputs(37, 8, 5, 7);
  const SplitKvLesson s = split_kv_merge(in.q, in.k, in.v, in.allowed, in.scale, 3);
  std::vector<double> o(s.merged.size(), 0.0);
  double l = 0;
  for (const SplitKvChunk& c : s.chunks) {
    l += c.l;
    for (std::size_t x = 0; x < o.size(); ++x) o[x] += c.o[x];
  }
  for (double& x : o) x /= l;
  const std::vector<double> ref = reference64(in);
  CHECK(max_abs_diff(o, ref) > 100 * fa_tolerance(in, ref));
}

TEST_CASE("split-kv refuses 0 chunks, more chunks than keys, a non-finite scale and shapes that disagree") {
  const Inputs in = random_inputs(5, 3, 2, 51);
  CHECK_THROWS_AS(split_kv_merge(in.q, in.k, in.v, in.allowed, in.scale, 0), InputError);
  CHECK_THROWS_WITH_AS(split_kv_merge(in.q, in.k, in.v, in.allowed, in.scale, 6), doctest::Contains("expected 1 to 5"),
                       InputError);
  CHECK_THROWS_AS(split_kv_merge(in.q, in.k, in.v, in.allowed, INFINITY, 2), InputError);
  CHECK_THROWS_AS(split_kv_merge(in.q, in.k, in.v, in.allowed, NAN, 2), InputError);
  CHECK_THROWS_AS(split_kv_merge(in.q, in.k, in.v, std::vector<bool>(4, true), in.scale, 2), InputError);
}

TEST_CASE("split-kv JSON has every number, -inf as null") {
  Inputs in = random_inputs(9, 4, 3, 61);
  for (std::size_t j = 6; j < 9; ++j) in.allowed[j] = false;
  const SplitKvLesson s = split_kv_merge(in.q, in.k, in.v, in.allowed, in.scale, 3);
  const Json j = split_kv_json(s);
  CHECK(j["keys"] == 9);
  CHECK(j["chunk_count"] == 3);
  REQUIRE(j["chunks"].size() == 3);
  CHECK(j["chunks"][2]["m"].is_null());
  CHECK(j["chunks"][2]["factor"] == 0.0);
  CHECK(j["chunks"][2]["visible"] == 0);
  CHECK(j["scores"][7].is_null());
  // Recomputing the merge from the JSON's own numbers gives its merged row.
  std::vector<double> o(3, 0.0);
  double l = 0;
  for (const Json& c : j["chunks"]) {
    l += c["factor"].get<double>() * c["l"].get<double>();
    for (std::size_t x = 0; x < 3; ++x) o[x] += c["factor"].get<double>() * c["o"][x].get<double>();
  }
  CHECK(l == doctest::Approx(j["l"].get<double>()).epsilon(1e-6));
  for (std::size_t x = 0; x < 3; ++x) CHECK(o[x] / l == doctest::Approx(j["merged"][x].get<double>()).epsilon(1e-5));
  CHECK(j["max_abs_diff"].get<double>() == s.max_abs_diff);
  CHECK(flat(j["one_pass"]) == s.one_pass);
}
