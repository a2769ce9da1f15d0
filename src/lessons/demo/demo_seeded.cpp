// The demo's seeded sections (no model): the single head and its causal copy (tokens and
// heatmaps), RoPE, the multi-head run, and the checks on the single head's Q, K, V. Seeded
// embeddings and untrained projections: the pattern shows the mechanism, not meaning.
#include <cmath>
#include <numeric>

#include "attn/engine/attention/attention.hpp"
#include "attn/engine/attention/mha.hpp"
#include "attn/engine/core/linear.hpp"
#include "attn/engine/core/topk.hpp"
#include "attn/engine/positions/positional.hpp"
#include "demo_sections.hpp"

namespace attn {
namespace {

Tensor3 as_head(const Tensor2& t) { return Tensor3(xt::expand_dims(t, 0)); }

Tensor2 first_head(const Tensor3& t) { return xt::view(t, 0, xt::all(), xt::all()); }

std::vector<std::int64_t> positions_of(std::size_t L) {
  std::vector<std::int64_t> positions(L);
  std::iota(positions.begin(), positions.end(), 0);
  return positions;
}

// The causal run again, q and k rotated to positions 0..L-1: now order matters.
DemoRope rope_section(const DemoResult& r, const SeededHead& head, const RopeOptions& rope) {
  const std::size_t L = r.tokens.size();
  const std::vector<std::int64_t> positions = positions_of(L);
  SdpaOptions causal;
  causal.causal = true;
  const SdpaResult rc =
      attention(apply_rope(head.q, positions, rope), apply_rope(head.k, positions, rope), head.v, nullptr, causal);
  DemoRope dr{rope.style, xt::view(rc.weights, 0, xt::all(), xt::all()), 0.0};
  for (std::size_t i = 0; i < L; ++i) {
    for (std::size_t j = 0; j < L; ++j) {
      const double change = std::fabs(double(dr.causal_weights(i, j)) - double(r.causal_weights(i, j)));
      if (change > dr.max_change) dr = {dr.style, std::move(dr.causal_weights), change, i, j};
    }
  }
  return dr;
}

// Multi-head self-attention with its own seeded projections: each head has d = D / H; then the
// decode check on it.
void multi_head_section(DemoResult& r, const Tensor2& x, const std::optional<RopeOptions>& rope) {
  const DemoConfig& config = r.config;
  MhaOptions mo;
  mo.num_heads = config.heads;
  mo.rope = rope;
  const MhaWeights wh = init_mha_weights(config.d_model, config.heads, config.heads, config.seed + 2);
  const MhaResult m = mha(x, x, x, wh, nullptr, mo);
  r.head_weights = m.weights;
  r.head_mean = mean_over_heads(m.weights);
  Tensor3 qh = split_heads(linear(x, wh.w_q), config.heads), kh = split_heads(linear(x, wh.w_k), config.heads);
  if (rope) {
    const std::vector<std::int64_t> positions = positions_of(r.tokens.size());
    qh = apply_rope(qh, positions, *rope);
    kh = apply_rope(kh, positions, *rope);
  }
  r.head_scores = attention_scores(qh, kh);
  r.decode = demo_decode_check(x, wh, mo);
}

}  // namespace

std::vector<std::vector<std::size_t>> demo_top_per_row(const Tensor2& weights, std::size_t k, const Mask2* allowed) {
  std::vector<std::vector<std::size_t>> top;
  for (std::size_t i = 0; i < weights.shape(0); ++i) {
    std::vector<std::size_t> keys = top_k_indices(xt::view(weights, i, xt::all()), weights.shape(1));
    std::erase_if(keys, [&](std::size_t j) { return allowed && !(*allowed)(i, j); });
    keys.resize(std::min(k, keys.size()));
    top.push_back(keys);
  }
  return top;
}

SeededHead seeded_head(const std::vector<Token>& tokens, const DemoConfig& config) {
  Tensor2 x = embed_tokens(tokens, config.d_model, config.seed);
  // positions_lesson.hpp says why PE is added unscaled to these N(0,1) embeddings.
  if (config.positions == PositionKind::sinusoidal) x = x + sinusoidal_encoding(tokens.size(), config.d_model);
  const MhaWeights w = init_mha_weights(config.d_model, 1, 1, config.seed + 1);
  return {x, as_head(linear(x, w.w_q)), as_head(linear(x, w.w_k)), as_head(linear(x, w.w_v))};
}

DemoHead demo_seeded_head(const DemoConfig& config) {
  check_demo_config(config);
  const std::vector<Token> tokens = tokenize(config.sentence, config.max_tokens);
  const SeededHead h = seeded_head(tokens, config);
  return {token_texts(tokens), h.q, h.k, h.v};
}

void run_seeded_sections(DemoResult& r, const std::vector<Token>& tokens) {
  const DemoConfig& config = r.config;
  const std::size_t D = config.d_model;
  // x [L, D]: one embedding per token, the same vector wherever the same word appears; with
  // sinusoidal positions, x + PE, so that the copies differ.
  const SeededHead head = seeded_head(tokens, config);
  const Tensor3 &q = head.q, &k = head.k, &v = head.v;
  r.positions = run_positions_lesson(tokens, D, config.seed);
  const SdpaResult a = attention(q, k, v);
  r.scale = resolved_scale(std::nullopt, D);
  r.scores = r.causal_scores = first_head(attention_scores(q, k, r.scale));
  r.weights = xt::view(a.weights, 0, xt::all(), xt::all());
  r.top = demo_top_per_row(r.weights, config.top_k);

  // The same Q, K, V under the causal mask: each token sees only itself and what came before.
  SdpaOptions causal;
  causal.causal = true;
  const SdpaResult c = attention(q, k, v, nullptr, causal);
  r.causal_weights = xt::view(c.weights, 0, xt::all(), xt::all());
  r.causal_top = demo_top_per_row(r.causal_weights, config.top_k, &r.causal_allowed);

  // FlashAttention on the same Q, K, V: the same numbers, computed tile by tile.
  r.flash = demo_flash_check(q, k, v, a, c, r.tokens);
  r.split_kv = last_query_split_kv(q, k, v, r.scale);

  std::optional<RopeOptions> rope;
  if (config.rope) {
    rope = RopeOptions{10000.0, *config.rope, {}, {}};
    r.rope = rope_section(r, head, *rope);
  }
  multi_head_section(r, head.x, rope);
}

}  // namespace attn
