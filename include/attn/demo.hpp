#pragma once
// The `attn-cli demo` pipeline as a library call: sentence -> tokens -> seeded embeddings ->
// seeded projections -> single-head self-attention -> top-k per query (seed 000, section 4),
// the same attention under a causal mask (section 5), and a seeded multi-head run; then the
// pictures of all three and manifest.json (DESIGN.md).
#include <cstdint>
#include <string>
#include <vector>

#include "attn/canvas.hpp"
#include "attn/json_io.hpp"
#include "attn/sdpa.hpp"
#include "attn/tokenize.hpp"

namespace attn {

struct DemoConfig {
  std::string sentence = "Thinking strictly is hard";
  std::uint64_t seed = 42;
  std::size_t d_model = 64;
  std::size_t top_k = 2;
  std::size_t heads = 4;  // of the multi-head run; must divide d_model
  std::size_t max_tokens = kDefaultMaxTokens;
};

struct DemoResult {
  DemoConfig config;
  std::vector<std::string> tokens;
  double scale = 0;
  Tensor2 weights;  // [L, L] single-head self-attention weights
  std::vector<std::vector<std::size_t>> top;  // top-k key indices per query
  Mask2 causal_allowed;   // [L, L] lower triangle
  Tensor2 causal_weights;  // [L, L] the same attention with the causal mask
  std::vector<std::vector<std::size_t>> causal_top;
  Tensor3 head_weights;  // [H, L, L] multi-head self-attention (its own seeded weights)
  Tensor2 head_mean;     // [L, L] mean over the heads
};

DemoResult run_demo(const DemoConfig& config);

// manifest.json as DESIGN.md describes it; artifacts lists the files written beside it.
struct Artifact {
  std::string path, kind, title;  // path relative to the output folder
};

struct DemoPictureOptions {
  ImageOptions image;
  std::string colormap = "Blues";
};

// Writes the single-head heatmap, the causal heatmap, the causal mask diagram and the head
// grid into dir (each atomically) and returns them as manifest artifacts, in that order.
std::vector<Artifact> write_demo_pictures(const DemoResult& result, const std::string& dir,
                                          const DemoPictureOptions& options);
Json demo_manifest(const DemoResult& result, const std::vector<Artifact>& artifacts);

}  // namespace attn
