#include "attn/lessons/demo/demo.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>

#include "attn/engine/attention/attention.hpp"
#include "attn/engine/core/error.hpp"
#include "attn/engine/core/linear.hpp"
#include "attn/engine/attention/mask.hpp"
#include "attn/engine/attention/mha.hpp"
#include "attn/engine/positions/positional.hpp"
#include "attn/engine/core/topk.hpp"
#include "concepts/max_difference.hpp"
#include "attn/lessons/models/gpt2_forward.hpp"
#include "attn/io/number_format.hpp"

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
      keys.push_back({{"index", j}, {"token", tokens[j]}, {"weight", json_float(weights(i, j), FloatText::shortest)}});
    }
    rows.push_back({{"query", tokens[i]}, {"index", i}, {"top", keys}});
  }
  return rows;
}

// The flash kernel with options o on the single head, non-causal and causal, against the naive
// sdpa's results on the same Q, K, V.
DemoFlashRun run_flash(const Tensor3& q, const Tensor3& k, const Tensor3& v, FlashOptions o,
                       const SdpaResult& naive, const SdpaResult& naive_causal) {
  DemoFlashRun run;
  run.tiling = flash_tiling(q.shape(1), k.shape(1), o);
  BackendOptions flash;
  flash.backend = Backend::flash;
  flash.block_q = o.block_q, flash.block_k = o.block_k, flash.threads = o.threads;
  flash.precision = o.precision, flash.isa = o.isa;
  for (bool causal : {false, true}) {
    SdpaOptions attention;
    attention.causal = causal;
    const SdpaResult f = attn::attention(q, k, v, nullptr, attention, flash, /*with_weights=*/false);
    const SdpaResult& n = causal ? naive_causal : naive;
    (causal ? run.causal : run.plain) = {max_abs_difference(f.output, n.output), max_abs_difference(f.lse, n.lse)};
  }
  o.causal = false;
  run.options = o;
  return run;
}

DemoFlashCheck flash_check(const Tensor3& q, const Tensor3& k, const Tensor3& v, const SdpaResult& naive,
                           const SdpaResult& naive_causal) {
  DemoFlashCheck check;
  FlashOptions fast;
  fast.threads = 1;  // one head of a few tokens is one work item: no thread would get another
  check.fast = run_flash(q, k, v, fast, naive, naive_causal);

  // Tiles of 2 x 2 up to 16 tokens (the generic float64 micro-kernel's key panel is 2 keys,
  // so even a 4-token sentence spans a grid), then about 8 tiles a side: a 500-token sentence
  // in 2 x 2 tiles would be 62,500 tiles, unreadable in a picture and megabytes of JSON.
  const std::size_t L = q.shape(1);
  const std::size_t block = teaching_block(L);
  FlashOptions teaching = fast;
  teaching.isa = "generic";
  teaching.precision = FlashPrecision::float64;
  teaching.block_q = check.requested_block_q = block;
  teaching.block_k = check.requested_block_k = block;
  check.teaching = run_flash(q, k, v, teaching, naive, naive_causal);
  check.tiles = flash_tiles(L, L, teaching);
  teaching.causal = true;
  check.causal_tiles = flash_tiles(L, L, teaching);
  return check;
}

}  // namespace

TileCounts count_tiles(const std::vector<FlashTile>& tiles) {
  TileCounts c;
  for (const FlashTile& t : tiles) {
    switch (t.kind) {
      case FlashTile::Kind::full: ++c.full; break;
      case FlashTile::Kind::diagonal: ++c.diagonal; break;
      case FlashTile::Kind::skipped: ++c.skipped; break;
    }
  }
  return c;
}

VarianceConfig demo_variance_config(const DemoConfig& config) {
  VarianceConfig v;
  v.d_ks = {8, 16, 32, 64, 128, 256, 512, 1024};
  v.samples = 2000;  // a few milliseconds; the band is theory +- 3 se for this many
  v.seed = config.seed;
  return v;
}

