#pragma once
// Adam (Kingma & Ba 2015, arXiv 1412.6980, Algorithm 1), as torch.optim.Adam without weight
// decay: per parameter a running mean m of the gradient and of its square v, bias-corrected:
//   m = b1 m + (1 - b1) g,   v = b2 v + (1 - b2) g^2
//   p -= lr * (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps)
#include "attn/engine/models/toy_model.hpp"

namespace attn {

struct AdamOptions {
  double lr = 1e-3;
  double beta1 = 0.9, beta2 = 0.999;
  double eps = 1e-8;
};

// What Adam carries from step to step: saved and restored to continue a run exactly.
struct AdamState {
  ToyModel m, v;       // the moment estimates, shaped like the model
  std::size_t t = 0;   // steps taken
};

class Adam {
 public:
  Adam(const ToyConfig& config, const AdamOptions& options);
  Adam(const AdamOptions& options, AdamState state);  // continues from a saved state
  // One update of `model` from `grads` (shaped like the model).
  void step(ToyModel& model, ToyModel& grads);
  std::size_t steps_taken() const { return state_.t; }
  const AdamState& state() const { return state_; }

 private:
  AdamOptions options_;
  AdamState state_;
};

}  // namespace attn
