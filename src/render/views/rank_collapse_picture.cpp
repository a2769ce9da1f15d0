// The rank-collapse picture (rank_collapse_picture.hpp).
#include "attn/render/views/rank_collapse_picture.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "attn/render/draw/line_plot.hpp"

namespace attn {
namespace {

// A log axis cannot show 0: an r of exactly 0 (every row equal to the last bit) is drawn at 1e-18.
constexpr double kDrawnZero = 1e-18;

std::string fmt(const char* format, double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, x);
  return buf;
}

const char* panel_title(StackSetting s) {
  switch (s) {
    case StackSetting::attention_only: return "Attention only: X ← SA(X)";
    case StackSetting::skip: return "With skips: X ← X + SA(X)";
    case StackSetting::mlp: return "With an MLP: X ← MLP(SA(X))";
    case StackSetting::skip_mlp: return "Both: + SA, then + MLP";
  }
  return "";
}

LinePlotSpec residual_panel(const std::string& title, const std::vector<double>& r, std::size_t color) {
  LinePlotSpec p;
  p.title = title;
  PlotSeries s;
  s.name = "measured r_l";
  for (std::size_t l = 0; l < r.size(); ++l) {
    s.x.push_back(static_cast<double>(l));
    s.y.push_back(std::max(r[l], kDrawnZero));
  }
  s.color = series_color(color);
  s.marker = Marker::circle;
  s.marker_size = 4.5;
  p.series.push_back(s);
  ReferenceLine floor = ReferenceLine::horizontal(kRoundoffFloor, "float64 round-off (1e-12)");
  floor.color = rgb_from_hex(0x000000);
  floor.dashed = false;  // solid black: not the fit (dashed grey), not a series colour
  p.references = {floor};
  p.x = {"layer l", AxisScale::linear, 0.0, static_cast<double>(r.size() - 1), true};
  p.y = {"r_l = ‖X − 1x̄ᵀ‖_F / ‖X‖_F (log)", AxisScale::log10, 1e-18, 2.0};
  p.width = 200;
  p.height = 220;
  p.legend = LegendPlace::none;
  return p;
}

// The fitted -ln r_l = e^(gamma + delta l) over the fit's layers, as a dashed line.
PlotSeries doubly_exponential_curve(const CollapseFit& f) {
  PlotSeries s;
  s.name = "fit: −ln r_l ∝ " + fmt("%.2g", f.growth) + "^l";
  for (double l = static_cast<double>(f.first); l <= static_cast<double>(f.last) + 1e-9; l += 0.1) {
    s.x.push_back(l);
    s.y.push_back(std::max(std::exp(-std::exp(f.gamma + f.delta * l)), kDrawnZero));
  }
  s.color = rgb_from_hex(0x555555);
  s.dashed = true;
  s.line_width = 1.25;
  return s;
}

}  // namespace

Figure rank_collapse_figure(const RankCollapseResult& r) {
  std::vector<LinePlotSpec> panels;
  for (std::size_t i = 0; i < r.settings.size(); ++i) {
    const SettingResidual& s = r.settings[i];
    LinePlotSpec p = residual_panel(panel_title(s.setting), s.r, i);
    if (i == 0 && s.fit.points >= 2) p.series.push_back(doubly_exponential_curve(s.fit));
    panels.push_back(p);
  }
  if (r.model) panels.push_back(residual_panel("Trained toy model (skip, causal)", r.model->stream.r, 4));
  panels.front().legend = LegendPlace::automatic;  // one legend, on the panel with the fit

  const SettingResidual& a = r.settings[0];
  const SettingResidual& skip = r.settings[1];
  std::string subtitle = std::to_string(r.config.layers) + " layers, n = " + std::to_string(r.config.tokens) +
                         " tokens, D = " + std::to_string(r.config.d_model) + ", " + std::to_string(r.config.heads) +
                         " heads, seed " + std::to_string(r.config.seed) + " · pure attention ";
  if (a.layer_at_floor)
    subtitle += "reaches round-off at layer " + std::to_string(*a.layer_at_floor);
  else
    subtitle += "ends at r = " + fmt("%.2g", a.r.back());
  if (a.fit.points >= 2)
    subtitle += ", −ln r grows ×" + fmt("%.2g", a.fit.growth) + " per layer (" +
                (a.fit.doubly_exponential ? "doubly exponential" : "not shown doubly exponential") + ")";
  subtitle += " · with skips the smallest r is " + fmt("%.2g", skip.smallest);
  if (r.model) subtitle += " · trained model: smallest r " + fmt("%.2g", r.model->stream.smallest);
  return line_plot_row_figure(panels, "Rank collapse: pure attention makes every token the same, skips stop it",
                              subtitle);
}

}  // namespace attn
