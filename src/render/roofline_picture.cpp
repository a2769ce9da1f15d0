#include "attn/render/roofline_picture.hpp"

#include <algorithm>
#include <cmath>

#include "attn/lessons/number_format.hpp"
#include "attn/render/line_plot.hpp"

namespace attn {

namespace {

constexpr double kPlotHeight = 340;  // points

// Both axes' limits (log10): x half a decade past the points and the ridge (further left for
// decode labels standing left of their points), y from under the lowest point and
// the roof's left end to 1.8 x the highest point, 3.3 x when prefill labels stand above their
// points (room for labels above).
struct RooflineAxes {
  double x_lo = 0, x_hi = 0, y_lo = 0, y_hi = 0;
  double ratio(double points) const {  // the factor in y that `points` of height span
    return std::pow(y_hi / y_lo, points / kPlotHeight);
  }
};

RooflineAxes roofline_axes(const RooflineResult& r) {
  RooflineAxes a{r.ridge, r.ridge, 0, r.peak_gflops};
  double low = r.peak_gflops;
  for (const RooflinePoint& p : r.points) {
    a.x_lo = std::min(a.x_lo, p.intensity);
    a.x_hi = std::max(a.x_hi, p.intensity);
    a.y_hi = std::max(a.y_hi, p.gflops);
    low = std::min(low, p.gflops);
  }
  a.x_lo /= 2;
  // A decode label over its roof stands left of its point, about 0.6 of a decade: inside the
  // plot, not over the y axis' numbers.
  for (const RooflinePoint& p : r.points)
    if (p.kind == "decode" && p.gflops > p.roof_gflops) a.x_lo = std::min(a.x_lo, p.intensity / 8);
  a.x_hi *= 2;
  // Room above the highest point for its label, or for two rows of them where prefill points
  // run over their roof (labels_on puts those labels above, crowded ones in a second row).
  const bool labels_above = std::any_of(r.points.begin(), r.points.end(), [](const RooflinePoint& p) {
    return p.kind == "prefill" && p.gflops > p.roof_gflops;
  });
  a.y_hi *= labels_above ? 3.3 : 1.8;
  a.y_lo = std::min(r.bandwidth_gbps * a.x_lo, low / 3);
  return a;
}

std::vector<PlotLabel> labels_on(const RooflineResult& r, const RooflineAxes& axes) {
  std::vector<PlotLabel> labels;
  std::vector<std::size_t> column;  // decode labels: one column per (KV heads, side)
  // 7 points: clear of an 8-point marker's half and the label's box; a line of 8-point text.
  const double gap = axes.ratio(7), line = axes.ratio(11);
  for (const RooflinePoint& p : r.points) {
    // Every label on the side away from its roof, so the roof never runs through the text.
    const bool under = p.gflops <= p.roof_gflops;
    if (p.kind == "prefill") {
      // Prefill points sit a factor 2 apart: each label below a point under its (flat) roof,
      // above one over it, the GFLOP/s under the name.
      labels.push_back({p.intensity, under ? p.gflops / gap : p.gflops * gap, p.label + "\n" + format_g(p.gflops, 3),
                        0.5, under ? 0.0 : 1.0, std::nullopt, 8, true});
      column.push_back(0);
    } else {
      // Decode points of one kind share an intensity: their labels stand beside the column, to
      // the right under the roof (a rising roof is higher there), to the left over it (lower
      // there). The legend says MHA or GQA, so a label needs only the cache length.
      labels.push_back({under ? p.intensity * 1.15 : p.intensity / 1.15, p.gflops,
                        "L = " + std::to_string(p.size) + " · " + format_g(p.gflops, 3), under ? 0.0 : 1.0, 0.5,
                        std::nullopt, 8, true});
      column.push_back(1 + 2 * p.kv_heads + (under ? 1 : 0));
    }
  }
  // Prefill points a factor 2 apart are closer than a label is wide ("n = 1024" over about 0.3 of
  // a decade): where a label's neighbour on the same side of its points is less than a factor 4
  // away and sits in the first row, it takes a second row, two lines further from its point.
  std::vector<std::size_t> prefill;
  for (std::size_t k = 0; k < labels.size(); ++k)
    if (r.points[k].kind == "prefill") prefill.push_back(k);
  std::sort(prefill.begin(), prefill.end(),
            [&](std::size_t a, std::size_t b) { return r.points[a].intensity < r.points[b].intensity; });
  const double two_lines = axes.ratio(24);
  for (std::size_t side = 0; side < 2; ++side) {  // labels under their points, then over
    std::size_t previous = labels.size();
    bool previous_moved = false;
    for (std::size_t k : prefill) {
      if ((labels[k].anchor_y == 0.0) != (side == 0)) continue;
      const bool crowded = previous < labels.size() && r.points[k].intensity < 4 * r.points[previous].intensity;
      previous_moved = crowded && !previous_moved;
      if (previous_moved) labels[k].y = side == 0 ? labels[k].y / two_lines : labels[k].y * two_lines;
      previous = k;
    }
  }
  // Labels of one column may lie close in GFLOP/s: spread them downwards to at least a line of
  // text apart on these axes.
  std::vector<std::size_t> order(labels.size());
  for (std::size_t k = 0; k < order.size(); ++k) order[k] = k;
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return labels[a].y > labels[b].y; });
  for (std::size_t k = 0; k < order.size(); ++k) {
    if (column[order[k]] == 0) continue;
    for (std::size_t above = k; above-- > 0;) {
      if (column[order[above]] != column[order[k]]) continue;
      labels[order[k]].y = std::min(labels[order[k]].y, labels[order[above]].y / line);
      break;
    }
  }
  return labels;
}

}  // namespace

