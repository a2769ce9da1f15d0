// The demo's trained-heads section (demo_model.hpp): a toy model or GPT-2 on the sentence, its
// heads named by head_summary's rule, the checks on its own Q, K, V, and its JSON.
#include "attn/lessons/demo/demo_model.hpp"

#include <set>

#include "attn/engine/attention/attention.hpp"
#include "attn/engine/attention/mask.hpp"
#include "attn/engine/attention/mha.hpp"
#include "attn/engine/core/error.hpp"
#include "attn/io/number_format.hpp"
#include "attn/engine/models/decoder_model.hpp"
#include "attn/lessons/models/gpt2_forward.hpp"
#include "demo_sections.hpp"

namespace attn {
namespace {

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
  r.top = demo_top_per_row(r.weights, r.config.top_k, &r.causal_allowed);
  r.causal_weights = xt::view(dm.attention[prev.layer], prev.head, xt::all(), xt::all());
  r.causal_top = demo_top_per_row(r.causal_weights, r.config.top_k, &r.causal_allowed);
  r.head_weights = dm.attention.back();
  r.head_mean = mean_over_heads(r.head_weights);

  const Tensor3 &q = dm.induction_q, &k = dm.induction_k, &v = dm.induction_v;
  SdpaOptions causal;
  causal.causal = true;
  r.flash = demo_flash_check(q, k, v, attention(q, k, v), attention(q, k, v, nullptr, causal), r.tokens);
  r.split_kv = last_query_split_kv(q, k, v, r.scale);
  // The scores behind every weight, for the report's temperature slider.
  for (std::size_t l = 0; l < mc.layers; ++l) dm.scaled_scores.push_back(attention_scores(q_layers[l], k_layers[l], r.scale));
  r.scores = xt::view(dm.scaled_scores[ind.layer], ind.head, xt::all(), xt::all());
  r.causal_scores = xt::view(dm.scaled_scores[prev.layer], prev.head, xt::all(), xt::all());
  r.head_scores = dm.scaled_scores.back();
}

}  // namespace

// The sentence through a trained model: what its heads learned, on words it never saw (the toy
// was trained on arbitrary ids, so each distinct word is just the next id).
void run_toy_model_sections(DemoResult& r) {
  const ToyModel& model = *r.config.model;
  const ToyConfig& mc = model.config;
  ToyForward f;
  DemoModel dm = toy_demo_model(model, r.tokens, r.config.model_path, f);
  show_model_heads(r, dm, f.q, f.k);

  // The decode check on the model's first layer, from its embedded sentence.
  const ToyLayer& l0 = model.layers.front();
  MhaOptions mo;
  mo.num_heads = mc.heads;
  r.decode = demo_decode_check(f.residual.front(), MhaWeights{l0.w_q, l0.w_k, l0.w_v, l0.w_o, {}, {}, {}, {}}, mo);
  r.model = std::move(dm);
}

namespace {

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

}  // namespace

// The sentence through GPT-2: its own BPE tokens, its real attention (LayerNorm, biases, MLPs
// and all); the decode check on block 0's attention, from the LayerNorm of the embeddings.
void run_gpt2_sections(DemoResult& r, const std::vector<std::int32_t>& ids) {
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
  r.decode = demo_decode_check(layer_norm(f.embedded, b0.ln_1_weight, b0.ln_1_bias, c.layer_norm_epsilon),
                               gpt2_block_mha_weights(b0, c.n_embd), mo);
  r.model = std::move(dm);
}

// The sentence through a Llama-family model: its tokenizer.json's tokens, its real attention
// (RMSNorm, RoPE at its frequencies, grouped-query heads, its window); the decode check on layer
// 0's attention as mha (its grouped heads and RoPE, causal; the window is not part of the check)
// from the RMSNorm of the embeddings.
void run_decoder_sections(DemoResult& r, const std::vector<std::int32_t>& ids) {
  const DecoderModel& model = *r.config.decoder;
  const DecoderConfig& c = model.config;
  DemoModel dm;
  dm.path = r.config.model_path, dm.architecture = decoder_family_name(c.family);
  dm.config = ToyConfig{c.vocab, c.hidden, c.heads, c.layers, c.max_positions};
  dm.ids = ids, dm.labels = r.tokens;
  repeat_when_nothing_repeats(dm);
  const DecoderForward f = decoder_forward(model, dm.ids, 0, /*keep_qkv=*/true);
  dm.attention = f.attention;
  dm.summary = summarize_heads(dm.ids, dm.attention);
  name_heads(dm);
  keep_induction_qkv(dm, f.q, f.k, f.v);
  show_model_heads(r, dm, f.q, f.k);

  DecoderLayer l0 = unfilled_decoder_layer(c);
  model.stored->widen_layer(0, l0);
  Tensor2 embedded = Tensor2::from_shape({dm.ids.size(), c.hidden});
  for (std::size_t i = 0; i < dm.ids.size(); ++i)
    model.stored->widen_embed_rows(std::size_t(dm.ids[i]), 1, embedded.data() + i * c.hidden);
  MhaOptions mo;
  mo.num_heads = c.heads, mo.num_kv_heads = c.kv_heads;
  RopeOptions rope;
  rope.frequencies = decoder_rope_frequencies(c);
  mo.rope = rope;
  MhaWeights w{l0.w_q, l0.w_k, l0.w_v, l0.w_o, {}, {}, {}, {}};
  if (c.qkv_bias) w.b_q = l0.b_q, w.b_k = l0.b_k, w.b_v = l0.b_v;
  r.decode = demo_decode_check(rms_norm(embedded, l0.input_norm, c.rms_eps), w, mo);
  r.model = std::move(dm);
}

// The default demo's second half: the trained toy model on the same sentence, when it fits.
void run_trained_beside(DemoResult& r) {
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

namespace {

Json optional_score(const std::optional<double>& v) { return v ? Json(*v) : Json(nullptr); }

}  // namespace

void add_demo_model_json(Json& m, const DemoModel& dm) {
  const ToyConfig& c = dm.config;
  Json& config = m["config"];
  const bool gpt2 = dm.architecture == "gpt2", folder = dm.architecture != "toy";
  config["model"] = {{"path", dm.path}, {"architecture", dm.architecture}, {"vocab", c.vocab}, {"d_model", c.d_model},
                     {"heads", c.heads}, {"layers", c.layers}, {"context", c.context}};
  config["embeddings"] = gpt2     ? "GPT-2's wte[id] + wpe[i] on GPT-2's own BPE tokens of the sentence"
                         : folder ? "embed_tokens[id] on the tokens of the folder's tokenizer.json; positions by RoPE"
                                  : "the model's embed[id] + pos[i]; each distinct word gets the next id in order of first "
                                    "appearance";
  config["projections"] =
      std::string(gpt2     ? "the model's own weights (LayerNorm, biases and MLPs included)"
                  : folder ? "the model's own weights (RMSNorm, RoPE, grouped-query heads, its window and MLPs included)"
                           : "the model's trained weights") +
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
  } else if (folder) {
    results["decode"]["input"] = "input_layernorm of layer 0 applied to the embeddings; q/k/v/o_proj as y = x W^T (+ b), "
                                 "grouped-query heads and RoPE as the model has them, causal (without its window)";
  }
}

std::size_t demo_shown_length(const std::vector<std::int32_t>& ids, std::size_t positions) {
  return show_twice(ids, positions) ? 2 * ids.size() : ids.size();
}

Json demo_trained_json(const DemoModel* trained, const std::string& skipped) {
  if (!trained) return {{"shown", false}, {"why", skipped}};
  const DemoModel& dm = *trained;
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

}  // namespace attn
