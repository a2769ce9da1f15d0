// A Hugging Face Llama-family folder, weights left mapped (decoder_model_file.hpp).
#include "attn/io/decoder_model_file.hpp"

#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <vector>

#include "attn/engine/core/error.hpp"
#include "attn/io/file_io.hpp"
#include "attn/io/hf_config.hpp"
#include "attn/io/json_io.hpp"
#include "attn/io/safetensors.hpp"

namespace attn {
namespace {

namespace fs = std::filesystem;

// A stored tensor and the file it is in.
struct Located {
  std::string file;
  SafetensorsEntry entry;
};
using Tensors = std::map<std::string, Located>;

// One parameter the model needs: its Hugging Face name, its shape, where it is widened to.
struct Parameter {
  std::string name;
  Shape shape;
  float* data;
};

const char* const kLayerMatrices[] = {"self_attn.q_proj.weight", "self_attn.k_proj.weight", "self_attn.v_proj.weight",
                                     "self_attn.o_proj.weight", "mlp.gate_proj.weight",   "mlp.up_proj.weight",
                                     "mlp.down_proj.weight"};

std::vector<Parameter> layer_parameters(DecoderLayer& w, std::size_t layer) {
  const std::string p = "model.layers." + std::to_string(layer) + ".";
  auto one = [](const std::string& name, Tensor1& t) { return Parameter{name, {t.shape(0)}, t.data()}; };
  auto two = [](const std::string& name, Tensor2& t) { return Parameter{name, {t.shape(0), t.shape(1)}, t.data()}; };
  std::vector<Parameter> ps = {one(p + "input_layernorm.weight", w.input_norm),
                               two(p + "self_attn.q_proj.weight", w.w_q),
                               two(p + "self_attn.k_proj.weight", w.w_k),
                               two(p + "self_attn.v_proj.weight", w.w_v),
                               two(p + "self_attn.o_proj.weight", w.w_o),
                               one(p + "post_attention_layernorm.weight", w.post_norm),
                               two(p + "mlp.gate_proj.weight", w.w_gate),
                               two(p + "mlp.up_proj.weight", w.w_up),
                               two(p + "mlp.down_proj.weight", w.w_down)};
  if (w.b_q.size()) {
    ps.push_back(one(p + "self_attn.q_proj.bias", w.b_q));
    ps.push_back(one(p + "self_attn.k_proj.bias", w.b_k));
    ps.push_back(one(p + "self_attn.v_proj.bias", w.b_v));
  }
  return ps;
}

void widen_finite(const Located& t, const std::string& name, float* out) {
  if (!widen_to_float(t.entry, out)) throw InputError(t.file + ": tensor \"" + name + "\" holds a non-finite value");
}

// The same check without keeping the values: a block at a time through a small buffer.
void check_entry_finite(const Located& t, const std::string& name) {
  constexpr std::size_t kBlock = 1 << 14;
  std::vector<float> buffer(std::min(kBlock, t.entry.count));
  for (std::size_t done = 0; done < t.entry.count; done += kBlock)
    widen_finite(Located{t.file, slice_entry(t.entry, done, std::min(kBlock, t.entry.count - done))}, name,
                 buffer.data());
}

// The layers, the embedding and lm_head left in their mapped files.
class MappedDecoderWeights final : public DecoderStoredWeights {
 public:
  MappedDecoderWeights(std::vector<std::shared_ptr<const MappedSafetensors>> files, Tensors tensors,
                       const DecoderConfig& config)
      : files_(std::move(files)), tensors_(std::move(tensors)), config_(config), checked_(config.layers + 1) {}

  void widen_layer(std::size_t layer, DecoderLayer& out) const override {
    for (const Parameter& p : layer_parameters(out, layer)) widen_finite(tensors_.at(p.name), p.name, p.data);
  }
  void widen_layer_vectors(std::size_t layer, DecoderLayer& out) const override {
    for (const Parameter& p : layer_parameters(out, layer))
      if (p.shape.size() == 1) widen_finite(tensors_.at(p.name), p.name, p.data);
  }
  DecoderStoredLayer stored_layer(std::size_t layer) const override {
    StoredMatrix m[7];
    for (std::size_t i = 0; i < 7; ++i) m[i] = stored_matrix(tensors_.at(matrix_name(layer, i)).entry);
    return {m[0], m[1], m[2], m[3], m[4], m[5], m[6]};
  }
  StoredMatrix stored_lm_head() const override { return stored_matrix(tensors_.at(lm_head_name()).entry); }
  void check_finite(std::size_t layer) const override {
    if (checked_.at(layer)) return;
    if (layer == config_.layers) {
      check_entry_finite(tensors_.at(lm_head_name()), lm_head_name());
    } else {
      for (std::size_t i = 0; i < 7; ++i) check_entry_finite(tensors_.at(matrix_name(layer, i)), matrix_name(layer, i));
    }
    checked_[layer] = true;
  }
  [[noreturn]] void non_finite(std::size_t layer, std::size_t which) const override {
    const std::string name = layer == config_.layers ? lm_head_name() : matrix_name(layer, which);
    throw InputError(tensors_.at(name).file + ": tensor \"" + name + "\" holds a non-finite value");
  }
  void widen_embed_rows(std::size_t first, std::size_t count, float* out) const override {
    widen_rows("model.embed_tokens.weight", first, count, out);
  }

 private:
  static std::string matrix_name(std::size_t layer, std::size_t which) {
    return "model.layers." + std::to_string(layer) + "." + kLayerMatrices[which];
  }
  std::string lm_head_name() const { return config_.tie_embeddings ? "model.embed_tokens.weight" : "lm_head.weight"; }

