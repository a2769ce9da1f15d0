#pragma once
// The efficient-attention trade-off, drawn as Long Range Arena's chart is (Tay et al. 2021,
// Figure 3) but for this machine: at the largest n measured, each method a disc at (time,
// error against exact attention), its area the peak memory it took, performer's discs joined
// in order of m; beside it, time against n on log-log axes, each line named with its fitted
// exponent, and n and n^2 drawn through the first points of linear and flash. Every value
// comes from the result.
#include "attn/lessons/measure/tradeoff.hpp"
#include "attn/render/draw/canvas.hpp"

namespace attn {

Figure tradeoff_figure(const TradeoffResult& result);

}  // namespace attn
