// attn-cli generate: a sentence decoded token by token through a KV cache, checked step by
// step against full recomputation.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <iostream>
#include <memory>

#include "attn/engine/core/error.hpp"
#include "attn/engine/text/printable_text.hpp"
#include "attn/io/decoder_model_file.hpp"
#include "attn/io/gpt2_model_file.hpp"
#include "attn/io/hf_config.hpp"
#include "attn/io/hf_tokenizer_file.hpp"
#include "attn/lessons/models/generate.hpp"
#include "attn/lessons/models/gpt2_forward.hpp"
#include "attn/lessons/models/gpt2_generate.hpp"
#include "attn/lessons/measure/memory_policy.hpp"
#include "attn/render/report/report_table.hpp"
#include "attn/render/views/kv_cache_picture.hpp"
#include "attn/render/draw/text_table.hpp"
#include "attn/io/number_format.hpp"
#include "commands.hpp"
#include "model_flag.hpp"
#include "image_flags.hpp"

namespace attn::cli {
namespace {

struct GenerateCliOptions {
  GenerateConfig config;
  // With --model: GPT-2 writes --tokens N after the sentence (gpt2_generate.hpp).
  std::string model;
  std::optional<std::int64_t> new_tokens;
  std::optional<double> temperature;
  std::optional<std::int64_t> top_k;
  bool check = false;
  std::string prompt_ids;  // a Llama-family folder's prompt, as ids
  bool sentence_given = false;
  std::vector<CLI::Option*> lesson_only, model_only;  // flags that belong to one mode
  std::string rope;  // "", "half" or "interleaved"
  std::string kv_dtype = "f64";
  bool json = false;
  std::string out = "generate-out";
  ImageFlags image;
};

std::string quoted_tokens(const std::vector<std::string>& tokens, std::size_t first, std::size_t count) {
  std::string s;
  for (std::size_t i = first; i < first + count; ++i) s += (s.empty() ? "'" : " '") + tokens[i] + "'";
  return s;
}

std::string flops_text(const StepFlops& f) {
  return format_si(double(f.total())) + " (projections " + format_si(double(f.projections)) + " + attention " +
         format_si(double(f.attention)) + ")";
}

std::string step_flops_line(const GenerateStep& s) {
  const std::size_t n = s.first + s.count;
  return "with the cache " + flops_text(s.with_cache) + "; recomputing all " + count_of(n, "token") + " " +
         flops_text(s.recompute) + ", " + format_g(double(s.recompute.total()) / double(s.with_cache.total()), 3) +
         "x";
}

// The cache's saving in numbers: a decode step still reads every cached key, so its attention
// grows with the cache (O(t) per step, O(t^2) over a generation), while recomputing runs the
// whole prefix again (O(t^2) per step, O(t^3) over a generation).
void print_flops_summary(const GenerateResult& r) {
  std::cout << "\nFLOPs over the whole run (2 per multiply-add, softmax 3 per score): with the cache "
            << flops_text(r.total_with_cache) << "; recomputing the prefix at every step "
            << flops_text(r.total_recompute) << ", "
            << format_g(double(r.total_recompute.total()) / double(r.total_with_cache.total()), 3) << "x.\n";
  std::vector<const GenerateStep*> decode;
  for (const GenerateStep& s : r.steps)
    if (!s.prefill) decode.push_back(&s);
  if (decode.size() < 2) return;
  const GenerateStep& a = *decode.front();
  const GenerateStep& b = *decode.back();
  std::cout << (r.config.window ? "A decode step's query reads every cached key, and the window caps the cache at " +
                                      count_of(r.config.window, "token") + ", so its attention"
                                : std::string("A decode step's attention is not O(1): its query reads every cached key, "
                                              "so it"))
            << " grew from " << format_si(double(a.with_cache.attention)) << " FLOPs (step " << a.first << ", cache "
            << count_of(a.cache_len, "token") << ") to " << format_si(double(b.with_cache.attention)) << " (step "
            << b.first << ", cache " << count_of(b.cache_len, "token") << ")";
  if (r.config.window) std::cout << " and stops there: O(W) per step";
  std::cout << ". Without the cache, step " << b.first << " alone would cost "
            << format_si(double(b.recompute.total())) << ".\n";
}

void print_generate(const GenerateResult& r) {
  const GenerateConfig& c = r.config;
  const std::size_t L = r.tokens.size(), H = c.num_heads;
  std::cout << "Sentence: \"" << printable_text(c.sentence) << "\" (" << count_of(L, "token") << ")\n"
            << "Causal self-attention: d_model " << c.d_model << ", " << H << " heads over "
            << r.num_kv_heads << " kv heads (head dim " << r.head_dim << "), seeded untrained weights";
  if (c.rope) std::cout << ", RoPE " << rope_style_name(*c.rope);
  if (c.sinusoidal) std::cout << ", sinusoidal PE";
  if (c.alibi) std::cout << ", ALiBi";
  if (c.window) std::cout << ", sliding window " << c.window;
  std::cout << ".\nThe tokens go in as if generated (no sampling): " << c.prefill
            << " as the prompt (prefill), then one per step. The cache holds K and V of the tokens a\n"
            << "later query can still see: 2 x " << r.num_kv_heads << " kv heads x tokens x "
            << r.head_dim << " dims x " << kv_dtype_bytes(c.kv_dtype) << " bytes ("
            << (c.kv_dtype == KvDtype::bfloat16 ? "bfloat16, each value rounded as it is stored" : "float64") << ").\n";

  std::size_t evicted = 0;
  for (const GenerateStep& s : r.steps) {
    const std::size_t last = s.first + s.count - 1;
    char diff[32];
    std::snprintf(diff, sizeof diff, "%.1e", s.max_diff);
    std::cout << "\n" << (s.prefill ? "prefill" : "step " + std::to_string(last)) << ": "
              << quoted_tokens(r.tokens, s.first, s.count) << " -> cache " << count_of(s.cache_len, "token") << ", "
              << s.cache_bytes << " bytes";
    if (s.evicted > evicted) {
      std::cout << " (evicted " << quoted_tokens(r.tokens, evicted, s.evicted - evicted) << ": outside the window)";
      evicted = s.evicted;
    }
    std::cout << "; max |decoded - full recomputation| = " << diff << "\n"
              << "  FLOPs: " << step_flops_line(s) << "\n"
              << "  attention of '" << r.tokens[last] << "' (rows: head, columns: key):\n";
    Tensor2 row = Tensor2::from_shape({H, last + 1});
    for (std::size_t h = 0; h < H; ++h)
      for (std::size_t j = 0; j <= last; ++j) row(h, j) = s.weights(h, s.count - 1, j);
    std::vector<std::string> heads, keys(r.tokens.begin(), r.tokens.begin() + static_cast<long>(last) + 1);
    for (std::size_t h = 0; h < H; ++h) heads.push_back("  head " + std::to_string(h));
    std::cout << matrix_table(heads, keys, row, 3);
  }
  char diff[32];
  std::snprintf(diff, sizeof diff, "%.1e", r.max_diff);
  std::cout << "\nKV cache at the end: " << count_of(r.decoded.kv_cache_len, "token") << ". Largest difference from "
            << "recomputing everything: " << diff
            << (c.kv_dtype == KvDtype::bfloat16 ? " (the bfloat16 cache's rounding of K and V: the full recomputation "
                                                  "keeps them unrounded).\n"
                                                : " (float32 rounding).\n");
  print_flops_summary(r);
}

// A token's label: the tokenizer's, or "<id N>" without one.
std::string token_label(const SubwordTokenizer* tokenizer, std::int32_t id) {
  return tokenizer ? tokenizer->label_or_id(id) : "<id " + std::to_string(id) + ">";
}

// A model writing after the prompt: each token as it is chosen, then the whole text. `model`
// describes it ("GPT-2 model DIR: 2 layers x 4 heads, width 32"); `caches` the caches it fills.
void print_generation(const Gpt2Generation& g, const SubwordTokenizer* tokenizer, const std::string& model,
                      const std::string& caches) {
  const Gpt2GenerateConfig& o = g.config;
  const bool sampling = o.temperature > 0 || o.top_k > 0;
  std::cout << model << ". Prompt, " << count_of(o.prompt.size(), "token") << ":";
  for (std::int32_t id : o.prompt) std::cout << " [" << printable_text(token_label(tokenizer, id)) << "]";
  std::cout << "\n"
            << (sampling ? "Sampling: softmax(logits / " + format_fixed(o.temperature > 0 ? o.temperature : 1.0, 3) +
                               ") over the " + (o.top_k ? "top " + std::to_string(o.top_k) : std::string("whole vocabulary")) +
                               ", seed " + std::to_string(o.seed)
                         : std::string("Greedy: the most likely token each step"))
            << ". The prompt is one prefill; each new token is fed alone through " << caches << " ("
            << (o.kv_dtype == KvDtype::bfloat16 ? "bfloat16" : "float64") << ").\n\n";
  Table table{{"step", "id", "token", "p", "cache tokens", "cache bytes", "max |cached - full|"}, {}};
  for (std::size_t n = 0; n < g.steps.size(); ++n) {
    const Gpt2GenerateStep& s = g.steps[n];
    char diff[48] = "-";
    if (s.max_diff_vs_full) std::snprintf(diff, sizeof diff, "%.1e (logits up to %.3g)", *s.max_diff_vs_full, s.logit_scale);
    table.rows.push_back({std::to_string(n + 1), std::to_string(s.id), "[" + printable_text(token_label(tokenizer, s.id)) + "]",
                          format_fixed(s.probability, 4), std::to_string(s.cache_len), std::to_string(s.cache_bytes), diff});
  }
  std::cout << render_table(table, TableFormat::text);
  if (tokenizer) {
    std::vector<TokenId> generated(g.ids.begin() + std::ptrdiff_t(o.prompt.size()), g.ids.end());
    std::cout << "\nText: " << printable_text(gpt2_ids_text(*tokenizer, o.prompt)) << "|"
              << printable_text(gpt2_ids_text(*tokenizer, generated))
              << "\n       (the prompt, then '|', then what the model wrote)\n";
  }
  if (!o.check_every_step) std::cout << "(--check recomputes the whole prefix at every step and compares the logits)\n";
}

// Tokens per second after the prompt, against the machine's own bound: a decode step reads every
// weight once, so it can go no faster than a streaming read of those bytes (measured now, on the
// same mapped weights). Times change from run to run: the terminal only, never --json.
void print_decode_speed(const Gpt2Generation& g, const WeightStream& w) {
  if (g.steps.size() < 2) {
    std::cout << "Speed: generate 2 or more tokens to time the steps after the prompt.\n";
    return;
  }
  std::vector<double> seconds;
  for (std::size_t n = 1; n < g.steps.size(); ++n) seconds.push_back(g.steps[n].seconds);
  std::nth_element(seconds.begin(), seconds.begin() + std::ptrdiff_t(seconds.size() / 2), seconds.end());
  const double step = std::max(seconds[seconds.size() / 2], 1e-9), stream = std::max(w.seconds, 1e-9);
  std::cout << "Speed: " << format_fixed(1 / step, 1) << " tokens/s after the prompt (median of "
            << count_of(seconds.size(), "step") << ", " << format_fixed(step * 1e3, 2) << " ms each). A step reads "
            << format_g(double(w.bytes) / 1e6, 3) << " MB of weights once: " << format_fixed(double(w.bytes) / step / 1e9, 1)
            << " GB/s, " << format_fixed(stream / step, 2) << " of a streaming read of the same bytes here ("
            << format_fixed(double(w.bytes) / stream / 1e9, 1) << " GB/s, measured now).\n";
}

// --tokens, --temperature, --top-k, --seed, --check and --kv-dtype of a model run.
Gpt2GenerateConfig model_generate_config(const GenerateCliOptions& opts) {
  for (CLI::Option* flag : opts.lesson_only)
    if (flag->count()) throw InputError(flag->get_name() + ": belongs to the lesson on random weights; leave it out with --model");
  if (!opts.new_tokens) throw InputError("--tokens: give the number of tokens to generate with --model");
  if (*opts.new_tokens < 1 || *opts.new_tokens > 1'000'000)
    throw InputError("--tokens: expected 1..1000000 tokens to generate, got " + std::to_string(*opts.new_tokens));
  if (opts.top_k && *opts.top_k < 0) throw InputError("--top-k: expected an integer >= 0, got " + std::to_string(*opts.top_k));
  Gpt2GenerateConfig g;
  g.new_tokens = std::size_t(*opts.new_tokens);
  g.temperature = opts.temperature.value_or(0.0);
  if (!std::isfinite(g.temperature) || g.temperature < 0)
    throw InputError("--temperature: expected a finite number >= 0 (0 = greedy), got " + std::to_string(g.temperature));
  g.top_k = std::size_t(opts.top_k.value_or(0));
  g.seed = opts.config.seed;
  g.check_every_step = opts.check;
  g.kv_dtype = parse_kv_dtype(opts.kv_dtype);
  return g;
}

void run_gpt2_generate(const GenerateCliOptions& opts, Gpt2GenerateConfig g) {
  if (!opts.prompt_ids.empty()) throw InputError("--prompt-ids: a GPT-2 folder reads the sentence with its own tokenizer");
  const Gpt2Model model = read_gpt2_model(opts.model, Gpt2Loading::per_block);
  const std::unique_ptr<SubwordTokenizer> read = read_folder_tokenizer(opts.model);
  const SubwordTokenizer& tokenizer = *read;
  g.prompt = model_tokens_from_text(tokenizer, opts.config.sentence, model.config.vocab_size).ids;
  reuse_freed_memory();
  check_gpt2_generate_config(g, model.config);
  const Gpt2Generation result = gpt2_generate(model, g);
  const Gpt2Config& c = model.config;
  if (opts.json) {
    std::cout << gpt2_generation_json(result, &tokenizer).dump() << "\n";
    return;
  }
  print_generation(result, &tokenizer,
                   "GPT-2 model " + opts.model + ": " + std::to_string(c.n_layer) + " layers x " +
                       std::to_string(c.n_head) + " heads, width " + std::to_string(c.n_embd),
                   std::to_string(c.n_layer) + " KV caches");
  print_decode_speed(result, gpt2_weight_stream(model));
}

// A Llama, Mistral or Qwen2 folder: the prompt as text, read by its tokenizer.json, or as ids.
void run_decoder_generate(const GenerateCliOptions& opts, Gpt2GenerateConfig g) {
  if (!opts.prompt_ids.empty() && opts.sentence_given)
    throw InputError("--prompt-ids: give the prompt either as text or as ids, not both");
  const DecoderModel model = read_decoder_model(opts.model);
  const DecoderConfig& c = model.config;
  std::unique_ptr<SubwordTokenizer> tokenizer;
  if (opts.prompt_ids.empty() || has_tokenizer_files(opts.model)) tokenizer = read_folder_tokenizer(opts.model);
  g.prompt = opts.prompt_ids.empty() ? model_tokens_from_text(*tokenizer, opts.config.sentence, c.vocab).ids
                                     : gpt2_tokens_from_list(tokenizer.get(), opts.prompt_ids, c.vocab).ids;
  check_decoder_generate_config(g, c);
  const Gpt2Generation result = decoder_generate(model, g);
  if (opts.json) {
    std::cout << gpt2_generation_json(result, tokenizer.get()).dump() << "\n";
    return;
  }
  print_generation(result, tokenizer.get(),
                   std::string(decoder_family_name(c.family)) + " model " + opts.model + ": " + std::to_string(c.layers) +
                       " layers x " + std::to_string(c.heads) + " query heads, head dim " + std::to_string(c.head_dim),
                   std::to_string(c.layers) + " KV caches of " + std::to_string(c.kv_heads) + " key/value heads each (" +
                       std::to_string(c.heads) + " query heads share them: " + std::to_string(c.heads / c.kv_heads) +
                       "x less than multi-head attention would keep)" +
                       (c.sliding_window && !c.attention_sinks
                            ? "; each layer under the sliding window keeps only its last " +
                                  std::to_string(c.sliding_window) + " tokens (Mistral's rolling buffer)"
                            : ""));
  print_decode_speed(result, decoder_weight_stream(model));
}

void run_model_generate(const GenerateCliOptions& opts) {
  const Gpt2GenerateConfig g = model_generate_config(opts);
  if (is_gpt2_folder(opts.model)) return run_gpt2_generate(opts, g);
  if (is_decoder_folder(opts.model)) return run_decoder_generate(opts, g);
  throw InputError("--model: " + opts.model + " is not a GPT-2, Llama, Mistral or Qwen2 folder (config.json's \"model_type\")");
}

void run_generate_command(GenerateCliOptions opts) {
  if (!opts.model.empty()) return run_model_generate(opts);
  for (CLI::Option* flag : opts.model_only)
    if (flag->count()) throw InputError(flag->get_name() + ": generates with a model folder; give --model DIR too");
  if (!opts.rope.empty()) opts.config.rope = parse_rope_style(opts.rope, "--rope");
  opts.config.kv_dtype = parse_kv_dtype(opts.kv_dtype);
  const ImageOptions image = image_options(opts.image);
  const GenerateResult r = run_generate(opts.config);
  OutputFolder folder = prepare_picture_dir(opts.out);
  if (opts.json) {
    std::cout << generate_json(r).dump() << "\n";
  } else {
    print_generate(r);
    std::cout << "\n";
  }
  save_pictures({{"kv_cache", kv_cache_figure(r)}}, folder, image, opts.json ? std::cerr : std::cout);
}

}  // namespace

void setup_generate(CLI::App& app) {
  auto opts = std::make_shared<GenerateCliOptions>();
  CLI::App* cmd = app.add_subcommand(
      "generate", "Decode a sentence token by token with a KV cache, checked against full recomputation");
  GenerateConfig& c = opts->config;
  cmd->add_option("sentence", c.sentence, "the sentence (UTF-8); with --model, the prompt")->capture_default_str();
  add_model_option(cmd, opts->model,
                  "a GPT-2 folder (config.json, model.safetensors, vocab.json, merges.txt), or a Llama, Mistral or "
                  "Qwen2 folder (its tokenizer.json reads the sentence; or --prompt-ids): generate --tokens N "
                  "tokens after the sentence through the model's KV caches");
  opts->model_only = {
      cmd->add_option("--tokens", opts->new_tokens, "with --model: how many tokens to generate (1 or more)"),
      cmd->add_option("--temperature", opts->temperature,
                      "with --model: sample from softmax(logits / T) (T > 0, seeded by --seed); 0 or absent = greedy"),
      cmd->add_option("--top-k", opts->top_k, "with --model: sample among the K most likely tokens only (0 = all)"),
      cmd->add_option("--prompt-ids", opts->prompt_ids,
                      "with a Llama, Mistral or Qwen2 --model: the prompt as token ids I,J,... instead of a sentence "
                      "(a folder of weights without tokenizer.json)"),
      cmd->add_flag("--check", opts->check,
                    "with --model: at every step also run the whole prefix without the cache and report the largest "
                    "logit difference")};
  opts->lesson_only.push_back(cmd->add_option("--prefill", c.prefill, "prompt tokens in the first step (0 = decode every token)")
      ->capture_default_str());
  auto& lesson = opts->lesson_only;
  lesson.push_back(cmd->add_option("--d-model", c.d_model, "embedding width")->capture_default_str()->check(CLI::Range(1, 4096)));
  lesson.push_back(cmd->add_option("--heads", c.num_heads, "query heads")->capture_default_str()->check(CLI::Range(1, 1024)));
  lesson.push_back(cmd->add_option("--kv-heads", c.num_kv_heads, "key/value heads (GQA/MQA; default = heads)")
      ->check(CLI::Range(1, 1024)));
  lesson.push_back(cmd->add_option("--rope", opts->rope, "RoPE style: half or interleaved (default: none)"));
  lesson.push_back(cmd->add_flag("--sinusoidal", c.sinusoidal, "add the sinusoidal encoding (x * sqrt(d_model) + PE)"));
  lesson.push_back(cmd->add_flag("--alibi", c.alibi, "ALiBi biases, one slope per head"));
  lesson.push_back(cmd->add_option("--window", c.window, "sliding window: each token sees its last W tokens; the cache keeps W")
      ->check(CLI::Range(1, 1000000)));
  cmd->add_option("--seed", c.seed, "seed for embeddings and weights; with --model, for sampling")->capture_default_str();
  cmd->add_option("--kv-dtype", opts->kv_dtype,
                  "what the KV cache stores: f64, or bf16 (each K and V value rounded to bfloat16, 2 bytes; the "
                  "difference from full recomputation is then that rounding)")
      ->check(CLI::IsMember({"f64", "bf16"}))->capture_default_str();
  lesson.push_back(cmd->add_option("--max-tokens", c.max_tokens, "refuse sentences with more tokens")
      ->capture_default_str()->check(CLI::Range(1, 1000000)));
  cmd->add_flag("--json", opts->json, "print every step as one JSON object (\"Wrote\" lines go to stderr)");
  lesson.push_back(cmd->add_option("-o,--out", opts->out, "folder for the picture (not with --model)")->capture_default_str());
  add_image_flags(cmd, opts->image, /*with_colormap=*/false);
  for (const char* flag : {"--format", "--scale"}) lesson.push_back(cmd->get_option(flag));
  cmd->footer(R"(Picture written into --out: kv_cache (one row per token as it was fed: the cache growing
row by row, the prefill block outlined, the cache length and bytes after each step).

Examples:
  attn-cli generate
  attn-cli generate "The cat sat on the mat" --prefill 2 --heads 4 --kv-heads 2 --rope half
  attn-cli generate "我喜欢深度学习" --prefill 0 --window 2 --alibi --json
  attn-cli generate "The cat sat on the mat" --prefill 3 --window 3 --out cat-cache --format both
  attn-cli generate "The cat sat on the mat" --kv-dtype bf16

With a GPT-2 folder (greedy unless --temperature or --top-k; --check compares every step's
logits with a full forward pass on the prefix, without the cache):
  attn-cli generate --model data/gpt2_tiny "the cat sat" --tokens 8 --check
  attn-cli generate --model data/gpt2_tiny "the cat sat" --tokens 8 --check --kv-dtype bf16
  attn-cli generate --model data/gpt2_tiny "the cat sat" --tokens 8 --temperature 0.8 --top-k 40 --seed 7 --json
  attn-cli generate --model data/llama_tiny --prompt-ids 1,5,9,3,1,5 --tokens 6 --check
  attn-cli generate --model data/llama_tiny "The cat sat" --tokens 4 --kv-dtype bf16
)");
  cmd->callback([opts, cmd] {
    opts->sentence_given = cmd->count("sentence") > 0;
    run_generate_command(*opts);
  });
}

}  // namespace attn::cli
