// Linear attention (linear_attention.hpp) and its lesson (linear_rnn.hpp): phi and the weights
// against hand-worked values, the recurrence against the parallel form to 1e-12, the non-causal
// form against the associativity trick phi(Q) (phi(K)^T V) of the paper's eq. 5, the memory
// formulas. scripts/check_linear_attention.py checks the CLI's numbers against float64 NumPy.
#include <doctest/doctest.h>

#include <cmath>

#include "attn/engine/core/error.hpp"
#include "attn/engine/attention/linear_attention.hpp"
#include "attn/engine/core/random.hpp"
#include "attn/lessons/concepts/linear_rnn.hpp"
#include "support.hpp"

using namespace attn;
using namespace attn::test;

namespace {

MatrixF64 random_matrix(Rng& rng, std::size_t rows, std::size_t cols, double sd = 1.0) {
  MatrixF64 m = MatrixF64::from_shape({rows, cols});
  for (double& x : m) x = rng.normal() * sd;
  return m;
}

double max_abs(const MatrixF64& a, const MatrixF64& b) {
  double m = 0;
  for (std::size_t i = 0; i < a.size(); ++i) m = std::max(m, std::fabs(a.flat(i) - b.flat(i)));
  return m;
}

}  // namespace

TEST_CASE("elu_plus_one: x + 1 above 0, e^x below, continuous at 0") {
  CHECK(elu_plus_one(2.0) == 3.0);
  CHECK(elu_plus_one(0.0) == 1.0);
  CHECK(elu_plus_one(-1.0) == doctest::Approx(std::exp(-1.0)).epsilon(1e-15));
  CHECK(elu_plus_one(-800.0) >= 0.0);
}

TEST_CASE("linear_attention_weights: a hand-worked causal 2 x 2") {
  // q = k = [[0], [1]]: phi = [[1], [2]]. Row 0 sees key 0 only: [1, 0]. Row 1: phi(q_1).phi(k) = [2, 4] -> [1/3, 2/3].
  const MatrixF64 x{{0.0}, {1.0}};
  const MatrixF64 a = linear_attention_weights(x, x, true);
  CHECK(a(0, 0) == 1.0);
  CHECK(a(0, 1) == 0.0);
  CHECK(a(1, 0) == doctest::Approx(1.0 / 3).epsilon(1e-15));
  CHECK(a(1, 1) == doctest::Approx(2.0 / 3).epsilon(1e-15));
  // non-causal row 0: [1, 2] / 3
  CHECK(linear_attention_weights(x, x, false)(0, 1) == doctest::Approx(2.0 / 3).epsilon(1e-15));
  CHECK_THROWS_AS(linear_attention_weights(x, MatrixF64{{1.0, 2.0}}, false), InputError);
}

TEST_CASE("linear attention: the recurrence equals the parallel form to 1e-12 (float64)") {
  Rng rng(11);
  for (const auto& shape : std::vector<std::array<std::size_t, 3>>{{1, 1, 1}, {7, 3, 5}, {64, 16, 16}, {200, 8, 4}}) {
    const std::size_t L = shape[0], d = shape[1], dv = shape[2];  // clang 14's CAPTURE takes no structured binding
    CAPTURE(L);
    CAPTURE(d);
    const MatrixF64 q = random_matrix(rng, L, d, 2), k = random_matrix(rng, L, d, 2), v = random_matrix(rng, L, dv);
    const MatrixF64 parallel = linear_attention_parallel(q, k, v, true);
    const LinearRecurrence rec = linear_attention_recurrent(q, k, v);
    CHECK(max_abs(parallel, rec.output) <= 1e-12);
    // the final state is the sum over all tokens: S_L = phi(K)^T V
    const MatrixF64 fk = elu_plus_one(k);
    MatrixF64 S = xt::zeros<double>({d, dv});
    for (std::size_t j = 0; j < L; ++j)
      for (std::size_t a = 0; a < d; ++a)
        for (std::size_t c = 0; c < dv; ++c) S(a, c) += fk(j, a) * v(j, c);
    CHECK(max_abs(rec.final_state, S) <= 1e-12 * static_cast<double>(L));
  }
  // not the softmax: a recurrence that forgot to normalise, or a non-causal parallel form, differs
  const MatrixF64 q = random_matrix(rng, 6, 4), k = random_matrix(rng, 6, 4), v = random_matrix(rng, 6, 4);
  CHECK(max_abs(linear_attention_parallel(q, k, v, false), linear_attention_recurrent(q, k, v).output) > 1e-3);
}

TEST_CASE("linear attention, non-causal: phi(Q) (phi(K)^T V) / phi(Q) (phi(K)^T 1), the paper's eq. 5") {
  Rng rng(5);
  const MatrixF64 q = random_matrix(rng, 9, 4), k = random_matrix(rng, 13, 4), v = random_matrix(rng, 13, 3);
  const MatrixF64 fq = elu_plus_one(q), fk = elu_plus_one(k);
  MatrixF64 kv = xt::zeros<double>({4, 3});
  std::vector<double> ksum(4, 0.0);
  for (std::size_t j = 0; j < 13; ++j)
    for (std::size_t a = 0; a < 4; ++a) {
      ksum[a] += fk(j, a);
      for (std::size_t c = 0; c < 3; ++c) kv(a, c) += fk(j, a) * v(j, c);
    }
  MatrixF64 expected = xt::zeros<double>({9, 3});
  for (std::size_t i = 0; i < 9; ++i) {
    double den = 0;
    for (std::size_t a = 0; a < 4; ++a) den += fq(i, a) * ksum[a];
    for (std::size_t c = 0; c < 3; ++c) {
      for (std::size_t a = 0; a < 4; ++a) expected(i, c) += fq(i, a) * kv(a, c);
      expected(i, c) /= den;
    }
  }
  CHECK(max_abs(linear_attention_parallel(q, k, v, false), expected) <= 1e-12);
  // causal with Lq < Lk is bottom-right aligned: the last query sees every key
  const MatrixF64 causal = linear_attention_weights(q, k, true);
  CHECK(causal(8, 12) > 0);
  CHECK(causal(0, 4) > 0);  // query 0 sits at position 0 + 13 - 9 = 4: it sees keys 0..4
  CHECK(causal(0, 5) == 0.0);
}

TEST_CASE("memory: the state is d dv + d numbers for every t, the KV cache t (d + dv)") {
  CHECK(linear_state_bytes(64, 64, 2) == (64 * 64 + 64) * 2);
  CHECK(kv_cache_bytes_at(1000, 64, 64, 2) == 1000 * 128 * 2);
  LinearRnnConfig c;
  const LinearRnnResult r = run_linear_rnn(c);
  REQUIRE(r.tokens.size() == 6);
  CHECK(r.max_abs_recurrent_vs_parallel <= 1e-12);
  for (const MemoryAtStep& m : r.memory) {
    CHECK(m.state_bytes == r.memory.front().state_bytes);
    CHECK(m.kv_cache_bytes == doctest::Approx(static_cast<double>(m.t) * 16 * 4));
  }
  CHECK(r.crossover_t == 5);  // 5 * 16 > 8 * 8 + 8 = 72 >= 4 * 16
  CHECK(r.max_abs_weight_difference > 0.01);  // not softmax's weights
  for (std::size_t i = 0; i < 6; ++i) CHECK(xt::sum(xt::row(r.linear_weights, i))() == doctest::Approx(1.0));
  c.d = 0;
  CHECK_THROWS_AS(run_linear_rnn(c), InputError);
}
