#pragma once
// Every head of a multi-head run in one picture (BertViz's head view, as a static PNG/SVG):
// one small labelled heatmap per head on a shared colour scale, so heads can be compared,
// and the head-averaged map as the last panel.
#include <optional>
#include <string>
#include <vector>

#include "attn/render/draw/canvas.hpp"
#include "attn/render/draw/heatmap.hpp"
#include "attn/engine/core/tensor.hpp"

namespace attn {

struct HeadGridSpec {
  Tensor3 weights;                                    // [H, Lq, Lk]
  std::vector<std::string> query_tokens, key_tokens;  // empty: positions 0, 1, ...
  std::optional<Mask3> allowed;                       // [1, Lq, Lk] (all heads) or [H, Lq, Lk]
  std::string title, subtitle;
  std::string colormap = "Blues";
  std::optional<double> vmax;  // default: the largest weight of any head
  // The caller's colour scale, said in its subtitle (vmax and auto_log unused). On a log scale a
  // cell of exactly 0 takes the lowest colour and is not counted as outside the scale: the
  // subtitle says what 0 means (ALiBi: no penalty).
  std::optional<ColorScale> scale{};
  bool show_mean = true;       // add the mean over heads as the last panel
  std::string value_label = "Attention weight";
  std::vector<std::string> panel_titles{};  // one per head; empty: "Head 0", "Head 1", ...
  bool auto_log = false;  // without vmax: heatmap.hpp's long_causal_log_scale when every head qualifies (said in the subtitle)
  std::size_t columns = 0;    // panels per row; 0: about 1.5 times as many columns as rows
  double panel_points = 200;  // a panel's grid is about this many points on its longer side
};


// grids[h] is head h's cell grid; with show_mean, grids[H] is the mean's. When the cells are too
// small for every token's label, the subtitle says which are shown ("every 2nd token labelled").
Figure head_grid_figure(const HeadGridSpec& spec);

}  // namespace attn
