#pragma once
// Private to the engine: the float64 core shared by sdpa() and mha().
#include "attn/engine/attention/attention.hpp"
#include "attn/engine/attention/flash.hpp"
#include "attn/engine/core/linear.hpp"
#include "attn/engine/attention/sdpa.hpp"

namespace attn::detail {

struct SdpaF64 {
  TensorD3 output;   // [H, Lq, dv]
  TensorD3 weights;  // [H, Lq, Lk]
  TensorD2 lse;      // [H, Lq]
};

// q [H, Lq, d], k [Hkv, Lk, d], v [Hkv, Lk, dv]; shapes already checked.
SdpaF64 sdpa_f64(const TensorD3& q, const TensorD3& k, const TensorD3& v, const Mask3* allowed,
                 const SdpaOptions& options);

// The flash kernel (src/flash/) in float64 on float64 tensors: output and lse, no weights.
struct FlashF64 {
  TensorD3 output;  // [H, Lq, dv]
  TensorD2 lse;     // [H, Lq]
};
FlashF64 flash_f64(const TensorD3& q, const TensorD3& k, const TensorD3& v, const Mask3* allowed,
                   const FlashOptions& options);

// recompute_weights() on float64 tensors, without the final rounding.
TensorD3 recompute_weights_f64(const TensorD3& q, const TensorD3& k, const TensorD2& lse,
                               const Mask3* allowed, bool causal, double scale,
                               const ScoreMod* score_mod = nullptr, double temperature = 1.0);

// attention() (attention.hpp) on float64 tensors: the door mha() goes through.
SdpaF64 attend_f64(const TensorD3& q, const TensorD3& k, const TensorD3& v, const Mask3* allowed,
                   const SdpaOptions& options, const BackendOptions& backend, bool with_weights = true);

// Before the float64 lse is rounded to float32: a finite lse past float32's range (scores of -1e300
// after scaling) would round to -inf, which means "every key masked": a false warning and a
// null in the JSON. That is an overflow of the user's scores, refused as such.
void check_lse_fits_float32(const TensorD2& lse);

}  // namespace attn::detail
