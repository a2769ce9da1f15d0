#include "attn/engine/adam.hpp"

#include <cmath>

namespace attn {

Adam::Adam(const ToyConfig& config, const AdamOptions& options)
    : options_(options), m_(zero_toy_model(config)), v_(zero_toy_model(config)) {}

void Adam::step(ToyModel& model, ToyModel& grads) {
  ++t_;
  const double b1 = options_.beta1, b2 = options_.beta2;
  const double correction1 = 1.0 - std::pow(b1, double(t_));
  const double correction2 = 1.0 - std::pow(b2, double(t_));
  const std::vector<NamedTensor> p = toy_parameters(model), g = toy_parameters(grads);
  const std::vector<NamedTensor> m = toy_parameters(m_), v = toy_parameters(v_);
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
