// The trade-off picture (tradeoff_picture.hpp).
#include "attn/render/views/tradeoff_picture.hpp"

#include <algorithm>
#include <cmath>

#include "attn/io/number_format.hpp"
#include "attn/render/draw/line_plot.hpp"

namespace attn {
namespace {

// A log axis cannot show 0: an error of exactly 0 would be drawn at 1e-12.
constexpr double kDrawnZero = 1e-12;

std::vector<const TradeoffRun*> runs_at(const TradeoffResult& r, std::size_t n, const std::string& kind) {
  std::vector<const TradeoffRun*> out;
  for (const TradeoffRun& x : r.runs)
    if (x.n == n && x.inputs == kind) out.push_back(&x);
  return out;
}

// Speed against error at one n: one disc per method, its area proportional to the peak memory.
LinePlotSpec scatter_panel(const TradeoffResult& r, std::size_t n, const std::string& kind) {
  const std::vector<const TradeoffRun*> runs = runs_at(r, n, kind);
  double most = 1;
  for (const TradeoffRun& x : r.runs) most = std::max(most, x.peak_bytes);  // one scale for every panel
  LinePlotSpec p;
  p.title = kind + " inputs, n = " + std::to_string(n) + " (disc area = peak memory)";
  p.x = {"time per call (ms)", AxisScale::log10};
  p.y = {"error against exact attention (relative, Frobenius)", AxisScale::log10};
  PlotSeries performer;  // the features' line, drawn under the discs
  performer.color = series_color(4);
  performer.line_width = 1;
  performer.dashed = true;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const TradeoffRun& x = *runs[i];
    PlotSeries s;
    s.x = {x.ms};
    s.y = {std::max(x.error, kDrawnZero)};
    s.line = false;
    s.marker = Marker::circle;
    s.marker_size = 6 + 22 * std::sqrt(x.peak_bytes / most);
    s.color = series_color(i);
    p.series.push_back(s);
    PlotLabel label;  // right of the disc's centre, above it
    label.x = x.ms, label.y = s.y[0], label.text = "  " + x.method;
    label.anchor_x = 0, label.anchor_y = i % 2 ? -0.2 : 1.2, label.size = 8;  // above, below, above...
    p.labels.push_back(label);
    if (x.family == "performer") performer.x.push_back(x.ms), performer.y.push_back(s.y[0]);
  }
  if (performer.x.size() > 1) {  // in the order of --features: how the error moves with m
    std::vector<const TradeoffRun*> p_runs;
    for (const TradeoffRun* x : runs)
      if (x->family == "performer") p_runs.push_back(x);
    performer.name = "performer, " + p_runs.front()->method.substr(p_runs.front()->method.find(' ') + 1) + " → " + p_runs.back()->method.substr(p_runs.back()->method.find(' ') + 1) +
                     ": error " + format_g(p_runs.front()->error, 2) + " → " + format_g(p_runs.back()->error, 2);
    p.series.insert(p.series.begin(), performer);
  }
  double worst = kDrawnZero, slowest = 0;
  for (const TradeoffRun* x : runs) worst = std::max(worst, x->error), slowest = std::max(slowest, x->ms);
  p.y.max = worst * 30;   // room above the highest disc for its label
  p.x.max = slowest * 4;  // and right of the slowest one
  p.legend = LegendPlace::lower_right;
  p.width = 420, p.height = 300;
  return p;
}

// Time against n, log-log, each method's line named with its fitted exponent (the first kind
// of inputs: time does not depend on the values).
LinePlotSpec scaling_panel(const TradeoffResult& r) {
  const std::string& kind = r.config.inputs.front();
  LinePlotSpec p;
  p.title = "time against n, " + kind + " inputs (fitted exponent in the legend)";
  p.x = {"sequence length n", AxisScale::log2, std::nullopt, std::nullopt, true};
  p.y = {"time per call (ms)", AxisScale::log10};
  std::vector<std::string> order;
  for (const TradeoffRun& x : r.runs)
    if (std::find(order.begin(), order.end(), x.method) == order.end()) order.push_back(x.method);
  for (std::size_t i = 0; i < order.size(); ++i) {
    PlotSeries s;
    s.name = order[i];
    for (const TradeoffFit& f : r.fits)
      if (f.method == order[i]) s.name += ": n^" + format_fixed(f.exponent, 2);
    for (const TradeoffRun& x : r.runs)
      if (x.method == order[i] && x.inputs == kind) s.x.push_back(double(x.n)), s.y.push_back(std::max(x.ms, 1e-6));
    s.marker = Marker::circle;
    s.marker_size = 4;
    s.color = series_color(i);
    p.series.push_back(s);
  }
  // n^2 through flash's first point, n through linear's: the big-O lines to hold them against
  for (const PlotSeries& s : p.series) {
    if (r.config.ns.size() < 2) break;  // one n: no slope to compare
    if (s.name.rfind("flash", 0) == 0) {
      p.references.push_back(ReferenceLine::power_law(s.y[0] / std::pow(s.x[0], 2), 2, "∝ n² (through flash's first point)"));
      p.references.back().color = rgb_from_hex(0x333333);
    }
    if (s.name.rfind("linear", 0) == 0) {
      p.references.push_back(ReferenceLine::power_law(s.y[0] / s.x[0], 1, "∝ n (through linear's first point)"));
      p.references.back().color = rgb_from_hex(0xaaaaaa);
    }
  }
  p.legend = LegendPlace::outside_right;
  p.width = 360, p.height = 300;
  return p;
}

}  // namespace

Figure tradeoff_figure(const TradeoffResult& r) {
  const std::size_t n = *std::max_element(r.config.ns.begin(), r.config.ns.end());
  std::vector<LinePlotSpec> panels;
  for (const std::string& kind : r.config.inputs) panels.push_back(scatter_panel(r, n, kind));
  panels.push_back(scaling_panel(r));
  return line_plot_row_figure(panels,
                              "Efficient attention on this machine: speed, error and memory",
                              "one head, d = " + std::to_string(r.config.head_dim) +
                                  "; x: time per call, y: error against exact attention with the same mask (causal; "
                                  "linformer bidirectional); flash float32, the others float64 as the engine has them");
}

}  // namespace attn
