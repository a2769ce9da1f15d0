#pragma once
// Multi-head attention (Vaswani et al. 2017, section 3.2.2) with torch.nn.Linear projections:
//
//   Q = query W_q^T + b_q   [Lq, D]  -> split into H heads of d = D / H      [H, Lq, d]
//   K = key   W_k^T + b_k   [Lk, Dkv] -> Hkv heads (Dkv = Hkv * d)           [Hkv, Lk, d]
//   V = value W_v^T + b_v   [Lk, Dkv] -> Hkv heads                           [Hkv, Lk, d]
//   O_h = sdpa(Q_h, K_{h / (H/Hkv)}, V_{h / (H/Hkv)})   each query head reads its group's K, V
//   y = concat_h(O_h) W_o^T + b_o   [Lq, D]
//
// Hkv == H is classic MHA, 1 < Hkv < H is grouped-query attention (LLaMA-2-70B, Mistral),
// Hkv == 1 is multi-query attention. Like sdpa(), the computation runs in float64 inside.
//
// With RoPE (rope.hpp), Q and K are rotated per head right after the split, before attention
// (and before a KV cache stores K), as in LLaMA's attention.
#include <optional>
#include <vector>

#include "attn/engine/attention/kv_cache.hpp"
#include "attn/engine/positions/rope.hpp"
#include "attn/engine/attention/attention.hpp"
#include "attn/engine/attention/sdpa.hpp"
#include "attn/engine/core/tensor.hpp"

