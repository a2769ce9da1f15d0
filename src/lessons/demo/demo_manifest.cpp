// manifest.json (docs/contracts.md): the config, the artifacts, and each section's results,
// written by the section's own JSON function where it has one.
#include "attn/lessons/demo/demo_result.hpp"

namespace attn {
namespace {

Json top_k_json(const std::vector<std::string>& tokens, const Tensor2& weights,
                const std::vector<std::vector<std::size_t>>& top) {
  Json rows = Json::array();
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    Json keys = Json::array();
    for (std::size_t j : top[i]) {
      keys.push_back({{"index", j}, {"token", tokens[j]}, {"weight", json_float(weights(i, j), FloatText::shortest)}});
    }
    rows.push_back({{"query", tokens[i]}, {"index", i}, {"top", keys}});
  }
  return rows;
}

// What the runs know of order: "none", "sinusoidal", "rope" or "sinusoidal + rope".
std::string positions_text(const DemoResult& r) {
  if (!r.rope) return position_kind_name(r.config.positions);
  return r.config.positions == PositionKind::sinusoidal ? "sinusoidal + rope" : "rope";
}

}  // namespace

// The manifest is read by people and plotted: its weights are written as the shortest decimal
// of each float32 (FloatText::shortest), unlike attend/mha's exact values.
Json demo_manifest(const DemoResult& r, const std::vector<Artifact>& artifacts) {
  Json arts = Json::array();
  for (const Artifact& a : artifacts) arts.push_back({{"path", a.path}, {"kind", a.kind}, {"title", a.title}});
  Json allowed = Json::array();
  for (std::size_t i = 0; i < r.causal_allowed.shape(0); ++i) {
    Json row = Json::array();
    for (std::size_t j = 0; j < r.causal_allowed.shape(1); ++j) row.push_back(r.causal_allowed(i, j) ? 1 : 0);
    allowed.push_back(row);
  }
  Json m = {
      {"sentence", r.config.sentence},
      {"tokens", r.tokens},
      {"seed", r.config.seed},
      {"config",
       {{"d_model", r.config.d_model},
        {"heads", 1},
        {"multi_head_heads", r.config.heads},
        {"scale", r.scale},
        {"top_k", r.config.top_k},
        {"embeddings", r.config.positions == PositionKind::sinusoidal
                           ? "N(0,1), seeded by (seed, token text), then x + sinusoidal PE"
                           : "N(0,1), seeded by (seed, token text)"},
        {"projections", "U(-1/sqrt(d_model), 1/sqrt(d_model)), seeded by seed + 1, no bias"},
        {"multi_head_projections",
         "U(-1/sqrt(d_model), 1/sqrt(d_model)), seeded by seed + 2, no bias; head dim d_model / heads"},
        {"mask_convention", "1 = the query may attend to the key (PyTorch SDPA)"},
        {"rope", r.rope ? Json(rope_style_name(r.rope->style)) : Json(nullptr)},
        {"rope_base", r.rope ? Json(10000.0) : Json(nullptr)},
        {"positions", positions_text(r)}}},
      {"artifacts", arts},
      {"results",
       {{"single_head",
         {{"weights", to_json(r.weights, FloatText::shortest)},
          {"scaled_scores", to_json(r.scores, FloatText::shortest)},
          {"top_k", top_k_json(r.tokens, r.weights, r.top)}}},
        {"causal",
         {{"allowed", allowed},
          {"weights", to_json(r.causal_weights, FloatText::shortest)},
          {"scaled_scores", to_json(r.causal_scores, FloatText::shortest)},
          {"top_k", top_k_json(r.tokens, r.causal_weights, r.causal_top)}}},
        {"multi_head",
         {{"heads", r.config.heads},
          {"weights", to_json(r.head_weights, FloatText::shortest)},
          {"scaled_scores", to_json(r.head_scores, FloatText::shortest)},
          {"mean_over_heads", to_json(r.head_mean, FloatText::shortest)}}},
        {"flash", demo_flash_json(r.flash)},
        {"split_kv", split_kv_json(r.split_kv)},
        {"decode",
         {{"heads", r.config.heads},
          {"rope", r.rope ? Json(rope_style_name(r.rope->style)) : Json(nullptr)},
          {"prefill", r.decode.prefill},
          {"steps", r.decode.steps},
          {"kv_cache_len", r.decode.kv_cache_len},
          {"max_abs_diff_output", r.decode.output},
          {"max_abs_diff_weights", r.decode.weights}}}}},
  };
  m["results"]["split_kv"]["query"] = r.tokens.size() - 1;
  if (r.model) add_demo_model_json(m, *r.model);
  if (r.config.trained && !r.model) m["results"]["trained"] = demo_trained_json(r.trained ? &*r.trained : nullptr, r.trained_skipped);
  if (!r.positions.empty()) {
    m["results"]["positions"] = positions_json(r.positions, r.config.positions);
  }
  if (r.rope) {
    m["results"]["rope"] = {{"style", rope_style_name(r.rope->style)},
                            {"base", 10000.0},
                            {"causal_weights", to_json(r.rope->causal_weights, FloatText::shortest)},
                            {"max_abs_change_vs_no_rope", r.rope->max_change},
                            {"max_change_at", {{"query", r.rope->max_change_query}, {"key", r.rope->max_change_key}}}};
  }
  m["results"]["approximations"] = approximations_json(r.approximations);
  m["results"]["variance"] = variance_json(r.variance);
  const Json complexity = complexity_json(r.complexity);
  m["results"]["complexity"] = {{"convention", complexity["convention"]},
                                {"rows", complexity["rows"]},
                                {"crossover", complexity["crossover"]},
                                {"sentence_tokens", r.tokens.size()}};
  return m;
}

}  // namespace attn
