// GPT-2 generation through its KV caches (gpt2_generate.hpp).
#include "attn/lessons/models/gpt2_generate.hpp"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cmath>
#include <numeric>

#include "attn/engine/attention/flash.hpp"
#include "attn/engine/core/error.hpp"
#include "attn/engine/models/decoder_decode.hpp"
#include "attn/engine/models/gpt2_decode.hpp"

namespace attn {

namespace {

// A model's vocabulary and positions, and what its config names them.
void check_generate_config(const Gpt2GenerateConfig& g, std::size_t vocab, std::size_t positions,
                           const char* positions_name) {
  if (g.prompt.empty()) throw InputError("prompt: expected at least one token");
  if (g.new_tokens == 0) throw InputError("--tokens: expected at least 1 token to generate, got 0");
  if (g.prompt.size() > positions || g.new_tokens > positions - g.prompt.size()) {
    throw InputError("--tokens: the prompt's " + std::to_string(g.prompt.size()) + " tokens + " +
                     std::to_string(g.new_tokens) + " new ones exceed the model's " + positions_name + " of " +
                     std::to_string(positions));
  }
  if (!std::isfinite(g.temperature) || g.temperature < 0)
    throw InputError("--temperature: expected a finite number >= 0 (0 = greedy), got " + std::to_string(g.temperature));
  if (g.top_k > vocab)
    throw InputError("--top-k: expected 0.." + std::to_string(vocab) + " (the vocabulary), got " + std::to_string(g.top_k));
  for (std::int32_t id : g.prompt)
    if (id < 0 || std::size_t(id) >= vocab)
      throw InputError("prompt: id " + std::to_string(id) + " out of range [0, " + std::to_string(vocab) + ")");
}

// The loop every model's generation shares: the prompt as one prefill, then one token a step;
// with check_every_step, each step's logits against full(ids) on the whole prefix.
template <class Decoder, class Full>
Gpt2Generation generate_through(Decoder& decoder, Full full, std::size_t V, const Gpt2GenerateConfig& config) {
  Gpt2Generation g;
  g.config = config;
  g.ids = config.prompt;
  Rng rng(config.seed);
  std::vector<std::int32_t> feed = config.prompt;
  for (std::size_t n = 0; n < config.new_tokens; ++n) {
    const auto start = std::chrono::steady_clock::now();
    const Tensor2 logits = decoder.feed(feed);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const std::span<const float> z(logits.data() + (logits.shape(0) - 1) * V, V);
    Gpt2GenerateStep step;
    step.seconds = seconds;
    step.cache_len = decoder.length();
    step.cache_bytes = decoder.cache_bytes();
    for (float x : z) step.logit_scale = std::max(step.logit_scale, std::fabs(double(x)));
    if (config.check_every_step) {
      const Tensor2 whole = full(g.ids);  // the whole prefix again, no cache
      double diff = 0;
      for (std::size_t v = 0; v < V; ++v) diff = std::max(diff, std::fabs(double(whole(whole.shape(0) - 1, v)) - z[v]));
      step.max_diff_vs_full = diff;
    }
    const NextChoice next = choose_next_token(z, config.temperature, config.top_k, rng);
    step.id = next.id;
    step.probability = next.probability;
    g.steps.push_back(step);
    g.ids.push_back(next.id);
    feed = {next.id};
  }
  return g;
}

}  // namespace

void check_gpt2_generate_config(const Gpt2GenerateConfig& g, const Gpt2Config& c) {
  check_generate_config(g, c.vocab_size, c.n_positions, "n_positions");
}

void check_decoder_generate_config(const Gpt2GenerateConfig& g, const DecoderConfig& c) {
  check_generate_config(g, c.vocab, c.max_positions, "max_position_embeddings");
}

NextChoice choose_next_token(std::span<const float> z, double temperature, std::size_t top_k, Rng& rng) {
  const std::size_t V = z.size();
  std::vector<std::size_t> order(V);
  std::iota(order.begin(), order.end(), 0);
  auto higher = [&](std::size_t a, std::size_t b) { return z[a] > z[b] || (z[a] == z[b] && a < b); };
  const bool sampling = temperature > 0 || top_k > 0;
  const std::size_t kept = top_k > 0 ? std::min(top_k, V) : V;
  std::partial_sort(order.begin(), order.begin() + std::ptrdiff_t(sampling ? kept : 1), order.end(), higher);
  const double t = temperature > 0 ? temperature : 1.0;
  const double top = z[order[0]];
  if (!sampling) {  // greedy; its probability under softmax(z)
    double sum = 0;
    for (float x : z) sum += std::exp(double(x) - top);
    return {std::int32_t(order[0]), 1.0 / sum};
  }
  std::vector<double> p(kept);
  double sum = 0;
  for (std::size_t r = 0; r < kept; ++r) sum += (p[r] = std::exp((double(z[order[r]]) - top) / t));
  const double u = rng.uniform();
  double cumulative = 0;
  for (std::size_t r = 0; r < kept; ++r) {
    cumulative += p[r] / sum;
    if (u < cumulative) return {std::int32_t(order[r]), p[r] / sum};
  }
  return {std::int32_t(order[kept - 1]), p[kept - 1] / sum};  // u within rounding of 1
}

Gpt2Generation gpt2_generate(const Gpt2Model& model, const Gpt2GenerateConfig& config) {
  check_gpt2_generate_config(config, model.config);
  Gpt2Decoder decoder(model, config.kv_dtype);
  return generate_through(
      decoder, [&](const std::vector<std::int32_t>& ids) { return gpt2_forward(model, ids).logits; },
      model.config.vocab_size, config);
}

Gpt2Generation decoder_generate(const DecoderModel& model, const Gpt2GenerateConfig& config) {
  check_decoder_generate_config(config, model.config);
  CachedDecoder decoder(model, config.kv_dtype);
  return generate_through(
      decoder, [&](const std::vector<std::int32_t>& ids) { return decoder_forward(model, ids).logits; },
      model.config.vocab, config);
}

namespace {

// The best time of `rounds` streaming reads of every region (stream_read, all threads), each read
// as floats from its first 64-byte boundary: the read, not the values, is the point.
WeightStream stream_regions(const std::vector<std::pair<const void*, std::size_t>>& regions, std::size_t rounds) {
  WeightStream w;
  for (const auto& [data, bytes] : regions) w.bytes += bytes;
  double sink = 0;  // the sums, kept so that no read can be left out
  for (std::size_t round = 0; round < std::max<std::size_t>(rounds, 1); ++round) {
    const auto start = std::chrono::steady_clock::now();
    for (const auto& [data, bytes] : regions) {
      const auto address = reinterpret_cast<std::uintptr_t>(data);
      const std::size_t skip = (64 - address % 64) % 64;
      if (bytes <= skip) continue;
      sink += stream_read(reinterpret_cast<const float*>(address + skip), (bytes - skip) / 4, nullptr, 0, 0);
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    w.seconds = round == 0 ? seconds : std::min(w.seconds, seconds);
  }
  volatile double keep = sink;
  (void)keep;
  return w;
}

}  // namespace

WeightStream decoder_weight_stream(const DecoderModel& model, std::size_t rounds) {
  std::vector<std::pair<const void*, std::size_t>> regions;
  for (std::size_t l = 0; l < model.config.layers; ++l) {
    const DecoderStoredLayer s = model.stored->stored_layer(l);
    for (const StoredMatrix* m : {&s.w_q, &s.w_k, &s.w_v, &s.w_o, &s.w_gate, &s.w_up, &s.w_down})
      regions.emplace_back(m->data, m->bytes());
  }
  const StoredMatrix head = model.stored->stored_lm_head();
  regions.emplace_back(head.data, head.bytes());
  return stream_regions(regions, rounds);
}

WeightStream gpt2_weight_stream(const Gpt2Model& model, std::size_t rounds) {
  std::vector<std::pair<const void*, std::size_t>> regions;
  if (model.stored) {  // the matrices where they are stored, as a step reads them
    Gpt2Block vectors = gpt2_block_vectors(model.config.n_embd);
    for (std::size_t l = 0; l < model.config.n_layer; ++l) {
      const Gpt2BlockMatrices m = model.stored->block_matrices(l, vectors);
      for (const StoredMatrix* w : {&m.attn, &m.attn_proj, &m.fc, &m.mlp_proj}) regions.emplace_back(w->data, w->bytes());
    }
    const StoredMatrix wte = model.stored->stored_wte();
    regions.emplace_back(wte.data, wte.bytes());
    return stream_regions(regions, rounds);
  }
  auto add = [&](const Tensor2& t) { regions.emplace_back(t.data(), t.size() * sizeof(float)); };
  for (const Gpt2Block& b : model.blocks) {
    add(b.attn_weight), add(b.attn_proj_weight), add(b.fc_weight), add(b.mlp_proj_weight);
  }
  add(model.wte);
  return stream_regions(regions, rounds);
}

std::string gpt2_ids_text(const SubwordTokenizer& tokenizer, const std::vector<std::int32_t>& ids) {
  std::string text;
  std::vector<TokenId> run;  // known ids decode together: a character may span tokens
  for (std::int32_t id : ids) {
    if (tokenizer.has_token(id)) {
      run.push_back(id);
      continue;
    }
    text += tokenizer.decode_text(run) + "<id " + std::to_string(id) + ">";
    run.clear();
  }
  return text + tokenizer.decode_text(run);
}

Json gpt2_generation_json(const Gpt2Generation& g, const SubwordTokenizer* tokenizer) {
  const Gpt2GenerateConfig& c = g.config;
  const bool sampling = c.temperature > 0 || c.top_k > 0;
  Json steps = Json::array();
  for (const Gpt2GenerateStep& s : g.steps) {
    const std::string text = tokenizer ? tokenizer->text_or_id(s.id) : "<id " + std::to_string(s.id) + ">";
    Json j = {{"id", s.id},        {"text", text},         {"probability", s.probability},
              {"cache_len", s.cache_len}, {"cache_bytes", s.cache_bytes}, {"logit_scale", s.logit_scale}};
    if (s.max_diff_vs_full) j["max_abs_diff_vs_full"] = *s.max_diff_vs_full;
    steps.push_back(j);
  }
  std::vector<TokenId> generated(g.ids.begin() + std::ptrdiff_t(c.prompt.size()), g.ids.end());
  return {{"prompt", c.prompt},
          {"rule", sampling ? "sample: softmax(logits / temperature) over the top_k largest logits (all when "
                              "top_k = 0), one seeded uniform draw per token"
                            : "greedy: the argmax of the logits, the lowest id on a tie"},
          {"temperature", c.temperature},
          {"top_k", c.top_k},
          {"seed", c.seed},
          {"cache", std::string("one KV cache per layer, ") +
                        (c.kv_dtype == KvDtype::bfloat16 ? "bfloat16 (each K and V value rounded as it is stored)"
                                                          : "float64") +
                        "; the prompt is one prefill, each new token is fed alone"},
          {"kv_dtype", kv_dtype_name(c.kv_dtype)},
          {"steps", steps},
          {"ids", g.ids},
          {"generated_text", tokenizer ? Json(gpt2_ids_text(*tokenizer, generated)) : Json(nullptr)}};
}

}  // namespace attn
