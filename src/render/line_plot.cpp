#include "attn/render/line_plot.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>

#include "attn/engine/error.hpp"
#include "figure_parts.hpp"
#include "plot_ticks.hpp"

namespace attn {
namespace {

const Rgb kInk = rgb_from_hex(0x1a1a1a);
const Rgb kAxisInk = rgb_from_hex(0x404040);
const Rgb kFrame = rgb_from_hex(0x8c8c8c);
const Rgb kGrid = rgb_from_hex(0xe8e8e8);
const Rgb kReference = rgb_from_hex(0x555555);
constexpr double kTickSize = 9, kAxisTitleSize = 10.5, kLegendSize = 9.5, kPanelTitleSize = 12;
constexpr double kMajorTick = 4, kMinorTick = 2.2, kGap = 4;

bool is_log(AxisScale s) { return s != AxisScale::linear; }

double to_axis(AxisScale s, double v) {
  return s == AxisScale::log2 ? std::log2(v) : s == AxisScale::log10 ? std::log10(v) : v;
}

double from_axis(AxisScale s, double t) {
  return s == AxisScale::log2 ? std::exp2(t) : s == AxisScale::log10 ? std::pow(10.0, t) : t;
}

struct Range {
  double lo = 0, hi = 0;  // data units
};

void check_positive(const PlotAxis& axis, double v, const std::string& what) {
  if (is_log(axis.scale) && !(v > 0)) {
    throw InputError(what + ": " + render::plain_number(v) + " cannot be drawn on a logarithmic axis (values must be > 0)");
  }
}

void check_spec(const LinePlotSpec& s) {
  for (const PlotSeries& p : s.series) {
    const std::string what = "plot series \"" + p.name + "\"";
    if (p.x.size() != p.y.size()) {
      throw InputError(what + ": " + std::to_string(p.x.size()) + " x values but " + std::to_string(p.y.size()) + " y values");
    }
    if (p.band_low.size() != p.band_high.size() || (!p.band_low.empty() && p.band_low.size() != p.x.size())) {
      throw InputError(what + ": the band needs one low and one high value per point");
    }
    for (std::size_t i = 0; i < p.x.size(); ++i) {
      if (!std::isfinite(p.x[i]) || !std::isfinite(p.y[i])) continue;  // a gap in the line
      check_positive(s.x, p.x[i], what + " x");
      check_positive(s.y, p.y[i], what + " y");
      if (!p.band_low.empty()) {
        check_positive(s.y, p.band_low[i], what + " band");
        check_positive(s.y, p.band_high[i], what + " band");
      }
    }
  }
  for (const ReferenceLine& r : s.references) {
    if (r.kind == ReferenceLine::Kind::horizontal) check_positive(s.y, r.value, "reference line y");
    if (r.kind == ReferenceLine::Kind::vertical) check_positive(s.x, r.value, "reference line x");
    if (r.kind == ReferenceLine::Kind::power_law) check_positive(s.y, r.coefficient, "power-law coefficient");
  }
}

// The limits of one axis: given, else the data's range padded by 5% in the axis' scale.
Range axis_range(const LinePlotSpec& s, bool x_axis) {
  const PlotAxis& axis = x_axis ? s.x : s.y;
  std::vector<double> values;
  auto add = [&](double v) {
    if (std::isfinite(v) && (!is_log(axis.scale) || v > 0)) values.push_back(to_axis(axis.scale, v));
  };
  for (const PlotSeries& p : s.series) {
    for (std::size_t i = 0; i < p.x.size(); ++i) {
      if (!std::isfinite(p.x[i]) || !std::isfinite(p.y[i])) continue;
      add(x_axis ? p.x[i] : p.y[i]);
      if (!x_axis && !p.band_low.empty()) {
        add(p.band_low[i]);
        add(p.band_high[i]);
      }
    }
  }
  for (const PlotLabel& l : s.labels) add(x_axis ? l.x : l.y);
  for (const ReferenceLine& r : s.references) {
    if (r.kind == (x_axis ? ReferenceLine::Kind::vertical : ReferenceLine::Kind::horizontal)) add(r.value);
  }
  if (values.empty() && !(axis.min && axis.max)) {
    throw InputError("plot: no finite data for the " + std::string(x_axis ? "x" : "y") + " axis");
  }
  double lo = values.empty() ? 0 : *std::min_element(values.begin(), values.end());
  double hi = values.empty() ? 1 : *std::max_element(values.begin(), values.end());
  if (hi - lo < 1e-12 * std::max(1.0, std::fabs(hi))) {
    lo -= 0.5;
    hi += 0.5;
  }
  const double pad = 0.05 * (hi - lo);
  Range r{from_axis(axis.scale, lo - pad), from_axis(axis.scale, hi + pad)};
  if (axis.min) r.lo = *axis.min;
  if (axis.max) r.hi = *axis.max;
  if (!(r.hi > r.lo)) throw InputError("plot: axis \"" + axis.title + "\" needs min < max");
  check_positive(axis, r.lo, "axis \"" + axis.title + "\" minimum");
  return r;
}

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

Rgb color_of(const PlotSeries& p, std::size_t index) { return p.color ? *p.color : series_color(index); }
Rgb color_of(const ReferenceLine& r) { return r.color ? *r.color : kReference; }

std::vector<LegendEntry> legend_entries(const LinePlotSpec& s) {
  std::vector<LegendEntry> entries;
  for (std::size_t i = 0; i < s.series.size(); ++i) {
    const PlotSeries& p = s.series[i];
    if (!p.name.empty()) {
      entries.push_back({LegendEntry::Swatch::series, p.name, color_of(p, i), p.line, p.dashed, p.line_width, p.marker});
    }
    if (!p.band_name.empty()) entries.push_back({LegendEntry::Swatch::band, p.band_name, color_of(p, i)});
  }
  for (const ReferenceLine& r : s.references) {
    if (!r.name.empty()) entries.push_back({LegendEntry::Swatch::reference, r.name, color_of(r), true, r.dashed, 1.2});
  }
  return entries;
}

void draw_marker(Canvas& c, Marker m, double x, double y, double size, const Rgb& color) {
  const double r = size / 2;
  const Rgb edge{1, 1, 1};
  switch (m) {
    case Marker::none:
      return;
    case Marker::circle:
      c.fill_circle(x, y, r + 0.6, edge);
      c.fill_circle(x, y, r, color);
      return;
    case Marker::square:
      c.fill_rect(x - r - 0.6, y - r - 0.6, size + 1.2, size + 1.2, edge);
      c.fill_rect(x - r, y - r, size, size, color);
      return;
    case Marker::triangle:
      c.fill_polygon({{x, y - r * 1.25}, {x + r * 1.1, y + r * 0.8}, {x - r * 1.1, y + r * 0.8}}, color);
      return;
    case Marker::diamond:
      c.fill_polygon({{x, y - r * 1.3}, {x + r, y}, {x, y + r * 1.3}, {x - r, y}}, color);
      return;
  }
}

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

constexpr double kSwatchW = 24, kLegendPad = 6;

// Points the plot draws ink on, in plot-area coordinates (for choosing the legend's corner).
std::vector<Canvas::Point> ink_points(const Panel& p, const Mapper& m) {
  std::vector<Canvas::Point> pts;
  for (const PlotSeries& s : p.spec.series) {
    for (std::size_t i = 0; i < s.x.size(); ++i) {
      if (!std::isfinite(s.x[i]) || !std::isfinite(s.y[i])) continue;
      const Canvas::Point a = m.at(s.x[i], s.y[i]);
      pts.push_back(a);
      if (!s.band_low.empty()) {
        for (int k = 0; k <= 8; ++k) pts.push_back({a.x, m.py(s.band_low[i]) + k / 8.0 * (m.py(s.band_high[i]) - m.py(s.band_low[i]))});
      }
      if (s.line && i + 1 < s.x.size() && std::isfinite(s.x[i + 1]) && std::isfinite(s.y[i + 1])) {
        const Canvas::Point b = m.at(s.x[i + 1], s.y[i + 1]);
        for (int k = 1; k < 24; ++k) pts.push_back({a.x + k / 24.0 * (b.x - a.x), a.y + k / 24.0 * (b.y - a.y)});
      }
    }
  }
  for (const PlotLabel& l : p.spec.labels) pts.push_back(m.at(l.x, l.y));
  const PlotRect& a = m.area;
  for (const ReferenceLine& r : p.spec.references) {
    for (int k = 0; k <= 48; ++k) {
      const double f = k / 48.0;
      if (r.kind == ReferenceLine::Kind::horizontal) pts.push_back({a.x + f * a.width, m.py(r.value)});
      if (r.kind == ReferenceLine::Kind::vertical) pts.push_back({m.px(r.value), a.y + f * a.height});
      if (r.kind == ReferenceLine::Kind::power_law) {
        const double t0 = to_axis(p.spec.x.scale, p.xr.lo), t1 = to_axis(p.spec.x.scale, p.xr.hi);
        const double x = from_axis(p.spec.x.scale, t0 + f * (t1 - t0));
        const double y = r.coefficient * std::pow(x, r.exponent);
        if (std::isfinite(y) && (!is_log(p.spec.y.scale) || y > 0)) pts.push_back(m.at(x, y));
      }
    }
  }
  return pts;
}

// Where the legend box's top-left corner goes for an inner corner placement.
Canvas::Point legend_corner(const Panel& p, LegendPlace place, const PlotRect& a) {
  const double inset = 6;
  const bool left = place == LegendPlace::upper_left || place == LegendPlace::lower_left;
  const bool upper = place == LegendPlace::upper_left || place == LegendPlace::upper_right;
  return {left ? a.x + inset : a.x + a.width - inset - p.legend_w,
          upper ? a.y + inset : a.y + a.height - inset - p.legend_h};
}

Panel layout_plot(Canvas& m, const LinePlotSpec& spec, const std::string& panel_title) {
  check_spec(spec);
  Panel p;
  p.spec = spec;
  p.panel_title = panel_title;
  p.xr = axis_range(spec, true);
  p.yr = axis_range(spec, false);
  p.plot_w = spec.width;
  p.plot_h = spec.height;
  if (spec.equal_aspect && !is_log(spec.x.scale) && !is_log(spec.y.scale)) {
    const double sx = (p.xr.hi - p.xr.lo) / p.plot_w, sy = (p.yr.hi - p.yr.lo) / p.plot_h;
    if (sx > sy) p.plot_h = (p.yr.hi - p.yr.lo) / sx;
    else p.plot_w = (p.xr.hi - p.xr.lo) / sy;
  }
  p.xticks = render::ticks_for(spec.x, p.xr.lo, p.xr.hi, std::clamp(p.plot_w / 70, 3.0, 8.0));
  p.yticks = render::ticks_for(spec.y, p.yr.lo, p.yr.hi, std::clamp(p.plot_h / 55, 3.0, 8.0));

  const TextStyle tick{kTickSize, false, kInk};
  double ytick_w = 0, xtick_w = 0;
  for (const AxisTick& t : p.yticks) ytick_w = std::max(ytick_w, m.measure(t.label, tick).width);
  std::vector<double> major_x;
  for (const AxisTick& t : p.xticks) {
    if (t.label.empty()) continue;
    xtick_w = std::max(xtick_w, m.measure(t.label, tick).width);
    major_x.push_back(to_axis(spec.x.scale, t.value));
  }
  // Thin out x labels that would touch: every step-th label is written.
  if (major_x.size() >= 2) {
    const double spacing = (major_x[1] - major_x[0]) / (to_axis(spec.x.scale, p.xr.hi) - to_axis(spec.x.scale, p.xr.lo)) * p.plot_w;
    p.x_label_step = static_cast<std::size_t>(std::ceil((xtick_w + 8) / std::max(spacing, 1.0)));
  }
  const double tick_h = m.measure("0", tick).height;
  const double title_h = spec.y.title.empty() ? 0 : m.measure(spec.y.title, {kAxisTitleSize}).height;
  const double xtitle_h = spec.x.title.empty() ? 0 : m.measure(spec.x.title, {kAxisTitleSize}).height;
  p.left = title_h + (title_h > 0 ? 6 : 0) + ytick_w + kMajorTick + kGap;
  p.bottom = kMajorTick + kGap + tick_h + (xtitle_h > 0 ? 4 + xtitle_h : 0);
  p.top = std::max(tick_h / 2, 4.0) + (panel_title.empty() ? 0 : m.measure(panel_title, {kPanelTitleSize, true}).height + 6);
  p.right = std::max(xtick_w / 2, 6.0);
  // The x-axis title and the panel title are centred on the plot; widen the margins if needed.
  for (double w : {spec.x.title.empty() ? 0.0 : m.measure(spec.x.title, {kAxisTitleSize}).width,
                   panel_title.empty() ? 0.0 : m.measure(panel_title, {kPanelTitleSize, true}).width}) {
    const double over = (w - p.plot_w) / 2;
    p.left = std::max(p.left, over);
    p.right = std::max(p.right, over);
  }

  p.legend = legend_entries(spec);
  if (!p.legend.empty() && spec.legend != LegendPlace::none) {
    p.legend_row = std::max(m.measure("Ag", {kLegendSize}).height, 10.0) + 3;
    double text_w = 0;
    for (const LegendEntry& e : p.legend) text_w = std::max(text_w, m.measure(e.text, {kLegendSize}).width);
    p.legend_w = kLegendPad * 2 + kSwatchW + 6 + text_w;
    p.legend_h = kLegendPad * 2 + p.legend_row * static_cast<double>(p.legend.size()) - 3;
    p.place = spec.legend;
    if (p.place == LegendPlace::automatic) {
      const PlotRect area{0, 0, p.plot_w, p.plot_h};
      const std::vector<Canvas::Point> ink = ink_points(p, Mapper(area, spec.x, p.xr, spec.y, p.yr));
      std::size_t best = SIZE_MAX;
      if (p.legend_w < p.plot_w * 0.7 && p.legend_h < p.plot_h * 0.7) {
        for (LegendPlace c : {LegendPlace::upper_right, LegendPlace::upper_left, LegendPlace::lower_right,
                              LegendPlace::lower_left}) {
          const Canvas::Point at = legend_corner(p, c, area);
          const std::size_t n = static_cast<std::size_t>(std::count_if(ink.begin(), ink.end(), [&](const Canvas::Point& q) {
            return q.x >= at.x - 4 && q.x <= at.x + p.legend_w + 4 && q.y >= at.y - 4 && q.y <= at.y + p.legend_h + 4;
          }));
          if (n < best) {
            best = n;
            p.place = c;
          }
        }
      }
      if (best != 0) p.place = LegendPlace::outside_right;
    }
    if (p.place == LegendPlace::outside_right) {
      p.right = std::max(p.right, 12 + p.legend_w);
      p.plot_h = std::max(p.plot_h, p.legend_h);
    }
  }
  return p;
}

void draw_legend(Canvas& c, const Panel& p, double x, double y) {
  c.fill_polygon({{x, y}, {x + p.legend_w, y}, {x + p.legend_w, y + p.legend_h}, {x, y + p.legend_h}}, {1, 1, 1}, 0.9);
  c.stroke_rect(x, y, p.legend_w, p.legend_h, rgb_from_hex(0xcccccc), 0.6);
  for (std::size_t i = 0; i < p.legend.size(); ++i) {
    const LegendEntry& e = p.legend[i];
    const double cy = y + kLegendPad + p.legend_row * (static_cast<double>(i) + 0.5) - 1.5;
    const double sx = x + kLegendPad;
    if (e.swatch == LegendEntry::Swatch::band) {
      c.fill_polygon({{sx, cy - 5}, {sx + kSwatchW, cy - 5}, {sx + kSwatchW, cy + 5}, {sx, cy + 5}}, e.color, 0.22);
    } else {
      if (e.line) c.polyline({{sx, cy}, {sx + kSwatchW, cy}}, e.color, e.line_width, e.dashed);
      draw_marker(c, e.marker, sx + kSwatchW / 2, cy, 6, e.color);
    }
    c.text(e.text, sx + kSwatchW + 6, cy, {kLegendSize, false, kInk}, 0, 0.5);
  }
}

// Splits a series into runs of finite points (a NaN leaves a gap in the line).
std::vector<std::vector<Canvas::Point>> runs(const PlotSeries& s, const Mapper& m) {
  std::vector<std::vector<Canvas::Point>> out(1);
  for (std::size_t i = 0; i < s.x.size(); ++i) {
    if (std::isfinite(s.x[i]) && std::isfinite(s.y[i])) {
      out.back().push_back(m.at(s.x[i], s.y[i]));
    } else if (!out.back().empty()) {
      out.emplace_back();
    }
  }
  return out;
}

void draw_reference(Canvas& c, const ReferenceLine& r, const Panel& p, const Mapper& m) {
  const PlotRect& a = m.area;
  const Rgb color = color_of(r);
  if (r.kind == ReferenceLine::Kind::horizontal) {
    c.polyline({{a.x, m.py(r.value)}, {a.x + a.width, m.py(r.value)}}, color, 1.2, r.dashed);
  } else if (r.kind == ReferenceLine::Kind::vertical) {
    c.polyline({{m.px(r.value), a.y}, {m.px(r.value), a.y + a.height}}, color, 1.2, r.dashed);
  } else {  // y = a x^p, sampled evenly along the drawn x axis (a straight line on log-log)
    std::vector<Canvas::Point> pts;
    const double t0 = to_axis(p.spec.x.scale, p.xr.lo), t1 = to_axis(p.spec.x.scale, p.xr.hi);
    for (int k = 0; k <= 200; ++k) {
      const double x = from_axis(p.spec.x.scale, t0 + k / 200.0 * (t1 - t0));
      if (x <= 0 && std::fmod(r.exponent, 1.0) != 0) continue;
      const double y = r.coefficient * std::pow(x, r.exponent);
      if (std::isfinite(y) && (!is_log(p.spec.y.scale) || y > 0)) pts.push_back(m.at(x, y));
    }
    c.polyline(pts, color, 1.2, r.dashed);
  }
}

void draw_plot(Canvas& c, const Panel& p, double x, double y) {
  const LinePlotSpec& s = p.spec;
  const PlotRect area{x + p.left, y + p.top, p.plot_w, p.plot_h};
  const Mapper m(area, s.x, p.xr, s.y, p.yr);
  const TextStyle tick{kTickSize, false, kInk};

  // Grid lines at the labelled ticks, under everything.
  for (const AxisTick& t : p.xticks)
    if (!t.label.empty()) c.fill_rect(m.px(t.value) - 0.25, area.y, 0.5, area.height, kGrid);
  for (const AxisTick& t : p.yticks)
    if (!t.label.empty()) c.fill_rect(area.x, m.py(t.value) - 0.25, area.width, 0.5, kGrid);

  c.push_clip(area.x, area.y, area.width, area.height);
  for (std::size_t i = 0; i < s.series.size(); ++i) {  // bands first: lines stay on top
    const PlotSeries& ser = s.series[i];
    if (ser.band_low.empty()) continue;
    std::vector<Canvas::Point> poly;
    for (std::size_t k = 0; k < ser.x.size(); ++k)
      if (std::isfinite(ser.x[k]) && std::isfinite(ser.band_high[k])) poly.push_back(m.at(ser.x[k], ser.band_high[k]));
    for (std::size_t k = ser.x.size(); k-- > 0;)
      if (std::isfinite(ser.x[k]) && std::isfinite(ser.band_low[k])) poly.push_back(m.at(ser.x[k], ser.band_low[k]));
    c.fill_polygon(poly, color_of(ser, i), 0.22);
  }
  for (const ReferenceLine& r : s.references) draw_reference(c, r, p, m);
  for (std::size_t i = 0; i < s.series.size(); ++i) {
    const PlotSeries& ser = s.series[i];
    if (!ser.line) continue;
    for (const auto& run : runs(ser, m)) c.polyline(run, color_of(ser, i), ser.line_width, ser.dashed);
  }
  c.pop_clip();
  for (std::size_t i = 0; i < s.series.size(); ++i) {  // markers on the edge stay whole
    const PlotSeries& ser = s.series[i];
    for (const auto& run : runs(ser, m))
      for (const Canvas::Point& q : run) draw_marker(c, ser.marker, q.x, q.y, ser.marker_size, color_of(ser, i));
  }
  for (const PlotLabel& l : s.labels) {
    c.text(l.text, m.px(l.x), m.py(l.y), {l.size, false, l.color ? *l.color : kInk}, l.anchor_x, l.anchor_y);
  }
  c.stroke_rect(area.x, area.y, area.width, area.height, kFrame, 0.8);

  // Ticks outside the frame, labels beyond them.
  std::size_t labelled = 0;
  for (const AxisTick& t : p.xticks) {
    const double tx = m.px(t.value);
    const double len = t.label.empty() ? kMinorTick : kMajorTick;
    c.fill_rect(tx - 0.3, area.y + area.height, 0.6, len, kFrame);
    if (!t.label.empty() && labelled++ % p.x_label_step == 0) {
      c.text(t.label, tx, area.y + area.height + kMajorTick + kGap, tick, 0.5, 0);
    }
  }
  for (const AxisTick& t : p.yticks) {
    const double ty = m.py(t.value);
    const double len = t.label.empty() ? kMinorTick : kMajorTick;
    c.fill_rect(area.x - len, ty - 0.3, len, 0.6, kFrame);
    if (!t.label.empty()) c.text(t.label, area.x - kMajorTick - kGap, ty, tick, 1, 0.5);
  }
  const TextStyle axis_title{kAxisTitleSize, false, kAxisInk};
  if (!s.x.title.empty()) {
    c.text(s.x.title, area.x + area.width / 2, y + p.height(), axis_title, 0.5, 1);
  }
  if (!s.y.title.empty()) c.text(s.y.title, x, area.y + area.height / 2, axis_title, 0.5, 0, 90);
  if (!p.panel_title.empty()) {
    c.text(p.panel_title, area.x + area.width / 2, y, {kPanelTitleSize, true, kInk}, 0.5, 0);
  }
  if (p.place == LegendPlace::outside_right) {
    draw_legend(c, p, area.x + area.width + 12, area.y);
  } else if (p.place != LegendPlace::none && !p.legend.empty()) {
    const Canvas::Point at = legend_corner(p, p.place, area);
    draw_legend(c, p, at.x, at.y);
  }
}

Figure compose(std::vector<Panel> panels, const render::TitleBlock& block) {
  Canvas m = Canvas::measuring();
  const double margin = 16, gap = 28;
  double top = 0, below = 0, row_w = 0;
  for (const Panel& p : panels) {
    top = std::max(top, p.top);
    below = std::max(below, p.plot_h + p.bottom);
    row_w += p.width();
  }
  row_w += gap * static_cast<double>(panels.size() - 1);
  render::TitleBlock titles = block;
  titles.wrap_width = std::max(row_w, 480.0);
  const TextSize title = render::title_block_size(m, titles);
  const double content_w = std::max(row_w, title.width);
  Figure f;
  f.width = content_w + 2 * margin;
  f.height = margin + title.height + top + below + margin;
  std::vector<Canvas::Point> origins;
  double x = margin + (content_w - row_w) / 2;
  for (const Panel& p : panels) {
    origins.push_back({x, margin + title.height + top - p.top});
    f.plots.push_back({x + p.left, origins.back().y + p.top, p.plot_w, p.plot_h});
    x += p.width() + gap;
  }
  const double cx = f.width / 2;
  auto shared = std::make_shared<std::vector<Panel>>(std::move(panels));
  f.draw = [shared, origins, titles, cx, margin](Canvas& c) {
    render::draw_title_block(c, titles, cx, margin);
    for (std::size_t k = 0; k < shared->size(); ++k) draw_plot(c, (*shared)[k], origins[k].x, origins[k].y);
  };
  return f;
}

}  // namespace

ReferenceLine ReferenceLine::horizontal(double y, std::string name) {
  ReferenceLine r;
  r.value = y;
  r.name = std::move(name);
  return r;
}

ReferenceLine ReferenceLine::vertical(double x, std::string name) {
  ReferenceLine r = horizontal(x, std::move(name));
  r.kind = Kind::vertical;
  return r;
}

ReferenceLine ReferenceLine::power_law(double coefficient, double exponent, std::string name) {
  ReferenceLine r;
  r.kind = Kind::power_law;
  r.coefficient = coefficient;
  r.exponent = exponent;
  r.name = std::move(name);
  return r;
}

Rgb series_color(std::size_t i) {
  static const unsigned tab10[] = {0x1f77b4, 0xff7f0e, 0x2ca02c, 0xd62728, 0x9467bd,
                                   0x8c564b, 0xe377c2, 0x7f7f7f, 0xbcbd22, 0x17becf};
  return rgb_from_hex(tab10[i % 10]);
}

Figure line_plot_figure(const LinePlotSpec& spec) {
  Canvas m = Canvas::measuring();
  return compose({layout_plot(m, spec, "")}, {spec.title, spec.subtitle});
}

Figure line_plot_row_figure(const std::vector<LinePlotSpec>& panels, const std::string& title,
                            const std::string& subtitle) {
  if (panels.empty()) throw InputError("plot: no panel to draw");
  Canvas m = Canvas::measuring();
  std::vector<Panel> laid;
  for (const LinePlotSpec& s : panels) laid.push_back(layout_plot(m, s, s.title));
  return compose(std::move(laid), {title, subtitle});
}

}  // namespace attn
