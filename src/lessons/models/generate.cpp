#include "attn/lessons/models/generate.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "attn/engine/positions/alibi.hpp"
#include "attn/engine/core/error.hpp"
#include "attn/engine/attention/mask.hpp"
#include "attn/engine/positions/positional.hpp"

namespace attn {
namespace {

// FLOPs of computing rows [first, end) of causal self-attention: the rows' own projections and
// their visible (query, key) pairs, over all heads (StepFlops' convention). pairs_before[i] is
// the number of visible pairs in rows 0..i-1 of the mask (L + 1 entries).
StepFlops rows_flops(const std::vector<std::uint64_t>& pairs_before, std::size_t first, std::size_t end,
                     std::size_t D, std::size_t Dkv, std::size_t H, std::size_t d) {
  StepFlops f;
  const std::uint64_t per_token = 2ull * D * D + 2ull * 2 * D * Dkv + 2ull * D * D;  // W_q, W_k and W_v, W_o
  f.projections = per_token * (end - first);
  f.attention = (pairs_before[end] - pairs_before[first]) * H * (2ull * d + 3 + 2ull * d);
  return f;
}

Json flops_json(const StepFlops& f) {
  return {{"projections", f.projections}, {"attention", f.attention}, {"total", f.total()}};
}

void add(StepFlops& sum, const StepFlops& f) {
  sum.projections += f.projections;
  sum.attention += f.attention;
}

}  // namespace

std::string positions_name(const GenerateConfig& c) {
  std::string out;
  auto add = [&](const std::string& part) { out += (out.empty() ? "" : " + ") + part; };
  if (c.sinusoidal) add("sinusoidal positions");
  if (c.rope) add("RoPE (" + rope_style_name(*c.rope) + ")");
  if (c.alibi) add("ALiBi");
  return out.empty() ? "no positions" : out;
}

GenerateResult run_generate(const GenerateConfig& c) {
  const std::vector<Token> tokens = tokenize(c.sentence, c.max_tokens);
  GenerateResult r;
  r.config = c;
  r.tokens = token_texts(tokens);
  const std::size_t L = tokens.size(), D = c.d_model;
  const std::size_t Hkv = c.num_kv_heads ? c.num_kv_heads : c.num_heads;
  if (c.prefill > L) {
    throw InputError("--prefill: expected 0 <= P <= " + std::to_string(L) + " (the sentence's tokens), got " +
                     std::to_string(c.prefill));
  }

  // x [L, D]: seeded embeddings (tokenize.hpp), optionally with the sinusoidal encoding.
  Tensor2 x = embed_tokens(tokens, D, c.seed);
  if (c.sinusoidal) x = add_sinusoidal_encoding(x);
  const MhaWeights w = init_mha_weights(D, c.num_heads, Hkv, c.seed + 1);
  MhaOptions o;
  o.num_heads = c.num_heads;
  o.num_kv_heads = Hkv;
  o.attention.causal = true;
  if (c.window) o.attention.mask_mod.window = variants::SlidingWindow{c.window - 1, 0};  // the last `window` keys
  o.kv_dtype = c.kv_dtype;
  if (c.alibi) o.attention.score_mod.alibi = variants::AlibiBias{alibi_slopes(c.num_heads)};
  if (c.rope) o.rope = RopeOptions{10000.0, *c.rope, {}, {}};

  r.num_kv_heads = Hkv;
  r.head_dim = D / c.num_heads;
  r.decoded = mha_decode(x, w, nullptr, o, c.prefill);
  r.full = mha(x, x, x, w, nullptr, o);

  const std::size_t H = c.num_heads;
  // What each query may see, as in the runs above: causal, or the causal window.
  const Mask2 allowed = c.window ? sliding_window_allowed(L, L, c.window - 1, 0) : causal_allowed(L, L);
  std::vector<std::uint64_t> pairs_before(L + 1, 0);  // counted once, not again at every step
  for (std::size_t i = 0; i < L; ++i) {
    pairs_before[i + 1] = pairs_before[i];
    for (std::size_t j = 0; j < L; ++j) pairs_before[i + 1] += allowed(i, j) ? 1 : 0;
  }
  for (const DecodeStep& s : r.decoded.steps) {
    GenerateStep g;
    g.first = s.first;
    g.count = s.count;
    g.prefill = c.prefill > 0 && s.first == 0;
    g.cache_len = s.cache_len;
    g.cache_bytes = s.cache_bytes;
    g.evicted = s.first + s.count - s.cache_len;
    g.weights = xt::view(r.decoded.result.weights, xt::all(), xt::range(s.first, s.first + s.count), xt::all());
    g.with_cache = rows_flops(pairs_before, s.first, s.first + s.count, D, Hkv * r.head_dim, H, r.head_dim);
    g.recompute = rows_flops(pairs_before, 0, s.first + s.count, D, Hkv * r.head_dim, H, r.head_dim);
    add(r.total_with_cache, g.with_cache);
    add(r.total_recompute, g.recompute);
    for (std::size_t i = s.first; i < s.first + s.count; ++i) {
      for (std::size_t col = 0; col < D; ++col) {
        g.max_diff = std::max(g.max_diff, static_cast<double>(std::fabs(
                                              r.decoded.result.output(i, col) - r.full.output(i, col))));
      }
      for (std::size_t h = 0; h < H; ++h)
        for (std::size_t j = 0; j < L; ++j)
          g.max_diff = std::max(g.max_diff, static_cast<double>(std::fabs(
                                                r.decoded.result.weights(h, i, j) - r.full.weights(h, i, j))));
    }
    r.max_diff = std::max(r.max_diff, g.max_diff);
    r.steps.push_back(std::move(g));
  }
  return r;
}

Json generate_json(const GenerateResult& r) {
  const GenerateConfig& c = r.config;
  Json steps = Json::array();
  for (const GenerateStep& s : r.steps) {
    Json toks = Json::array();
    for (std::size_t i = s.first; i < s.first + s.count; ++i) toks.push_back(r.tokens[i]);
    steps.push_back({{"first", s.first}, {"count", s.count}, {"tokens", toks},
                     {"kind", s.prefill ? "prefill" : "decode"}, {"cache_len", s.cache_len},
                     {"cache_bytes", s.cache_bytes}, {"weights", to_json(s.weights)},
                     {"evicted", s.evicted}, {"max_abs_diff_vs_full", s.max_diff},
                     {"flops", {{"with_cache", flops_json(s.with_cache)}, {"recompute", flops_json(s.recompute)}}}});
  }
  return {
      {"sentence", c.sentence},
      {"tokens", r.tokens},
      {"seed", c.seed},
      {"config",
       {{"d_model", c.d_model}, {"num_heads", c.num_heads}, {"num_kv_heads", r.num_kv_heads},
        {"head_dim", r.head_dim}, {"prefill", c.prefill},
        {"rope", c.rope ? Json(rope_style_name(*c.rope)) : Json(nullptr)},
        {"sinusoidal", c.sinusoidal}, {"alibi", c.alibi},
        {"window", c.window ? Json(c.window) : Json(nullptr)},
        {"cache_dtype", c.kv_dtype == KvDtype::bfloat16 ? "bfloat16 (2 bytes per value)" : "float64 (8 bytes per value)"},
        {"kv_dtype", kv_dtype_name(c.kv_dtype)},
        {"cache_bytes_rule", "2 (K and V) x num_kv_heads x cache_len x head_dim x " +
                                 std::to_string(kv_dtype_bytes(c.kv_dtype))}}},
      {"steps", steps},
      {"kv_cache_len", r.decoded.kv_cache_len},
      {"output", to_json(r.decoded.result.output)},
      {"max_abs_diff_vs_full", r.max_diff},
      {"flops",
       {{"convention", "2 FLOPs per multiply-add, softmax 3 per score; projections = W_q, W_k, W_v and W_o of the "
                       "tokens computed; attention = per head and visible (query, key) pair 2 d + 3 + 2 d. "
                       "with_cache computes only the step's new tokens; recompute runs the whole prefix again"},
        {"with_cache", flops_json(r.total_with_cache)},
        {"recompute", flops_json(r.total_recompute)}}},
  };
}

}  // namespace attn
