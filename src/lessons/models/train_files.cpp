// What `attn-cli train` leaves in its folder (train.hpp): the model folder, train.json, and the
// checkpoint that --resume continues from.
#include <cmath>
#include <filesystem>

#include "attn/engine/core/error.hpp"
#include "attn/io/file_io.hpp"
#include "attn/io/safetensors.hpp"
#include "attn/io/toy_model_file.hpp"
#include "attn/lessons/models/train.hpp"

namespace attn {
namespace {

const char* kPhaseChangeRule =
    "the first logged step at which the held-out loss, averaged over 5 logged points centred on it, is below the "
    "midpoint between ln(vocab) and the final averaged loss; null when the loss never fell 0.5 nats below ln(vocab)";

ToyTrainInfo train_info(const TrainOptions& o) { return {train_task_name(o.task), o.steps, o.batch, o.lr, o.seed}; }

// The shown sequence's attention at every logged point as one [points * layers * H * L, L] tensor.
Tensor2 stack_attention(const std::vector<std::vector<Tensor3>>& history, const ToyConfig& c) {
  const std::size_t L = c.context, block = c.heads * L * L;
  Tensor2 out = Tensor2::from_shape({history.size() * c.layers * c.heads * L, L});
  float* dst = out.data();
  for (const std::vector<Tensor3>& layers : history)
    for (const Tensor3& a : layers) dst = std::copy_n(a.data(), block, dst);
  return out;
}

std::vector<std::vector<Tensor3>> unstack_attention(const StoredTensor& t, std::size_t points, const ToyConfig& c,
                                                    const std::string& source) {
  const std::size_t L = c.context, block = c.heads * L * L;
  if (t.shape != Shape{points * c.layers * c.heads * L, L})
    throw InputError(source + ": \"shown_attention\" does not match train.json's " + std::to_string(points) + " points");
  std::vector<std::vector<Tensor3>> history(points);
  const float* src = t.values.data();
  for (std::vector<Tensor3>& layers : history)
    for (std::size_t l = 0; l < c.layers; ++l, src += block) {
      Tensor3 a = Tensor3::from_shape({c.heads, L, L});
      std::copy_n(src, block, a.data());
      layers.push_back(std::move(a));
    }
  return history;
}

std::vector<TrainPoint> points_from(const Json& steps, const std::string& source) {
  if (!steps.is_array() || steps.empty()) throw InputError(source + ": \"steps\" must be a non-empty array");
  std::vector<TrainPoint> points;
  try {
    for (const Json& p : steps)
      points.push_back({p.at("step").get<std::size_t>(), p.at("loss").get<double>(),
                        p.at("prev_token_score").get<double>(), p.at("induction_score").get<double>(),
                        p.at("seconds").get<double>()});
  } catch (const nlohmann::json::exception& e) {
    throw InputError(source + ": a \"steps\" entry is malformed (" + std::string(e.what()) + ")");
  }
  return points;
}

}  // namespace

Json train_json(const TrainRun& run, const TrainOptions& o) {
  const ToyConfig& c = o.config;
  Json steps = Json::array(), final = Json::array();
  for (const TrainPoint& p : run.points)
    steps.push_back({{"step", p.step}, {"loss", p.loss}, {"prev_token_score", p.prev_token_score},
                     {"induction_score", p.induction_score}, {"seconds", p.seconds}});
  for (const HeadScores& s : run.final_summary.heads)
    final.push_back({{"layer", s.layer}, {"head", s.head}, {"prev_token_score", s.previous_token.value_or(0)},
                     {"induction_score", s.induction.value_or(0)}, {"kind", s.kind}});
  return {{"config", {{"vocab", c.vocab}, {"d_model", c.d_model}, {"heads", c.heads}, {"layers", c.layers},
                      {"context", c.context}}},
          {"train", {{"task", train_task_name(o.task)}, {"steps", o.steps}, {"batch", o.batch}, {"lr", o.lr},
                     {"seed", o.seed}, {"backend", backend_name(o.backend)}, {"log_every", o.log_every},
                     {"optimizer", "Adam (beta1 0.9, beta2 0.999, eps 1e-8)"}}},
          {"uniform_loss", run.uniform_loss},
          {"best_loss", run.best_loss},
          {"phase_change_step", run.phase_change_step ? Json(*run.phase_change_step) : Json(nullptr)},
          {"phase_change_rule", kPhaseChangeRule},
          {"steps", steps},
          {"final", final}};
}

void write_train_run(const std::string& dir, const TrainRun& run, const TrainOptions& o) {
  write_toy_model(dir + "/model", run.model, train_info(o));
  // Adam's moments, named after the parameters they follow, and the attention history.
  std::vector<std::pair<std::string, const Tensor2*>> tensors;
  AdamState& state = const_cast<AdamState&>(run.optimizer);  // toy_parameters hands out mutable pointers
  for (const NamedTensor& p : toy_parameters(state.m)) tensors.emplace_back("adam_m." + p.name, p.tensor);
  for (const NamedTensor& p : toy_parameters(state.v)) tensors.emplace_back("adam_v." + p.name, p.tensor);
  const Tensor2 history = stack_attention(run.shown_attention, o.config);
  tensors.emplace_back("shown_attention", &history);
  write_file_atomically(dir + "/checkpoint.safetensors", safetensors_bytes(tensors));
  write_file_atomically(dir + "/train.json", train_json(run, o).dump(2) + "\n");
}

TrainRun read_train_run(const std::string& dir, TrainOptions& o) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) throw InputError("--resume: " + dir + ": no such folder");
  ToyTrainInfo info;
  TrainRun run;
  run.model = read_toy_model(dir + "/model", &info);
  o.config = run.model.config;
  o.task = parse_train_task(info.task);
  o.steps = info.steps, o.batch = info.batch, o.lr = info.lr, o.seed = info.seed;

  const std::string json_path = dir + "/train.json";
  if (!std::filesystem::is_regular_file(json_path, ec)) throw InputError(dir + ": not a training run (no train.json)");
  const Json j = read_json(json_path);
  if (!j.is_object() || !j.contains("steps") || !j.contains("train") || !j["train"].is_object())
    throw InputError(json_path + ": expected train.json's \"train\" and \"steps\"");
  if (!j["train"].contains("log_every") || !j["train"]["log_every"].is_number_unsigned())
    throw InputError(json_path + ": \"train\".\"log_every\" must be a positive integer");
  o.log_every = j["train"]["log_every"].get<std::size_t>();
  run.points = points_from(j["steps"], json_path);
  if (run.points.back().step != o.steps)
    throw InputError(json_path + ": the last step (" + std::to_string(run.points.back().step) +
                     ") is not the model's (" + std::to_string(o.steps) + ")");
  check_train_options(o);

  const std::string checkpoint = dir + "/checkpoint.safetensors";
  std::map<std::string, StoredTensor> stored = read_safetensors(checkpoint);
  run.optimizer = {zero_toy_model(o.config), zero_toy_model(o.config), o.steps};
  for (auto [prefix, moments] : {std::pair{"adam_m.", &run.optimizer.m}, std::pair{"adam_v.", &run.optimizer.v}})
    for (const NamedTensor& p : toy_parameters(*moments)) {
      auto it = stored.find(prefix + p.name);
      if (it == stored.end() || it->second.shape != shape_of(*p.tensor))
        throw InputError(checkpoint + ": tensor \"" + prefix + p.name + "\" is missing or misshapen");
      std::copy(it->second.values.begin(), it->second.values.end(), p.tensor->begin());
    }
  auto history = stored.find("shown_attention");
  if (history == stored.end()) throw InputError(checkpoint + ": tensor \"shown_attention\" is missing");
  run.shown_attention = unstack_attention(history->second, run.points.size(), o.config, checkpoint);
  run.uniform_loss = std::log(double(o.config.vocab));
  run.shown_sequence = train_shown_sequence(o);
  return run;
}

}  // namespace attn
