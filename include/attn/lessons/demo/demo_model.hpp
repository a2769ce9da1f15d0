#pragma once
// The demo's trained-heads section: a sentence through a trained model, either the toy model shown
// beside the seeded run (the one shipped in the binary) or, with --model, a toy or GPT-2 folder
// whose heads replace the seeded projections.
//
// The model is shown the sentence, or the sentence twice when no token of it appears twice (an
// induction head needs an earlier copy to look back at) and twice fits the model's positions.
// The two heads shown as heatmaps are named by the same scores and rule as heads.png's panel
// titles (head_summary.hpp, on the tokens shown): the induction head is the best-scoring head
// the rule calls "induction", else the best candidate after layer 0 (it needs a previous-token
// head before it; any layer for a 1-layer model); the previous-token head the best the rule
// calls "previous-token", else the best candidate of layer 0.
#include <cstdint>
#include <string>
#include <vector>

#include "attn/engine/core/tensor.hpp"
#include "attn/engine/models/toy_model.hpp"
#include "attn/io/json_io.hpp"
#include "attn/lessons/models/head_summary.hpp"

namespace attn {

struct DemoModel {
  std::string path;
  std::string architecture;  // "toy" (attn-cli train), "gpt2", or a Llama-family folder's "llama", "mistral", "qwen2"
  ToyConfig config;  // for GPT-2: vocab_size, n_embd, n_head, n_layer, n_positions; for the others hidden, heads,
                     // layers, max_position_embeddings
  std::vector<std::int32_t> ids;     // of the tokens shown
  std::vector<std::string> labels;   // the tokens shown
  bool repeated = false;             // the sentence twice (no token of it appeared twice)
  std::vector<Tensor3> attention;  // [layers] of [H, L, L]
  HeadSummary summary;             // every head's scores and kind (every head "untested" for one token)
  HeadScores induction_head, prev_token_head;  // two of summary.heads
  std::vector<Tensor3> scaled_scores;  // [layers] of [H, L, L]: scale * q.k before any mask
  Tensor3 induction_q, induction_k, induction_v;  // [1, L, d]: the induction head's own, as the model computed them
};

// How many tokens a model of `positions` positions is shown for these ids (twice as many when
// nothing repeats and twice fits).
std::size_t demo_shown_length(const std::vector<std::int32_t>& ids, std::size_t positions);

// With --model: where every picture's attention came from (manifest["config"]) and every head's
// scores (manifest["results"]).
void add_demo_model_json(Json& manifest, const DemoModel& model);
// Without --model: the trained model beside the seeded run (the tokens it was shown, every head's
// scores and kind, the two named heads' weights), or why it was not shown.
Json demo_trained_json(const DemoModel* trained, const std::string& skipped);

}  // namespace attn
