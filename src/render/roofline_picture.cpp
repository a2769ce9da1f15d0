#include "attn/render/roofline_picture.hpp"

#include <algorithm>
#include <cmath>

#include "attn/lessons/number_format.hpp"
#include "attn/render/line_plot.hpp"

namespace attn {

Figure roofline_figure(const RooflineResult& r) {
  double lo = r.ridge, hi = r.ridge;
  for (const RooflinePoint& p : r.points) {
    lo = std::min(lo, p.intensity);
    hi = std::max(hi, p.intensity);
  }
  lo /= 2;
  hi *= 2;
  LinePlotSpec spec;
  spec.title = "The roofline of this machine, and where attention sits on it";
  spec.subtitle = roofline_caption(r);
  spec.x = {"arithmetic intensity (FLOP per byte moved)", AxisScale::log10, lo, hi};
  spec.y.title = "GFLOP/s";
  double top = r.peak_gflops;
  for (const RooflinePoint& p : r.points) top = std::max(top, p.gflops);
  spec.y.max = top * 1.8;  // room for the labels above the highest points
  spec.y.scale = AxisScale::log10;
  spec.width = 520;
  spec.height = 340;
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
      // Prefill points sit a factor 2 apart: each label above its point, the GFLOP/s under
      // the name. Decode points share one intensity, so their labels stack on the left.
      if (p.kind == "prefill") {
        spec.labels.push_back({p.intensity, p.gflops * 1.12, p.label + "\n" + format_g(p.gflops, 3), 0.5, 1,
                               std::nullopt, 8});
      } else {
        // MHA's labels to the left, GQA's to the right of their column of points; the legend
        // says which is which, so a label needs only the cache length.
        const bool gqa = p.kv_heads != r.config.heads;
        spec.labels.push_back({gqa ? p.intensity * 1.15 : p.intensity / 1.15, p.gflops,
                               "L = " + std::to_string(p.size) + " · " + format_g(p.gflops, 3), gqa ? 0.0 : 1.0, 0.5,
                               std::nullopt, 8});
      }
    }
    if (!s.x.empty()) spec.series.push_back(s);
  }
  // Decode points of one kind share an intensity and may lie close in GFLOP/s: spread their
  // labels downwards to at least 12 % apart (a line of 8-point text on these axes).
  std::vector<PlotLabel*> left, right;
  for (PlotLabel& l : spec.labels) {
    if (l.anchor_y != 0.5) continue;  // prefill labels sit above their points
    (l.anchor_x == 0 ? right : left).push_back(&l);
  }
  for (std::vector<PlotLabel*>* side : {&left, &right}) {
    std::sort(side->begin(), side->end(), [](const PlotLabel* a, const PlotLabel* b) { return a->y > b->y; });
    for (std::size_t i = 1; i < side->size(); ++i) (*side)[i]->y = std::min((*side)[i]->y, (*side)[i - 1]->y / 1.12);
  }
  return line_plot_figure(spec);
}

}  // namespace attn
