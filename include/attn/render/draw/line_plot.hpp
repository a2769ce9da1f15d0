#pragma once
// Line plots: named series of (x, y) points drawn as lines and/or markers, each with an optional
// shaded band (a confidence band, min..max over seeds), on linear or logarithmic axes chosen
// independently for x and y, with reference lines (y = c, x = c, or a power law y = a·x^p, which
// is straight on log-log axes), text labels at data points, a legend, and a title.
//
// Built for the experiments' pictures as much as for the lessons': variance of q·k against d_k
// (log2-log2, theory line with a band), softmax entropy against temperature, measured time
// against n with the predicted n² line, RoPE's frequencies per pair (log10 y).
//
// Ticks follow matplotlib's habits: 1, 2, 2.5, 5 × 10^k on linear axes; powers of ten on log10
// axes (minor ticks at 2..9 × 10^k); powers of two on log2 axes, written 1, 2, 4, ... 65536
// and 2⁻⁵ / 2²⁰ beyond. Colours are matplotlib's tab10 cycle, in series order.
#include <optional>
#include <string>
#include <vector>

#include "attn/render/draw/canvas.hpp"
#include "attn/render/draw/colormap.hpp"

namespace attn {

enum class AxisScale { linear, log2, log10 };

struct PlotAxis {
  std::string title{};
  AxisScale scale = AxisScale::linear;
  // Limits as drawn; unset: the data's range (series, bands, labels, horizontal/vertical
  // references) widened by 5% on each side, measured in the axis' own scale.
  std::optional<double> min{}, max{};
  bool integer_ticks = false;  // an axis of counts or positions: no tick at 2.5
};

enum class Marker { none, circle, square, triangle, diamond };

struct PlotSeries {
  std::string name;  // the legend entry; empty: not in the legend
  std::vector<double> x, y;
  std::optional<Rgb> color;  // default: tab10, the next colour in series order
  bool line = true;
  bool dashed = false;
  double line_width = 1.75;
  Marker marker = Marker::none;
  double marker_size = 6;  // points across
  // A band from band_low[i] to band_high[i] at x[i], shaded in the series' colour; both empty
  // (no band) or one value per point. band_name, when set, is its own legend entry.
  std::vector<double> band_low, band_high;
  std::string band_name;
};

// A guide line across the whole plot.
struct ReferenceLine {
  enum class Kind { horizontal, vertical, power_law };
  Kind kind = Kind::horizontal;
  double value = 0;                      // horizontal: y = value; vertical: x = value
  double coefficient = 1, exponent = 1;  // power_law: y = coefficient · x^exponent
  std::string name;                      // legend entry; empty: not in the legend
  std::optional<Rgb> color;              // default: dark grey
  bool dashed = true;

  static ReferenceLine horizontal(double y, std::string name = "");
  static ReferenceLine vertical(double x, std::string name = "");
  static ReferenceLine power_law(double coefficient, double exponent, std::string name = "");
};

// Text at a data point: (anchor_x, anchor_y) of its box lands on (x, y), as in Canvas::text.
struct PlotLabel {
  double x = 0, y = 0;
  std::string text;
  double anchor_x = 0.5, anchor_y = 0.5;
  std::optional<Rgb> color;
  double size = 9;
  // An opaque white box behind the text (matplotlib's bbox): a line of the plot that passes
  // through the label, such as a roof, is hidden there instead of striking the text through.
  bool backdrop = false;
};

enum class LegendPlace { automatic, upper_left, upper_right, lower_left, lower_right, outside_right, none };

struct LinePlotSpec {
  std::vector<PlotSeries> series;
  std::vector<ReferenceLine> references;
  std::vector<PlotLabel> labels;
  PlotAxis x, y;
  // line_plot_figure: the figure's title block. In line_plot_row_figure: title is the panel's
  // own (smaller) title and subtitle is not drawn.
  std::string title, subtitle;
  double width = 400, height = 260;  // the plot area, points
  bool equal_aspect = false;  // one unit of x as long as one of y (circles stay round): the
                              // plot area shrinks in one direction to fit; linear axes only
  // automatic: an inner corner where the legend hides no line, point, band or reference line,
  // else outside on the right. A named corner is tried first and kept only where it hides none.
  LegendPlace legend = LegendPlace::automatic;
};

// matplotlib's tab10 colour cycle: colour i of it (modulo 10).
Rgb series_color(std::size_t i);

struct AxisTick {
  double value;
  std::string label;  // empty: a minor tick
};

// The ticks of an axis drawn from lo to hi (lo < hi, both > 0 on a log axis).
std::vector<AxisTick> axis_ticks(const PlotAxis& axis, double lo, double hi);

// Checks the spec (InputError: x/y/band lengths differ, a value <= 0 on a log axis, nothing to
// draw) and lays it out. plots[0] is the plot area: its left/right edges are the x limits,
// its bottom/top edges the y limits.
Figure line_plot_figure(const LinePlotSpec& spec);

// Several plots side by side under one title block, their plot areas top-aligned; plots[k] is
// panel k's plot area.
Figure line_plot_row_figure(const std::vector<LinePlotSpec>& panels, const std::string& title,
                            const std::string& subtitle);

}  // namespace attn
