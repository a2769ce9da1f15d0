// `attn-cli demo` (demo.hpp): the options checked, the size known up front, and the sections
// run in order. Each section lives in its own file (demo_seeded.cpp, demo_checks.cpp,
// demo_model.cpp) or is a concepts/ lesson run at the demo's size; demo_manifest.cpp collects
// their JSON.
#include "attn/lessons/demo/demo.hpp"

#include <algorithm>
#include <memory>

#include "attn/engine/attention/mask.hpp"
#include "attn/engine/core/error.hpp"
#include "attn/engine/models/decoder_model.hpp"
#include "attn/io/decoder_model_file.hpp"
#include "attn/io/gpt2_model_file.hpp"
#include "attn/io/hf_config.hpp"
#include "attn/io/hf_tokenizer_file.hpp"
#include "attn/io/gpt2_tokenizer_file.hpp"
#include "attn/io/shipped_model.hpp"
#include "attn/io/toy_model_file.hpp"
#include "attn/lessons/models/forward.hpp"
#include "attn/lessons/models/gpt2_forward.hpp"
#include "demo_sections.hpp"

namespace attn {

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
  if (config.model || config.gpt2 || config.decoder) {
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

void use_model_folder(DemoConfig& config, const std::string& dir) {
  if (is_gpt2_folder(dir)) {
    config.gpt2 = std::make_shared<const Gpt2Model>(read_gpt2_model(dir));
    config.gpt2_tokenizer = std::make_shared<const Gpt2Tokenizer>(read_gpt2_tokenizer(dir));
  } else if (is_decoder_folder(dir)) {
    auto model = std::make_shared<const DecoderModel>(read_decoder_model(dir));
    const DecoderConfig& c = model->config;
    if (c.heads * c.head_dim != c.hidden)  // the decode check runs layer 0 as mha, which splits D into heads
      throw InputError(dir + ": head_dim " + std::to_string(c.head_dim) + " x " + std::to_string(c.heads) +
                       " heads is not hidden_size " + std::to_string(c.hidden) +
                       ": demo does not show such a model; forward --out draws its heads");
    config.decoder = std::move(model);
    config.decoder_tokenizer = read_folder_tokenizer(dir);
  } else {
    config.model = std::make_shared<const ToyModel>(read_toy_model(dir));
  }
  config.model_path = dir;
}

void use_shipped_model(DemoConfig& config) {
  config.trained = std::make_shared<const ToyModel>(shipped_toy_model());
  config.trained_name = kShippedModelName;
}

namespace {

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
    const DemoHead h = demo_seeded_head(r.config);
    r.approximations = run_approximations(h.q, h.k, h.v, r.scale, r.tokens, "the seeded single head");
  }
}

}  // namespace

DemoSize demo_size(const DemoConfig& config) {
  check_demo_config(config);
  // Besides the heads: the single head, its causal and scaled copies, RoPE's, the flash replay's,
  // and the five of the efficient-attention section.
  constexpr std::size_t kOtherMaps = 11;
  if (config.decoder) {
    const DecoderConfig& c = config.decoder->config;
    const std::vector<std::int32_t> ids = model_tokens_from_text(*config.decoder_tokenizer, config.sentence, c.vocab).ids;
    return {demo_shown_length(ids, c.max_positions), c.hidden, c.head_dim, c.layers * c.heads + kOtherMaps};
  }
  if (config.gpt2) {
    const Gpt2Config& c = config.gpt2->config;
    const std::vector<std::int32_t> ids = gpt2_tokens_from_text(*config.gpt2_tokenizer, config.sentence).ids;
    return {demo_shown_length(ids, c.n_positions), c.n_embd, c.n_embd / c.n_head, c.n_layer * c.n_head + kOtherMaps};
  }
  const std::vector<Token> tokens = tokenize(config.sentence, config.max_tokens);
  const std::size_t L = tokens.size();
  if (config.model) {
    const ToyConfig& c = config.model->config;
    const std::vector<std::int32_t> ids = toy_tokens_from_words(token_texts(tokens), c.vocab).ids;
    return {demo_shown_length(ids, c.context), c.d_model, c.d_model / c.heads, c.layers * c.heads + kOtherMaps};
  }
  const std::size_t trained = config.trained ? config.trained->config.layers * config.trained->config.heads : 0;
  return {L, config.d_model, config.d_model / config.heads, config.heads + kOtherMaps + trained};
}

DemoResult run_demo(const DemoConfig& config) {
  check_demo_config(config);
  DemoResult r;
  r.config = config;
  if (config.gpt2) {  // GPT-2's own BPE tokens, not words
    const ToyTokens t = gpt2_tokens_from_text(*config.gpt2_tokenizer, config.sentence);
    if (t.ids.empty()) throw InputError("sentence: no tokens");
    r.tokens = t.labels;  // a token holding part of a character reads \xf0, not U+FFFD
    run_gpt2_sections(r, t.ids);
  } else if (config.decoder) {  // the folder's tokenizer.json (Llama 3's adds <|begin_of_text|>)
    const ToyTokens t = model_tokens_from_text(*config.decoder_tokenizer, config.sentence, config.decoder->config.vocab);
    r.tokens = t.labels;
    run_decoder_sections(r, t.ids);
  } else {
    const std::vector<Token> tokens = tokenize(config.sentence, config.max_tokens);
    r.tokens = token_texts(tokens);
    r.causal_allowed = causal_allowed(r.tokens.size(), r.tokens.size());
    if (config.model) run_toy_model_sections(r);
    else run_seeded_sections(r, tokens);
    if (!config.model && config.trained) run_trained_beside(r);
  }
  const std::size_t L = r.tokens.size();
  approximations(r);
  r.variance = run_variance(demo_variance_config(r.config));
  r.complexity = run_complexity(demo_complexity_config(r.config, L));
  return r;
}

std::shared_ptr<const DemoResult> run_demo_shared(const DemoConfig& config) {
  return std::make_shared<const DemoResult>(run_demo(config));
}

}  // namespace attn