std::vector<PlotLabel> roofline_labels(const RooflineResult& r) { return labels_on(r, roofline_axes(r)); }

Figure roofline_figure(const RooflineResult& r) {
  const RooflineAxes axes = roofline_axes(r);
  const double lo = axes.x_lo, hi = axes.x_hi;
  LinePlotSpec spec;
  spec.title = "The roofline of this machine, and where attention sits on it";
  spec.subtitle = roofline_caption(r);
  spec.x = {"arithmetic intensity (FLOP per byte moved)", AxisScale::log10, lo, hi};
  spec.y.title = "GFLOP/s";
  spec.y.min = axes.y_lo;
  spec.y.max = axes.y_hi;
  spec.y.scale = AxisScale::log10;
  spec.width = 520;
  spec.height = kPlotHeight;
  spec.legend = LegendPlace::lower_right;

  PlotSeries roof;
  roof.name = "roof: min(" + format_g(r.peak_gflops, 3) + " GFLOP/s, " + format_g(r.bandwidth_gbps, 3) + " GB/s × I)";
  roof.x = {lo, r.ridge, hi};
  roof.y = {r.bandwidth_gbps * lo, r.peak_gflops, r.peak_gflops};
  roof.color = rgb_from_hex(0x404040);
  roof.line_width = 2.2;
  spec.series.push_back(roof);
  spec.references.push_back(ReferenceLine::vertical(r.ridge, "ridge point: " + format_g(r.ridge, 3) + " FLOP/byte"));

  struct Group {
    const char* name;
    Marker marker;
    bool (*take)(const RooflinePoint&);
  };
  const Group groups[] = {
      {"prefill (flash, n queries x n keys)", Marker::circle, [](const RooflinePoint& p) { return p.kind == "prefill"; }},
      {"decode, MHA (1 query x L keys)", Marker::square,
       [](const RooflinePoint& p) { return p.kind == "decode" && p.label.find("MHA") != std::string::npos; }},
      {"decode, GQA (K, V shared by query heads)", Marker::triangle,
       [](const RooflinePoint& p) { return p.kind == "decode" && p.label.find("GQA") != std::string::npos; }},
  };
  for (const Group& g : groups) {
    PlotSeries s;
    s.name = g.name;
    s.line = false;
    s.marker = g.marker;
    s.marker_size = 8;
    for (const RooflinePoint& p : r.points) {
      if (!g.take(p)) continue;
      s.x.push_back(p.intensity);
      s.y.push_back(p.gflops);
    }
    if (!s.x.empty()) spec.series.push_back(s);
  }
  spec.labels = labels_on(r, axes);
  return line_plot_figure(spec);
}

}  // namespace attn
