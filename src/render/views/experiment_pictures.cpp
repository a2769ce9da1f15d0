// The experiments' pictures (experiment_pictures.hpp): every value drawn comes from a result.
#include "attn/render/views/experiment_pictures.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "attn/render/draw/line_plot.hpp"

namespace attn {
namespace {

std::string fmt(const char* format, double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, x);
  return buf;
}

std::vector<double> d_ks(const VarianceResult& r) {
  std::vector<double> x;
  for (const VarianceRow& row : r.rows) x.push_back(static_cast<double>(row.d_k));
  return x;
}

PlotSeries measured(std::string name, std::vector<double> x, std::vector<double> y, std::size_t color) {
  PlotSeries s;
  s.name = std::move(name);
  s.x = std::move(x);
  s.y = std::move(y);
  s.color = series_color(color);
  s.line = false;
  s.marker = Marker::circle;
  return s;
}

// The theory as a dashed grey line with its ±3 se band.
PlotSeries theory(std::string name, std::vector<double> x, std::vector<double> y, std::vector<double> lo,
                  std::vector<double> hi, std::string band_name) {
  PlotSeries s;
  s.name = std::move(name);
  s.x = std::move(x);
  s.y = std::move(y);
  s.color = rgb_from_hex(0x555555);
  s.dashed = true;
  s.line_width = 1.25;
  s.band_low = std::move(lo);
  s.band_high = std::move(hi);
  s.band_name = std::move(band_name);
  if (s.x.size() == 1) {  // one d_k: a line of one point is not drawn, so the theory is a marker
    s.marker = Marker::diamond;
    s.line = false;
  }
  return s;
}

std::string sweep_line(const VarianceResult& r) {
  return std::to_string(r.rows.front().samples) + " (q, k) pairs per d_k, seed " + std::to_string(r.config.seed);
}

// Log₂ over a sweep of widths; one width spans no octave, so its axes are plain (ticks 60, 80
// under a "log₂ scale" label would say what the axis does not do).
PlotAxis dk_axis(const VarianceResult& r) {
  if (r.rows.size() == 1) return {"d_k (key/query width)", AxisScale::linear};
  return {"d_k (key/query width, log₂ scale)", AxisScale::log2};
}

}  // namespace

Figure variance_figure(const VarianceResult& r) {
  const std::vector<double> x = d_ks(r);
  std::vector<double> var_u, var_s, th_u, lo_u, hi_u, ones, lo_s, hi_s;
  std::size_t inside = 0;
  for (const VarianceRow& row : r.rows) {
    var_u.push_back(row.var_unscaled);
    var_s.push_back(row.var_scaled);
    const double d = row.var_unscaled_theory, se_u = kBandSigmas * row.var_unscaled_se;
    th_u.push_back(d);
    // A log axis cannot show 0 or less: with very few samples the band's low edge is cut at d/64.
    lo_u.push_back(std::max(d - se_u, d / 64));
    hi_u.push_back(d + se_u);
    ones.push_back(row.var_scaled_theory);
    lo_s.push_back(row.var_scaled_theory - kBandSigmas * row.var_scaled_se);
    hi_s.push_back(row.var_scaled_theory + kBandSigmas * row.var_scaled_se);
    inside += row.within_band;
  }
  LinePlotSpec left;
  left.title = "Unscaled: Var(q · k) grows like d_k";
  left.series = {theory("theory Var = d_k", x, th_u, lo_u, hi_u, "± 3 standard errors"),
                 measured("measured", x, var_u, 0)};
  left.x = dk_axis(r);
  left.y = r.rows.size() == 1 ? PlotAxis{"Var(q · k)", AxisScale::linear}
                              : PlotAxis{"Var(q · k) (log₂ scale)", AxisScale::log2};
  left.width = 300;
  left.height = 240;
  left.legend = LegendPlace::upper_left;

  LinePlotSpec right = left;
  right.title = "Scaled: Var(q · k / √d_k) stays at 1";
  right.series = {theory("theory Var = 1", x, ones, lo_s, hi_s, "± 3 standard errors"),
                  measured("measured", x, var_s, 1)};
  right.y = {"Var(q · k / √d_k)", AxisScale::linear};
  right.legend = LegendPlace::automatic;
  return line_plot_row_figure(
      {left, right}, "Why attention divides by √d_k",
      "q, k with i.i.d. N(0, 1) entries: Var(q · k) = d_k, so the scores spread like √d_k unless scaled · " +
          std::to_string(inside) + " of " + std::to_string(r.rows.size()) +
          (r.rows.size() == 1 ? " d_k has its" : " d_k have all their") +
          " estimates within ± 3 standard errors of the theory · " + sweep_line(r));
}

