#pragma once
// The efficient-attention family on one head, drawn from an ApproximationsLesson and nothing
// else: one panel per method (exact softmax first) on one colour scale from 0 to 1, the cells a
// method never weighs hatched, each panel titled with its output error against exact.
// grids[i] is run i's cell grid.
#include <string>

#include "attn/lessons/concepts/approximations.hpp"
#include "attn/render/draw/canvas.hpp"

namespace attn {

// colormap: one of colormap.hpp's names (InputError otherwise, from the heatmap).
Figure approximations_figure(const ApproximationsLesson& lesson, const std::string& colormap = "Blues");

}  // namespace attn
