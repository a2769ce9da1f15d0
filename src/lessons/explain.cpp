#include "attn/lessons/explain.hpp"

#include <cmath>
#include <limits>

#include "attn/engine/error.hpp"
#include "attn/engine/mask.hpp"
#include "attn/engine/mha.hpp"
#include "attn/engine/sdpa.hpp"
#include "attn/engine/softmax.hpp"
#include "attn/engine/tokenize.hpp"

namespace attn {
namespace {

Tensor3 as_head(const Tensor2& t) { return Tensor3(xt::expand_dims(t, 0)); }

}  // namespace

ExplainResult explain_attention(const ExplainConfig& config) {
  if (config.d_model == 0 || config.d_model > 64) throw InputError("--d-model: expected 1 to 64");
  const std::vector<Token> tokens = tokenize(config.sentence, config.max_tokens);
  ExplainResult r;
  r.config = config;
  r.tokens = token_texts(tokens);
  const std::size_t L = tokens.size(), D = config.d_model;

  // Inputs, drawn like `attn-cli demo`: embeddings by (seed, token), projections by seed + 1.
  r.x = embed_tokens(tokens, D, config.seed);
  const MhaWeights w = init_mha_weights(D, 1, 1, config.seed + 1);
  r.q = linear(r.x, w.w_q);
  r.k = linear(r.x, w.w_k);
  r.v = linear(r.x, w.w_v);

  // Step 1: S = Q K^T. linear(Q, K) computes Q K^T: torch.nn.Linear's y = x W^T with W = K.
  r.scores = linear(r.q, r.k);
  // Step 2: divide by sqrt(d).
  r.scale = resolved_scale(std::nullopt, D);
  r.scaled = r.scores * static_cast<float>(r.scale);
  // Step 3: blocked pairs become -inf (never -1e9: see softmax.hpp and `attn-cli pitfalls`).
  r.allowed = config.causal ? causal_allowed(L, L) : Mask2(xt::ones<bool>({L, L}));
  r.masked = r.scaled;
  for (std::size_t i = 0; i < L; ++i)
    for (std::size_t j = 0; j < L; ++j)
      if (!r.allowed(i, j)) r.masked(i, j) = -std::numeric_limits<float>::infinity();
  // Step 4: softmax of each row.
  r.weights = softmax_rows(r.masked);
  r.row_sums = Tensor1::from_shape({L});
  for (std::size_t i = 0; i < L; ++i) {
    double sum = 0;
    for (std::size_t j = 0; j < L; ++j) sum += r.weights(i, j);
    r.row_sums(i) = static_cast<float>(sum);
  }
  // Step 5: O = P V, again as a Linear: P (V^T)^T.
  r.output = linear(r.weights, Tensor2(xt::transpose(r.v)));

  // The check: the engine in one call on the same Q, K, V.
  SdpaOptions options;
  options.causal = config.causal;
  const SdpaResult ref = sdpa(as_head(r.q), as_head(r.k), as_head(r.v), nullptr, options);
  r.sdpa_output = xt::view(ref.output, 0, xt::all(), xt::all());
  for (std::size_t i = 0; i < r.output.size(); ++i) {
    r.max_abs_diff = std::max(r.max_abs_diff, std::fabs(static_cast<double>(r.output.flat(i)) -
                                                        static_cast<double>(r.sdpa_output.flat(i))));
  }
  return r;
}

Json explain_json(const ExplainResult& r) {
  Json mask = Json::array();
  for (std::size_t i = 0; i < r.allowed.shape(0); ++i) {
    Json row = Json::array();
    for (std::size_t j = 0; j < r.allowed.shape(1); ++j) row.push_back(r.allowed(i, j) ? 1 : 0);
    mask.push_back(row);
  }
  auto step = [](int number, const char* name, const char* formula, Json matrix) {
    return Json{{"step", number}, {"name", name}, {"formula", formula}, {"matrix", std::move(matrix)}};
  };
  Json steps = Json::array();
  steps.push_back(step(1, "scores", "Q K^T", to_json(r.scores)));
  steps.push_back(step(2, "scaled", "Q K^T / sqrt(d)", to_json(r.scaled)));
  // JSON has no -inf: lse_to_json writes it as null, as the tensor contract does for lse.
  Json masked = step(3, "masked", "-inf where mask = 0 (null in JSON)", lse_to_json(r.masked));
  masked["mask"] = mask;
  steps.push_back(masked);
  Json soft = step(4, "softmax", "softmax of each row", to_json(r.weights));
  soft["row_sums"] = to_json(r.row_sums);
  steps.push_back(soft);
  steps.push_back(step(5, "output", "softmax(...) V", to_json(r.output)));
  return {{"sentence", r.config.sentence},
          {"tokens", r.tokens},
          {"seed", r.config.seed},
          {"d_model", r.config.d_model},
          {"causal", r.config.causal},
          {"scale", r.scale},
          {"inputs", {{"x", to_json(r.x)}, {"q", to_json(r.q)}, {"k", to_json(r.k)}, {"v", to_json(r.v)}}},
          {"steps", steps},
          {"check", {{"sdpa_output", to_json(r.sdpa_output)}, {"max_abs_diff", r.max_abs_diff}}}};
}

}  // namespace attn
