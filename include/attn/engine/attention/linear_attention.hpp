#pragma once
// Linear attention and its recurrent form (Katharopoulos, Vyas, Pappas & Fleuret 2020,
// "Transformers are RNNs: fast autoregressive transformers with linear attention",
// arXiv 2006.16236, sections 3.2 and 3.4).
//
// Softmax attention weighs key j by exp(q_i . k_j / sqrt(d)). Linear attention replaces that
// similarity by a kernel phi(q_i)^T phi(k_j) with the feature map phi(x) = elu(x) + 1 (positive,
// so every weight is >= 0), q [Lq, d], k [Lk, d], v [Lk, dv]:
//
//   parallel   A_ij = phi(q_i)^T phi(k_j) / sum_{j' visible} phi(q_i)^T phi(k_j')   [Lq, Lk]
//              out_i = sum_j A_ij v_j                                                  (eq. 4)
//   recurrent  (causal, Lq = Lk) S_t = S_{t-1} + phi(k_t) v_t^T    [d, dv]
//                                z_t = z_{t-1} + phi(k_t)          [d]
//              out_t = S_t^T phi(q_t) / (z_t^T phi(q_t))                                (eq. 16-20)
//
// The two are the same sum, regrouped: sum_{j<=t} (phi(q_t)^T phi(k_j)) v_j = S_t^T phi(q_t). So
// the state an autoregressive step carries is S and z, d (dv + 1) numbers whatever t is, where
// softmax attention must keep every past k_j and v_j (a KV cache that grows with t). There is no
// 1/sqrt(d) scale: the kernel has none (the paper's eq. 6). Everything is float64.
#include <vector>

#include "attn/engine/core/tensor.hpp"

namespace attn {

using MatrixF64 = xt::xtensor<double, 2>;

// elu(x) + 1: x + 1 for x > 0, e^x otherwise; always > 0.
double elu_plus_one(double x);

// phi applied to every entry of x.
MatrixF64 elu_plus_one(const MatrixF64& x);

// The normalised kernel weights A [Lq, Lk] of the parallel form. causal: query i sees keys
// j <= i + Lk - Lq (bottom-right aligned, as everywhere in attn-cli). InputError when d differs.
MatrixF64 linear_attention_weights(const MatrixF64& q, const MatrixF64& k, bool causal);

// out = A V, A from linear_attention_weights: the parallel (quadratic) form, [Lq, dv].
MatrixF64 linear_attention_parallel(const MatrixF64& q, const MatrixF64& k, const MatrixF64& v, bool causal);

// The recurrence, one token at a time (causal self-attention, Lq = Lk = L), [L, dv].
struct LinearRecurrence {
  MatrixF64 output;       // [L, dv]
  MatrixF64 final_state;  // S_L [d, dv]
  std::vector<double> final_normaliser;  // z_L [d]
};
LinearRecurrence linear_attention_recurrent(const MatrixF64& q, const MatrixF64& k, const MatrixF64& v);

// Bytes of what one decoding step carries at step t (after t tokens), values of `value_bytes` each:
//   the recurrent state S and z:  (d dv + d) value_bytes, the same for every t;
//   softmax attention's KV cache: t (d + dv) value_bytes, growing with t.
double linear_state_bytes(std::size_t d, std::size_t dv, std::size_t value_bytes);
double kv_cache_bytes_at(std::size_t t, std::size_t d, std::size_t dv, std::size_t value_bytes);

}  // namespace attn