ComplexityConfig demo_complexity_config(const DemoConfig& config, std::size_t tokens) {
  ComplexityConfig c;
  c.ns = {16, 64, 256, 1024, 4096};
  if (std::find(c.ns.begin(), c.ns.end(), tokens) == c.ns.end()) c.ns.push_back(tokens);
  std::sort(c.ns.begin(), c.ns.end());
  c.d_model = config.d_model;
  c.heads = config.heads;
  return c;
}

void check_demo_config(const DemoConfig& config) {
  if (config.model || config.gpt2) {
    if (config.rope) throw InputError("--rope: a trained model has its own learned positions; leave out --rope with --model");
    if (config.positions != PositionKind::none) {
      throw InputError("--positions: a trained model has its own learned positions; leave out --positions with --model");
    }
    return;  // d_model and heads are the model's, checked when it was read
  }
  const std::size_t D = config.d_model;
  if (config.heads == 0 || D % config.heads != 0) {
    throw InputError("--heads: " + std::to_string(config.heads) + " does not divide --d-model " +
                     std::to_string(D));
  }
  if (config.rope && (D % 2 != 0 || (D / config.heads) % 2 != 0)) {
    throw InputError("--rope: RoPE rotates pairs of dims, so every head dim must be even; --d-model " +
                     std::to_string(D) + " gives " + std::to_string(D) + " (one head) and " +
                     std::to_string(D / config.heads) + " (" + std::to_string(config.heads) + " heads)");
  }
}

