#pragma once
// ALiBi (Press et al. 2022): query head h's score for key j gets -m_h (p - j) added, a linear
// penalty on distance instead of position embeddings (alibi.hpp's alibi_slopes gives the
// paper's slopes). attend: "alibi": true | [H] slopes.
#include <cmath>
#include <cstddef>
#include <string>
#include <vector>

#include "attn/engine/core/error.hpp"

namespace attn::variants {

struct AlibiBias {
  std::vector<double> slopes;  // one per query head

  double apply(double x, std::size_t h, long p, long j) const { return x - slopes[h] * double(p - j); }
  double derivative(double, std::size_t, long, long) const { return 1.0; }
  void check(std::size_t num_heads) const {
    if (slopes.size() != num_heads)
      throw InputError("alibi: expected one slope per query head (" + std::to_string(num_heads) + "), got " +
                       std::to_string(slopes.size()));
    for (double m : slopes)
      if (!std::isfinite(m)) throw InputError("alibi: every slope must be finite");
  }
};

}  // namespace attn::variants
