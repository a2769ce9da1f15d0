#pragma once
// The pictures of `attn-cli positional`:
//   the sinusoidal encoding PE [L, d_model] as a heatmap (positions down, dims across) on a
//   diverging scale from −1 to 1, and the ALiBi biases [H, L, L], one panel per head on one
//   shared scale, titled with each head's slope.
#include <span>

#include "attn/render/draw/canvas.hpp"
#include "attn/engine/core/tensor.hpp"

namespace attn {

// pe from sinusoidal_encoding(L, d_model, base). grids[0]: the (pos, dim) cells.
Figure sinusoidal_figure(const Tensor2& pe, double base);

// bias from alibi_bias(slopes, L, L). grids[h]: head h's cells.
Figure alibi_figure(const Tensor3& bias, std::span<const double> slopes);

}  // namespace attn
