#pragma once
// The pictures of `attn-cli train` (lessons/train.hpp), drawn from the run and nothing else:
//   curves  the held-out loss against the step, with ln(vocab), the task's floor and the phase
//           change marked, beside the best previous-token and induction scores;
//   heads   every head of every layer on the held-out repeated sequence, one panel per head on
//           one colour scale: the induction stripe (query i -> key i - P + 1) is a diagonal
//           line P - 1 cells below the main one, in the second half.
#include <string>
#include <vector>

#include "attn/lessons/models/train.hpp"
#include "attn/render/draw/canvas.hpp"

namespace attn {

Figure train_curves_figure(const TrainRun& run, const TrainOptions& options);

// attention: [layers] of [H, L, L]; tokens label the rows and columns.
Figure train_heads_figure(const std::vector<Tensor3>& attention, const std::vector<std::string>& tokens,
                          const std::string& title, const std::string& subtitle, const std::string& colormap);

// The three moments of the run (before, at the phase change, at the end) and the curves, as
// DIR/curves, DIR/heads_before, DIR/heads_phase_change, DIR/heads_after; the paths written.
std::vector<std::string> write_train_pictures(const TrainRun& run, const TrainOptions& options,
                                              const std::string& dir, const ImageOptions& image,
                                              const std::string& colormap);

}  // namespace attn
