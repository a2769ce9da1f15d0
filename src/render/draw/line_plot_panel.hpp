#pragma once
// Private to render/: a line plot's panel as laid out before it is drawn (line_plot_panel.cpp
// measures and places; line_plot.cpp draws), and the style both halves share.
#include <cmath>
#include <string>
#include <vector>

#include "attn/render/draw/line_plot.hpp"
#include "figure_parts.hpp"

namespace attn::line_plot_detail {

inline const Rgb kInk = rgb_from_hex(0x1a1a1a);
inline const Rgb kAxisInk = rgb_from_hex(0x404040);
inline const Rgb kFrame = rgb_from_hex(0x8c8c8c);
inline const Rgb kGrid = rgb_from_hex(0xe8e8e8);
inline const Rgb kReference = rgb_from_hex(0x555555);
inline constexpr double kTickSize = 9, kAxisTitleSize = 10.5, kLegendSize = 9.5, kPanelTitleSize = 12;
inline constexpr double kMajorTick = 4, kMinorTick = 2.2, kGap = 4;

inline bool is_log(AxisScale s) { return s != AxisScale::linear; }

inline double to_axis(AxisScale s, double v) {
  return s == AxisScale::log2 ? std::log2(v) : s == AxisScale::log10 ? std::log10(v) : v;
}

inline double from_axis(AxisScale s, double t) {
  return s == AxisScale::log2 ? std::exp2(t) : s == AxisScale::log10 ? std::pow(10.0, t) : t;
}

struct Range {
  double lo = 0, hi = 0;  // data units
};

// Data -> points inside a plot area.
struct Mapper {
  PlotRect area;
  AxisScale xs, ys;
  double tx0, tx1, ty0, ty1;
  Mapper(PlotRect a, const PlotAxis& x, Range xr, const PlotAxis& y, Range yr)
      : area(a), xs(x.scale), ys(y.scale), tx0(to_axis(xs, xr.lo)), tx1(to_axis(xs, xr.hi)),
        ty0(to_axis(ys, yr.lo)), ty1(to_axis(ys, yr.hi)) {}
  double px(double x) const { return area.x + (to_axis(xs, x) - tx0) / (tx1 - tx0) * area.width; }
  double py(double y) const { return area.y + area.height - (to_axis(ys, y) - ty0) / (ty1 - ty0) * area.height; }
  Canvas::Point at(double x, double y) const { return {px(x), py(y)}; }
};

struct LegendEntry {
  enum class Swatch { series, band, reference } swatch;
  std::string text;
  Rgb color;
  bool line = true, dashed = false;
  double line_width = 1.5;
  Marker marker = Marker::none;
};

inline Rgb color_of(const PlotSeries& p, std::size_t index) { return p.color ? *p.color : series_color(index); }
inline Rgb color_of(const ReferenceLine& r) { return r.color ? *r.color : kReference; }

// Everything about one panel that does not depend on where it is drawn.
struct Panel {
  LinePlotSpec spec;
  std::string panel_title;
  Range xr, yr;
  std::vector<AxisTick> xticks, yticks;
  std::size_t x_label_step = 1;
  double plot_w = 0, plot_h = 0;
  double left = 0, top = 0, right = 0, bottom = 0;  // room around the plot area
  std::vector<LegendEntry> legend;
  LegendPlace place = LegendPlace::none;
  double legend_w = 0, legend_h = 0, legend_row = 0;

  double width() const { return left + plot_w + right; }
  double height() const { return top + plot_h + bottom; }
};

inline constexpr double kSwatchW = 24, kLegendPad = 6;

// Where the legend box's top-left corner goes for an inner corner placement.
Canvas::Point legend_corner(const Panel& p, LegendPlace place, const PlotRect& a);

// Checks the spec (InputError) and lays out one panel: axis ranges, ticks, room for labels,
// the legend's place (an inner corner hiding no ink, the asked-for one first, else outside right).
Panel layout_plot(Canvas& m, const LinePlotSpec& spec, const std::string& panel_title);

}  // namespace attn::line_plot_detail
