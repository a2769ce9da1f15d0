#include "attn/engine/models/toy_model.hpp"

#include <cmath>

#include "attn/engine/core/error.hpp"
#include "attn/engine/core/random.hpp"

namespace attn {

void check_toy_config(const ToyConfig& c) {
  auto in_range = [](const char* name, std::size_t value, std::size_t max) {
    if (value < 1 || value > max) {
      throw InputError(std::string(name) + ": expected 1.." + std::to_string(max) + ", got " +
                       std::to_string(value));
    }
  };
  in_range("vocab", c.vocab, 65536);
  in_range("context", c.context, 65536);
  in_range("d_model", c.d_model, 4096);
  in_range("heads", c.heads, 4096);
  in_range("layers", c.layers, 64);
  if (c.d_model % c.heads) {
    throw InputError("d_model: expected a multiple of heads (" + std::to_string(c.heads) + "), got " +
                     std::to_string(c.d_model));
  }
}

ToyModel zero_toy_model(const ToyConfig& c) {
  check_toy_config(c);
  const std::size_t D = c.d_model;
  ToyModel m;
  m.config = c;
  m.embed = xt::zeros<float>({c.vocab, D});
  m.pos = xt::zeros<float>({c.context, D});
  m.layers.resize(c.layers);
  for (ToyLayer& layer : m.layers)
    for (Tensor2* w : {&layer.w_q, &layer.w_k, &layer.w_v, &layer.w_o}) *w = xt::zeros<float>({D, D});
  m.unembed = xt::zeros<float>({c.vocab, D});
  return m;
}

ToyModel init_toy_model(const ToyConfig& c, std::uint64_t seed) {
  ToyModel m = zero_toy_model(c);
  Rng rng(seed);
  const double bound = 1.0 / std::sqrt(double(c.d_model));  // nn.Linear: U(-1/sqrt(in), 1/sqrt(in))
  for (NamedTensor& p : toy_parameters(m)) {
    const bool embedding = p.name == "embed" || p.name == "pos";
    for (float& x : *p.tensor) x = float(embedding ? rng.normal() : rng.uniform(-bound, bound));
  }
  return m;
}

std::vector<NamedTensor> toy_parameters(ToyModel& m) {
  std::vector<NamedTensor> out{{"embed", &m.embed}, {"pos", &m.pos}};
  for (std::size_t l = 0; l < m.layers.size(); ++l) {
    const std::string prefix = "layers." + std::to_string(l) + ".";
    out.push_back({prefix + "w_q", &m.layers[l].w_q});
    out.push_back({prefix + "w_k", &m.layers[l].w_k});
    out.push_back({prefix + "w_v", &m.layers[l].w_v});
    out.push_back({prefix + "w_o", &m.layers[l].w_o});
  }
  out.push_back({"unembed", &m.unembed});
  return out;
}

std::size_t toy_parameter_count(const ToyConfig& c) {
  return (2 * c.vocab + c.context + 4 * c.layers * c.d_model) * c.d_model;
}

}  // namespace attn
