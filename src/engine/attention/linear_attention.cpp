// Linear attention, parallel and recurrent (linear_attention.hpp).
#include "attn/engine/attention/linear_attention.hpp"

#include <cmath>

#include "attn/engine/core/error.hpp"

namespace attn {
namespace {

void check_shapes(const MatrixF64& q, const MatrixF64& k, const MatrixF64* v) {
  if (q.shape(1) != k.shape(1))
    throw InputError("linear attention: q has d = " + std::to_string(q.shape(1)) + ", k has d = " +
                     std::to_string(k.shape(1)));
  if (v && v->shape(0) != k.shape(0))
    throw InputError("linear attention: v has " + std::to_string(v->shape(0)) + " rows, k has " +
                     std::to_string(k.shape(0)));
}

}  // namespace

double elu_plus_one(double x) { return x > 0 ? x + 1.0 : std::exp(x); }

MatrixF64 elu_plus_one(const MatrixF64& x) {
  MatrixF64 out = x;
  for (double& e : out) e = elu_plus_one(e);
  return out;
}

MatrixF64 linear_attention_weights(const MatrixF64& q, const MatrixF64& k, bool causal) {
  check_shapes(q, k, nullptr);
  const std::size_t Lq = q.shape(0), Lk = k.shape(0), d = q.shape(1);
  const MatrixF64 fq = elu_plus_one(q), fk = elu_plus_one(k);
  MatrixF64 a = xt::zeros<double>({Lq, Lk});
  for (std::size_t i = 0; i < Lq; ++i) {
    // Query i's absolute position is i + Lk - Lq; with causal it sees the keys up to there.
    const std::size_t visible = causal ? std::min(Lk, i + Lk - Lq + 1) : Lk;
    if (causal && i + Lk < Lq) continue;  // no key at or before this query: an all-zero row
    double total = 0;
    for (std::size_t j = 0; j < visible; ++j) {
      double s = 0;
      for (std::size_t c = 0; c < d; ++c) s += fq(i, c) * fk(j, c);
      a(i, j) = s;
      total += s;
    }
    for (std::size_t j = 0; j < visible; ++j) a(i, j) /= total;  // phi > 0: total > 0
  }
  return a;
}

MatrixF64 linear_attention_parallel(const MatrixF64& q, const MatrixF64& k, const MatrixF64& v, bool causal) {
  check_shapes(q, k, &v);
  const MatrixF64 a = linear_attention_weights(q, k, causal);
  const std::size_t Lq = a.shape(0), Lk = a.shape(1), dv = v.shape(1);
  MatrixF64 out = xt::zeros<double>({Lq, dv});
  for (std::size_t i = 0; i < Lq; ++i)
    for (std::size_t j = 0; j < Lk; ++j)
      for (std::size_t c = 0; c < dv; ++c) out(i, c) += a(i, j) * v(j, c);
  return out;
}

LinearRecurrence linear_attention_recurrent(const MatrixF64& q, const MatrixF64& k, const MatrixF64& v) {
  check_shapes(q, k, &v);
  if (q.shape(0) != k.shape(0))
    throw InputError("linear attention: the recurrence is causal self-attention, Lq = Lk (got " +
                     std::to_string(q.shape(0)) + " and " + std::to_string(k.shape(0)) + ")");
  const std::size_t L = q.shape(0), d = q.shape(1), dv = v.shape(1);
  LinearRecurrence r;
  r.output = xt::zeros<double>({L, dv});
  MatrixF64 S = xt::zeros<double>({d, dv});  // S_t = sum_{j<=t} phi(k_j) v_j^T
  std::vector<double> z(d, 0.0);             // z_t = sum_{j<=t} phi(k_j)
  std::vector<double> fq(d), fk(d);
  for (std::size_t t = 0; t < L; ++t) {
    for (std::size_t c = 0; c < d; ++c) fq[c] = elu_plus_one(q(t, c)), fk[c] = elu_plus_one(k(t, c));
    for (std::size_t a = 0; a < d; ++a) {  // the update: one rank-one term, then forget k_t and v_t
      z[a] += fk[a];
      for (std::size_t c = 0; c < dv; ++c) S(a, c) += fk[a] * v(t, c);
    }
    double normaliser = 0;  // z_t^T phi(q_t)
    for (std::size_t a = 0; a < d; ++a) normaliser += z[a] * fq[a];
    for (std::size_t c = 0; c < dv; ++c) {
      double numerator = 0;  // (S_t^T phi(q_t))_c
      for (std::size_t a = 0; a < d; ++a) numerator += S(a, c) * fq[a];
      r.output(t, c) = numerator / normaliser;
    }
  }
  r.final_state = S;
  r.final_normaliser = z;
  return r;
}

double linear_state_bytes(std::size_t d, std::size_t dv, std::size_t value_bytes) {
  return static_cast<double>(d * dv + d) * static_cast<double>(value_bytes);
}

double kv_cache_bytes_at(std::size_t t, std::size_t d, std::size_t dv, std::size_t value_bytes) {
  return static_cast<double>(t) * static_cast<double>(d + dv) * static_cast<double>(value_bytes);
}

}  // namespace attn