namespace {

Tensor3 as_head(const Tensor2& t) { return Tensor3(xt::expand_dims(t, 0)); }

Tensor2 first_head(const Tensor3& t) { return xt::view(t, 0, xt::all(), xt::all()); }

// The single head's seeded projections (seed + 1) of the embedded sentence.
struct SeededHead {
  Tensor2 x;
  Tensor3 q, k, v;
};
SeededHead seeded_head(const std::vector<Token>& tokens, const DemoConfig& config) {
  Tensor2 x = embed_tokens(tokens, config.d_model, config.seed);
  // positions_lesson.hpp says why PE is added unscaled to these N(0,1) embeddings.
  if (config.positions == PositionKind::sinusoidal) x = x + sinusoidal_encoding(tokens.size(), config.d_model);
  const MhaWeights w = init_mha_weights(config.d_model, 1, 1, config.seed + 1);
  return {x, as_head(linear(x, w.w_q)), as_head(linear(x, w.w_k)), as_head(linear(x, w.w_v))};
}

// Split-KV on one head q, k, v [1, L, d]: the last query, which sees every key (causal or not),
// against the cache cut into min(3, L) chunks.
SplitKvLesson last_query_split_kv(const Tensor3& q, const Tensor3& k, const Tensor3& v, double scale) {
  const std::size_t L = q.shape(1);
  return split_kv_merge(Tensor1(xt::view(q, 0, L - 1, xt::all())), Tensor2(xt::view(k, 0, xt::all(), xt::all())),
                        Tensor2(xt::view(v, 0, xt::all(), xt::all())), std::vector<bool>(L, true), scale,
                        std::min<std::size_t>(3, L));
}

// The decode check on any multi-head layer: the causal run through a KV cache, the first half
// of the sentence as the prompt, then one token at a time; it must equal the one-shot causal run.
DemoDecodeCheck decode_check(const Tensor2& x, const MhaWeights& w, MhaOptions mo) {
  mo.attention.causal = true;
  const MhaResult one_shot = mha(x, x, x, w, nullptr, mo);
  const std::size_t prefill = (x.shape(0) + 1) / 2;
  const MhaDecodeResult dec = mha_decode(x, w, nullptr, mo, prefill);
  return {prefill, dec.steps.size(), dec.kv_cache_len, max_abs_difference(dec.result.output, one_shot.output),
          max_abs_difference(dec.result.weights, one_shot.weights)};
}

// Seeded embeddings and untrained projections: the pattern shows the mechanism, not meaning.
void seeded_attention(DemoResult& r, const std::vector<Token>& tokens) {
  const DemoConfig& config = r.config;
  const std::size_t D = config.d_model, L = r.tokens.size();
  // x [L, D]: one embedding per token, the same vector wherever the same word appears; with
  // sinusoidal positions, x + PE, so that the copies differ.
  const SeededHead head = seeded_head(tokens, config);
  const Tensor2& x = head.x;
  const Tensor3 &q = head.q, &k = head.k, &v = head.v;
  r.positions = run_positions_lesson(tokens, D, config.seed);
  const SdpaResult a = attention(q, k, v);
  r.scale = resolved_scale(std::nullopt, D);
  r.scores = r.causal_scores = first_head(attention_scores(q, k, r.scale));
  r.weights = xt::view(a.weights, 0, xt::all(), xt::all());
  r.top = top_per_row(r.weights, config.top_k);

  // The same Q, K, V under the causal mask: each token sees only itself and what came before.
  SdpaOptions causal;
  causal.causal = true;
  const SdpaResult c = attention(q, k, v, nullptr, causal);
  r.causal_weights = xt::view(c.weights, 0, xt::all(), xt::all());
  r.causal_top = top_per_row(r.causal_weights, config.top_k, &r.causal_allowed);

  // FlashAttention on the same Q, K, V: the same numbers, computed tile by tile.
  r.flash = flash_check(q, k, v, a, c);
  r.flash.replay = replay_flash(q, k, v, r.tokens, {teaching_block(L), teaching_block(L), true});
  r.split_kv = last_query_split_kv(q, k, v, r.scale);

  std::optional<RopeOptions> rope;
  if (config.rope) {
    rope = RopeOptions{10000.0, *config.rope, {}, {}};
    // The causal run again, q and k rotated to positions 0..L-1: now order matters.
    std::vector<std::int64_t> positions(L);
    std::iota(positions.begin(), positions.end(), 0);
    const SdpaResult rc = attention(apply_rope(q, positions, *rope), apply_rope(k, positions, *rope), v, nullptr, causal);
    DemoRope dr{*config.rope, xt::view(rc.weights, 0, xt::all(), xt::all()), 0.0};
    for (std::size_t i = 0; i < L; ++i) {
      for (std::size_t j = 0; j < L; ++j) {
        const double change = std::fabs(double(dr.causal_weights(i, j)) - double(r.causal_weights(i, j)));
        if (change > dr.max_change) dr = {dr.style, std::move(dr.causal_weights), change, i, j};
      }
    }
    r.rope = std::move(dr);
  }

  // Multi-head self-attention with its own seeded projections: each head has d = D / H.
  MhaOptions mo;
  mo.num_heads = config.heads;
  mo.rope = rope;
  const MhaWeights wh = init_mha_weights(D, config.heads, config.heads, config.seed + 2);
  const MhaResult m = mha(x, x, x, wh, nullptr, mo);
  r.head_weights = m.weights;
  r.head_mean = mean_over_heads(m.weights);
  {
    Tensor3 qh = split_heads(linear(x, wh.w_q), config.heads), kh = split_heads(linear(x, wh.w_k), config.heads);
    if (rope) {
      std::vector<std::int64_t> positions(L);
      std::iota(positions.begin(), positions.end(), 0);
      qh = apply_rope(qh, positions, *rope);
      kh = apply_rope(kh, positions, *rope);
    }
    r.head_scores = attention_scores(qh, kh);
  }
  r.decode = decode_check(x, wh, mo);
}

// The head the rule calls `kind` with the best `score`; when none, the best candidate among
// those `eligible` (the first eligible one when no score exists).
template <class Score, class Eligible>
HeadScores named_head(const HeadSummary& summary, const char* kind, Score score, Eligible eligible) {
  const HeadScores* best = nullptr;
  auto better = [&](const HeadScores& h) { return !best || score(h).value_or(-1.0) > score(*best).value_or(-1.0); };
  for (const HeadScores& h : summary.heads)
    if (h.kind == kind && better(h)) best = &h;
  if (!best) {
    for (const HeadScores& h : summary.heads)
      if (eligible(h) && better(h)) best = &h;
  }
  return *best;
}

// The two heatmaps' heads, named by heads.png's scores and rule.
void name_heads(DemoModel& dm) {
  const std::size_t first_induction_layer = dm.config.layers > 1 ? 1 : 0;
  dm.induction_head = named_head(
      dm.summary, "induction", [](const HeadScores& s) { return s.induction; },
      [&](const HeadScores& s) { return s.layer >= first_induction_layer; });
  dm.prev_token_head = named_head(
      dm.summary, "previous-token", [](const HeadScores& s) { return s.previous_token; },
      [](const HeadScores& s) { return s.layer == 0; });
}

// The induction head's q, k, v ([layers] of [H, L, d] in) as [1, L, d] each.
void keep_induction_qkv(DemoModel& dm, const std::vector<Tensor3>& q, const std::vector<Tensor3>& k,
                        const std::vector<Tensor3>& v) {
  const HeadScores& h = dm.induction_head;
  auto head = [&](const std::vector<Tensor3>& per_layer) {
    return Tensor3(xt::view(per_layer[h.layer], xt::range(h.head, h.head + 1), xt::all(), xt::all()));
  };
  dm.induction_q = head(q), dm.induction_k = head(k), dm.induction_v = head(v);
}

// The tokens a model is shown (DemoModel): the sentence, twice when no token of it appears
// twice and twice fits the model's positions.
bool show_twice(const std::vector<std::int32_t>& ids, std::size_t positions) {
  return ids.size() >= 2 && induction_cells(ids).empty() && 2 * ids.size() <= positions;
}
std::size_t shown_length(const std::vector<std::int32_t>& ids, std::size_t positions) {
  return show_twice(ids, positions) ? 2 * ids.size() : ids.size();
}
void repeat_when_nothing_repeats(DemoModel& dm) {
  if (!show_twice(dm.ids, dm.config.context)) return;
  const std::vector<std::int32_t> ids = dm.ids;  // copies: a vector cannot insert its own range
  const std::vector<std::string> labels = dm.labels;
  dm.ids.insert(dm.ids.end(), ids.begin(), ids.end());
  dm.labels.insert(dm.labels.end(), labels.begin(), labels.end());
  dm.repeated = true;
}

// A toy model on the sentence's words: the forward pass on the tokens shown, every head scored.
DemoModel toy_demo_model(const ToyModel& model, const std::vector<std::string>& words, const std::string& path,
                         ToyForward& f) {
  const ToyConfig& mc = model.config;
  DemoModel dm;
  dm.path = path, dm.architecture = "toy", dm.config = mc;
  dm.ids = toy_tokens_from_words(words, mc.vocab).ids;
  dm.labels = words;
  repeat_when_nothing_repeats(dm);
  f = run_toy_forward(model, ToyTokens{dm.ids, dm.labels, dm.labels});
  dm.attention = f.attention;
  dm.summary = summarize_heads(dm.ids, dm.attention);
  name_heads(dm);
  keep_induction_qkv(dm, f.q, f.k, f.v);
  return dm;
}

// The two heatmaps from the named heads, the flash check on the induction head's own Q, K, V
// (keep_induction_qkv), and every layer's scores from its q, k ([layers] of [H, L, d]).
void show_model_heads(DemoResult& r, DemoModel& dm, const std::vector<Tensor3>& q_layers,
                      const std::vector<Tensor3>& k_layers) {
  const ToyConfig& mc = dm.config;
  r.tokens = dm.labels;
  r.causal_allowed = causal_allowed(r.tokens.size(), r.tokens.size());
  const HeadScores& ind = dm.induction_head;
  const HeadScores& prev = dm.prev_token_head;
  r.config.d_model = mc.d_model;
  r.config.heads = mc.heads;
  r.scale = resolved_scale(std::nullopt, mc.d_model / mc.heads);
  r.weights = xt::view(dm.attention[ind.layer], ind.head, xt::all(), xt::all());
  r.top = top_per_row(r.weights, r.config.top_k, &r.causal_allowed);
  r.causal_weights = xt::view(dm.attention[prev.layer], prev.head, xt::all(), xt::all());
  r.causal_top = top_per_row(r.causal_weights, r.config.top_k, &r.causal_allowed);
  r.head_weights = dm.attention.back();
  r.head_mean = mean_over_heads(r.head_weights);

  const Tensor3 &q = dm.induction_q, &k = dm.induction_k, &v = dm.induction_v;
  SdpaOptions causal;
  causal.causal = true;
  r.flash = flash_check(q, k, v, attention(q, k, v), attention(q, k, v, nullptr, causal));
  const std::size_t L = r.tokens.size();
  r.flash.replay = replay_flash(q, k, v, r.tokens, {teaching_block(L), teaching_block(L), true});
  r.split_kv = last_query_split_kv(q, k, v, r.scale);
  // The scores behind every weight, for the report's temperature slider.
  for (std::size_t l = 0; l < mc.layers; ++l) dm.scaled_scores.push_back(attention_scores(q_layers[l], k_layers[l], r.scale));
  r.scores = xt::view(dm.scaled_scores[ind.layer], ind.head, xt::all(), xt::all());
  r.causal_scores = xt::view(dm.scaled_scores[prev.layer], prev.head, xt::all(), xt::all());
  r.head_scores = dm.scaled_scores.back();
}

// The sentence through a trained model: what its heads learned, on words it never saw (the toy
// was trained on arbitrary ids, so each distinct word is just the next id).
void model_attention(DemoResult& r) {
  const ToyModel& model = *r.config.model;
  const ToyConfig& mc = model.config;
  ToyForward f;
  DemoModel dm = toy_demo_model(model, r.tokens, r.config.model_path, f);
  show_model_heads(r, dm, f.q, f.k);

  // The decode check on the model's first layer, from its embedded sentence.
  const ToyLayer& l0 = model.layers.front();
  MhaOptions mo;
  mo.num_heads = mc.heads;
  r.decode = decode_check(f.residual.front(), MhaWeights{l0.w_q, l0.w_k, l0.w_v, l0.w_o, {}, {}, {}, {}}, mo);
  r.model = std::move(dm);
}

// Block 0's attention of a GPT-2 as torch.nn.Linear weights (y = x W^T + b, mha.hpp): Conv1D
// stores W [in, out], so W_q is the transpose of c_attn.weight's first D columns, and so on.
MhaWeights gpt2_block_mha_weights(const Gpt2Block& b, std::size_t D) {
  MhaWeights w;
  Tensor2* parts[3] = {&w.w_q, &w.w_k, &w.w_v};
  std::optional<Tensor1>* biases[3] = {&w.b_q, &w.b_k, &w.b_v};
  for (std::size_t part = 0; part < 3; ++part) {
    *parts[part] = Tensor2::from_shape({D, D});
    Tensor1 bias = Tensor1::from_shape({D});
    for (std::size_t o = 0; o < D; ++o) {
      for (std::size_t i = 0; i < D; ++i) (*parts[part])(o, i) = b.attn_weight(i, part * D + o);
      bias(o) = b.attn_bias(part * D + o);
    }
    *biases[part] = bias;
  }
  w.w_o = Tensor2::from_shape({D, D});
  for (std::size_t o = 0; o < D; ++o)
    for (std::size_t i = 0; i < D; ++i) w.w_o(o, i) = b.attn_proj_weight(i, o);
  w.b_o = b.attn_proj_bias;
  return w;
}

// The sentence through GPT-2: its own BPE tokens, its real attention (LayerNorm, biases, MLPs
// and all); the decode check on block 0's attention, from the LayerNorm of the embeddings.
void gpt2_attention(DemoResult& r, const std::vector<std::int32_t>& ids) {
  const Gpt2Model& model = *r.config.gpt2;
  const Gpt2Config& c = model.config;
  const ToyConfig mc{c.vocab_size, c.n_embd, c.n_head, c.n_layer, c.n_positions};
  DemoModel dm;
  dm.path = r.config.model_path, dm.architecture = "gpt2", dm.config = mc, dm.ids = ids, dm.labels = r.tokens;
  repeat_when_nothing_repeats(dm);
  const Gpt2Forward f = gpt2_forward(model, dm.ids);
  dm.attention = f.attention;
  dm.summary = summarize_heads(dm.ids, dm.attention);
  name_heads(dm);
  keep_induction_qkv(dm, f.q, f.k, f.v);
  show_model_heads(r, dm, f.q, f.k);

  Gpt2Block scratch;
  const Gpt2Block& b0 = gpt2_block(model, 0, scratch);
  MhaOptions mo;
  mo.num_heads = c.n_head;
  r.decode = decode_check(layer_norm(f.embedded, b0.ln_1_weight, b0.ln_1_bias, c.layer_norm_epsilon),
                          gpt2_block_mha_weights(b0, c.n_embd), mo);
  r.model = std::move(dm);
}

// The default demo's second half: the trained toy model on the same sentence, when it fits.
void trained_beside(DemoResult& r) {
  const ToyModel& model = *r.config.trained;
  const ToyConfig& c = model.config;
  std::set<std::string> distinct(r.tokens.begin(), r.tokens.end());
  if (r.tokens.size() > c.context) {
    r.trained_skipped = "the sentence has " + count_of(r.tokens.size(), "token") + "; the trained model reads at most " +
                        std::to_string(c.context);
  } else if (distinct.size() > c.vocab) {
    r.trained_skipped = "the sentence has " + std::to_string(distinct.size()) +
                        " distinct words; the trained model knows " + std::to_string(c.vocab) + " token ids";
  } else {
    ToyForward f;
    r.trained = toy_demo_model(model, r.tokens, r.config.trained_name, f);
  }
}

// The efficient-attention family on the demo's most instructive head: a trained induction head
// (sharp, content-based) when there is one, else the seeded single head.
void approximations(DemoResult& r) {
  const DemoModel* m = r.model ? &*r.model : r.trained ? &*r.trained : nullptr;
  if (m) {
    const HeadScores& h = m->induction_head;
    const std::string name = (r.model ? "the model's " : "the trained model's ") +
                             std::string(h.kind == "induction" ? "induction head" : "best induction candidate") +
                             " (layer " + std::to_string(h.layer) + ", head " + std::to_string(h.head) + ")";
    r.approximations = run_approximations(m->induction_q, m->induction_k, m->induction_v,
                                          resolved_scale(std::nullopt, m->config.d_model / m->config.heads), m->labels,
                                          name);
  } else {
    const SeededHead h = seeded_head(tokenize(r.config.sentence, r.config.max_tokens), r.config);
    r.approximations = run_approximations(h.q, h.k, h.v, r.scale, r.tokens, "the seeded single head");
  }
}

}  // namespace

