#include "attn/render/views/positional_pictures.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>

#include "attn/render/draw/head_grid.hpp"
#include "attn/render/draw/heatmap.hpp"
#include "attn/io/number_format.hpp"

namespace attn {
namespace {

// 0.25 -> "1/4", 0.00390625 -> "1/256"; anything else with 4 significant digits.
std::string slope_text(double m) {
  const double inverse = 1 / m;
  char buf[32];
  if (inverse == std::round(inverse) && inverse < 1e9) {
    std::snprintf(buf, sizeof buf, "1/%.0f", inverse);
  } else {
    std::snprintf(buf, sizeof buf, "%.4g", m);
  }
  return buf;
}

// ALiBi's slopes fall by a constant factor per head (4 for H = 4), so on one linear scale the
// last heads' penalties are a few per cent of the first head's and their panels look blank
// (issue 34). A log scale from half the smallest penalty to the largest gives every head its
// own band of colour, still ordered by slope; none when a linear scale already shows them all.
std::optional<ColorScale> alibi_log_scale(const Tensor3& penalty) {
  double smallest = 0, largest = 0, weakest_head_top = 1e300;
  for (std::size_t h = 0; h < penalty.shape(0); ++h) {
    double head_top = 0;
    for (std::size_t i = 0; i < penalty.shape(1); ++i)
      for (std::size_t j = 0; j < penalty.shape(2); ++j) {
        const double v = penalty(h, i, j);
        if (v > 0 && (smallest == 0 || v < smallest)) smallest = v;
        head_top = std::max(head_top, v);
      }
    largest = std::max(largest, head_top);
    weakest_head_top = std::min(weakest_head_top, head_top);
  }
  if (smallest == 0 || weakest_head_top >= 0.25 * largest) return std::nullopt;
  return ColorScale{smallest / 2, largest, true};
}

}  // namespace

Figure sinusoidal_figure(const Tensor2& pe, double base) {
  const std::size_t L = pe.shape(0), D = pe.shape(1);
  char b[32];
  std::snprintf(b, sizeof b, "%g", base);
  HeatmapSpec s;
  s.weights = pe;
  s.key_tokens = position_labels(D);
  s.colormap = "RdBu_r";
  s.vmin = -1;
  s.vmax = 1;
  s.row_title = "position pos";
  s.col_title = "dimension (even: sin, odd: cos)";
  s.value_label = "PE[pos, dim]";
  s.title = "Sinusoidal positional encoding, " + count_of(L, "position") + " × d_model = " + std::to_string(D);
  s.subtitle = "PE[pos, 2i] = sin(pos / " + std::string(b) + "^(2i/d_model)), PE[pos, 2i+1] = cos(same angle) · "
               "each column pair is one frequency: the first dims change fastest, the last barely move · "
               "added to the embeddings after they are scaled by √d_model";
  return heatmap_figure(s);
}

Figure alibi_figure(const Tensor3& bias, std::span<const double> slopes) {
  const std::size_t H = bias.shape(0);
  HeadGridSpec s;
  // Drawn as the penalty m·|i − j| >= 0 on a red scale: no penalty is white and a larger penalty
  // darker, as a larger weight is darker everywhere else (drawing the bias itself, <= 0, made
  // "no penalty" the darkest cell).
  s.weights = 0.0f - bias;  // not -bias: the diagonal would read "-0.00"
  s.colormap = "Reds";
  s.show_mean = false;
  s.value_label = "penalty m·|i − j| subtracted from the score";
  s.title = "ALiBi: each head subtracts m·|i − j| from the score of query i and key j";
  const bool power_of_two = (H & (H - 1)) == 0;
  s.scale = alibi_log_scale(s.weights);
  const std::string scale_note =
      s.scale ? "one log colour scale, so that every head shows: a head with a small slope penalises distance "
                "far less (lighter), and no penalty (the diagonal, 0) is white"
              : "one colour scale: a head with a small slope barely penalises distance";
  if (s.scale) s.value_label += " (log scale)";
  s.subtitle = std::string("slopes m = ") + (power_of_two ? "2^(−8(h+1)/H)" : "the ALiBi paper's interpolation for H not a power of two") +
               " · rows: query position, columns: key position · " + scale_note +
               " · causal models use the lower triangle (j ≤ i)";
  for (std::size_t h = 0; h < H; ++h) s.panel_titles.push_back("head " + std::to_string(h) + ": m = " + slope_text(slopes[h]));
  return head_grid_figure(s);
}

}  // namespace attn
