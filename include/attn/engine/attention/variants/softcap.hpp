#pragma once
// Logit soft-capping (Gemma 2, Team et al. 2024): each scaled score x becomes c tanh(x / c),
// bounded by +-c, before any bias and the mask. attend: "softcap": c.
#include <cmath>
#include <cstddef>

#include "attn/engine/core/error.hpp"

namespace attn::variants {

struct SoftCap {
  double cap = 1.0;

  double apply(double x, std::size_t, long, long) const { return cap * std::tanh(x / cap); }
  double derivative(double x, std::size_t, long, long) const {
    const double t = std::tanh(x / cap);
    return 1.0 - t * t;
  }
  void check(std::size_t) const {
    if (!(std::isfinite(cap) && cap > 0)) throw InputError("softcap: expected a finite number > 0");
  }
};

}  // namespace attn::variants
