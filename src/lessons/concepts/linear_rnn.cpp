// Linear attention is an RNN, on a sentence (linear_rnn.hpp).
#include "attn/lessons/concepts/linear_rnn.hpp"

#include <algorithm>
#include <cmath>

#include "attn/engine/core/error.hpp"
#include "attn/engine/core/linear.hpp"
#include "attn/engine/attention/mha.hpp"
#include "attn/engine/attention/attention.hpp"
#include "attn/engine/text/tokenize.hpp"
#include "max_difference.hpp"

namespace attn {
namespace {

constexpr std::size_t kMaxD = 256;

}  // namespace

LinearRnnResult run_linear_rnn(const LinearRnnConfig& config) {
  if (config.d == 0 || config.d > kMaxD)
    throw InputError("--d: " + std::to_string(config.d) + " is outside 1.." + std::to_string(kMaxD));
  const std::vector<Token> tokens = tokenize(config.sentence, config.max_tokens + 1);
  if (tokens.empty()) throw InputError("sentence: no tokens in \"" + config.sentence + "\"");
  if (tokens.size() > config.max_tokens)
    throw InputError("sentence: more than " + std::to_string(config.max_tokens) +
                     " tokens (the matrices are printed; raise --max-tokens)");
  LinearRnnResult r;
  r.config = config;
  r.tokens = token_texts(tokens);
  const std::size_t L = tokens.size(), d = config.d;

  // One head's Q, K, V from the sentence, as `explain` makes them.
  const Tensor2 x = embed_tokens(tokens, d, config.seed);
  const MhaWeights w = init_mha_weights(d, 1, 1, config.seed + 1);
  const Tensor2 q = linear(x, w.w_q), k = linear(x, w.w_k), v = linear(x, w.w_v);
  r.q = xt::cast<double>(q);
  r.k = xt::cast<double>(k);
  r.v = xt::cast<double>(v);

  r.parallel = linear_attention_parallel(r.q, r.k, r.v, /*causal=*/true);
  r.recurrent = linear_attention_recurrent(r.q, r.k, r.v).output;
  r.max_abs_recurrent_vs_parallel = max_abs_difference(r.parallel, r.recurrent);
  r.linear_weights = linear_attention_weights(r.q, r.k, /*causal=*/true);

  // Softmax attention on the same Q, K, V through the engine's door (float32 results).
  SdpaOptions options;
  options.causal = true;
  const auto as3 = [&](const Tensor2& t) { return Tensor3(xt::reshape_view(t, {std::size_t{1}, L, d})); };
  const SdpaResult s = attention(as3(q), as3(k), as3(v), nullptr, options);
  r.softmax_weights = xt::cast<double>(Tensor2(xt::view(s.weights, 0)));
  r.softmax_output = xt::cast<double>(Tensor2(xt::view(s.output, 0)));
  r.max_abs_weight_difference = max_abs_difference(r.linear_weights, r.softmax_weights);
  r.max_abs_output_difference = max_abs_difference(r.parallel, r.softmax_output);

  std::vector<std::size_t> steps;
  for (std::size_t t = 1; t <= L; ++t) steps.push_back(t);
  for (std::size_t t : {std::size_t{1024}, std::size_t{32768}, std::size_t{1048576}})
    if (t > L) steps.push_back(t);
  for (std::size_t t : steps)
    r.memory.push_back({t, kv_cache_bytes_at(t, d, d, config.value_bytes), linear_state_bytes(d, d, config.value_bytes)});
  // t (d + dv) > d dv + d  <=>  t > (d dv + d) / (d + dv)
  r.crossover_t = (d * d + d) / (2 * d) + 1;
  return r;
}

Json linear_rnn_json(const LinearRnnResult& r) {
  Json memory = Json::array();
  for (const MemoryAtStep& m : r.memory)
    memory.push_back({{"t", m.t}, {"kv_cache_bytes", m.kv_cache_bytes}, {"state_bytes", m.state_bytes}});
  return {
      {"paper", "Katharopoulos et al. 2020, Transformers are RNNs, arXiv 2006.16236"},
      {"feature_map", "phi(x) = elu(x) + 1"},
      {"definition",
       "causal; parallel: A_ij = phi(q_i).phi(k_j) / sum_{j'<=i} phi(q_i).phi(k_j'), out = A V; recurrent: "
       "S_t = S_{t-1} + phi(k_t) v_t^T, z_t = z_{t-1} + phi(k_t), out_t = S_t^T phi(q_t) / z_t.phi(q_t); float64"},
      {"sentence", r.config.sentence},
      {"tokens", r.tokens},
      {"d", r.config.d},
      {"seed", r.config.seed},
      {"q", to_json(r.q)},
      {"k", to_json(r.k)},
      {"v", to_json(r.v)},
      {"parallel_output", to_json(r.parallel)},
      {"recurrent_output", to_json(r.recurrent)},
      {"max_abs_recurrent_vs_parallel", r.max_abs_recurrent_vs_parallel},
      {"linear_weights", to_json(r.linear_weights)},
      {"softmax_weights", to_json(r.softmax_weights)},
      {"softmax_definition", "causal softmax(Q K^T / sqrt(d)) through attn-cli's sdpa (float32)"},
      {"softmax_output", to_json(r.softmax_output)},
      {"max_abs_weight_difference", r.max_abs_weight_difference},
      {"max_abs_output_difference", r.max_abs_output_difference},
      {"value_bytes", r.config.value_bytes},
      {"memory", memory},
      {"memory_definition", "kv_cache_bytes = t (d + dv) value_bytes; state_bytes = (d dv + d) value_bytes"},
      {"crossover_t", r.crossover_t},
  };
}

}  // namespace attn
