#include "attn/io/gpt2_model_file.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <memory>
#include <regex>
#include <set>
#include <vector>

#include "attn/engine/core/error.hpp"
#include "attn/io/file_io.hpp"
#include "attn/io/json_io.hpp"
#include "attn/io/safetensors.hpp"

namespace attn {
namespace {

std::size_t config_size(const Json& config, const char* key, const std::string& source) {
  if (!config.contains(key) || !config[key].is_number_unsigned())
    throw InputError(source + ": \"" + key + "\" must be a positive integer");
  return config[key].get<std::size_t>();
}

// Fields of Hugging Face's GPT2Config that change the computation: a value other than GPT-2's
// would be run as GPT-2 and give wrong numbers without a word, so it is refused, naming it.
void check_implemented(const Json& config, const std::string& path) {
  auto refuse = [&](const char* key, const std::string& what) {
    throw InputError(path + ": \"" + key + "\": " + config[key].dump() + " is not supported (attn-cli runs " + what + ")");
  };
  auto present = [&](const char* key) { return config.contains(key) && !config[key].is_null(); };
  if (present("activation_function") &&
      !(config["activation_function"] == "gelu_new" || config["activation_function"] == "gelu_pytorch_tanh"))
    refuse("activation_function", "GPT-2's tanh GELU, \"gelu_new\"");
  if (present("n_inner") && !(config["n_inner"].is_number_unsigned() && config["n_inner"] == 4 * config.value("n_embd", 0u)))
    refuse("n_inner", "an MLP of 4 x n_embd");
  if (present("scale_attn_weights") && config["scale_attn_weights"] != true) refuse("scale_attn_weights", "scaled attention");
  if (present("scale_attn_by_inverse_layer_idx") && config["scale_attn_by_inverse_layer_idx"] != false)
    refuse("scale_attn_by_inverse_layer_idx", "the same scale in every layer");
  if (present("add_cross_attention") && config["add_cross_attention"] != false)
    refuse("add_cross_attention", "a decoder without cross-attention");
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

// e widened into out; InputError naming the stored tensor when a value is not finite.
void widen_finite(const SafetensorsEntry& e, const std::string& name, float* out, const std::string& source) {
  if (!widen_to_float(e, out)) throw InputError(source + ": tensor \"" + name + "\" holds a non-finite value");
}

// GPT-2 ties its unembedding to wte; an lm_head that differs would make our logits wrong.
// The same bytes are the same values; otherwise both are widened and compared a block at a time.
void check_lm_head(const Entries& stored, const SafetensorsEntry& wte, const std::string& source) {
  auto it = stored.find("lm_head.weight");
  if (it == stored.end()) return;
  const SafetensorsEntry& head = it->second;
  if (head.shape != wte.shape) {
    throw InputError(source + ": tensor \"lm_head.weight\": expected shape " + shape_string(wte.shape) +
                     " (tied to wte), got " + shape_string(head.shape));
  }
  if (head.dtype == wte.dtype && std::memcmp(head.data, wte.data, entry_bytes(head)) == 0) return;
  constexpr std::size_t kBlock = 1 << 16;
  std::vector<float> a(kBlock), b(kBlock);
  for (std::size_t i = 0; i < head.count; i += kBlock) {
    const std::size_t n = std::min(kBlock, head.count - i);
    widen_to_float(slice_entry(head, i, n), a.data());
    widen_to_float(slice_entry(wte, i, n), b.data());
    if (!std::equal(a.begin(), a.begin() + long(n), b.begin()))
      throw InputError(source + ": tensor \"lm_head.weight\" differs from wte.weight; GPT-2 ties them "
                       "(untied heads are not supported)");
  }
}

// A stored tensor and the name it is stored under.
struct NamedEntry {
  std::string name;
  SafetensorsEntry entry;
};

// The blocks and wte of a model left in their mapped file, widened when a pass reaches them.
class MappedGpt2Weights final : public Gpt2StoredWeights {
 public:
  MappedGpt2Weights(std::shared_ptr<const MappedSafetensors> file, std::string source,
                    std::map<std::string, NamedEntry> entries, std::size_t n_embd)
      : file_(std::move(file)), source_(std::move(source)), entries_(std::move(entries)), n_embd_(n_embd) {}

  void widen_block(std::size_t layer, Gpt2Block& out) const override {
    for (const Gpt2Parameter& p : gpt2_block_parameters(out, layer)) {
      const NamedEntry& e = entries_.at(p.name);
      widen_finite(e.entry, e.name, p.data, source_);
    }
  }

  Gpt2BlockMatrices block_matrices(std::size_t layer, Gpt2Block& vectors) const override {
    for (const Gpt2Parameter& p : gpt2_block_parameters(vectors, layer))
      if (p.shape.size() == 1) {
        const NamedEntry& e = entries_.at(p.name);
        widen_finite(e.entry, e.name, p.data, source_);
      }
    const std::string h = "h." + std::to_string(layer) + ".";
    auto matrix = [&](const char* name) { return stored_matrix(entries_.at(h + name).entry); };
    return {matrix("attn.c_attn.weight"), matrix("attn.c_proj.weight"), matrix("mlp.c_fc.weight"),
            matrix("mlp.c_proj.weight")};
  }

  void widen_wte_rows(std::size_t first, std::size_t count, float* out) const override {
    const NamedEntry& e = entries_.at("wte.weight");
    widen_finite(slice_entry(e.entry, first * n_embd_, count * n_embd_), e.name, out, source_);
  }

  StoredMatrix stored_wte() const override { return stored_matrix(entries_.at("wte.weight").entry); }

  [[noreturn]] void non_finite(const std::string& parameter) const override {
    throw InputError(source_ + ": tensor \"" + entries_.at(parameter).name + "\" holds a non-finite value");
  }

 private:
  std::shared_ptr<const MappedSafetensors> file_;  // the mapping the entries point into
  std::string source_;
  std::map<std::string, NamedEntry> entries_;  // parameter name (gpt2_parameters) -> stored tensor
  std::size_t n_embd_;
};

// The parameters a model may leave in its file: wte and every block's (wpe and ln_f are small).
bool streamable(const std::string& parameter) { return parameter == "wte.weight" || parameter.starts_with("h."); }

}  // namespace

bool is_gpt2_folder(const std::string& dir) {
  const std::string path = dir + "/config.json";
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return false;
  Json config;
  try {
    config = read_json(model_file(dir, "config.json"));
  } catch (const InputError&) {
    return false;
  }
  if (!config.is_object()) return false;
  if (config.contains("model_type")) return config["model_type"] == "gpt2";
  return config.contains("n_layer") && config.contains("n_embd");
}

Gpt2Config read_gpt2_config(const std::string& dir) {
  const std::string path = model_file(dir, "config.json");
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
  check_implemented(config, path);
  try {
    check_gpt2_config(c);
  } catch (const InputError& e) {
    throw InputError(path + ": " + e.what());
  }
  return c;
}

Gpt2Model read_gpt2_model(const std::string& dir, Gpt2Loading loading) {
  // Shaped but never written where the weights stay in the file: untouched memory costs nothing.
  Gpt2Model model = unfilled_gpt2_model(read_gpt2_config(dir));
  const std::string source = model_file(dir, "model.safetensors");
  std::error_code ec;
  if (!std::filesystem::exists(source, ec) && std::filesystem::exists(dir + "/pytorch_model.bin", ec)) {
    // A pickle runs code when loaded: attn-cli reads only safetensors, and says how to convert.
    throw InputError(source + ": missing; the folder has pytorch_model.bin (PyTorch's pickle format, which "
                     "attn-cli does not read). Convert it once: python3 -c \"from transformers import "
                     "GPT2LMHeadModel as M; M.from_pretrained('" + dir + "').save_pretrained('" + dir +
                     "', safe_serialization=True)\"");
  }
  const auto file = std::make_shared<const MappedSafetensors>(source);
  const Entries& stored = file->tensors();
  std::set<std::string> used;
  std::map<std::string, NamedEntry> left_in_file;
  for (const Gpt2Parameter& p : gpt2_parameters(model)) {
    auto it = find_parameter(stored, p.name, source);
    if (it->second.shape != p.shape) {
      throw InputError(source + ": tensor \"" + it->first + "\": expected shape " + shape_string(p.shape) + ", got " +
                       shape_string(it->second.shape));
    }
    used.insert(it->first);
    if (loading == Gpt2Loading::per_block && streamable(p.name))
      left_in_file.emplace(p.name, NamedEntry{it->first, it->second});
    else  // widened straight into the model: the file's pages are mapped, never copied whole
      widen_finite(it->second, it->first, p.data, source);
  }
  check_lm_head(stored, find_parameter(stored, "wte.weight", source)->second, source);
  for (const auto& [name, tensor] : stored)
    if (!used.count(name) && name != "lm_head.weight" && !is_mask_buffer(name))
      throw InputError(source + ": unexpected tensor \"" + name + "\"");
  if (loading == Gpt2Loading::per_block) {
    model.blocks.clear();
    model.wte = Tensor2();
    model.stored =
        std::make_shared<const MappedGpt2Weights>(file, source, std::move(left_in_file), model.config.n_embd);
  }
  return model;
}

}  // namespace attn