Figure saturation_figure(const VarianceResult& r) {
  const std::vector<double> x = d_ks(r);
  const VarianceRow& first = r.rows.front();
  struct Stat {
    const char* title;
    const char* axis;
    double VarianceRow::*unscaled;
    double VarianceRow::*scaled;
    double uniform;
  };
  const double keys = static_cast<double>(first.keys);
  const Stat stats[] = {
      {"Largest weight max p", "max p (1 = one-hot)", &VarianceRow::max_weight_unscaled,
       &VarianceRow::max_weight_scaled, 1 / keys},
      {"Entropy H(p)", "H (nats)", &VarianceRow::entropy_unscaled, &VarianceRow::entropy_scaled, r.entropy_uniform},
      {"Gradient path ‖diag(p) − ppᵀ‖_F", "‖J‖_F (0 = no gradient)", &VarianceRow::jacobian_unscaled,
       &VarianceRow::jacobian_scaled, r.jacobian_uniform},
  };
  std::vector<LinePlotSpec> panels;
  for (const Stat& s : stats) {
    std::vector<double> u, sc;
    for (const VarianceRow& row : r.rows) {
      u.push_back(row.*s.unscaled);
      sc.push_back(row.*s.scaled);
    }
    PlotSeries su = measured("unscaled q · k", x, u, 3), ss = measured("scaled q · k / √d_k", x, sc, 0);
    su.line = ss.line = true;
    LinePlotSpec p;
    p.title = s.title;
    p.series = {su, ss};
    p.references = {ReferenceLine::horizontal(s.uniform, "uniform row, every p = 1/n")};
    p.legend = LegendPlace::none;
    p.x = dk_axis(r);
    p.y = {s.axis, AxisScale::linear, 0.0};
    p.width = 220;
    p.height = 200;
    panels.push_back(p);
  }
  panels[0].y.max = 1.0;
  panels.back().legend = LegendPlace::outside_right;  // one legend for all three, at the end
  std::string subtitle = "one query against n = " + std::to_string(first.keys) + " keys, averaged over " +
                         std::to_string(first.softmax_rows) + " rows per d_k: ";
  if (r.rows.size() == 1) {  // one width shows no trend: its numbers, and how to see the trend
    subtitle += "at d_k = " + std::to_string(first.d_k) + " max p is " + fmt("%.3g", first.max_weight_unscaled) +
                " unscaled, " + fmt("%.3g", first.max_weight_scaled) +
                " scaled · one d_k: give --dk several widths to watch max p → 1 and ‖J‖_F → 0 as d_k grows";
  } else {
    subtitle += "unscaled, max p → 1 and ‖J‖_F → 0 as d_k grows; scaled rows look alike for every d_k";
  }
  subtitle += " · seed " + std::to_string(r.config.seed);
  if (const auto rise = jacobian_rise(r)) subtitle += ". " + jacobian_rise_sentence(*rise);
  return line_plot_row_figure(panels, "Unscaled scores saturate softmax and starve its gradient", subtitle);
}

