#include "attn/demo.hpp"

#include <cmath>

#include "attn/mha.hpp"
#include "attn/topk.hpp"

namespace attn {

DemoResult run_demo(const DemoConfig& config) {
  const std::vector<Token> tokens = tokenize(config.sentence, config.max_tokens);
  DemoResult r{config, token_texts(tokens), 0, {}, {}};
  const std::size_t D = config.d_model;
  // x [L, D]: one embedding per token, the same vector wherever the same word appears.
  const Tensor2 x = embed_tokens(tokens, D, config.seed);
  // Untrained projections, as in seed 000: the pattern shows the mechanism, not meaning.
  const MhaWeights w = init_mha_weights(D, 1, 1, config.seed + 1);
  auto as_head = [](const Tensor2& t) { return Tensor3(xt::expand_dims(t, 0)); };
  const SdpaResult a = sdpa(as_head(linear(x, w.w_q)), as_head(linear(x, w.w_k)),
                            as_head(linear(x, w.w_v)));
  r.scale = 1.0 / std::sqrt(static_cast<double>(D));
  r.weights = xt::view(a.weights, 0, xt::all(), xt::all());
  for (std::size_t i = 0; i < r.tokens.size(); ++i) {
    r.top.push_back(top_k_indices(xt::view(r.weights, i, xt::all()), config.top_k));
  }
  return r;
}

Json demo_manifest(const DemoResult& r, const std::vector<Artifact>& artifacts) {
  Json top = Json::array();
  for (std::size_t i = 0; i < r.tokens.size(); ++i) {
    Json keys = Json::array();
    for (std::size_t j : r.top[i]) {
      keys.push_back({{"index", j}, {"token", r.tokens[j]}, {"weight", json_float(r.weights(i, j))}});
    }
    top.push_back({{"query", r.tokens[i]}, {"index", i}, {"top", keys}});
  }
  Json arts = Json::array();
  for (const Artifact& a : artifacts) arts.push_back({{"path", a.path}, {"kind", a.kind}, {"title", a.title}});
  return {
      {"sentence", r.config.sentence},
      {"tokens", r.tokens},
      {"seed", r.config.seed},
      {"config",
       {{"d_model", r.config.d_model},
        {"heads", 1},
        {"scale", r.scale},
        {"top_k", r.config.top_k},
        {"embeddings", "N(0,1), seeded by (seed, token text)"},
        {"projections", "U(-1/sqrt(d_model), 1/sqrt(d_model)), seeded by seed + 1, no bias"}}},
      {"artifacts", arts},
      {"results",
       {{"single_head", {{"weights", to_json(r.weights)}, {"top_k", top}}}}},
  };
}

}  // namespace attn
