#pragma once
// Forward and backward passes of the toy transformer (toy_model.hpp) over a batch, with the
// next-token cross-entropy loss, as llm.c's train_gpt2.c lays them out: every layer's forward
// keeps what its backward needs (the residual stream entering it, Q, K, V, and the attention
// kernel's own result: the flash output + lse, or the naive weights), so the backward never
// runs attention forward again.
//
//   forward   x_0 = embed[t] + pos              [B*L, D]
//             x_{l+1} = x_l + concat_h(attn(x_l W_q^T, x_l W_k^T, x_l W_v^T)) W_o^T
//             logits = x_n unembed^T            [B*L, vocab]
//             loss = mean over positions i < L-1 of -log softmax(logits_i)[t_{i+1}]
//   backward  the same in reverse; attention through the engine's door (attention.hpp's
//             attention_backward from the kept forward: FlashAttention-2's Algorithm 2 for
//             flash, the naive reference's for naive); every projection is a float32 GEMM.
#include <cstdint>
#include <vector>

#include "attn/engine/attention/attention.hpp"
#include "attn/engine/models/toy_model.hpp"

namespace attn {

// B sequences of `length` token ids, row-major [B, length]; every id < vocab. The model reads
// each row and every position but the last predicts its successor (length <= context); with
// last_is_target, the model reads the first length - 1 ids and every one of those positions
// predicts its successor, so a full-context training row trains the context's last position
// too (as language models are trained: inputs t_0..t_{L-1}, targets t_1..t_L).
struct TokenBatch {
  std::size_t batch = 0, length = 0;
  std::vector<std::int32_t> tokens;
  bool last_is_target = false;
};

struct ToyPassOptions {
  Backend backend = Backend::flash;  // flash (float32 tiles) or naive (the float64 reference)
  std::size_t threads = 1;           // attention kernel threads (0 = all hardware threads)
};

// What the forward keeps for the backward, reused from step to step (no allocation once the
// shapes are known, apart from what the attention kernels allocate themselves).
struct ToyWorkspace {
  std::vector<Tensor2> residual;  // x_l entering layer l, and x_n: layers + 1 of [B*L, D]
  std::vector<Tensor3> q, k, v;   // per layer [B*H, L, d]
  // Per layer, what the backward reads: flash's output and lse, or the naive weights [B*H, L, L].
  std::vector<SdpaResult> attention;
  std::vector<Tensor2> merged;    // per layer, the heads' outputs concatenated [B*L, D]
  Tensor2 logits;                 // [B*L, vocab], then dLoss/dlogits in the backward
  Tensor2 grad_x, grad_merged, grad_proj;  // [B*L, D] scratch
  Tensor3 grad_heads;             // [B*H, L, d] scratch
  std::vector<float> panels, edge;  // the linear layers' packed operand and edge rows (toy_backprop.cpp)
};

// Mean next-token cross-entropy of the batch (natural log). With grads non-null, also writes
// dLoss/dparameter into *grads (overwritten, shaped like the model). InputError for token ids
// out of range or sequences longer than the context.
double toy_loss_and_gradients(const ToyModel& model, const TokenBatch& batch, ToyModel* grads,
                              ToyWorkspace& workspace, const ToyPassOptions& options = {});

// One sequence through the model, for looking at it: logits [L, vocab] and every layer's
// attention weights [H, L, L] (the naive float64 kernel, so the weights are exact), with the
// residual stream entering each layer and each layer's per-head Q, K, V (to run one head or one
// layer again, e.g. through the flash kernel or a KV cache).
struct ToyForward {
  Tensor2 logits;
  std::vector<Tensor3> attention;  // [layers] of [H, L, L]
  std::vector<Tensor2> residual;   // [layers + 1] of [L, D]: x_l entering layer l, then x_n
  std::vector<Tensor3> q, k, v;    // [layers] of [H, L, D/H]
};
ToyForward toy_forward(const ToyModel& model, const std::vector<std::int32_t>& tokens);

}  // namespace attn
