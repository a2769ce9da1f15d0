#pragma once
// Shared by the GPT-2 tests: a random model of a given shape.
#include <cstdint>
#include <string>

#include "attn/engine/models/gpt2_model.hpp"
#include "attn/engine/core/random.hpp"

namespace attn::test {

// Every weight and bias N(0, spread^2), LayerNorm gammas 1 + N(0, spread^2) (as
// scripts/make_gpt2_folder.py does), so attention is far from uniform.
inline Gpt2Model random_gpt2(const Gpt2Config& c, std::uint64_t seed, double spread) {
  Gpt2Model m = zero_gpt2_model(c);
  Rng rng(seed);
  for (const Gpt2Parameter& p : gpt2_parameters(m)) {
    std::size_t count = 1;
    for (std::size_t n : p.shape) count *= n;
    const bool gamma = p.name.find("ln_") != std::string::npos && p.name.find(".weight") != std::string::npos;
    for (std::size_t i = 0; i < count; ++i) p.data[i] = float((gamma ? 1.0 : 0.0) + spread * rng.normal());
  }
  return m;
}

}  // namespace attn::test
