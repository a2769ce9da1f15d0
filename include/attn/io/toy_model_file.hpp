#pragma once
// A toy model folder (docs/contracts.md, "Model folders"): config.json {vocab, d_model, heads, layers,
// context, train: {task, steps, batch, lr, seed}} and model.safetensors (F32) with embed
// [vocab, D], pos [context, D], layers.{l}.w_q|w_k|w_v|w_o [D, D] and unembed [vocab, D].
#include <cstdint>
#include <string>
#include <string_view>

#include "attn/engine/models/toy_model.hpp"

namespace attn {

struct ToyTrainInfo {
  std::string task = "induction";
  std::size_t steps = 0, batch = 0;
  double lr = 0;
  std::uint64_t seed = 0;
};

// Writes DIR/config.json and DIR/model.safetensors (each atomically), creating DIR.
// Same model and info, same bytes.
void write_toy_model(const std::string& dir, const ToyModel& model, const ToyTrainInfo& info);

// Reads a folder written by write_toy_model (F16/BF16 tensors are widened). InputError for a
// missing or malformed config.json, a missing, extra or wrongly shaped tensor, a non-finite
// value, or a safetensors file that is truncated or lies about its contents.
ToyModel read_toy_model(const std::string& dir, ToyTrainInfo* info = nullptr);
// The same from the two files' bytes already in memory (the model shipped inside attn-cli,
// io/shipped_model.hpp); `source` names the folder in errors.
ToyModel parse_toy_model(std::string_view config_json, std::string_view weights, const std::string& source,
                         ToyTrainInfo* info = nullptr);

}  // namespace attn
