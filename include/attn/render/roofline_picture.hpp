#pragma once
// `attn-cli roofline --plots DIR`: attainable GFLOP/s against arithmetic intensity on log-log
// axes, the two measured roofs (bandwidth x I, then the sgemm peak) meeting at the ridge point,
// the engine's prefill and decode points labelled, and the caption saying which wall each hits.
// plots[0] is the plot area.
#include "attn/lessons/roofline.hpp"
#include "attn/render/canvas.hpp"

namespace attn {

Figure roofline_figure(const RooflineResult& result);

}  // namespace attn
