#pragma once
// The `attn-cli generate` pipeline as a library call: a sentence's tokens fed through causal
// multi-head self-attention with a KV cache, as if the model were generating them (teacher
// forcing: there is no vocabulary and no sampling, the next token is the sentence's next one).
// Each step is checked against the full recomputation, which the cache must reproduce.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "attn/io/json_io.hpp"
#include "attn/engine/attention/kv_cache.hpp"
#include "attn/engine/attention/mha.hpp"
#include "attn/engine/text/tokenize.hpp"

namespace attn {

struct GenerateConfig {
  std::string sentence = "Thinking strictly is hard";
  std::uint64_t seed = 42;
  std::size_t d_model = 16;
  std::size_t num_heads = 2;
  std::size_t num_kv_heads = 0;        // 0 = num_heads
  std::size_t prefill = 1;             // prompt tokens in the first step, 0 <= prefill <= L
  std::optional<RopeStyle> rope;       // RoPE on q and k (base 10000)
  bool sinusoidal = false;             // x * sqrt(d_model) + PE before attention
  bool alibi = false;                  // ALiBi biases, one slope per head
  std::size_t window = 0;              // sliding window (0 = off): the cache keeps w tokens
  KvDtype kv_dtype = KvDtype::float64;  // what the cache stores (kv_cache.hpp)
  std::size_t max_tokens = kDefaultMaxTokens;
};

// FLOPs of one step (complexity.hpp's convention: 2 per multiply-add, softmax 3 per score).
// projections: Q, K, V and the output projection of the tokens computed; attention: per head
// and per (query, key) pair the query may see, 2 d (q.k) + 3 (softmax) + 2 d (weights x V).
struct StepFlops {
  std::uint64_t projections = 0, attention = 0;
  std::uint64_t total() const { return projections + attention; }
};

struct GenerateStep {
  std::size_t first = 0, count = 0;  // tokens [first, first + count) fed in this step
  bool prefill = false;
  std::size_t cache_len = 0, cache_bytes = 0;
  std::size_t evicted = 0;  // tokens the window has pushed out of the cache by the end of this step
  Tensor3 weights;        // [H, count, L]: the step's new weight rows (0 beyond the cache)
  double max_diff = 0;    // max |decoded - full recomputation| over its output and weight rows
  // What producing this step's outputs costs with the cache (only the new tokens' projections
  // and their rows of attention) and without one (the whole prefix 0..first+count-1 run again:
  // every token's projections and every row of attention).
  StepFlops with_cache, recompute;
};

// Which positional scheme the run used, for titles: "no positions", "RoPE (half)",
// "sinusoidal positions", "ALiBi", or several joined by " + ".
std::string positions_name(const GenerateConfig& config);

struct GenerateResult {
  GenerateConfig config;
  std::vector<std::string> tokens;
  std::size_t num_kv_heads = 0, head_dim = 0;
  MhaDecodeResult decoded;  // through the KV cache
  MhaResult full;           // one-shot causal run on the whole sentence
  std::vector<GenerateStep> steps;
  double max_diff = 0;      // over all steps
  StepFlops total_with_cache, total_recompute;  // summed over the steps
};

GenerateResult run_generate(const GenerateConfig& config);

Json generate_json(const GenerateResult& result);

}  // namespace attn
