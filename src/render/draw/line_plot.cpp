#include "attn/render/draw/line_plot.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>

#include "attn/engine/core/error.hpp"
#include "line_plot_panel.hpp"
#include "plot_ticks.hpp"

namespace attn {
namespace {

using namespace line_plot_detail;

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

// Grid lines at the labelled ticks, under everything.
void draw_grid_lines(Canvas& c, const Panel& p, const Mapper& m) {
  const PlotRect& area = m.area;
  for (const AxisTick& t : p.xticks)
    if (!t.label.empty()) c.fill_rect(m.px(t.value) - 0.25, area.y, 0.5, area.height, kGrid);
  for (const AxisTick& t : p.yticks)
    if (!t.label.empty()) c.fill_rect(area.x, m.py(t.value) - 0.25, area.width, 0.5, kGrid);
}

// A series' shaded band between band_low and band_high.
void draw_band(Canvas& c, const PlotSeries& ser, std::size_t i, const Mapper& m) {
  std::vector<Canvas::Point> poly;
  for (std::size_t k = 0; k < ser.x.size(); ++k)
    if (std::isfinite(ser.x[k]) && std::isfinite(ser.band_high[k])) poly.push_back(m.at(ser.x[k], ser.band_high[k]));
  for (std::size_t k = ser.x.size(); k-- > 0;)
    if (std::isfinite(ser.x[k]) && std::isfinite(ser.band_low[k])) poly.push_back(m.at(ser.x[k], ser.band_low[k]));
  if (poly.size() == 2) {  // one point: its band is a shaded bar as wide as the legend's swatch
    const double half = 5;
    poly = {{poly[0].x - half, poly[0].y}, {poly[0].x + half, poly[0].y}, {poly[1].x + half, poly[1].y},
            {poly[1].x - half, poly[1].y}};
  }
  c.fill_polygon(poly, color_of(ser, i), 0.22);
}

// Inside the frame, clipped to it: bands first (lines stay on top), reference lines, lines.
void draw_clipped_data(Canvas& c, const Panel& p, const Mapper& m) {
  const LinePlotSpec& s = p.spec;
  const PlotRect& area = m.area;
  c.push_clip(area.x, area.y, area.width, area.height);
  for (std::size_t i = 0; i < s.series.size(); ++i)
    if (!s.series[i].band_low.empty()) draw_band(c, s.series[i], i, m);
  for (const ReferenceLine& r : s.references) draw_reference(c, r, p, m);
  for (std::size_t i = 0; i < s.series.size(); ++i) {
    const PlotSeries& ser = s.series[i];
    if (!ser.line) continue;
    for (const auto& run : runs(ser, m)) c.polyline(run, color_of(ser, i), ser.line_width, ser.dashed);
  }
  c.pop_clip();
}

void draw_plot_labels(Canvas& c, const LinePlotSpec& s, const Mapper& m) {
  for (const PlotLabel& l : s.labels) {
    const TextStyle style{l.size, false, l.color ? *l.color : kInk};
    if (l.backdrop) {
      const TextSize box = c.measure(l.text, style);
      const double pad = 2;
      c.fill_rect(m.px(l.x) - l.anchor_x * box.width - pad, m.py(l.y) - l.anchor_y * box.height - pad,
                  box.width + 2 * pad, box.height + 2 * pad, rgb_from_hex(0xffffff));
    }
    c.text(l.text, m.px(l.x), m.py(l.y), style, l.anchor_x, l.anchor_y);
  }
}

// Ticks outside the frame, labels beyond them.
void draw_ticks(Canvas& c, const Panel& p, const Mapper& m) {
  const PlotRect& area = m.area;
  const TextStyle tick{kTickSize, false, kInk};
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
}

// The axis titles, the panel's title and its legend, around the frame; (x, y) is the panel's corner.
void draw_plot_titles(Canvas& c, const Panel& p, const PlotRect& area, double x, double y) {
  const LinePlotSpec& s = p.spec;
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

void draw_plot(Canvas& c, const Panel& p, double x, double y) {
  const LinePlotSpec& s = p.spec;
  const PlotRect area{x + p.left, y + p.top, p.plot_w, p.plot_h};
  const Mapper m(area, s.x, p.xr, s.y, p.yr);
  draw_grid_lines(c, p, m);
  draw_clipped_data(c, p, m);
  for (std::size_t i = 0; i < s.series.size(); ++i) {  // markers on the edge stay whole
    const PlotSeries& ser = s.series[i];
    for (const auto& run : runs(ser, m))
      for (const Canvas::Point& q : run) draw_marker(c, ser.marker, q.x, q.y, ser.marker_size, color_of(ser, i));
  }
  draw_plot_labels(c, s, m);
  c.stroke_rect(area.x, area.y, area.width, area.height, kFrame, 0.8);
  draw_ticks(c, p, m);
  draw_plot_titles(c, p, area, x, y);
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
  f.title = titles.title;
  f.subtitle = titles.subtitle;
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
