#pragma once
// The pictures of `attn-cli rope`, drawn from a RopeLesson (rope_lesson.hpp) and nothing else:
//   rotation     one 2-D pair turning with the position: the points on the unit circle, and the
//                angle pos·θ_i growing linearly (θ_i radians per token);
//   scores       rope(q, i)·rope(k, j) as a heatmap over (i, j): constant along each diagonal,
//                because the score depends only on i − j;
//   frequencies  θ_i = base^(−2i/d) per pair and its wavelength 2π/θ_i, on log axes;
//   styles       which dims pair up in rotate-half vs interleaved, and the permutation that
//                maps one layout onto the other.
#include "attn/render/draw/canvas.hpp"
#include "attn/lessons/concepts/rope_lesson.hpp"

namespace attn {

Figure rope_rotation_figure(const RopeLesson& lesson);
Figure rope_scores_figure(const RopeLesson& lesson);     // grids[0]: the (i, j) cells
Figure rope_frequencies_figure(const RopeLesson& lesson);
// The frequencies picture's lead sentence: the fastest and the slowest pair, or the one pair a
// head of width 2 has (said once, not as its own fastest and slowest).
std::string rope_frequency_summary(const RopeLesson& lesson);
Figure rope_styles_figure(const RopeLesson& lesson);

}  // namespace attn
