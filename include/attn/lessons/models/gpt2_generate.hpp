#pragma once
// `attn-cli generate --model DIR PROMPT --tokens N`: GPT-2 writing N tokens after a prompt,
// through its KV caches (engine/models/gpt2_decode.hpp). The prompt is one prefill; each generated
// token is fed alone.
//
// Choosing the next token from the last logits z:
//   greedy (the default, and --temperature 0): argmax z, the lowest id on a tie
//   sampling (--temperature T > 0 and/or --top-k K): keep the K largest z (all when K = 0;
//     ties at the K-th value are broken by the lower id), p = softmax(z / T) over them in
//     float64, then one uniform u from the seeded generator (random.hpp) picks the first id,
//     in order of decreasing p, whose cumulative p exceeds u. Same seed, same tokens.
// With check_every_step, every step's logits are also compared with gpt2_forward on the whole
// prefix (no cache): the largest |difference| is reported per step.
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "attn/engine/attention/kv_cache.hpp"
#include "attn/engine/text/gpt2_bpe.hpp"
#include "attn/engine/models/decoder_model.hpp"
#include "attn/engine/models/gpt2_model.hpp"
#include "attn/engine/core/random.hpp"
#include "attn/io/json_io.hpp"

namespace attn {

struct Gpt2GenerateConfig {
  std::vector<std::int32_t> prompt;  // ids, at least one
  std::size_t new_tokens = 20;       // N >= 1; prompt + N must fit n_positions
  double temperature = 0;            // 0 = greedy; else finite and > 0
  std::size_t top_k = 0;             // 0 = every token (when sampling)
  std::uint64_t seed = 42;
  bool check_every_step = false;
  KvDtype kv_dtype = KvDtype::float64;  // what each layer's KV cache stores (kv_cache.hpp)
};

struct Gpt2GenerateStep {
  std::int32_t id = 0;        // the token chosen
  double probability = 0;     // its probability under the rule that chose it (softmax(z) when greedy)
  std::size_t cache_len = 0;  // tokens in each layer's cache after the step that computed z
  std::size_t cache_bytes = 0;
  std::optional<double> max_diff_vs_full;  // with check_every_step
  double logit_scale = 0;     // max |z|, to read max_diff_vs_full against
  double seconds = 0;         // wall-clock time of the step's feed (the prefill for the first): terminal only
};

struct Gpt2Generation {
  Gpt2GenerateConfig config;
  std::vector<Gpt2GenerateStep> steps;  // one per generated token
  std::vector<std::int32_t> ids;        // prompt + generated
};

// InputError for a config the model cannot run (empty prompt, N = 0, prompt + N > n_positions,
// a non-finite or negative temperature, an id outside the vocabulary).
void check_gpt2_generate_config(const Gpt2GenerateConfig& config, const Gpt2Config& model);
Gpt2Generation gpt2_generate(const Gpt2Model& model, const Gpt2GenerateConfig& config);

// The same for a Llama, Mistral or Qwen2 folder (engine/models/decoder_decode.hpp: one cache per
// layer of Hkv heads), the prompt given as ids; --check compares with decoder_forward.
void check_decoder_generate_config(const Gpt2GenerateConfig& config, const DecoderConfig& model);
Gpt2Generation decoder_generate(const DecoderModel& model, const Gpt2GenerateConfig& config);

// The yardstick for a decode step, which reads every weight once: the bytes a step of `model`
// reads in place (every layer's matrices and lm_head, as stored) and the best time of `rounds`
// streaming reads of those very bytes (stream_read, on every thread), measured now.
struct WeightStream {
  std::size_t bytes = 0;
  double seconds = 0;
};
WeightStream decoder_weight_stream(const DecoderModel& model, std::size_t rounds = 3);
// The same for a GPT-2: every block's four matrices and wte (the logits), as a step reads them
// (where they are stored, or the float32 tensors of a model read with Gpt2Loading::widen_all);
// the biases and LayerNorms are left out (under 0.1 % of the bytes).
WeightStream gpt2_weight_stream(const Gpt2Model& model, std::size_t rounds = 3);

// The next id from logits z by the rule above (rng draws one uniform when sampling).
struct NextChoice {
  std::int32_t id;
  double probability;
};

NextChoice choose_next_token(std::span<const float> z, double temperature, std::size_t top_k, Rng& rng);

// The ids as text (tokenizer.decode_text), an id the model has but the tokenizer lacks as "<id N>".
std::string gpt2_ids_text(const SubwordTokenizer& tokenizer, const std::vector<std::int32_t>& ids);

// {"prompt": [...ids], "rule", "temperature", "top_k", "seed", "steps": [{id, text, probability,
// cache_len, cache_bytes, max_abs_diff_vs_full?, logit_scale}], "ids", "generated_text"}. Without
// a tokenizer (null) every text is "<id N>" and generated_text is null.
Json gpt2_generation_json(const Gpt2Generation& g, const SubwordTokenizer* tokenizer);

}  // namespace attn
