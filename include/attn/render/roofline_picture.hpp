#pragma once
// `attn-cli roofline --plots DIR`: attainable GFLOP/s against arithmetic intensity on log-log
// axes, the two measured roofs (bandwidth x I, then the sgemm peak) meeting at the ridge point,
// the engine's prefill and decode points labelled, and the caption saying which wall each hits.
// plots[0] is the plot area.
#include "attn/lessons/roofline.hpp"
#include "attn/render/canvas.hpp"
#include "attn/render/line_plot.hpp"

namespace attn {

// The points' labels, each on a white box and on the side of its point away from its roof, so
// the roof line never runs through one: a prefill label below a point under the roof, above one
// over it; a decode label to the right of a point under its roof, to the left of one over it,
// spread apart within each column.
std::vector<PlotLabel> roofline_labels(const RooflineResult& result);

Figure roofline_figure(const RooflineResult& result);

}  // namespace attn
