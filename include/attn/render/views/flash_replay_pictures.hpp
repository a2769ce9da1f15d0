#pragma once
// The flash replay as numbered frames (attn-cli flash --replay): one picture per tile the
// kernel walked, then one for the final division by l. Left, the [L, L] score matrix cut
// into tiles: done (blue; orange on the diagonal), skipped by causality (hatched), the current
// one outlined, its cells coloured by P = exp(s - m). Right, the current query block's rows:
// m and l before and after, the rescale factor, and the partial output as a colour strip.
#include <string>
#include <vector>

#include "attn/lessons/concepts/flash_replay.hpp"
#include "attn/render/draw/canvas.hpp"

namespace attn {

// step in [0, steps.size()]: steps.size() is the final frame. grids[0] is the score matrix.
// The figure refers to replay: draw (save) it while replay lives.
Figure flash_replay_frame(const FlashReplay& replay, std::size_t step);

// "frame_001", "frame_002", ...: zero-padded to at least 3 digits, so they sort in order.
std::string flash_replay_frame_name(std::size_t step, std::size_t frames);

}  // namespace attn
