#include "line_plot_panel.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>

#include "attn/engine/core/error.hpp"
#include "plot_ticks.hpp"

namespace attn::line_plot_detail {
namespace {

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

// A stretch of ink the plot draws, in plot-area coordinates: a line's segment, a reference
// line, a band's edge or a point (a zero-length segment, widened by its marker).
struct InkSegment {
  Canvas::Point a, b;
  double reach = 1;  // half the line's width or the marker's size, points
};

// Everything the plot draws inside its area that a legend box must not hide.
std::vector<InkSegment> ink_segments(const Panel& p, const Mapper& m) {
  std::vector<InkSegment> ink;
  for (const PlotSeries& s : p.spec.series) {
    const double reach = std::max(s.line_width / 2, s.marker == Marker::none ? 0.0 : s.marker_size / 2 + 0.6) + 1;
    for (std::size_t i = 0; i < s.x.size(); ++i) {
      if (!std::isfinite(s.x[i]) || !std::isfinite(s.y[i])) continue;
      const Canvas::Point a = m.at(s.x[i], s.y[i]);
      ink.push_back({a, a, reach});
      if (!s.band_low.empty()) ink.push_back({m.at(s.x[i], s.band_low[i]), m.at(s.x[i], s.band_high[i]), 1});
      if (i + 1 < s.x.size() && std::isfinite(s.x[i + 1]) && std::isfinite(s.y[i + 1])) {
        if (s.line) ink.push_back({a, m.at(s.x[i + 1], s.y[i + 1]), reach});
        if (!s.band_low.empty() && std::isfinite(s.band_low[i + 1]) && std::isfinite(s.band_high[i + 1])) {
          ink.push_back({m.at(s.x[i], s.band_low[i]), m.at(s.x[i + 1], s.band_low[i + 1]), 1});
          ink.push_back({m.at(s.x[i], s.band_high[i]), m.at(s.x[i + 1], s.band_high[i + 1]), 1});
        }
      }
    }
  }
  for (const PlotLabel& l : p.spec.labels) ink.push_back({m.at(l.x, l.y), m.at(l.x, l.y), l.size});
  const PlotRect& a = m.area;
  for (const ReferenceLine& r : p.spec.references) {
    if (r.kind == ReferenceLine::Kind::horizontal) ink.push_back({{a.x, m.py(r.value)}, {a.x + a.width, m.py(r.value)}, 1.6});
    if (r.kind == ReferenceLine::Kind::vertical) ink.push_back({{m.px(r.value), a.y}, {m.px(r.value), a.y + a.height}, 1.6});
    if (r.kind != ReferenceLine::Kind::power_law) continue;
    std::optional<Canvas::Point> last;
    const double t0 = to_axis(p.spec.x.scale, p.xr.lo), t1 = to_axis(p.spec.x.scale, p.xr.hi);
    for (int k = 0; k <= 200; ++k) {  // as draw_reference samples it
      const double x = from_axis(p.spec.x.scale, t0 + k / 200.0 * (t1 - t0));
      const double y = r.coefficient * std::pow(x, r.exponent);
      if (!std::isfinite(y) || (is_log(p.spec.y.scale) && y <= 0)) continue;
      const Canvas::Point q = m.at(x, y);
      if (last) ink.push_back({*last, q, 1.6});
      last = q;
    }
  }
  return ink;
}

// Whether a segment comes within `reach` of the box [x0, x1] x [y0, y1]: Liang-Barsky clipping
// of the segment against the box grown by reach.
bool touches(const InkSegment& s, double x0, double y0, double x1, double y1) {
  x0 -= s.reach, y0 -= s.reach, x1 += s.reach, y1 += s.reach;
  const double dx = s.b.x - s.a.x, dy = s.b.y - s.a.y;
  double t_in = 0, t_out = 1;
  const double p[4] = {-dx, dx, -dy, dy};
  const double q[4] = {s.a.x - x0, x1 - s.a.x, s.a.y - y0, y1 - s.a.y};
  for (int k = 0; k < 4; ++k) {
    if (p[k] == 0) {
      if (q[k] < 0) return false;  // parallel to this edge and outside it
      continue;
    }
    const double t = q[k] / p[k];
    if (p[k] < 0) t_in = std::max(t_in, t);
    else t_out = std::min(t_out, t);
    if (t_in > t_out) return false;
  }
  return true;
}

}  // namespace

Canvas::Point legend_corner(const Panel& p, LegendPlace place, const PlotRect& a) {
  const double inset = 6;
  const bool left = place == LegendPlace::upper_left || place == LegendPlace::lower_left;
  const bool upper = place == LegendPlace::upper_left || place == LegendPlace::upper_right;
  return {left ? a.x + inset : a.x + a.width - inset - p.legend_w,
          upper ? a.y + inset : a.y + a.height - inset - p.legend_h};
}

namespace {

// An inner corner only where the legend hides no ink (issue 34: the train curves' legend, put
// in a fixed corner, covered the induction curve from step 90 to 300): the asked-for corner
// first, then the others; else outside on the right. outside_right and none stay as asked.
LegendPlace place_legend(const Panel& p, LegendPlace asked) {
  if (asked == LegendPlace::outside_right || asked == LegendPlace::none) return asked;
  if (!(p.legend_w < p.plot_w * 0.7 && p.legend_h < p.plot_h * 0.7)) return LegendPlace::outside_right;
  const PlotRect area{0, 0, p.plot_w, p.plot_h};
  const std::vector<InkSegment> ink = ink_segments(p, Mapper(area, p.spec.x, p.xr, p.spec.y, p.yr));
  std::vector<LegendPlace> order = {LegendPlace::upper_right, LegendPlace::upper_left, LegendPlace::lower_right,
                                    LegendPlace::lower_left};
  if (asked != LegendPlace::automatic) {
    order.erase(std::find(order.begin(), order.end(), asked));
    order.insert(order.begin(), asked);
  }
  for (LegendPlace corner : order) {
    const Canvas::Point at = legend_corner(p, corner, area);
    const bool hides_ink = std::any_of(ink.begin(), ink.end(), [&](const InkSegment& s) {
      return touches(s, at.x, at.y, at.x + p.legend_w, at.y + p.legend_h);
    });
    if (!hides_ink) return corner;
  }
  return LegendPlace::outside_right;
}

}  // namespace

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
    p.place = place_legend(p, spec.legend);
    if (p.place == LegendPlace::outside_right) {
      p.right = std::max(p.right, 12 + p.legend_w);
      p.plot_h = std::max(p.plot_h, p.legend_h);
    }
  }
  return p;
}

}  // namespace attn::line_plot_detail
