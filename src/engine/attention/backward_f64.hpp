#pragma once
// Private to the engine: the float64 backward passes shared by the public entry points
// (backward.hpp, attention.hpp) and mha_backward().
#include "sdpa_f64.hpp"

namespace attn::detail {

struct GradsF64 {
  TensorD3 dq;  // [H, Lq, d]
  TensorD3 dk;  // [Hkv, Lk, d]
  TensorD3 dv;  // [Hkv, Lk, dv]
};

// The naive reference from the stored weights P [H, Lq, Lk] of the forward (sdpa_f64);
// alpha = scale / temperature, the factor the scores were multiplied by. With a soft-cap in
// `mod` the score was mod(scale q.k) / temperature, and each dS is multiplied by the cap's
// derivative at scale q.k (its bias terms do not depend on q or k).
GradsF64 sdpa_backward_f64(const TensorD3& q, const TensorD3& k, const TensorD3& v,
                           const TensorD3& weights, const TensorD3& grad_output, double alpha,
                           const ScoreMod* mod = nullptr, double temperature = 1.0);

// FlashAttention-2's Algorithm 2 from the forward's output [H, Lq, dv] and lse [H, Lq];
// options.scale must be resolved (the temperature folded in, as tiled_options() does).
GradsF64 flash_backward_f64(const TensorD3& q, const TensorD3& k, const TensorD3& v,
                            const Mask3* allowed, const TensorD3& output, const TensorD2& lse,
                            const TensorD3& grad_output, const FlashOptions& options);

// InputError for what the backward does not do: dropout.
void check_backward_options(const SdpaOptions& options);

// The door's backward on float64 tensors: naive from forward.weights, flash from
// forward.output and forward.lse. `forward` is attend_f64's result for the same inputs.
GradsF64 attend_backward_f64(const TensorD3& q, const TensorD3& k, const TensorD3& v,
                             const Mask3* allowed, const SdpaF64& forward,
                             const TensorD3& grad_output, const SdpaOptions& options,
                             const BackendOptions& backend);

}  // namespace attn::detail
