#pragma once
// Sinusoidal positional encoding (Vaswani et al. 2017, "Attention Is All You Need",
// section 3.5):
//     PE[pos, 2i]     = sin(pos / 10000^(2i / d_model))
//     PE[pos, 2i + 1] = cos(pos / 10000^(2i / d_model))
// added to the token embeddings, which are first multiplied by sqrt(d_model) (section 3.4):
// the embedding entries are ~1/sqrt(d_model) when tied to the output layer, and the scale
// keeps them from being drowned by PE entries of size ~1.
//
// Each pair (2i, 2i+1) is a point on a circle turning with wavelength 2*pi*10000^(2i/d_model),
// from 2*pi tokens (i = 0) to about 10000*2*pi tokens: PE[pos + k] is a fixed rotation of
// PE[pos] for every k, which is what lets attention read relative offsets from it.
#include <cstddef>

#include "attn/engine/core/tensor.hpp"

namespace attn {

// PE [L, d_model] with the formula above (base = 10000 in the paper). An odd d_model ends
// with a sin column that has no cos partner. d_model == 0 or base <= 0 -> InputError.
Tensor2 sinusoidal_encoding(std::size_t L, std::size_t d_model, double base = 10000.0);

// sqrt(d_model), the factor the embeddings are multiplied by before PE is added.
double embedding_scale(std::size_t d_model);

// x [L, D] -> x * sqrt(D) + PE[L, D] (float64 inside).
Tensor2 add_sinusoidal_encoding(const Tensor2& embeddings, double base = 10000.0);

}  // namespace attn
