#pragma once
// The pictures of `explain` and `pitfalls`, drawn from their results and nothing else:
//   explain   one heatmap per step of the five-step flow, token labels on both axes:
//             1 scores Q Kᵀ and 2 scaled on a diverging map centred on 0 (signed scores),
//             3 masked with the blocked cells hatched from the actual mask, 4 the softmax
//             weights on a sequential map with the row sums in the subtitle, 5 the output
//             rows against the dimensions of V;
//   pitfalls  for a pitfall whose wrong and right results are matrices, "wrong | right" side
//             by side, one row of panels per table on that row's own colour scale, the
//             one-line lesson as subtitle.
// grids[k] of each figure is panel k's cell grid (pitfalls: 2t = table t's wrong, 2t+1 its right).
#include <array>
#include <string>

#include "attn/render/canvas.hpp"
#include "attn/lessons/explain.hpp"
#include "attn/lessons/pitfalls.hpp"

namespace attn {

// The file names of the five steps, in order: explain_step_figure(r, k) is kExplainSteps[k - 1].
inline constexpr std::array<const char*, 5> kExplainSteps = {
    "explain-1-scores", "explain-2-scaled", "explain-3-masked", "explain-4-weights", "explain-5-output"};

// step in 1..5 (InputError otherwise).
Figure explain_step_figure(const ExplainResult& result, int step);

// False for a pitfall whose results are only numbers (no tables): it gets no picture.
bool pitfall_has_figure(const Pitfall& pitfall);
Figure pitfall_figure(const Pitfall& pitfall);

}  // namespace attn
