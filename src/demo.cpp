#include "attn/demo.hpp"

#include <cmath>

#include "attn/error.hpp"
#include "attn/head_grid.hpp"
#include "attn/mask.hpp"
#include "attn/mha.hpp"
#include "attn/topk.hpp"

namespace attn {
namespace {

// Top-k keys of each query row; a masked key is never listed, even when k exceeds the keys
// the query may see (its weight 0 would otherwise tie with the other masked keys).
std::vector<std::vector<std::size_t>> top_per_row(const Tensor2& weights, std::size_t k,
                                                  const Mask2* allowed = nullptr) {
  std::vector<std::vector<std::size_t>> top;
  for (std::size_t i = 0; i < weights.shape(0); ++i) {
    std::vector<std::size_t> keys = top_k_indices(xt::view(weights, i, xt::all()), weights.shape(1));
    std::erase_if(keys, [&](std::size_t j) { return allowed && !(*allowed)(i, j); });
    keys.resize(std::min(k, keys.size()));
    top.push_back(keys);
  }
  return top;
}

Json top_k_json(const std::vector<std::string>& tokens, const Tensor2& weights,
                const std::vector<std::vector<std::size_t>>& top) {
  Json rows = Json::array();
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    Json keys = Json::array();
    for (std::size_t j : top[i]) {
      keys.push_back({{"index", j}, {"token", tokens[j]}, {"weight", json_float(weights(i, j))}});
    }
    rows.push_back({{"query", tokens[i]}, {"index", i}, {"top", keys}});
  }
  return rows;
}

}  // namespace

DemoResult run_demo(const DemoConfig& config) {
  const std::size_t D = config.d_model;
  if (config.heads == 0 || D % config.heads != 0) {
    throw InputError("--heads: " + std::to_string(config.heads) + " does not divide --d-model " +
                     std::to_string(D));
  }
  const std::vector<Token> tokens = tokenize(config.sentence, config.max_tokens);
  DemoResult r;
  r.config = config;
  r.tokens = token_texts(tokens);
  // x [L, D]: one embedding per token, the same vector wherever the same word appears.
  const Tensor2 x = embed_tokens(tokens, D, config.seed);
  // Untrained projections, as in seed 000: the pattern shows the mechanism, not meaning.
  const MhaWeights w = init_mha_weights(D, 1, 1, config.seed + 1);
  auto as_head = [](const Tensor2& t) { return Tensor3(xt::expand_dims(t, 0)); };
  const Tensor3 q = as_head(linear(x, w.w_q)), k = as_head(linear(x, w.w_k)), v = as_head(linear(x, w.w_v));
  const SdpaResult a = sdpa(q, k, v);
  r.scale = 1.0 / std::sqrt(static_cast<double>(D));
  r.weights = xt::view(a.weights, 0, xt::all(), xt::all());
  r.top = top_per_row(r.weights, config.top_k);

  // The same Q, K, V under the causal mask: each token sees only itself and what came before.
  const std::size_t L = r.tokens.size();
  r.causal_allowed = causal_allowed(L, L);
  SdpaOptions causal;
  causal.causal = true;
  const SdpaResult c = sdpa(q, k, v, nullptr, causal);
  r.causal_weights = xt::view(c.weights, 0, xt::all(), xt::all());
  r.causal_top = top_per_row(r.causal_weights, config.top_k, &r.causal_allowed);

  // Multi-head self-attention with its own seeded projections: each head has d = D / H.
  MhaOptions mo;
  mo.num_heads = config.heads;
  const MhaResult m = mha(x, x, x, init_mha_weights(D, config.heads, config.heads, config.seed + 2),
                          nullptr, mo);
  r.head_weights = m.weights;
  r.head_mean = mean_over_heads(m.weights);
  return r;
}

Json demo_manifest(const DemoResult& r, const std::vector<Artifact>& artifacts) {
  Json arts = Json::array();
  for (const Artifact& a : artifacts) arts.push_back({{"path", a.path}, {"kind", a.kind}, {"title", a.title}});
  Json allowed = Json::array();
  for (std::size_t i = 0; i < r.causal_allowed.shape(0); ++i) {
    Json row = Json::array();
    for (std::size_t j = 0; j < r.causal_allowed.shape(1); ++j) row.push_back(r.causal_allowed(i, j) ? 1 : 0);
    allowed.push_back(row);
  }
  return {
      {"sentence", r.config.sentence},
      {"tokens", r.tokens},
      {"seed", r.config.seed},
      {"config",
       {{"d_model", r.config.d_model},
        {"heads", 1},
        {"multi_head_heads", r.config.heads},
        {"scale", r.scale},
        {"top_k", r.config.top_k},
        {"embeddings", "N(0,1), seeded by (seed, token text)"},
        {"projections", "U(-1/sqrt(d_model), 1/sqrt(d_model)), seeded by seed + 1, no bias"},
        {"multi_head_projections",
         "U(-1/sqrt(d_model), 1/sqrt(d_model)), seeded by seed + 2, no bias; head dim d_model / heads"},
        {"mask_convention", "1 = the query may attend to the key (PyTorch SDPA)"}}},
      {"artifacts", arts},
      {"results",
       {{"single_head", {{"weights", to_json(r.weights)}, {"top_k", top_k_json(r.tokens, r.weights, r.top)}}},
        {"causal",
         {{"allowed", allowed},
          {"weights", to_json(r.causal_weights)},
          {"top_k", top_k_json(r.tokens, r.causal_weights, r.causal_top)}}},
        {"multi_head",
         {{"heads", r.config.heads},
          {"weights", to_json(r.head_weights)},
          {"mean_over_heads", to_json(r.head_mean)}}}}},
  };
}

}  // namespace attn
