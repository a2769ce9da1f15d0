#include "attn/io/gpt2_model_file.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <regex>
#include <set>
#include <vector>

#include "attn/engine/error.hpp"
#include "attn/io/json_io.hpp"
#include "attn/io/safetensors.hpp"

namespace attn {
namespace {

std::size_t config_size(const Json& config, const char* key, const std::string& source) {
  if (!config.contains(key) || !config[key].is_number_unsigned())
    throw InputError(source + ": \"" + key + "\" must be a positive integer");
  return config[key].get<std::size_t>();
}

// The mask buffers older GPT-2 checkpoints carry: constants, not parameters.
bool is_mask_buffer(const std::string& name) {
  static const std::regex buffer(R"((transformer\.)?h\.[0-9]+\.attn\.(bias|masked_bias))");
  return std::regex_match(name, buffer);
}

// The names a parameter may be stored under: bare or with "transformer.", and for the
// embeddings also without ".weight" ("wte"), as some hand-written exports name them.
std::vector<std::string> stored_names(const std::string& name) {
  std::vector<std::string> names{name, "transformer." + name};
  if (name == "wte.weight" || name == "wpe.weight") {
    const std::string short_name = name.substr(0, 3);
    names.insert(names.end(), {short_name, "transformer." + short_name});
  }
  return names;
}

using Entries = std::map<std::string, SafetensorsEntry>;

// The stored tensor for a parameter, under exactly one of its names.
Entries::const_iterator find_parameter(const Entries& stored, const std::string& name, const std::string& source) {
  auto found = stored.end();
  for (const std::string& candidate : stored_names(name)) {
    auto it = stored.find(candidate);
    if (it == stored.end()) continue;
    if (found != stored.end())
      throw InputError(source + ": tensor \"" + name + "\" is stored twice, as \"" + found->first + "\" and \"" +
                       candidate + "\"");
    found = it;
  }
  if (found == stored.end())
    throw InputError(source + ": missing tensor \"" + name + "\" (or \"transformer." + name + "\")");
  return found;
}

// GPT-2 ties its unembedding to wte; an lm_head that differs would make our logits wrong.
// Compared as widened values, a block at a time (no second copy of the vocabulary matrix).
void check_lm_head(const Entries& stored, const Tensor2& wte, const std::string& source) {
  auto it = stored.find("lm_head.weight");
  if (it == stored.end()) return;
  const SafetensorsEntry& head = it->second;
  if (head.shape != shape_of(wte)) {
    throw InputError(source + ": tensor \"lm_head.weight\": expected shape " + shape_string(shape_of(wte)) +
                     " (tied to wte), got " + shape_string(head.shape));
  }
  constexpr std::size_t kBlock = 1 << 16;
  std::vector<float> block(kBlock);
  const std::size_t width = head.dtype == "F32" ? 4 : 2;
  for (std::size_t i = 0; i < head.count; i += kBlock) {
    const SafetensorsEntry part{head.dtype, {}, head.data + i * width, std::min(kBlock, head.count - i)};
    widen_to_float(part, block.data());
    if (!std::equal(block.begin(), block.begin() + long(part.count), wte.data() + i))
      throw InputError(source + ": tensor \"lm_head.weight\" differs from wte.weight; GPT-2 ties them "
                       "(untied heads are not supported)");
  }
}

}  // namespace

bool is_gpt2_folder(const std::string& dir) {
  const std::string path = dir + "/config.json";
  if (!std::filesystem::is_regular_file(path)) return false;
  Json config;
  try {
    config = read_json(path);
  } catch (const InputError&) {
    return false;
  }
  if (!config.is_object()) return false;
  if (config.contains("model_type")) return config["model_type"] == "gpt2";
  return config.contains("n_layer") && config.contains("n_embd");
}

Gpt2Config read_gpt2_config(const std::string& dir) {
  const std::string path = dir + "/config.json";
  const Json config = read_json(path);
  if (!config.is_object()) throw InputError(path + ": expected a JSON object");
  Gpt2Config c;
  c.n_layer = config_size(config, "n_layer", path);
  c.n_head = config_size(config, "n_head", path);
  c.n_embd = config_size(config, "n_embd", path);
  c.vocab_size = config_size(config, "vocab_size", path);
  c.n_positions = config_size(config, "n_positions", path);
  if (!config.contains("layer_norm_epsilon") || !config["layer_norm_epsilon"].is_number())
    throw InputError(path + ": \"layer_norm_epsilon\" must be a number");
  c.layer_norm_epsilon = config["layer_norm_epsilon"].get<double>();
  try {
    check_gpt2_config(c);
  } catch (const InputError& e) {
    throw InputError(path + ": " + e.what());
  }
  return c;
}

Gpt2Model read_gpt2_model(const std::string& dir) {
  Gpt2Model model = unfilled_gpt2_model(read_gpt2_config(dir));
  const std::string source = dir + "/model.safetensors";
  const MappedSafetensors file(source);
  const Entries& stored = file.tensors();
  std::set<std::string> used;
  for (const Gpt2Parameter& p : gpt2_parameters(model)) {
    auto it = find_parameter(stored, p.name, source);
    if (it->second.shape != p.shape) {
      throw InputError(source + ": tensor \"" + it->first + "\": expected shape " + shape_string(p.shape) + ", got " +
                       shape_string(it->second.shape));
    }
    // Widened straight into the model: the file's pages are mapped, never copied whole.
    if (!widen_to_float(it->second, p.data))
      throw InputError(source + ": tensor \"" + it->first + "\" holds a non-finite value");
    used.insert(it->first);
  }
  check_lm_head(stored, model.wte, source);
  for (const auto& [name, tensor] : stored)
    if (!used.count(name) && name != "lm_head.weight" && !is_mask_buffer(name))
      throw InputError(source + ": unexpected tensor \"" + name + "\"");
  return model;
}

}  // namespace attn
