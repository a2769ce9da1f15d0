#include "attn/io/hf_config.hpp"

#include <cmath>
#include <filesystem>

#include "attn/engine/core/error.hpp"
#include "attn/io/file_io.hpp"
#include "attn/io/json_io.hpp"
#include "attn/io/numbers.hpp"

namespace attn {
namespace {

bool present(const Json& config, const char* key) { return config.contains(key) && !config[key].is_null(); }

// The field's whole number >= 1 (numbers.hpp's rule), or `fallback` (0 = required) when it is
// absent or null.
std::size_t size_field(const Json& config, const char* key, const std::string& path, std::size_t fallback = 0) {
  if (present(config, key)) return count_field(config[key], path + ": \"" + key + "\"", 1);
  if (fallback) return fallback;
  throw InputError(path + ": \"" + key + "\" is missing (a positive integer)");
}

// The field's finite number (numbers.hpp's rule), or `fallback` when it is absent or null.
double real_field(const Json& config, const char* key, const std::string& path, double fallback) {
  return present(config, key) ? number_field(config[key], path + ": \"" + key + "\"") : fallback;
}

bool bool_field(const Json& config, const char* key, const std::string& path, bool fallback) {
  if (!present(config, key)) return fallback;
  if (!config[key].is_boolean()) throw InputError(path + ": \"" + key + "\" must be true or false");
  return config[key].get<bool>();
}

DecoderFamily family_of(const Json& config, const std::string& path) {
  const Json type = config.contains("model_type") ? config["model_type"] : Json();
  if (type == "llama") return DecoderFamily::llama;
  if (type == "mistral") return DecoderFamily::mistral;
  if (type == "qwen2") return DecoderFamily::qwen2;
  throw InputError(path + ": \"model_type\" " + (type.is_null() ? std::string("is missing") : type.dump()) +
                   ": attn-cli reads llama, mistral and qwen2 folders here (gpt2 folders through forward and generate)");
}

RopeScaling rope_scaling_of(const Json& config, const std::string& path) {
  RopeScaling s;
  if (!present(config, "rope_scaling")) return s;
  const Json& r = config["rope_scaling"];
  if (!r.is_object()) throw InputError(path + ": \"rope_scaling\" must be an object or null");
  const Json type = r.contains("rope_type") ? r["rope_type"] : r.contains("type") ? r["type"] : Json("default");
  if (!(type == "default" || type == "linear" || type == "llama3"))
    throw InputError(path + ": \"rope_scaling\" of type " + type.dump() +
                     " is not supported (attn-cli implements default, linear and llama3)");
  s.type = type.get<std::string>();
  s.factor = real_field(r, "factor", path, 1);
  s.low_freq_factor = real_field(r, "low_freq_factor", path, 1);
  s.high_freq_factor = real_field(r, "high_freq_factor", path, 4);
  if (s.type == "llama3") s.original_max_positions = size_field(r, "original_max_position_embeddings", path);
  return s;
}

// Fields that would change the computation if attn-cli ran past them.
void check_implemented(const Json& config, const std::string& path) {
  if (present(config, "hidden_act") && config["hidden_act"] != "silu")
    throw InputError(path + ": \"hidden_act\" " + config["hidden_act"].dump() +
                     " is not supported (these models' SwiGLU uses silu)");
  if (bool_field(config, "mlp_bias", path, false))
    throw InputError(path + ": \"mlp_bias\": true is not supported (Llama's MLP has no biases)");
}

// Mistral's window is sliding_window; Qwen2's only with use_sliding_window (its config carries
// a sliding_window it does not use otherwise); Llama has none.
std::size_t window_of(const Json& config, DecoderFamily family, const std::string& path) {
  if (family == DecoderFamily::llama) return 0;
  if (family == DecoderFamily::qwen2 && !bool_field(config, "use_sliding_window", path, false)) return 0;
  if (!present(config, "sliding_window")) return 0;
  return size_field(config, "sliding_window", path);
}

}  // namespace

bool is_decoder_folder(const std::string& dir) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(std::filesystem::path(dir) / "config.json", ec)) return false;
  try {
    const Json config = read_json(model_file(dir, "config.json"));
    return config.is_object() && config.contains("model_type") &&
           (config["model_type"] == "llama" || config["model_type"] == "mistral" || config["model_type"] == "qwen2");
  } catch (const InputError&) {
    return false;
  }
}

DecoderConfig read_decoder_config(const std::string& dir) {
  const std::string path = model_file(dir, "config.json");
  const Json config = read_json(path);
  if (!config.is_object()) throw InputError(path + ": expected a JSON object");
  DecoderConfig c;
  c.family = family_of(config, path);
  check_implemented(config, path);
  c.vocab = size_field(config, "vocab_size", path);
  c.hidden = size_field(config, "hidden_size", path);
  c.intermediate = size_field(config, "intermediate_size", path);
  c.layers = size_field(config, "num_hidden_layers", path);
  c.heads = size_field(config, "num_attention_heads", path);
  c.kv_heads = size_field(config, "num_key_value_heads", path, c.heads);
  if (c.hidden % c.heads != 0 && !(present(config, "head_dim")))
    throw InputError(path + ": num_attention_heads = " + std::to_string(c.heads) + " does not divide hidden_size = " +
                     std::to_string(c.hidden) + " and no \"head_dim\" is given");
  c.head_dim = size_field(config, "head_dim", path, c.hidden / c.heads);
  c.max_positions = size_field(config, "max_position_embeddings", path);
  c.rms_eps = real_field(config, "rms_norm_eps", path, 1e-6);
  c.rope_theta = real_field(config, "rope_theta", path, 10000);
  c.rope_scaling = rope_scaling_of(config, path);
  c.tie_embeddings = bool_field(config, "tie_word_embeddings", path, false);
  c.sliding_window = window_of(config, c.family, path);
  // Qwen2 slides its window only from layer max_window_layers on (Hugging Face's default 28).
  if (c.family == DecoderFamily::qwen2 && c.sliding_window > 0)
    c.window_first_layer =
        present(config, "max_window_layers") ? count_field(config["max_window_layers"], path + ": \"max_window_layers\"", 0) : 28;
  c.qkv_bias = c.family == DecoderFamily::qwen2 || bool_field(config, "attention_bias", path, false);
  try {
    check_decoder_config(c);
  } catch (const InputError& e) {
    throw InputError(path + ": " + e.what());
  }
  return c;
}

}  // namespace attn
