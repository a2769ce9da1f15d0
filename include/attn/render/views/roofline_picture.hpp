#pragma once
// `attn-cli roofline --plots DIR`: attainable GFLOP/s against arithmetic intensity on log-log
// axes, the two measured roofs (bandwidth x I, then the sgemm peak) meeting at the ridge point,
// the engine's prefill and decode points labelled, and the caption saying which wall each hits.
// plots[0] is the plot area.
#include <vector>

#include "attn/lessons/measure/roofline.hpp"
#include "attn/render/draw/canvas.hpp"
#include "attn/render/draw/line_plot.hpp"

namespace attn {

// The points' labels, each on a white box and on the side of its point away from its roof, so
// the roof line never runs through one: a prefill label below a point under the roof, above one
// over it (a float32 point and its bfloat16 twin of the same n instead: the faster one's above,
// the slower one's below); a decode label to the right of a point under its roof, to the left
// of one over it, spread apart within each column.
// Prefill labels a factor 2 apart would overlap: crowded ones stand in further rows.
std::vector<PlotLabel> roofline_labels(const RooflineResult& result);

// A leader from a prefill point's marker edge (y_point) to the near edge of its label (y_label),
// at the point's intensity x, for each label that crowding moved a row or more out.
struct RooflineLeader {
  double x, y_point, y_label;
};
std::vector<RooflineLeader> roofline_leaders(const RooflineResult& result);

// The plot area in points, and the ranges of its log-log axes (FLOP/byte, GFLOP/s): the top
// leaves room for every row of labels standing over their points.
inline constexpr double kRooflinePlotWidth = 520, kRooflinePlotHeight = 340;
struct RooflineRange {
  double x_lo, x_hi, y_lo, y_hi;
};
RooflineRange roofline_range(const RooflineResult& result);

Figure roofline_figure(const RooflineResult& result);

}  // namespace attn
