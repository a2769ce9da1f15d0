#pragma once
// Axis ticks for line plots (private to src/render/): placement and labels per AxisScale.
#include <string>
#include <vector>

#include "attn/render/draw/line_plot.hpp"

namespace attn::render {

// About `target` labelled ticks over [lo, hi] (log axes may add unlabelled minor ticks).
std::vector<AxisTick> ticks_for(const PlotAxis& axis, double lo, double hi, double target);

// "%g": 0.001, 1, 65536.
std::string plain_number(double v);

}  // namespace attn::render
