#pragma once
// The pictures of `explain` and `pitfalls`, drawn from their results and nothing else:
//   explain   one picture per step, token labels on both axes: 1 scores Q Kᵀ, 2 scaled,
//             3 masked (blocked cells hatched from the actual mask) and 4 shifted (minus the
//             row max) on ONE diverging scale centred on 0, so a score keeps its colour from
//             step to step; 5 the softmax weights on [0, 1] with the row sums in the subtitle;
//             6 V beside the output on one scale; and, with --jacobian, the softmax Jacobian
//             of one row;
//   pitfalls  for a pitfall whose wrong and right results are matrices, "wrong | right" side
//             by side, one row of panels per table on that row's own colour scale, the
//             one-line lesson as subtitle.
// grids[k] of each figure is panel k's cell grid (pitfalls: 2t = table t's wrong, 2t+1 its right).
#include <array>
#include <string>

#include "attn/render/draw/canvas.hpp"
#include "attn/lessons/concepts/explain.hpp"
#include "attn/lessons/concepts/pitfalls.hpp"

namespace attn {

// The file names of the six steps, in order: explain_step_figure(r, k) is kExplainSteps[k - 1].
inline constexpr std::array<const char*, 6> kExplainSteps = {"explain-1-scores", "explain-2-scaled",
                                                             "explain-3-masked", "explain-4-shifted",
                                                             "explain-5-weights", "explain-6-output"};

// step in 1..6 (InputError otherwise). Step 6's grids: [0] V, [1] the output.
Figure explain_step_figure(const ExplainResult& result, int step);
// InputError unless the result has its Jacobian (ExplainConfig::jacobian).
Figure explain_jacobian_figure(const ExplainResult& result);
// explain --heads H: x, Q K V cut into head blocks, each head's A_h and O_h, the concatenation
// and y = O W_o^T, a shape under every matrix. grids: [0] x, [1..3] Q, K, V, then A_h and O_h
// for each head in turn, then O, then y. std::logic_error without result.multihead.
Figure multihead_figure(const ExplainResult& result);

// False for a pitfall whose results are only numbers (no tables): it gets no picture.
bool pitfall_has_figure(const Pitfall& pitfall);
Figure pitfall_figure(const Pitfall& pitfall);

}  // namespace attn