DemoSize demo_size(const DemoConfig& config) {
  check_demo_config(config);
  // Besides the heads: the single head, its causal and scaled copies, RoPE's, the flash replay's,
  // and the five of the efficient-attention section.
  constexpr std::size_t kOtherMaps = 11;
  if (config.gpt2) {
    const Gpt2Config& c = config.gpt2->config;
    const std::vector<std::int32_t> ids = gpt2_tokens_from_text(*config.gpt2_tokenizer, config.sentence).ids;
    return {shown_length(ids, c.n_positions), c.n_embd, c.n_embd / c.n_head, c.n_layer * c.n_head + kOtherMaps};
  }
  const std::vector<Token> tokens = tokenize(config.sentence, config.max_tokens);
  const std::size_t L = tokens.size();
  if (config.model) {
    const ToyConfig& c = config.model->config;
    const std::vector<std::int32_t> ids = toy_tokens_from_words(token_texts(tokens), c.vocab).ids;
    return {shown_length(ids, c.context), c.d_model, c.d_model / c.heads, c.layers * c.heads + kOtherMaps};
  }
  const std::size_t trained = config.trained ? config.trained->config.layers * config.trained->config.heads : 0;
  return {L, config.d_model, config.d_model / config.heads, config.heads + kOtherMaps + trained};
}

