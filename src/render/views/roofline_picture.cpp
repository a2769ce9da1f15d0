#include "attn/render/views/roofline_picture.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>

#include "attn/io/number_format.hpp"
#include "attn/render/draw/line_plot.hpp"

namespace attn {

namespace {

constexpr double kPlotHeight = kRooflinePlotHeight, kPlotWidth = kRooflinePlotWidth;
// A prefill label: 7 points clear of its point (an 8-point marker's half and the box), or,
// where that place is taken, a step of 12 points further out at a time (half of two lines of
// 8-point text in their box), up to kMaxSteps steps.
constexpr double kLabelGap = 7, kLabelStep = 12;
constexpr std::size_t kMaxSteps = 8;
constexpr double kMarkerHalf = 5;  // half an 8-point marker, and a point of margin

bool over_roof(const RooflinePoint& p) { return p.gflops > p.roof_gflops; }

// Whether a prefill point's label stands above it: on the side away from its roof, so the roof
// never runs through the text. But a float32 point and its bfloat16 twin (the same n, so the
// same intensity: one marker right over the other) label the pair together, the faster one's
// above and the slower one's below, or both would crowd the one gap between the markers and
// push each other a row or more out.
bool label_above(const RooflineResult& r, const RooflinePoint& p) {
  for (const RooflinePoint& twin : r.points)
    if (twin.kind == "prefill" && (twin.dtype == "bf16") != (p.dtype == "bf16") &&
        std::abs(twin.intensity / p.intensity - 1) < 1e-9)
      return p.gflops > twin.gflops || (p.gflops == twin.gflops && p.dtype == "bf16");
  return over_roof(p);
}

std::string prefill_text(const RooflinePoint& p) { return p.label + "\n" + format_g(p.gflops, 3); }

// The box a label's text takes (8-point text, and the 2-point margin line_plot draws around
// a backdrop), measured by pango as the picture will draw it.
TextSize label_box(Canvas& measuring, const std::string& text) {
  const TextSize t = measuring.measure(text, TextStyle{8});
  return {t.width + 4, t.height + 4};
}

// Both axes' limits (log10): x half a decade past the points and the ridge (further left for
// decode labels standing left of their points), y from under the lowest point and the roof's
// left end to over the highest point, with room for the labels standing above points.
struct RooflineAxes {
  double x_lo = 0, x_hi = 0, y_lo = 0, y_hi = 0;
  double ratio(double points) const {  // the factor in y that `points` of height span
    return std::pow(y_hi / y_lo, points / kPlotHeight);
  }
  double x_ratio(double points) const { return std::pow(x_hi / x_lo, points / kPlotWidth); }
};

// A label's box in log10 units of the axes, q steps out from its place nearest its point.
struct Box {
  double x0, x1, y0, y1;
  bool meets(const Box& o) const { return x0 < o.x1 && o.x0 < x1 && y0 < o.y1 && o.y0 < y1; }
};

Box prefill_box(const RooflinePoint& p, bool above, const TextSize& size, std::size_t q, const RooflineAxes& a) {
  const double x = std::log10(p.intensity), y = std::log10(p.gflops);
  const double half = std::log10(a.x_ratio(size.width / 2));
  const double near = std::log10(a.ratio(kLabelGap + double(q) * kLabelStep)), high = std::log10(a.ratio(size.height));
  return above ? Box{x - half, x + half, y + near, y + near + high}
               : Box{x - half, x + half, y - near - high, y - near};
}

// Each prefill label's box (decode points: empty), measured once for all placements.
std::vector<TextSize> prefill_boxes(const RooflineResult& r) {
  std::vector<TextSize> boxes(r.points.size());
  Canvas measuring = Canvas::measuring();
  for (std::size_t k = 0; k < r.points.size(); ++k)
    if (r.points[k].kind == "prefill") boxes[k] = label_box(measuring, prefill_text(r.points[k]));
  return boxes;
}

// How many steps out each prefill label stands (0 for decode points). Prefill points a factor
// 2 apart can be closer than a label is wide ("n = 1024" spans about 0.3 of a decade on a wide
// plot), and their heights differ, so, in order of intensity, a label takes the first step
// where its box meets no label placed before it and no point's marker (a label is drawn on a
// white box over the markers); if every step meets something, the step that meets fewest.
std::vector<std::size_t> prefill_steps(const RooflineResult& r, const std::vector<TextSize>& boxes,
                                       const RooflineAxes& a) {
  std::vector<std::size_t> steps(r.points.size(), 0), order;
  for (std::size_t k = 0; k < r.points.size(); ++k)
    if (r.points[k].kind == "prefill") order.push_back(k);
  std::sort(order.begin(), order.end(),
            [&](std::size_t x, std::size_t y) { return r.points[x].intensity < r.points[y].intensity; });
  // Every point's marker (8 points across, and a point of margin) is in the way from the start.
  std::vector<Box> placed;
  const double mx = std::log10(a.x_ratio(kMarkerHalf)), my = std::log10(a.ratio(kMarkerHalf));
  for (const RooflinePoint& p : r.points) {
    const double x = std::log10(p.intensity), y = std::log10(p.gflops);
    placed.push_back({x - mx, x + mx, y - my, y + my});
  }
  for (const std::size_t k : order) {
    const bool above = label_above(r, r.points[k]);
    std::size_t best = 0;
    std::ptrdiff_t fewest = PTRDIFF_MAX;
    for (std::size_t q = 0; q < kMaxSteps && fewest > 0; ++q) {
      const Box b = prefill_box(r.points[k], above, boxes[k], q, a);
      const std::ptrdiff_t met = std::count_if(placed.begin(), placed.end(), [&](const Box& o) { return o.meets(b); });
      if (met < fewest) best = q, fewest = met;
    }
    steps[k] = best;
    placed.push_back(prefill_box(r.points[k], above, boxes[k], best, a));
  }
  return steps;
}

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
    if (p.kind == "decode" && over_roof(p)) a.x_lo = std::min(a.x_lo, p.intensity / 8);
  a.x_hi *= 2;
  a.y_lo = std::min(r.bandwidth_gbps * a.x_lo, low / 3);
  // Room above the highest point: 1.8 x, or what the labels standing over their points need.
  // The top of a label q steps out lies h = kLabelGap + q kLabelStep + its height points over its
  // point g, and h points span a factor R^(h / kPlotHeight) with R = y_hi / y_lo; so
  // g R^(h / kPlotHeight) <= y_hi holds for R >= (g / y_lo)^(1 / (1 - h / kPlotHeight)). Steps
  // depend on the axes and the axes on steps: a few rounds settle them.
  a.y_hi *= 1.8;
  const std::vector<TextSize> boxes = prefill_boxes(r);
  for (int round = 0; round < 6; ++round) {  // y_hi only grows, and steps are bounded: it settles
    const std::vector<std::size_t> steps = prefill_steps(r, boxes, a);
    double y_hi = a.y_hi;
    for (std::size_t k = 0; k < r.points.size(); ++k) {
      const RooflinePoint& p = r.points[k];
      if (p.kind != "prefill" || !label_above(r, p)) continue;
      const double h = kLabelGap + double(steps[k]) * kLabelStep + boxes[k].height + 2;
      y_hi = std::max(y_hi, a.y_lo * std::pow(p.gflops / a.y_lo, 1 / (1 - h / kPlotHeight)));
    }
    if (y_hi == a.y_hi) break;
    a.y_hi = y_hi;
  }
  return a;
}

// steps: prefill_steps' rows for these axes.
std::vector<PlotLabel> labels_on(const RooflineResult& r, const RooflineAxes& axes,
                                 const std::vector<std::size_t>& steps) {
  std::vector<PlotLabel> labels;
  std::vector<std::size_t> column;  // decode labels: one column per (KV heads, side)
  // A line of 8-point text: how far apart decode labels of one column are spread.
  const double line = axes.ratio(11);
  for (std::size_t k = 0; k < r.points.size(); ++k) {
    const RooflinePoint& p = r.points[k];
    // Every label on the side away from its roof, so the roof never runs through the text
    // (label_above: a float32 point and its bfloat16 twin on opposite sides, the faster above).
    const bool under = p.kind == "prefill" ? !label_above(r, p) : !over_roof(p);
    if (p.kind == "prefill") {
      // Prefill points sit a factor 2 apart: each label below a point under its (flat) roof,
      // above one over it, the GFLOP/s under the name.
      const double off = axes.ratio(kLabelGap + double(steps[k]) * kLabelStep);  // further out where crowded
      labels.push_back({p.intensity, under ? p.gflops / off : p.gflops * off, prefill_text(p),
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

// A thin line from each prefill point's marker to its label where crowding moved the label a
// row or more out, so the eye need not guess which point a far label names.
std::vector<RooflineLeader> leaders_on(const RooflineResult& r, const RooflineAxes& axes,
                                       const std::vector<std::size_t>& steps) {
  std::vector<RooflineLeader> leaders;
  for (std::size_t k = 0; k < r.points.size(); ++k) {
    const RooflinePoint& p = r.points[k];
    if (p.kind != "prefill" || steps[k] == 0) continue;
    const double marker = axes.ratio(kMarkerHalf), label = axes.ratio(kLabelGap + double(steps[k]) * kLabelStep - 1);
    leaders.push_back(label_above(r, p) ? RooflineLeader{p.intensity, p.gflops * marker, p.gflops * label}
                                        : RooflineLeader{p.intensity, p.gflops / marker, p.gflops / label});
  }
  return leaders;
}

}  // namespace

std::vector<PlotLabel> roofline_labels(const RooflineResult& r) {
  const RooflineAxes axes = roofline_axes(r);
  return labels_on(r, axes, prefill_steps(r, prefill_boxes(r), axes));
}

std::vector<RooflineLeader> roofline_leaders(const RooflineResult& r) {
  const RooflineAxes axes = roofline_axes(r);
  return leaders_on(r, axes, prefill_steps(r, prefill_boxes(r), axes));
}

RooflineRange roofline_range(const RooflineResult& r) {
  const RooflineAxes a = roofline_axes(r);
  return {a.x_lo, a.x_hi, a.y_lo, a.y_hi};
}

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
  spec.width = kPlotWidth;
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
      {"prefill (flash, n queries x n keys)", Marker::circle,
       [](const RooflinePoint& p) { return p.kind == "prefill" && p.dtype != "bf16"; }},
      {"prefill, bfloat16 products", Marker::diamond,
       [](const RooflinePoint& p) { return p.kind == "prefill" && p.dtype == "bf16"; }},
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
  const std::vector<std::size_t> steps = prefill_steps(r, prefill_boxes(r), axes);
  for (const RooflineLeader& l : leaders_on(r, axes, steps)) {
    PlotSeries leader;  // no name: not in the legend
    leader.x = {l.x, l.x};
    leader.y = {l.y_point, l.y_label};
    leader.color = rgb_from_hex(0x8c8c8c);
    leader.line_width = 0.75;
    spec.series.push_back(leader);
  }
  spec.labels = labels_on(r, axes, steps);
  return line_plot_figure(spec);
}

}  // namespace attn
