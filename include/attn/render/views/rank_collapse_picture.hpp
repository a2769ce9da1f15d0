#pragma once
// The rank-collapse lesson's picture: one log-scale panel per setting (attention only, skip,
// MLP, skip + MLP, and the trained model's residual stream with --model), r_l against the
// layer l, with float64's round-off floor marked and, on the pure-attention panel, the fitted
// doubly exponential curve r_l = exp(-e^(gamma + delta l)). Every value drawn comes from the result.
#include "attn/render/draw/canvas.hpp"
#include "attn/lessons/concepts/rank_collapse.hpp"

namespace attn {

Figure rank_collapse_figure(const RankCollapseResult& result);

}  // namespace attn
