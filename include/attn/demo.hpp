#pragma once
// The `attn-cli demo` pipeline as a library call: sentence -> tokens -> seeded embeddings ->
// seeded projections -> single-head self-attention -> top-k per query (seed 000, section 4).
#include <cstdint>
#include <string>
#include <vector>

#include "attn/json_io.hpp"
#include "attn/sdpa.hpp"
#include "attn/tokenize.hpp"

namespace attn {

struct DemoConfig {
  std::string sentence = "Thinking strictly is hard";
  std::uint64_t seed = 42;
  std::size_t d_model = 64;
  std::size_t top_k = 2;
  std::size_t max_tokens = kDefaultMaxTokens;
};

struct DemoResult {
  DemoConfig config;
  std::vector<std::string> tokens;
  double scale = 0;
  Tensor2 weights;  // [L, L] single-head self-attention weights
  std::vector<std::vector<std::size_t>> top;  // top-k key indices per query
};

DemoResult run_demo(const DemoConfig& config);

// manifest.json as DESIGN.md describes it; artifacts lists the files written beside it.
struct Artifact {
  std::string path, kind, title;
};
Json demo_manifest(const DemoResult& result, const std::vector<Artifact>& artifacts);

}  // namespace attn
