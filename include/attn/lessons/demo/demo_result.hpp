#pragma once
// Every section of `attn-cli demo` put together: what run_demo computes, for the renderer
// (render/views/demo_pictures.hpp, demo_view.hpp) and the manifest (docs/contracts.md).
// demo.hpp is the narrow door for a caller that only hands the result on.
#include <optional>
#include <string>
#include <vector>

#include "attn/lessons/demo/demo.hpp"
#include "attn/lessons/demo/demo_checks.hpp"
#include "attn/lessons/demo/demo_model.hpp"
#include "attn/lessons/concepts/approximations.hpp"
#include "attn/lessons/concepts/complexity.hpp"
#include "attn/lessons/concepts/positions_lesson.hpp"
#include "attn/lessons/concepts/variance.hpp"
#include "attn/engine/core/tensor.hpp"
#include "attn/engine/positions/rope.hpp"
#include "attn/io/json_io.hpp"

namespace attn {

// The single-head causal run again with q and k rotated to their positions (rope.hpp).
struct DemoRope {
  RopeStyle style = RopeStyle::Half;
  Tensor2 causal_weights;  // [L, L]
  double max_change = 0;   // max |weights with RoPE - without|: what position alone changed
  std::size_t max_change_query = 0, max_change_key = 0;  // where it is largest
};

struct DemoResult {
  DemoConfig config;
  std::vector<std::string> tokens;
  double scale = 0;
  // Without a model: seeded projections, and weights is non-causal. With one: weights is the
  // model's induction head and causal_weights its previous-token head (both causal), and
  // head_weights its last layer.
  Tensor2 weights;  // [L, L] single-head self-attention weights
  // scale * q.k before softmax and mask, of weights' and causal_weights' heads: the report's
  // temperature slider and mask toggles recompute the softmax from these.
  Tensor2 scores, causal_scores;  // [L, L]
  std::vector<std::vector<std::size_t>> top;  // top-k key indices per query
  Mask2 causal_allowed;   // [L, L] lower triangle
  Tensor2 causal_weights;  // [L, L] the same attention with the causal mask
  std::vector<std::vector<std::size_t>> causal_top;
  Tensor3 head_weights;  // [H, L, L] multi-head self-attention (its own seeded weights)
  Tensor3 head_scores;   // [H, L, L] its scale * q.k (after RoPE when configured), unmasked
  Tensor2 head_mean;     // [L, L] mean over the heads
  DemoFlashCheck flash;
  // Flash-Decoding's merge on the flash check's head: the last query (the one a decode step
  // computes) against every key, cut into min(3, L) chunks (split_kv.hpp).
  SplitKvLesson split_kv;
  DemoDecodeCheck decode;
  std::optional<DemoRope> rope;  // with config.rope
  std::optional<DemoModel> model;  // with config.model or config.gpt2
  // With config.trained: the trained model on the sentence (twice when nothing repeats), beside
  // the seeded run; empty, with the reason in trained_skipped, when the sentence does not fit it.
  std::optional<DemoModel> trained;
  std::string trained_skipped;
  // Without a model: repeated words and the reversed sentence under none, sinusoidal and RoPE.
  std::vector<PositionRun> positions;
  // The variance and complexity experiments at the demo's size: a small seeded Var(q.k) sweep (demo_variance_config)
  // and the FLOPs table for the sentence's length and a few standard ones (demo_complexity_config).
  VarianceResult variance;
  ComplexityReport complexity;
  // The efficient-attention family (window, strided, linear, performer) against exact softmax on
  // one head: the model's induction head (--model, or the trained model beside the seeded run),
  // else the seeded single head.
  ApproximationsLesson approximations;
};


VarianceConfig demo_variance_config(const DemoConfig& config);
// n = the sentence's token count and 16, 64, ..., 4096, at the demo's d_model and heads.
ComplexityConfig demo_complexity_config(const DemoConfig& config, std::size_t tokens);

// InputError for a configuration check_demo_config refuses, and for a sentence a model cannot
// read (more tokens than its context, more distinct words than its vocabulary).
DemoResult run_demo(const DemoConfig& config);

// The single head's Q, K, V of the seeded demo (no model): q, k, v [1, L, d_model].
struct DemoHead {
  std::vector<std::string> tokens;
  Tensor3 q, k, v;
};
DemoHead demo_seeded_head(const DemoConfig& config);

Json demo_manifest(const DemoResult& result, const std::vector<Artifact>& artifacts);

}  // namespace attn