DemoHead demo_seeded_head(const DemoConfig& config) {
  check_demo_config(config);
  const std::vector<Token> tokens = tokenize(config.sentence, config.max_tokens);
  const SeededHead h = seeded_head(tokens, config);
  return {token_texts(tokens), h.q, h.k, h.v};
}

DemoResult run_demo(const DemoConfig& config) {
  check_demo_config(config);
  DemoResult r;
  r.config = config;
  if (config.gpt2) {  // GPT-2's own BPE tokens, not words
    const ToyTokens t = gpt2_tokens_from_text(*config.gpt2_tokenizer, config.sentence);
    if (t.ids.empty()) throw InputError("sentence: no tokens");
    r.tokens = t.labels;  // a token holding part of a character reads \xf0, not U+FFFD
    gpt2_attention(r, t.ids);
  } else {
    const std::vector<Token> tokens = tokenize(config.sentence, config.max_tokens);
    r.tokens = token_texts(tokens);
    r.causal_allowed = causal_allowed(r.tokens.size(), r.tokens.size());
    if (config.model) model_attention(r);
    else seeded_attention(r, tokens);
    if (!config.model && config.trained) trained_beside(r);
  }
  const std::size_t L = r.tokens.size();
  approximations(r);
  r.variance = run_variance(demo_variance_config(r.config));
  r.complexity = run_complexity(demo_complexity_config(r.config, L));
  return r;
}