Figure temperature_figure(const TemperatureResult& r) {
  std::vector<double> t, h;
  for (const TemperaturePoint& p : r.points) {
    t.push_back(p.temperature);
    h.push_back(p.entropy);
  }
  const bool few = r.points.size() <= 24;
  LinePlotSpec left;
  left.title = "Weight of each key";
  for (std::size_t k = 0; k < r.scores.size(); ++k) {
    PlotSeries s;
    s.name = "score " + fmt("%g", r.scores[k]);
    s.x = t;
    for (const TemperaturePoint& p : r.points) s.y.push_back(p.weights[k]);
    s.marker = few ? Marker::circle : Marker::none;
    s.marker_size = 4.5;
    left.series.push_back(s);
  }
  // Past 10 keys a legend would not fit and tab10 repeats its colours: each line is coloured by
  // its score on viridis instead (said in the subtitle), and the lowest and highest are labelled.
  const bool many = r.scores.size() > 10;
  if (many) {
    const auto [lo, hi] = std::minmax_element(r.scores.begin(), r.scores.end());
    const Colormap viridis = Colormap::by_name("viridis");
    for (std::size_t k = 0; k < r.scores.size(); ++k) {
      left.series[k].color = viridis.at(*hi > *lo ? (r.scores[k] - *lo) / (*hi - *lo) : 0.5);
    }
    for (const std::size_t k : {std::size_t(lo - r.scores.begin()), std::size_t(hi - r.scores.begin())}) {
      // At the smallest T the two are far apart: the highest near weight 1, the lowest near 0.
      const double w = r.points.front().weights[k];
      left.labels.push_back({t.front(), w, "  score " + fmt("%g", r.scores[k]), 0, w > 0.5 ? 1.0 : 0.0,
                             left.series[k].color, 8});
    }
  }
  const double uniform = 1.0 / static_cast<double>(r.scores.size());
  left.references = {ReferenceLine::horizontal(uniform, "uniform 1/n")};
  const PlotAxis t_axis{"temperature T (log scale)", AxisScale::log10};
  left.x = t_axis;
  left.y = {"softmax(s / T) weight", AxisScale::linear, 0.0, 1.0};
  left.width = 300;
  left.height = 240;
  left.legend = r.scores.size() <= 10 ? LegendPlace::outside_right : LegendPlace::none;

  LinePlotSpec right;
  right.title = "Entropy rises with T";
  PlotSeries e;
  e.name = "entropy H(T)";
  e.x = t;
  e.y = h;
  e.color = series_color(0);
  e.marker = few ? Marker::circle : Marker::none;
  right.series = {e};
  right.references = {ReferenceLine::horizontal(r.entropy_at_infinity, "T → ∞: ln n = " + fmt("%.3f", r.entropy_at_infinity)),
                      ReferenceLine::horizontal(r.entropy_at_zero, "T → 0: " + fmt("%.3f", r.entropy_at_zero))};
  right.x = t_axis;
  right.y = {"entropy H (nats)", AxisScale::linear, 0.0};
  right.width = 260;
  right.height = 240;
  right.legend = LegendPlace::lower_right;
  std::string scores;
  for (double s : r.scores) scores += (scores.empty() ? "" : ", ") + fmt("%g", s);
  return line_plot_row_figure(
      {left, right}, "Temperature: a larger T flattens softmax",
      "p = softmax(s / T) for the scores (" + scores + ") · small T → one-hot on the largest score, large T → "
          "uniform · " +
          (r.points.size() < 2 ? std::string("one T: no step to compare (give several --t; dH/dT = Var_p(s) / T³ ≥ 0)")
                               : "entropy rises at every step: " + std::string(r.entropy_increasing ? "yes" : "no") +
                                     " (dH/dT = Var_p(s) / T³ ≥ 0)") +
          (many ? " · " + std::to_string(r.scores.size()) +
                      " keys: line colour is the key's score, dark (lowest) to yellow (highest)"
                : std::string()));
}

