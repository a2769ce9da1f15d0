#pragma once
// Mask diagrams, side by side for each mask:
//   left  "Blocked": the additive view, −∞ added to the score where the query may not look;
//   right "Allowed": the boolean view attn-cli uses (1/true = may attend, PyTorch SDPA).
// Axes are positions t=0, t=1, ... For a causal or window mask with Lq < Lk the query rows
// are labelled with their absolute positions (bottom-right alignment, see mask.hpp).
#include <string>
#include <vector>

#include "attn/render/draw/canvas.hpp"
#include "attn/engine/core/tensor.hpp"

namespace attn {

struct MaskDiagramRow {
  Mask2 allowed;                                      // [Lq, Lk]
  std::vector<std::string> query_labels, key_labels;  // empty: t=0, t=1, ...
  std::string caption;                                // e.g. "sequence 1: 3 real tokens"
};

struct MaskDiagramSpec {
  std::vector<MaskDiagramRow> rows;  // one blocked/allowed pair per row
  std::string title, subtitle;
  std::string axis_noun = "position";  // "Query position — attending"; "node" for graphs
};

// grids[2 r] / grids[2 r + 1] are the blocked / allowed grids of row r.
Figure mask_figure(const MaskDiagramSpec& spec);

// "t=first", "t=first+1", ...
std::vector<std::string> time_labels(std::size_t n, std::size_t first = 0);

}  // namespace attn
