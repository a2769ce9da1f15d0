#include "attn/io/toy_model_file.hpp"

#include <cmath>
#include <filesystem>

#include "attn/engine/core/error.hpp"
#include "attn/io/file_io.hpp"
#include "attn/io/hf_config.hpp"
#include "attn/io/json_io.hpp"
#include "attn/io/safetensors.hpp"

namespace attn {
namespace {

std::size_t config_size(const Json& config, const char* key, const std::string& source) {
  if (!config.contains(key) || !config[key].is_number_unsigned())
    throw InputError(source + ": \"" + key + "\" must be a positive integer");
  return config[key].get<std::size_t>();
}

}  // namespace

void write_toy_model(const std::string& dir, const ToyModel& model, const ToyTrainInfo& info) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw InputError(dir + ": cannot create the folder (" + ec.message() + ")");
  const ToyConfig& c = model.config;
  Json config = {{"model_type", "attn-toy"}, {"vocab", c.vocab}, {"d_model", c.d_model}, {"heads", c.heads},
                 {"layers", c.layers}, {"context", c.context},
                 {"train", {{"task", info.task}, {"steps", info.steps}, {"batch", info.batch}, {"lr", info.lr},
                            {"seed", info.seed}}}};
  std::vector<std::pair<std::string, const Tensor2*>> tensors;
  ToyModel& unconst = const_cast<ToyModel&>(model);  // toy_parameters hands out mutable pointers
  for (const NamedTensor& p : toy_parameters(unconst)) tensors.emplace_back(p.name, p.tensor);
  write_file_atomically(dir + "/model.safetensors", safetensors_bytes(tensors));
  write_file_atomically(dir + "/config.json", config.dump(2) + "\n");
}

namespace {

// The model from its parsed config.json and tensors; the paths name them in errors.
ToyModel toy_model_from(const Json& config, std::map<std::string, StoredTensor> stored, const std::string& config_path,
                        const std::string& weights_path, ToyTrainInfo* info) {
  if (!config.is_object()) throw InputError(config_path + ": expected a JSON object");
  ToyConfig c;
  c.vocab = config_size(config, "vocab", config_path);
  c.d_model = config_size(config, "d_model", config_path);
  c.heads = config_size(config, "heads", config_path);
  c.layers = config_size(config, "layers", config_path);
  c.context = config_size(config, "context", config_path);
  check_toy_config(c);
  if (info && config.contains("train") && config["train"].is_object()) {
    const Json& t = config["train"];
    try {
      info->task = t.value("task", std::string());
      info->steps = t.value("steps", std::size_t(0));
      info->batch = t.value("batch", std::size_t(0));
      info->lr = t.value("lr", 0.0);
      info->seed = t.value("seed", std::uint64_t(0));
    } catch (const nlohmann::json::exception&) {
      throw InputError(config_path + ": \"train\" holds a value of the wrong type");
    }
  }

  ToyModel model = zero_toy_model(c);
  for (const NamedTensor& p : toy_parameters(model)) {
    auto it = stored.find(p.name);
    if (it == stored.end()) throw InputError(weights_path + ": missing tensor \"" + p.name + "\"");
    const Shape expected = shape_of(*p.tensor);
    if (it->second.shape != expected) {
      throw InputError(weights_path + ": tensor \"" + p.name + "\": expected shape " + shape_string(expected) +
                       ", got " + shape_string(it->second.shape));
    }
    for (float x : it->second.values)
      if (!std::isfinite(x)) throw InputError(weights_path + ": tensor \"" + p.name + "\" holds a non-finite value");
    std::copy(it->second.values.begin(), it->second.values.end(), p.tensor->begin());
    stored.erase(it);
  }
  if (!stored.empty()) throw InputError(weights_path + ": unexpected tensor \"" + stored.begin()->first + "\"");
  return model;
}

}  // namespace

ToyModel read_toy_model(const std::string& dir, ToyTrainInfo* info) {
  const std::string config_path = model_file(dir, "config.json");
  std::error_code ec;  // a link loop is no file either
  if (!std::filesystem::is_regular_file(config_path, ec))
    throw InputError(dir + ": not a model folder (no config.json)");
  if (is_decoder_folder(dir))
    throw InputError(dir + ": a Hugging Face Llama, Mistral or Qwen2 folder; this command reads attn-cli's own models "
                     "and GPT-2 folders (forward, generate, demo and report run this one)");
  const Json config = read_json(config_path);
  const std::string weights_path = model_file(dir, "model.safetensors");
  return toy_model_from(config, read_safetensors(weights_path), config_path, weights_path, info);
}

ToyModel parse_toy_model(std::string_view config_json, std::string_view weights, const std::string& source,
                         ToyTrainInfo* info) {
  const std::string config_path = source + "/config.json", weights_path = source + "/model.safetensors";
  Json config;
  try {
    config = Json::parse(config_json);
  } catch (const nlohmann::json::exception& e) {
    throw InputError(config_path + ": not JSON (" + std::string(e.what()) + ")");
  }
  return toy_model_from(config, parse_safetensors(weights, weights_path), config_path, weights_path, info);
}

}  // namespace attn