namespace {

Json flash_run_json(const DemoFlashRun& run) {
  auto diff = [](const FlashDifference& d) {
    return Json{{"max_abs_diff_output", d.output}, {"max_abs_diff_lse", d.lse}};
  };
  return {{"precision", run.options.precision == FlashPrecision::float32 ? "float32" : "float64"},
          {"isa", run.tiling.isa},
          {"block_q", run.tiling.block_q},
          {"block_k", run.tiling.block_k},
          {"non_causal", diff(run.plain)},
          {"causal", diff(run.causal)}};
}

Json tiles_json(const std::vector<FlashTile>& tiles) {
  const TileCounts n = count_tiles(tiles);
  Json list = Json::array();
  for (const FlashTile& t : tiles) {
    const char* kind = t.kind == FlashTile::Kind::full       ? "full"
                       : t.kind == FlashTile::Kind::diagonal ? "diagonal"
                                                             : "skipped";
    list.push_back({{"rows", {t.i0, t.i0 + t.rows}}, {"keys", {t.j0, t.j0 + t.cols}}, {"kind", kind}});
  }
  return {{"total", n.total()}, {"full", n.full}, {"diagonal", n.diagonal}, {"skipped", n.skipped}, {"tiles", list}};
}

Json flash_json(const DemoFlashCheck& f) {
  Json teaching = flash_run_json(f.teaching);
  teaching["replay"] = flash_replay_json(f.replay);
  teaching["requested_block_q"] = f.requested_block_q;
  teaching["requested_block_k"] = f.requested_block_k;
  teaching["tiles"] = {{"non_causal", tiles_json(f.tiles)}, {"causal", tiles_json(f.causal_tiles)}};
  // The fast float32 run's ISA, tiles and rounding differ from CPU to CPU, so it is printed
  // on the terminal only: manifest.json stays byte-identical on every machine (docs/contracts.md).
  return {{"reference", "naive sdpa on the same single-head Q, K, V (float64 inside)"},
          {"teaching", teaching}};
}

// What the runs know of order: "none", "sinusoidal", "rope" or "sinusoidal + rope".
std::string positions_text(const DemoResult& r) {
  if (!r.rope) return position_kind_name(r.config.positions);
  return r.config.positions == PositionKind::sinusoidal ? "sinusoidal + rope" : "rope";
}

Json optional_score(const std::optional<double>& v) { return v ? Json(*v) : Json(nullptr); }

// With --model: where every picture's attention came from, and every head's scores.
void add_model_json(Json& m, const DemoModel& dm) {
  const ToyConfig& c = dm.config;
  Json& config = m["config"];
  const bool gpt2 = dm.architecture == "gpt2";
  config["model"] = {{"path", dm.path}, {"architecture", dm.architecture}, {"vocab", c.vocab}, {"d_model", c.d_model},
                     {"heads", c.heads}, {"layers", c.layers}, {"context", c.context}};
  config["embeddings"] = gpt2 ? "GPT-2's wte[id] + wpe[i] on GPT-2's own BPE tokens of the sentence"
                              : "the model's embed[id] + pos[i]; each distinct word gets the next id in order of first appearance";
  config["projections"] =
      std::string(gpt2 ? "the model's own weights (LayerNorm, biases and MLPs included)" : "the model's trained weights") +
      ": single_head is the best-scoring head that results.model.head_summary calls induction (else the best "
      "induction score after layer 0), causal the best it calls previous-token (else the best of layer 0)";
  config["multi_head_projections"] = "the model's weights: multi_head is its last layer";
  Json& results = m["results"];
  const HeadScores& ind = dm.induction_head;
  const HeadScores& prev = dm.prev_token_head;
  results["single_head"]["layer"] = ind.layer;
  results["single_head"]["head"] = ind.head;
  results["single_head"]["induction_score"] = optional_score(ind.induction);
  results["single_head"]["kind"] = ind.kind;
  results["causal"]["layer"] = prev.layer;
  results["causal"]["head"] = prev.head;
  results["causal"]["prev_token_score"] = optional_score(prev.previous_token);
  results["causal"]["kind"] = prev.kind;
  results["multi_head"]["layer"] = c.layers - 1;
  results["decode"]["layer"] = 0;
  Json scores = Json::array(), attention = Json::array();
  for (const HeadScores& s : dm.summary.heads) {
    scores.push_back({{"layer", s.layer}, {"head", s.head}, {"prev_token_score", optional_score(s.previous_token)},
                      {"induction_score", optional_score(s.induction)}, {"kind", s.kind}});
  }
  for (const Tensor3& a : dm.attention) attention.push_back(to_json(a, FloatText::shortest));
  Json scaled = Json::array();
  for (const Tensor3& s : dm.scaled_scores) scaled.push_back(to_json(s, FloatText::shortest));
  results["model"] = {{"ids", dm.ids},
                      {"repeated", dm.repeated},
                      {"shown", dm.repeated ? "the sentence twice: no token of it appeared twice" : "the sentence"},
                      {"score_rules",
                       {{"prev_token_score", "head_summary's previous_token: mean over queries i >= 1 of A[i, i-1]"},
                        {"induction_score",
                         "head_summary's induction: mean over the queries whose token appeared exactly once before "
                         "(at j) of A[i, j+1]; null when there is none"},
                        {"kind", "head_summary's rule"}}},
                      {"scores", scores},
                      {"induction_head", {{"layer", ind.layer}, {"head", ind.head}}},
                      {"prev_token_head", {{"layer", prev.layer}, {"head", prev.head}}},
                      {"attention", attention},
                      {"scaled_scores", scaled}};
  results["model"]["head_summary"] = head_summary_json(dm.summary);
  if (gpt2) {
    results["decode"]["input"] = "ln_1 of block 0 applied to the embeddings; c_attn and c_proj as y = x W^T + b";
  }
}

// Without --model: the trained model beside the seeded run: the tokens it was shown, every head's
// scores and kind, and the two named heads' weights.
Json trained_json(const DemoResult& r) {
  if (!r.trained) return {{"shown", false}, {"why", r.trained_skipped}};
  const DemoModel& dm = *r.trained;
  auto head = [&](const HeadScores& h) {
    return Json{{"layer", h.layer}, {"head", h.head}, {"kind", h.kind},
                {"weights", to_json(Tensor2(xt::view(dm.attention[h.layer], h.head, xt::all(), xt::all())),
                                    FloatText::shortest)}};
  };
  return {{"shown", true},
          {"model", dm.path},
          {"tokens", dm.labels},
          {"ids", dm.ids},
          {"repeated", dm.repeated},
          {"head_summary", head_summary_json(dm.summary)},
          {"induction_head", head(dm.induction_head)},
          {"prev_token_head", head(dm.prev_token_head)}};
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
        {"flash", flash_json(r.flash)},
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
  if (r.model) add_model_json(m, *r.model);
  if (r.config.trained && !r.model) m["results"]["trained"] = trained_json(r);
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