Figure complexity_figure(const ComplexityReport& r, std::optional<std::size_t> marked_n) {
  // The two groups whose crossing is n*, then softmax: the terms of one group have the same
  // power of n, so only their sum decides where one group overtakes the other.
  struct Term {
    const char* name;
    std::uint64_t (*flops)(const AttentionFlops&);
    std::size_t color;
    bool dashed;
  };
  const Term terms[] = {
      {"projections QKV + output (n·D²)", [](const AttentionFlops& f) { return f.qkv_proj + f.out_proj; }, 0, true},
      {"matmuls QKᵀ + PV (n²·D)", [](const AttentionFlops& f) { return f.scores + f.weighted_sum; }, 3, false},
      {"softmax (H·n²)", [](const AttentionFlops& f) { return f.softmax; }, 4, false}};
  LinePlotSpec p;
  // The total first, as a wide light band under the terms: at small n the projections are
  // almost all of it, and a total drawn on top hid their line and points entirely.
  PlotSeries total;
  total.name = "total";
  for (const ComplexityRow& row : r.rows) {
    total.x.push_back(static_cast<double>(row.n));
    total.y.push_back(static_cast<double>(row.flops.total));
  }
  total.color = rgb_from_hex(0xb4b4b4);
  total.line_width = 6;
  // A marker too: with one n (--n 1) there is no line to draw, only the point; larger than
  // the terms' circles, so its tips show around the projections' point.
  total.marker = r.rows.size() <= 16 ? Marker::diamond : Marker::none;
  total.marker_size = 10;
  p.series.push_back(total);
  for (const Term& term : terms) {
    PlotSeries s;
    s.name = term.name;
    for (const ComplexityRow& row : r.rows) {
      s.x.push_back(static_cast<double>(row.n));
      s.y.push_back(static_cast<double>(term.flops(row.flops)));
    }
    s.color = series_color(term.color);
    s.dashed = term.dashed;
    s.marker = r.rows.size() <= 16 ? Marker::circle : Marker::none;
    s.marker_size = 4.5;
    p.series.push_back(s);
  }
  const double n_star = r.crossover.matmuls;
  ReferenceLine cross = ReferenceLine::vertical(n_star, "crossover n* = " + fmt("%.0f", n_star));
  cross.color = rgb_from_hex(0x777777);
  p.references = {cross};
  if (marked_n) {  // demo: where the sentence itself lies on these curves
    ReferenceLine here = ReferenceLine::vertical(double(*marked_n), "this sentence: n = " + std::to_string(*marked_n));
    here.color = series_color(2);
    here.dashed = false;
    p.references.push_back(here);
  }
  p.x = {"sequence length n (tokens, log₂ scale)", AxisScale::log2};
  p.y = {"FLOPs per layer (log₁₀ scale)", AxisScale::log10};
  // Keep n* on the plot even when the sweep stops short of it.
  const double n_lo = total.x.front(), n_hi = total.x.back();
  if (n_star > 0 && (n_star < n_lo || n_star > n_hi)) {
    p.x.min = std::min(n_lo, n_star) / 1.3;
    p.x.max = std::max(n_hi, n_star) * 1.3;
  }
  p.width = 420;
  p.height = 280;
  p.legend = LegendPlace::outside_right;
  p.title = "FLOPs of one attention layer, term by term";
  const ComplexityRow& row = r.rows.front();
  p.subtitle = "D = d_model = " + std::to_string(row.d_model) + ", H = " + std::to_string(row.heads) +
               (row.causal ? ", causal (the n² matmuls halved)" : "") +
               " · FLOPs = 2 × multiply-adds · the n²·D matmuls overtake the n·D² projections at n* = " +
               fmt("%.0f", n_star) + " tokens: beyond it, the sequence length dominates the cost";
  return line_plot_figure(p);
}

Figure scaling_figure(const ScalingMeasurement& m) {
  PlotSeries t;
  t.name = "measured (fastest of " + std::to_string(m.repeats) + ")";
  for (const TimingPoint& p : m.points) {
    t.x.push_back(static_cast<double>(p.n));
    t.y.push_back(p.min_ms);
  }
  t.color = series_color(0);
  t.marker = Marker::circle;
  // The predicted n² line through the largest measured point: the slopes compare directly.
  const double n_last = t.x.back(), t_last = t.y.back();
  ReferenceLine n2 = ReferenceLine::power_law(t_last / std::pow(n_last, m.predicted_exponent), m.predicted_exponent,
                                              "predicted ∝ n" + std::string(m.predicted_exponent == 2 ? "²" : "^p") + ", through the largest n");
  // The least-squares line passes through the mean of (ln n, ln t).
  double mean_ln_n = 0, mean_ln_t = 0;
  for (std::size_t i = 0; i < t.x.size(); ++i) {
    mean_ln_n += std::log(t.x[i]) / static_cast<double>(t.x.size());
    mean_ln_t += std::log(t.y[i]) / static_cast<double>(t.x.size());
  }
  ReferenceLine fit = ReferenceLine::power_law(std::exp(mean_ln_t - m.exponent * mean_ln_n), m.exponent,
                                               "fitted ∝ n^" + fmt("%.2f", m.exponent));
  fit.color = series_color(0);
  LinePlotSpec p;
  p.series = {t};
  p.references = {n2, fit};
  p.x = {"sequence length n (tokens, log₂ scale)", AxisScale::log2};
  p.y = {"time per call (ms, log₁₀ scale)", AxisScale::log10};
  p.width = 380;
  p.height = 260;
  p.legend = LegendPlace::automatic;  // a corner only where it covers no point, else outside
  p.title = "Measured: attention time grows like n^" + fmt("%.2f", m.exponent);
  p.subtitle = "attn::sdpa (float64 reference), one head of d = " + std::to_string(m.head_dim) +
               " · least-squares slope on log-log axes, predicted " + fmt("%g", m.predicted_exponent) +
               " for large n · timings differ from machine to machine";
  return line_plot_figure(p);
}

}  // namespace attn
