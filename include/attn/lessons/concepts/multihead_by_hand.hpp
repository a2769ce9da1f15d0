#pragma once
// Multi-head attention taken apart (Vaswani et al. 2017, 3.2.2), each step kept so it can be
// printed and drawn with its shape:
//
//   x [L, D]  --W_q, W_k, W_v [D, D]-->  Q, K, V [L, D]
//   split     Q [L, D] -> Q_h [L, d_h], h = 0..H-1: the columns h d_h .. (h+1) d_h - 1, i.e. a
//             reshape to [L, H, d_h] and a transpose to [H, L, d_h]: no arithmetic at all
//   per head  A_h = softmax(Q_h K_h^T / sqrt(d_h)) [L, L],  O_h = A_h V_h [L, d_h]
//   concat    O = [O_0 | O_1 | ... ] [L, D]
//   output    y = O W_o^T [L, D]
//
// Checked against the engine's mha() on the same x and weights, and the fused form (one
// [3D, D] matrix W_qkv = [W_q; W_k; W_v], one GEMM, split in three: mha_fused) against the
// separate one: the same computation, so the same numbers.
#include <cstdint>
#include <vector>

#include "attn/engine/core/tensor.hpp"
#include "attn/io/json_io.hpp"

namespace attn {

struct MultiHeadByHand {
  std::size_t heads = 0, head_dim = 0;
  bool causal = true;
  Tensor2 x, q, k, v;                            // [L, D]
  std::vector<Tensor2> q_h, k_h, v_h;            // H of [L, d_h]
  std::vector<Tensor2> weights;                  // H of [L, L]
  std::vector<Tensor2> head_out;                 // H of [L, d_h]
  Tensor2 concat;                                // [L, D]
  Tensor2 output;                                // [L, D]
  double max_diff_vs_mha = 0;                    // max |output - mha(x)|
  double max_diff_fused = 0;                     // max |mha_fused(x) - mha(x)| over output and weights
};

// x [L, D]; H must divide D (InputError otherwise). Weights: init_mha_weights(D, H, H, seed).
MultiHeadByHand multihead_by_hand(const Tensor2& x, std::size_t heads, std::uint64_t seed, bool causal);

Json multihead_json(const MultiHeadByHand& m);

}  // namespace attn