namespace attn {

struct MhaWeights {
  Tensor2 w_q, w_k, w_v, w_o;                 // [D, D], [Dkv, D], [Dkv, D], [D, D]
  std::optional<Tensor1> b_q, b_k, b_v, b_o;  // [out]; absent = no bias
};

// The fused form many implementations store: one [D + 2 Dkv, D] matrix whose rows are W_q,
// then W_k, then W_v, so one GEMM projects all three.
struct FusedQkvWeights {
  Tensor2 w_qkv;                  // [D + 2 Dkv, D]
  std::optional<Tensor1> b_qkv;   // [D + 2 Dkv]
  Tensor2 w_o;                    // [D, D]
  std::optional<Tensor1> b_o;
};

struct MhaOptions {
  std::size_t num_heads = 1;
  std::size_t num_kv_heads = 0;  // 0 = num_heads
  SdpaOptions attention;         // causal, scale, temperature, dropout, the variants
  std::optional<RopeOptions> rope;  // RoPE on q and k after projection; absent = off
  // The attention kernel (attention.hpp): the naive float64 reference by default, or the
  // tiled flash / CUDA kernel (weights recomputed from q and k).
  BackendOptions backend;
  // false: flash and CUDA skip recomputing the [H, Lq, Lk] weights (MhaResult::weights stays
  // empty), so a long sequence needs memory linear in its length. The naive kernel forms them
  // anyway. mha_decode always keeps them.
  bool with_weights = true;
  // mha_decode's KV cache: float64, or bfloat16 (kv_cache.hpp). The prefill chunk attends to
  // its keys and values as the cache holds them too, so every step reads the same values.
  KvDtype kv_dtype = KvDtype::float64;
};

struct MhaResult {
  Tensor2 output;   // [Lq, D]
  Tensor3 weights;  // [H, Lq, Lk]
  Tensor2 lse;      // [H, Lq]
};

// query [Lq, D], key and value [Lk, D] (pass query three times for self-attention).
// allowed: [Lq, Lk] or [H, Lq, Lk], or null.
MhaResult mha(const Tensor2& query, const Tensor2& key, const Tensor2& value,
              const MhaWeights& weights, const Mask3* allowed, const MhaOptions& options);

// The backward pass of mha(): the gradients of a loss with respect to its inputs and weights,
// given grad_output = dLoss/dy [Lq, D]. Each forward step is undone in reverse order:
//   y = concat(O) W_o^T + b_o   ->  dW_o = dy^T concat(O), db_o = colsum(dy), dO = dy W_o
//   O_h = attention(q_h, k, v)  ->  dq, dk, dv by the backend's backward (backward.hpp)
//   q = rope(Q), k = rope(K)    ->  dQ, dK: dq, dk turned back by the inverse rotation
//   Q = query W_q^T + b_q, ...  ->  dW_q = dQ^T query, db_q = colsum(dQ), dquery = dQ W_q
// (mha_backward.cpp). Float64 inside; naive or flash backend (options.backend), GQA/MQA,
// causal, mask, RoPE in both styles, cross-attention, the mask descriptors. InputError for
// dropout and soft-capping (attention_backward's refusals).
struct MhaGradients {
  Tensor2 grad_query;                              // [Lq, D]
  Tensor2 grad_key, grad_value;                    // [Lk, D]; empty from mha_self_backward
  Tensor2 grad_w_q, grad_w_k, grad_w_v, grad_w_o;  // the shapes of w_q, w_k, w_v, w_o
  std::optional<Tensor1> grad_b_q, grad_b_k, grad_b_v, grad_b_o;  // for each bias given
};

// query [Lq, D], key and value [Lk, D], weights, allowed and options as mha().
MhaGradients mha_backward(const Tensor2& query, const Tensor2& key, const Tensor2& value,
                          const MhaWeights& weights, const Mask3* allowed,
                          const Tensor2& grad_output, const MhaOptions& options);

// Self-attention: x [L, D] is query, key and value at once, so its gradient is the sum of the
// three, returned as grad_query (grad_key and grad_value are left empty).
MhaGradients mha_self_backward(const Tensor2& x, const MhaWeights& weights, const Mask3* allowed,
                               const Tensor2& grad_output, const MhaOptions& options);

// Self-attention with fused QKV weights; gives the same result as mha(x, x, x, ...).
MhaResult mha_fused(const Tensor2& x, const FusedQkvWeights& weights, const Mask3* allowed,
                    const MhaOptions& options);

FusedQkvWeights fuse_qkv(const MhaWeights& weights);

// One call of mha_decode's loop: the prefill chunk, or one decoded token.
struct DecodeStep {
  std::size_t first = 0, count = 0;  // tokens [first, first + count) of x
  std::size_t cache_len = 0;         // tokens in the KV cache after this step
  std::size_t cache_bytes = 0;       // bytes of K and V the cache holds then (as stored)
};

struct MhaDecodeResult {
  MhaResult result;  // as mha(): output [L, D]; weights [H, L, L], each decoded row padded with
                     // zeros to L keys (a key outside the cache had weight 0); lse [H, L]
  std::size_t kv_cache_len = 0;  // tokens in the cache at the end (L, or the window)
  std::vector<DecodeStep> steps;
};

// Causal self-attention on x [L, D] through a KV cache (kv_cache.hpp): the first `prefill`
// tokens go in as one chunk, then the others one at a time, each attending to the cache.
// 0 <= prefill <= L: 0 decodes every token, L is one prefill and no decode step.
// options.attention.causal must be true and dropout off; mask [L, L] or [H, L, L] (rows are
// sliced per step); a sliding window alone (options.attention.mask_mod.window, no sinks,
// documents or prefix) evicts the tokens the next queries cannot see. The result equals
// mha(x, x, x, ...) up to float64 rounding -- the point of the cache.
MhaDecodeResult mha_decode(const Tensor2& x, const MhaWeights& weights, const Mask3* allowed,
                           const MhaOptions& options, std::size_t prefill);

}  // namespace attn

namespace attn {

// Weights drawn like torch.nn.Linear's default init, U(-1/sqrt(D), 1/sqrt(D)), from one seeded
// generator in the order w_q, w_k, w_v, w_o (then the biases, when with_bias).
MhaWeights init_mha_weights(std::size_t D, std::size_t num_heads, std::size_t num_kv_heads,
                            std::uint64_t seed, bool with_bias = false);

}  // namespace attn
