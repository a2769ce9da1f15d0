#pragma once
// The `attn-cli demo` pipeline as a library call: sentence -> tokens -> seeded embeddings ->
// seeded projections -> single-head self-attention -> top-k per query (Vaswani et al. 2017, 3.2.1),
// the same attention under a causal mask (section 5), and a seeded multi-head run; the flash
// check (the same Q, K, V through the tiled FlashAttention kernel, against the naive sdpa), and
// the decode check (the multi-head run through a KV cache, against the one-shot causal run);
// with --rope, RoPE in the multi-head run and a single-head causal run with RoPE. Then the
// pictures and manifest.json (docs/contracts.md).
//
// With a trained toy model (attn-cli train) or a GPT-2 folder, the attention comes from the model instead: its
// induction head and its previous-token head on the sentence are the two heatmaps, every head of
// every layer is the head grid, and the flash and decode checks run on the model's own Q, K, V.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "attn/lessons/concepts/approximations.hpp"
#include "attn/lessons/concepts/complexity.hpp"
#include "attn/engine/attention/flash.hpp"
#include "attn/io/json_io.hpp"
#include "attn/engine/positions/rope.hpp"
#include "attn/engine/attention/sdpa.hpp"
#include "attn/engine/text/tokenize.hpp"
#include "attn/engine/models/toy_model.hpp"
#include "attn/lessons/concepts/flash_replay.hpp"
#include "attn/lessons/models/forward.hpp"
#include "attn/lessons/concepts/positions_lesson.hpp"
#include "attn/engine/text/gpt2_bpe.hpp"
#include "attn/engine/models/gpt2_model.hpp"
#include "attn/lessons/models/head_summary.hpp"
#include "attn/lessons/concepts/split_kv.hpp"
#include "attn/lessons/concepts/variance.hpp"

