#pragma once
// The pictures of the experiments, drawn from their results and nothing else, with
// the line-plot module (line_plot.hpp):
//   variance     Var(q·k) against d_k on log2-log2 axes beside the theory y = d_k and its
//                ±3 standard-error band; Var(q·k/√d_k) beside 1 and its band;
//   saturation   what that does to one softmax row: max weight, entropy and ‖J‖_F against d_k,
//                unscaled vs scaled, with the uniform row's values as guides;
//   temperature  each key's weight against T and the entropy against T (log T axis);
//   complexity   FLOPs of each term against n (log-log) with the crossover n* marked where
//                the n²·d terms overtake the n·d² projections;
//   scaling      measured time against n (log-log), the fitted exponent and an n² line.
// plots[k] of each figure is panel k's plot area (its edges are the axis limits).
#include <optional>

#include "attn/render/draw/canvas.hpp"
#include "attn/lessons/concepts/complexity.hpp"
#include "attn/lessons/measure/scaling.hpp"
#include "attn/lessons/concepts/temperature.hpp"
#include "attn/lessons/concepts/variance.hpp"

namespace attn {

Figure variance_figure(const VarianceResult& result);
Figure saturation_figure(const VarianceResult& result);
Figure temperature_figure(const TemperatureResult& result);
// marked_n: a vertical line at that n, named "this sentence: n = ..." (demo's own sentence).
Figure complexity_figure(const ComplexityReport& report, std::optional<std::size_t> marked_n = std::nullopt);
Figure scaling_figure(const ScalingMeasurement& measurement);

}  // namespace attn
