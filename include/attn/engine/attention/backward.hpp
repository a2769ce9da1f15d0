#pragma once
// The backward pass of scaled dot-product attention: given dO = dLoss/dO, the gradients of
// the loss with respect to Q, K and V (for the forward of sdpa.hpp and flash.hpp).
//
//   forward:  S = alpha * Q K^T  (alpha = scale / temperature; masked scores -inf)
//             P = softmax(S) row-wise,   O = P V
//   backward: dV = P^T dO                              [Lk, dv]
//             dP = dO V^T                              [Lq, Lk]
//             dS = P o (dP - rowsum(dP o P))           (o = elementwise; the softmax's Jacobian)
//             dQ = alpha * dS K,   dK = alpha * dS^T Q
//
// rowsum(dP o P) = rowsum(dO o O), since dP o P summed over keys is dO . (sum_j P_j V_j): the
// flash backward uses the cheaper right side (FlashAttention-2, Dao 2023, arXiv 2307.08691,
// Algorithm 2, line 4: D = rowsum(dO o O)); the naive reference uses the left, so the two
// paths check each other. A fully masked row has P = 0 and contributes nothing. With GQA, a
// key/value head's dK and dV are summed over the query heads that read it.
//
// Both paths run in float64 inside; float32 in and out, like the forward.
#include "attn/engine/attention/flash.hpp"
#include "attn/engine/attention/sdpa.hpp"
#include "attn/engine/core/tensor.hpp"

namespace attn {

struct SdpaGradients {
  Tensor3 grad_q;  // [H, Lq, d]
  Tensor3 grad_k;  // [Hkv, Lk, d]   (GQA: summed over the query heads of its group)
  Tensor3 grad_v;  // [Hkv, Lk, dv]
};

// The naive reference: runs the float64 forward of sdpa() and back-propagates through the
// [H, Lq, Lk] weights it stored. q, k, v, allowed and options as sdpa(); grad_output
// [H, Lq, dv]. InputError for dropout (not supported here); every variant is differentiated.
SdpaGradients sdpa_backward(const Tensor3& q, const Tensor3& k, const Tensor3& v,
                            const Mask3* allowed, const Tensor3& grad_output,
                            const SdpaOptions& options = {});

// The same from a forward that was already run: forward.weights are sdpa()'s for the same
// inputs and options (a training step keeps them from its forward pass; rounded to float32,
// they cost the gradients about one float32 rounding).
SdpaGradients sdpa_backward(const Tensor3& q, const Tensor3& k, const Tensor3& v,
                            const SdpaResult& forward, const Tensor3& grad_output,
                            const SdpaOptions& options = {});

// FlashAttention-2's backward (Algorithm 2): the weights are recomputed tile by tile from q, k
// and the forward's lse, never stored. `forward` is what flash_attention() returned for the
// same inputs and options (its lse64 is used when present: a float32 lse of 1e4 is off by
// 1e-3, and every recomputed weight of its row by as much). options.precision float64: float64
// inside (the reference attend and mha use). float32: float32 tiles from the float lse, on this
// CPU's widest instruction set or options.isa (what training uses; FlashAttention's accuracy
// rule holds, tests/test_backward.cpp). block_q / block_k / threads as in the forward (0 =
// defaults).
SdpaGradients flash_backward(const Tensor3& q, const Tensor3& k, const Tensor3& v,
                             const Mask3* allowed, const FlashResult& forward,
                             const Tensor3& grad_output, const FlashOptions& options);

// InputError "grad_output: expected shape [..], got [..]" unless the shapes agree.
void check_grad_output_shape(const Shape& grad_output, const Shape& expected);

// The default tile edge of the flash backward (query rows and keys per tile).
std::size_t flash_backward_default_block();

}  // namespace attn
