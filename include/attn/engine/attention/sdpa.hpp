#pragma once
// Naive scaled dot-product attention: the reference every faster path is checked against.
//
//   S = mod(scale * Q K^T) / temperature    [H, Lq, Lk]   (mod: soft-cap, ALiBi; variant.hpp)
//   S[h, i, j] = -inf where query i may not attend to key j (mask, causal, the mask descriptor)
//   P = softmax(S) row-wise                 (fully masked rows -> all zeros, see softmax.hpp)
//   O = P V                                 [H, Lq, dv]
//
// Inputs and outputs are float32; inside, everything runs in float64 (BLAS dgemm for both
// products), so the reference's own error is one float32 rounding of each result.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "attn/engine/core/tensor.hpp"
#include "attn/engine/attention/variant.hpp"

namespace attn {

struct SdpaOptions {
  bool causal = false;          // bottom-right aligned when Lq != Lk (see mask.hpp)
  std::optional<double> scale;  // default 1/sqrt(d)
  double temperature = 1.0;     // > 1 flattens the softmax, < 1 sharpens it
  double dropout_p = 0.0;       // dropout on the weights (0 = off, the default)
  std::uint64_t dropout_seed = 42;
  // Every variant (variant.hpp): which keys each query may see -- sliding window (Mistral:
  // causal with window {w - 1, 0} keeps the last w keys), sinks, documents, prefix-LM, strided
  // -- joined with causal and the explicit mask; and what is done to each scaled score before
  // the temperature divides it (soft-cap, ALiBi).
  AttentionMask mask_mod;
  ScoreMod score_mod;
};

struct SdpaResult {
  Tensor3 output;   // [H, Lq, dv]
  Tensor3 weights;  // [H, Lq, Lk], post-softmax (post-dropout when dropout_p > 0, as PyTorch)
  Tensor2 lse;      // [H, Lq], log-sum-exp of the scaled masked scores; -inf = fully masked
  // The same before rounding to float, from the float64 kernels (naive; flash in float64);
  // empty from the float32 ones.
  xt::xtensor<double, 2> lse64;
};

// Grouped-query attention is allowed: k and v may have Hkv heads with H % Hkv == 0, and query
// head h reads key/value head h / (H / Hkv). allowed is [Lq, Lk] (all heads) or [H, Lq, Lk],
// or null for no mask.
SdpaResult sdpa(const Tensor3& q, const Tensor3& k, const Tensor3& v,
                const Mask3* allowed = nullptr, const SdpaOptions& options = {});

// The scaled scores S = scale * Q K^T of every head before any mask, modifier or softmax
// (what a heatmap of raw scores shows): q [H, Lq, d], k [Hkv, Lk, d] -> [H, Lq, Lk]; GQA as
// sdpa(); scale as resolved_scale(). Float64 inside, rounded once.
Tensor3 attention_scores(const Tensor3& q, const Tensor3& k, std::optional<double> scale = std::nullopt);

// Checks the shapes of an attention call, each of rank 2 ([L, d]) or 3 ([H, L, d]), and throws
// InputError naming the field, the expected and the actual shape. mask may be null (absent).
void check_sdpa_shapes(const Shape& q, const Shape& k, const Shape& v, const Shape* mask);

// The same checks for a kernel's inputs: q [H, Lq, d], k [Hkv, Lk, d], v [Hkv, Lk, dv] and
// allowed [1 or H, Lq, Lk] or null ([1, Lq, Lk] is reported as the [Lq, Lk] the user gave).
void check_head_shapes(const Shape& q, const Shape& k, const Shape& v, const Mask3* allowed);

// The scale the scores q.k are multiplied by: the given one, or 1/sqrt(d) (Vaswani et al. 2017).
double resolved_scale(std::optional<double> scale, std::size_t d);

// Checks temperature > 0, a finite scale, 0 <= dropout_p < 1, and (when num_heads > 0) the
// score modifier against the heads (one ALiBi slope per head); throws InputError.
void check_sdpa_options(const SdpaOptions& options, std::size_t num_heads = 0);

// [H, Lq, Lk] -> [Lq, Lk]: the average of the heads' weights (each row still sums to 1).
Tensor2 mean_over_heads(const Tensor3& weights);

// Number of query rows whose keys are all masked (lse == -inf).
std::size_t count_fully_masked_rows(const Tensor2& lse);

}  // namespace attn
