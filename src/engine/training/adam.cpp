#include "attn/engine/training/adam.hpp"

#include <cmath>
#include <utility>

namespace attn {

Adam::Adam(const ToyConfig& config, const AdamOptions& options)
    : options_(options), state_{zero_toy_model(config), zero_toy_model(config), 0} {}

Adam::Adam(const AdamOptions& options, AdamState state) : options_(options), state_(std::move(state)) {}

void Adam::step(ToyModel& model, ToyModel& grads) {
  const std::size_t t = ++state_.t;
  const double b1 = options_.beta1, b2 = options_.beta2;
  const double correction1 = 1.0 - std::pow(b1, double(t));
  const double correction2 = 1.0 - std::pow(b2, double(t));
  const std::vector<NamedTensor> p = toy_parameters(model), g = toy_parameters(grads);
  const std::vector<NamedTensor> m = toy_parameters(state_.m), v = toy_parameters(state_.v);
  for (std::size_t n = 0; n < p.size(); ++n) {
    float* pp = p[n].tensor->data();
    const float* gp = g[n].tensor->data();
    float* mp = m[n].tensor->data();
    float* vp = v[n].tensor->data();
    for (std::size_t i = 0, size = p[n].tensor->size(); i < size; ++i) {
      mp[i] = float(b1 * mp[i] + (1 - b1) * gp[i]);
      vp[i] = float(b2 * vp[i] + (1 - b2) * double(gp[i]) * gp[i]);
      const double m_hat = mp[i] / correction1, v_hat = vp[i] / correction2;
      pp[i] = float(pp[i] - options_.lr * m_hat / (std::sqrt(v_hat) + options_.eps));
    }
  }
}

}  // namespace attn