  void widen_rows(const std::string& name, std::size_t first, std::size_t count, float* out) const {
    const Located& t = tensors_.at(name);
    const std::size_t D = config_.hidden;
    widen_finite(Located{t.file, slice_entry(t.entry, first * D, count * D)}, name, out);
  }

  std::vector<std::shared_ptr<const MappedSafetensors>> files_;  // the mappings the entries point into
  Tensors tensors_;
  DecoderConfig config_;
  mutable std::vector<char> checked_;  // [layers + 1]: whose matrices check_finite has read (the last: lm_head)
};

// The shard files an index names, each a plain file name inside the folder.
std::map<std::string, std::string> read_weight_map(const std::string& dir) {
  const std::string index = model_file(dir, "model.safetensors.index.json");
  const Json j = read_json(index);
  if (!j.is_object() || !j.contains("weight_map") || !j["weight_map"].is_object())
    throw InputError(index + ": expected {\"weight_map\": {tensor: file}}");
  std::map<std::string, std::string> map;
  for (const auto& [tensor, file] : j["weight_map"].items()) {
    if (!file.is_string()) throw InputError(index + ": the file of \"" + tensor + "\" is not a string");
    const std::string name = file.get<std::string>();
    if (name.empty() || name.find('/') != std::string::npos || name.find('\\') != std::string::npos || name == "." ||
        name == "..")
      throw InputError(index + ": shard \"" + name + "\" of \"" + tensor + "\" is not a file name inside the folder");
    map[tensor] = name;
  }
  return map;
}

// Every tensor of the folder's safetensors files (one, or the shards of an index), mapped.
Tensors open_weights(const std::string& dir, std::vector<std::shared_ptr<const MappedSafetensors>>& files) {
  std::error_code ec;
  Tensors tensors;
  if (fs::exists(fs::path(dir) / "model.safetensors.index.json", ec)) {
    std::map<std::string, std::shared_ptr<const MappedSafetensors>> shards;
    for (const auto& [tensor, shard] : read_weight_map(dir)) {
      const std::string path = model_file(dir, shard);
      if (!shards.count(shard)) {
        if (!fs::exists(path, ec)) throw InputError(path + ": missing (model.safetensors.index.json names it)");
        files.push_back(shards[shard] = std::make_shared<const MappedSafetensors>(path));
      }
      auto it = shards[shard]->tensors().find(tensor);
      if (it == shards[shard]->tensors().end())
        throw InputError(path + ": missing tensor \"" + tensor + "\" (model.safetensors.index.json puts it here)");
      tensors.emplace(tensor, Located{path, it->second});
    }
    return tensors;
  }
  const std::string path = model_file(dir, "model.safetensors");
  if (!fs::exists(path, ec)) {
    const bool pickle = fs::exists(fs::path(dir) / "pytorch_model.bin", ec);
    throw InputError(path + ": missing, and no model.safetensors.index.json" +
                     (pickle ? std::string("; the folder has pytorch_model.bin (PyTorch's pickle format, which "
                                           "attn-cli does not read): save it again with safe_serialization=True")
                             : std::string()));
  }
  files.push_back(std::make_shared<const MappedSafetensors>(path));
  for (const auto& [name, entry] : files.back()->tensors()) tensors.emplace(name, Located{path, entry});
  return tensors;
}

// A tensor the model needs, with the shape config.json implies.
void require(const Tensors& tensors, const std::string& dir, const std::string& name, const Shape& shape) {
  auto it = tensors.find(name);
  if (it == tensors.end()) throw InputError(dir + ": missing tensor \"" + name + "\"");
  if (it->second.entry.shape != shape)
    throw InputError(it->second.file + ": tensor \"" + name + "\": config.json implies shape " + shape_string(shape) +
                     ", the file has " + shape_string(it->second.entry.shape));
}

// Every tensor checked against the config; anything else stored is a contradiction (more
// layers than config.json says, a bias it does not use), except RoPE's cached frequencies.
void check_tensors(const Tensors& tensors, const std::string& dir, const DecoderConfig& c) {
  std::set<std::string> needed;
  auto need = [&](const std::string& name, const Shape& shape) {
    require(tensors, dir, name, shape);
    needed.insert(name);
  };
  need("model.embed_tokens.weight", {c.vocab, c.hidden});
  need("model.norm.weight", {c.hidden});
  if (!c.tie_embeddings) need("lm_head.weight", {c.vocab, c.hidden});
  DecoderLayer shapes = unfilled_decoder_layer(c);
  for (std::size_t l = 0; l < c.layers; ++l)
    for (const Parameter& p : layer_parameters(shapes, l)) need(p.name, p.shape);
  for (const auto& [name, t] : tensors) {
    const bool tied_head = c.tie_embeddings && name == "lm_head.weight";
    if (!needed.count(name) && !tied_head && !name.ends_with(".rotary_emb.inv_freq"))
      throw InputError(t.file + ": tensor \"" + name + "\" is not part of the model config.json describes");
  }
}

}  // namespace

DecoderModel read_decoder_model(const std::string& dir) {
  DecoderModel model;
  model.config = read_decoder_config(dir);
  std::vector<std::shared_ptr<const MappedSafetensors>> files;
  Tensors tensors = open_weights(dir, files);
  check_tensors(tensors, dir, model.config);
  model.norm = Tensor1::from_shape({model.config.hidden});
  widen_finite(tensors.at("model.norm.weight"), "model.norm.weight", model.norm.data());
  model.stored = std::make_shared<const MappedDecoderWeights>(std::move(files), std::move(tensors), model.config);
  return model;
}

}  // namespace attn
