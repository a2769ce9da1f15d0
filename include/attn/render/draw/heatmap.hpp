#pragma once
// The attention heatmap, as notebooks draw it with seaborn and better: query tokens down the
// side ("Query — attending"), key tokens across the top ("Key — attended to"), the weight in
// each cell when it fits, a colorbar, and masked cells hatched grey with a legend entry, so a
// masked cell is never mistaken for a weight of 0.00.
#include <array>
#include <cmath>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "attn/render/draw/canvas.hpp"
#include "attn/engine/core/tensor.hpp"

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
// What a picture on that scale says of it, in its subtitle.
inline constexpr const char* kLongCausalLogNote =
    "log colour scale: query i shares its weight among the i + 1 keys it sees, so on a linear scale the later "
    "rows would look empty";

// vmin = the given bottom, else min(0, smallest value): weights start at 0, so an empty-looking
// cell means ~0. vmax = the given top, else the largest value (matplotlib's autoscaling), > vmin.
ColorScale color_scale_for(std::span<const float> values, std::optional<double> vmax,
                           std::optional<double> vmin = std::nullopt);

// Visible cells of weights [H, Lq, Lk] outside the scale (allowed: [1 or H, Lq, Lk], false =
// masked, not counted). They are drawn in the scale's end colour; a picture must say so.
struct OutsideScale {
  std::size_t below = 0, above = 0, visible = 0;
};
OutsideScale count_outside_scale(const Tensor3& weights, const std::optional<Mask3>& allowed, const ColorScale& scale);
// "12 of 1176 cells lie below the colour scale's floor 0.01 and are drawn in its lowest colour",
// and the same for the top; "" when every visible cell is on the scale.
std::string outside_scale_note(const OutsideScale& n, const ColorScale& scale);

// Softmax rows sum to 1, and a row whose keys are all masked attends to nothing (0). Rows of
// weights [H, Lq, Lk] whose visible cells sum to neither, within 1e-3: "3 of 12 rows do not sum
// to 1 (sums 0.5 to 1.7): not softmax weights?", or "" when every row does.
std::string row_sum_note(const Tensor3& weights, const std::optional<Mask3>& allowed);

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
  // Cells drawn with an orange frame (kOutlineColor): the cells a score reads, e.g. the
  // induction score's "token after the previous copy" (head_summary.hpp). The caller's subtitle
  // says what they are.
  std::vector<std::array<std::size_t, 2>> outlined{};  // {query, key}
  // false: no colorbar, for a panel of heatmap_row_figure beside one on the same scale that has it.
  bool colorbar = true;
};
inline constexpr Rgb kOutlineColor{0.90, 0.45, 0.05};

// Checks the labels and mask against the weights' shape (InputError) and lays out the figure.
// grids[0] is the cell grid. Cells outside the colour scale (above a given vmax, under a log
// scale's floor) are counted in the subtitle and in the figure's notes.
Figure heatmap_figure(const HeatmapSpec& spec);

// Heatmaps side by side, each with its own colour scale and colorbar (unless its spec says
// colorbar = false), each spec's title over its panel; title and subtitle over them all.
// grids[k] is panel k's cell grid. InputError for no panels.
Figure heatmap_row_figure(const std::vector<HeatmapSpec>& panels, const std::string& title,
                          const std::string& subtitle);
// The row of two: grids[0] is the left panel, grids[1] the right.
Figure heatmap_pair_figure(const HeatmapSpec& left, const HeatmapSpec& right, const std::string& title,
                           const std::string& subtitle);

// "0", "1", ... for an axis without tokens.
std::vector<std::string> position_labels(std::size_t n, const std::string& prefix = "");

}  // namespace attn
