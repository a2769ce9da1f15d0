#pragma once
// The attention heatmap, as notebooks draw it with seaborn and better: query tokens down the
// side ("Query — attending"), key tokens across the top ("Key — attended to"), the weight in
// each cell when it fits, a colorbar, and masked cells hatched grey with a legend entry, so a
// masked cell is never mistaken for a weight of 0.00.
#include <cmath>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "attn/render/canvas.hpp"
#include "attn/engine/tensor.hpp"

namespace attn {

// The colour scale: value v is drawn with colormap.at(position(v)).
struct ColorScale {
  double vmin = 0, vmax = 1;
  bool log = false;  // position by log(v / vmin) / log(vmax / vmin); v <= vmin is the bottom (vmin > 0)
  double position(double v) const {
    if (!log) return (v - vmin) / (vmax - vmin);
    return v <= vmin ? 0.0 : std::log(v / vmin) / std::log(vmax / vmin);
  }
};

// The log scale a long causal weight map gets, or none. Query i of a causal map shares its
// weight among i + 1 keys, so on a linear scale set by row 0's weight of 1 the later rows are
// near white, even when their weights are far from even. Chosen when the mask leaves at least
// 16 rows whose visible-key counts differ by 8x or more, the weights are in [0, 1] and the top
// was not given: bottom = the power of ten at or below 1 / (2 x keys), top = 1.
std::optional<ColorScale> long_causal_log_scale(const Tensor2& weights, const Mask2& allowed);

// vmin = the given bottom, else min(0, smallest value): weights start at 0, so an empty-looking
// cell means ~0. vmax = the given top, else the largest value (matplotlib's autoscaling), > vmin.
ColorScale color_scale_for(std::span<const float> values, std::optional<double> vmax,
                           std::optional<double> vmin = std::nullopt);

struct HeatmapSpec {
  Tensor2 weights;                                    // [Lq, Lk]
  std::vector<std::string> query_tokens, key_tokens;  // empty: positions 0, 1, ...
  std::optional<Mask2> allowed;                       // [Lq, Lk]; false = masked cell
  std::string title, subtitle;
  std::string colormap = "Blues";
  std::optional<double> vmax;
  std::string value_label = "Attention weight";
  std::optional<double> vmin{};  // a diverging map wants a symmetric scale, e.g. [-1, 1]
  bool auto_log = true;  // a long causal map without vmax/vmin may get long_causal_log_scale (stated in the subtitle)
  std::string row_title = "Query — attending", col_title = "Key — attended to";
};

// Checks the labels and mask against the weights' shape (InputError) and lays out the figure.
// grids[0] is the cell grid.
Figure heatmap_figure(const HeatmapSpec& spec);

// Two heatmaps side by side, each with its own colour scale and colorbar, each spec's title
// over its panel; title and subtitle over both. grids[0] is the left panel, grids[1] the right.
Figure heatmap_pair_figure(const HeatmapSpec& left, const HeatmapSpec& right, const std::string& title,
                           const std::string& subtitle);

// "0", "1", ... for an axis without tokens.
std::vector<std::string> position_labels(std::size_t n, const std::string& prefix = "");

}  // namespace attn
