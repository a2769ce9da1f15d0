#pragma once
// Private to the engine: the check that a model's forward pass stayed within float32.
#include <cmath>
#include <string>

#include "attn/engine/core/error.hpp"
#include "attn/engine/core/tensor.hpp"

namespace attn::detail {

// InputError unless every value of x (a residual stream [L, D], logits [L, vocab]) is finite
// after `where` ("layer 3", "the unembedding"): weights finite in the file can still overflow
// float32 in the pass (3e38 times anything), and the user must hear so, naming where, before
// any number of the pass is printed.
inline void require_finite_stream(const Tensor2& x, const std::string& where) {
  for (const float v : x)
    if (!std::isfinite(v))
      throw InputError("model: the activations overflow float32 after " + where +
                       " (the weights are finite in the file but too large for the pass)");
}

}  // namespace attn::detail