namespace attn {

struct DemoConfig {
  std::string sentence = "Thinking strictly is hard";
  std::uint64_t seed = 42;
  std::size_t d_model = 64;
  std::size_t top_k = 2;
  std::size_t heads = 4;  // of the multi-head run; must divide d_model
  std::size_t max_tokens = kDefaultMaxTokens;
  std::optional<RopeStyle> rope;  // RoPE (base 10000) on q and k of the multi-head run, and a causal run beside
  // What x carries of positions in every run: none (the default: attention alone cannot see order)
  // or sinusoidal (x + PE). "rope" means config.rope is set (--positions rope).
  PositionKind positions = PositionKind::none;
  // A trained toy model: d_model and heads are its own, words map to ids in order of first
  // appearance (forward.hpp), and RoPE is refused (the toy learned positions of its own).
  std::shared_ptr<const ToyModel> model;
  // Or a GPT-2 folder (io/gpt2_model_file.hpp): the sentence is GPT-2's BPE tokens, the
  // attention the model's own (its layers' LayerNorm, biases and MLPs included).
  std::shared_ptr<const Gpt2Model> gpt2;
  std::shared_ptr<const Gpt2Tokenizer> gpt2_tokenizer;
  std::string model_path;  // how the manifest and the pictures name it
  // Without model or gpt2: a trained toy model shown beside the seeded projections (the demo's
  // default is the one shipped in the binary, io/shipped_model.hpp), and how to name it.
  std::shared_ptr<const ToyModel> trained;
  std::string trained_name;
};

// The sentence through a trained model. It is shown the sentence, or the sentence twice when no
// token of it appears twice (an induction head needs an earlier copy to look back at) and twice
// fits the model's positions. The two heads shown as heatmaps are named by the same scores and
// rule as heads.png's panel titles (head_summary.hpp, on the tokens shown): the induction head is
// the best-scoring head the rule calls "induction", else the best candidate after layer 0 (it
// needs a previous-token head before it; any layer for a 1-layer model); the previous-token head
// the best the rule calls "previous-token", else the best candidate of layer 0.
inline const char* kDemoModelSentence = "the cat sat on the mat . the cat sat on the mat";
struct DemoModel {
  std::string path;
  std::string architecture;  // "toy" (attn-cli train) or "gpt2"
  ToyConfig config;  // for GPT-2: vocab_size, n_embd, n_head, n_layer, n_positions
  std::vector<std::int32_t> ids;     // of the tokens shown
  std::vector<std::string> labels;   // the tokens shown
  bool repeated = false;             // the sentence twice (no token of it appeared twice)
  std::vector<Tensor3> attention;  // [layers] of [H, L, L]
  HeadSummary summary;             // every head's scores and kind (every head "untested" for one token)
  HeadScores induction_head, prev_token_head;  // two of summary.heads
  std::vector<Tensor3> scaled_scores;  // [layers] of [H, L, L]: scale * q.k before any mask
  Tensor3 induction_q, induction_k, induction_v;  // [1, L, d]: the induction head's own, as the model computed them
};

// max |flash - naive| on the same inputs (lse: rows with a visible key; none is fully masked).
struct FlashDifference {
  double output = 0, lse = 0;
};

// One flash_attention configuration, run non-causal and causal on the demo's single head.
struct DemoFlashRun {
  FlashOptions options;  // causal is set per run
  FlashTiling tiling;    // the tile sizes and ISA it actually used (flash_tiling)
  FlashDifference plain, causal;
};

// How many tiles of each kind a grid has (FlashTile::Kind).
struct TileCounts {
  std::size_t full = 0, diagonal = 0, skipped = 0;
  std::size_t total() const { return full + diagonal + skipped; }
};
TileCounts count_tiles(const std::vector<FlashTile>& tiles);

struct DemoFlashCheck {
  // The kernel bench times: float32, the best ISA of this CPU, default tiles (one tile or a
  // few for a sentence). Its rounding error and tile width depend on the CPU's SIMD set.
  DemoFlashRun fast;
  // A teaching run on small tiles so that a sentence spans several: float64 on the generic
  // micro-kernels (their key panel is 2 keys), the same on every machine.
  DemoFlashRun teaching;
  std::size_t requested_block_q = 0, requested_block_k = 0;  // what the teaching run asked for
  std::vector<FlashTile> tiles, causal_tiles;                // the teaching run's grid
  FlashReplay replay;  // the teaching run, causal, recorded tile by tile (flash_replay.hpp)
};

// The multi-head run (causal, RoPE when configured) through a KV cache: the first `prefill`
// tokens as one chunk, then one token at a time (mha_decode), against the one-shot run.
struct DemoDecodeCheck {
  std::size_t prefill = 0, steps = 0, kv_cache_len = 0;
  double output = 0, weights = 0;  // max |cached - one-shot|
};

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

// InputError for a configuration run_demo refuses (heads not dividing d_model, RoPE on an odd
// head dim, RoPE with a model), so that a caller can check before it creates anything.
void check_demo_config(const DemoConfig& config);
// InputError also for a sentence a model cannot read (more tokens than its context, more
// distinct words than its vocabulary).
DemoResult run_demo(const DemoConfig& config);

// What run_demo's cost grows with, known before it runs (tokenizing is cheap): the token count
// L, the model width D and head dim d, and how many [L, L] attention maps it forms and draws (every head of
// every layer shown, the single head, causal, RoPE). A caller estimates memory and time from
// it and refuses a run past its budget up front.
struct DemoSize {
  std::size_t tokens, d_model, head_dim, maps;
};
DemoSize demo_size(const DemoConfig& config);

// The single head's Q, K, V of the seeded demo (no model): q, k, v [1, L, d_model].
struct DemoHead {
  std::vector<std::string> tokens;
  Tensor3 q, k, v;
};
DemoHead demo_seeded_head(const DemoConfig& config);

// manifest.json as docs/contracts.md describes it; artifacts lists the files written beside it.
struct Artifact {
  std::string path, kind, title;  // path relative to the output folder
};

Json demo_manifest(const DemoResult& result, const std::vector<Artifact>& artifacts);

}  // namespace attn
