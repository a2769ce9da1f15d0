#pragma once
// What the demo's sources share (src/lessons/demo/): each section fills its part of a DemoResult.
#include <cstdint>
#include <string>
#include <vector>

#include "attn/engine/text/tokenize.hpp"
#include "attn/lessons/demo/demo_result.hpp"

namespace attn {

// Top-k keys of each query row; a masked key is never listed, even when k exceeds the keys
// the query may see (its weight 0 would otherwise tie with the other masked keys).
std::vector<std::vector<std::size_t>> demo_top_per_row(const Tensor2& weights, std::size_t k,
                                                       const Mask2* allowed = nullptr);

// The single head's seeded projections (seed + 1) of the embedded sentence.
struct SeededHead {
  Tensor2 x;
  Tensor3 q, k, v;
};
SeededHead seeded_head(const std::vector<Token>& tokens, const DemoConfig& config);

// Without a model (demo_seeded.cpp): the single head, causal, RoPE, the multi-head run and the
// checks on seeded embeddings and untrained projections; positions beside them.
void run_seeded_sections(DemoResult& r, const std::vector<Token>& tokens);

// With --model (demo_model.cpp): a toy model's heads instead (r.tokens are the sentence's
// words), or GPT-2's on its own BPE ids; the checks on the model's own Q, K, V.
void run_toy_model_sections(DemoResult& r);
void run_gpt2_sections(DemoResult& r, const std::vector<std::int32_t>& ids);
// A Llama, Mistral or Qwen2 folder's heads on its own tokenizer's ids.
void run_decoder_sections(DemoResult& r, const std::vector<std::int32_t>& ids);
// The default demo's trained model beside the seeded run, when the sentence fits it.
void run_trained_beside(DemoResult& r);

}  // namespace attn
