// The experiments' pictures, decoded back from PNG: a measured point lands where the axes put
// it (log2-log2 for the unscaled variance, linear for the scaled one), in its series' colour.
// The results are written by hand here, so the expected places follow from the axis rules
// of line_plot.hpp alone: limits = the data's range widened by 5% on each side, in the axis'
// own scale.
#include <doctest/doctest.h>

#include "attn/render/views/experiment_pictures.hpp"
#include "attn/render/draw/line_plot.hpp"
#include "attn/render/views/train_pictures.hpp"
#include "attn/lessons/concepts/temperature.hpp"

#include <algorithm>
#include <cmath>
#include "picture_support.hpp"

using namespace attn;
using namespace attn::test;

namespace {

VarianceResult hand_made_sweep() {
  VarianceResult r;
  r.config.seed = 1;
  for (std::size_t d : {8, 64, 512}) {
    VarianceRow row;
    row.d_k = d;
    row.samples = 1000;
    row.keys = 16;
    row.softmax_rows = 10;
    row.var_unscaled = row.var_unscaled_theory = static_cast<double>(d);
    row.var_unscaled_se = 1e-9;  // a band too thin to widen the axis
    row.var_scaled = d == 64 ? 1.02 : 1.0;
    row.var_scaled_se = 0.01;  // band 1 +- 0.03
    row.max_weight_unscaled = d == 64 ? 0.5 : 0.9;
    row.max_weight_scaled = 0.1;
    row.entropy_unscaled = 1;
    row.entropy_scaled = 2;
    row.jacobian_unscaled = 0.1;
    row.jacobian_scaled = 0.2;
    r.rows.push_back(row);
  }
  r.entropy_uniform = 2.77;
  r.jacobian_uniform = 0.24;
  return r;
}

Rgb8 at_fraction(const DecodedPng& img, const PlotRect& r, double fx, double fy, double scale) {
  return img.pixel(r.x + fx * r.width, r.y + (1 - fy) * r.height, scale);
}

}  // namespace

TEST_CASE("experiment pictures: the variance plot puts each measurement where its axes say") {
  const Figure f = variance_figure(hand_made_sweep());
  REQUIRE(f.plots.size() == 2);
  const DecodedPng img = DecodedPng::from_bytes(render_png(f, 2));
  REQUIRE(img.ok());
  // Left, log2-log2: x and y both span log2 3..9 widened to 2.7..9.3; (64, 64) is the centre.
  const double centre = (6 - 2.7) / 6.6;
  CHECK(near(at_fraction(img, f.plots[0], centre, centre, 2), to_rgb8(series_color(0)), 6));
  CHECK(!near(at_fraction(img, f.plots[0], centre, 0.8, 2), to_rgb8(series_color(0)), 40));  // not at 2^8.3
  // Right, linear y: the band 0.97..1.03 widened to 0.967..1.033; the point 1.02 at d_k = 64.
  const double fy = (1.02 - 0.967) / 0.066;
  CHECK(near(at_fraction(img, f.plots[1], centre, fy, 2), to_rgb8(series_color(1)), 6));
  // Mirrored below 1 there is only the grey band, not the point.
  CHECK(!near(at_fraction(img, f.plots[1], centre, 1 - fy, 2), to_rgb8(series_color(1)), 40));
}

TEST_CASE("experiment pictures: the saturation plot draws max p on a 0..1 axis, unscaled in red") {
  const Figure f = saturation_figure(hand_made_sweep());
  REQUIRE(f.plots.size() == 3);
  const DecodedPng img = DecodedPng::from_bytes(render_png(f, 2));
  REQUIRE(img.ok());
  const double centre = (6 - 2.7) / 6.6;
  CHECK(near(at_fraction(img, f.plots[0], centre, 0.5, 2), to_rgb8(series_color(3)), 6));
  CHECK(near(at_fraction(img, f.plots[0], centre, 0.1, 2), to_rgb8(series_color(0)), 6));
}

TEST_CASE("experiment pictures: the complexity plot puts the softmax FLOPs where log-log axes say") {
  ComplexityConfig c;
  c.ns = {64, 256, 1024, 4096};  // n* = 2 D = 1024 lies inside: no forced x limits
  const ComplexityReport r = run_complexity(c);
  const Figure f = complexity_figure(r);
  REQUIRE(f.plots.size() == 1);
  const DecodedPng img = DecodedPng::from_bytes(render_png(f, 2));
  REQUIRE(img.ok());
  // Axis rule (line_plot.hpp): the data's range in the axis' own scale, widened 5% a side.
  // x: log2 n from 6 to 12. y: log10 FLOPs from the smallest softmax count (n = 64) to the
  // largest total (n = 4096), counted here from the closed forms, not read from the program.
  const double D = 512, H = 8;
  auto softmax = [&](double n) { return 3 * H * n * n; };
  auto total = [&](double n) { return 8 * n * D * D + 4 * n * n * D + softmax(n); };
  const double y_lo = std::log10(softmax(64)), y_hi = std::log10(total(4096));
  const double y_pad = 0.05 * (y_hi - y_lo), x_pad = 0.05 * 6;
  auto fx = [&](double n) { return (std::log2(n) - 6 + x_pad) / (6 + 2 * x_pad); };
  auto fy = [&](double v) { return (std::log10(v) - y_lo + y_pad) / (y_hi - y_lo + 2 * y_pad); };
  const Rgb8 softmax_colour = to_rgb8(series_color(4));
  for (double n : {64.0, 4096.0}) {
    CAPTURE(n);
    CHECK(near(at_fraction(img, f.plots[0], fx(n), fy(softmax(n)), 2), softmax_colour, 6));
  }
  // And not where a linear y axis would have put it.
  CHECK(!near(at_fraction(img, f.plots[0], fx(4096), softmax(4096) / total(4096), 2), softmax_colour, 40));
}

TEST_CASE("experiment pictures: the temperature plot puts the entropy where its axes say") {
  const std::vector<double> scores = {2, 1, 0.5, 0, -1};
  const TemperatureResult r = run_temperature(scores, {0.1, 1, 10});
  const Figure f = temperature_figure(r);
  REQUIRE(f.plots.size() == 2);
  const DecodedPng img = DecodedPng::from_bytes(render_png(f, 2));
  REQUIRE(img.ok());
  // Entropy of softmax(s / T), computed here from the formula.
  auto entropy = [&](double T) {
    double z = 0, h = 0;
    for (double s : scores) z += std::exp(s / T);
    for (double s : scores) {
      const double p = std::exp(s / T) / z;
      h -= p * std::log(p);
    }
    return h;
  };
  // Right panel: x log10 T over -1..1 widened 5% a side; y from its fixed 0 up to the largest
  // value drawn, ln 5 (the T -> infinity guide), plus 5% of that range.
  const double y_top = std::log(5.0) * 1.05;
  for (double T : {1.0, 10.0}) {  // (at T = 0.1 the entropy, 5e-4, sits on the axis frame)
    CAPTURE(T);
    const double fx = (std::log10(T) + 1.1) / 2.2;
    CHECK(near(at_fraction(img, f.plots[1], fx, entropy(T) / y_top, 2), to_rgb8(series_color(0)), 6));
  }
  // Entropy rises with T: at T = 10 the point sits higher than at T = 0.1.
  CHECK(entropy(10) > entropy(0.1));
}

TEST_CASE("experiment pictures: with one n the total is a visible marker, and demo's own n is a line") {
  ComplexityConfig c;
  c.ns = {1};  // n* = 1024 outside: x runs from 1 / 1.3 to 1024 x 1.3
  const Figure f = complexity_figure(run_complexity(c));
  const DecodedPng img = DecodedPng::from_bytes(render_png(f, 2));
  REQUIRE(img.ok());
  const double D = 512, H = 8;
  const double softmax = 3 * H, total = 8 * D * D + 4 * D + softmax;
  const double x_lo = std::log2(1 / 1.3), x_hi = std::log2(1024 * 1.3);
  const double y_lo = std::log10(softmax), y_hi = std::log10(total), y_pad = 0.05 * (y_hi - y_lo);
  const double fy = (std::log10(total) - y_lo + y_pad) / (y_hi - y_lo + 2 * y_pad);
  // The projections' blue point lies on the total's (they are 99.9 % of it): both must show.
  // The projections' circle is drawn over the total's larger grey diamond, whose tips stick out
  // 3.5 points above and below the circle's centre.
  const PlotRect& a = f.plots[0];
  const double px = a.x + (0 - x_lo) / (x_hi - x_lo) * a.width, py = a.y + (1 - fy) * a.height;
  const Rgb8 centre = img.pixel(px, py, 2), tip = img.pixel(px, py - 3.5, 2);
  CAPTURE(centre);
  CAPTURE(tip);
  CHECK(near(centre, to_rgb8(series_color(0)), 12));
  CHECK(near(tip, Rgb8{0xb4, 0xb4, 0xb4}, 12));
  // With four n the projections' line and points at n = 64 (94 % of the total: 8 n D² against
  // 4 n² D + 3 H n²) sit on the total's line, and stay on top of it.
  {
    ComplexityConfig four;
    four.ns = {64, 256, 1024, 4096};
    const Figure g = complexity_figure(run_complexity(four));
    const DecodedPng gi = DecodedPng::from_bytes(render_png(g, 2));
    auto total4 = [&](double n) { return 8 * n * D * D + 4 * n * n * D + 3 * H * n * n; };
    const double lo = std::log10(3 * H * 64 * 64), hi = std::log10(total4(4096)), pad = 0.05 * (hi - lo);
    const double gy = (std::log10(8 * 64 * D * D) - lo + pad) / (hi - lo + 2 * pad);
    const PlotRect& b = g.plots[0];
    const Rgb8 point = gi.pixel(b.x + 0.3 / 6.6 * b.width, b.y + (1 - gy) * b.height, 2);
    CAPTURE(point);
    CHECK(near(point, to_rgb8(series_color(0)), 12));
  }

  c.ns = {64, 256, 1024, 4096};
  const ComplexityReport r = run_complexity(c);
  const double fx = (std::log2(100.0) - 6 + 0.3) / 6.6;  // x: log2 6..12 widened 5 % a side
  const Rgb8 green = to_rgb8(series_color(2));
  const Figure marked = complexity_figure(r, 100);
  CHECK(near(at_fraction(DecodedPng::from_bytes(render_png(marked, 2)), marked.plots[0], fx, 0.5, 2), green, 10));
  const Figure plain = complexity_figure(r);
  CHECK(!near(at_fraction(DecodedPng::from_bytes(render_png(plain, 2)), plain.plots[0], fx, 0.5, 2), green, 40));
}

TEST_CASE("experiment pictures: the measured-scaling legend never covers a point") {
  ScalingMeasurement m;
  m.head_dim = 16;
  m.repeats = 3;
  m.exponent = 0.1;
  // The first point sits in the upper-left corner, where the legend used to be.
  for (auto [n, ms] : {std::pair{64, 10.0}, {128, 0.5}, {256, 1.0}, {512, 2.0}}) m.points.push_back({std::size_t(n), ms, ms});
  const Figure f = scaling_figure(m);
  const DecodedPng img = DecodedPng::from_bytes(render_png(f, 2));
  REQUIRE(img.ok());
  const double fx = 0.15 / 3.3, fy = (std::log10(20.0) + 0.065) / (std::log10(20.0) * 1.1);  // log2 6..9, log10 0.5..10
  CHECK(near(at_fraction(img, f.plots[0], fx, fy, 2), to_rgb8(series_color(0)), 10));
}

TEST_CASE("experiment pictures: with one d_k the theory is a marker and its band a bar the y axis spans") {
  VarianceResult r = hand_made_sweep();
  r.rows.resize(1);
  r.rows[0].d_k = r.rows[0].var_unscaled_theory = 64;
  r.rows[0].var_scaled = 1.02;  // right panel, linear y: the band 0.97..1.03 widened 5 % a side
  const Figure f = variance_figure(r);
  const DecodedPng img = DecodedPng::from_bytes(render_png(f, 2));
  REQUIRE(img.ok());
  const auto fy = [](double y) { return (y - 0.967) / 0.066; };
  const Rgb8 theory = at_fraction(img, f.plots[1], 0.5, fy(1.0), 2), band = at_fraction(img, f.plots[1], 0.5, fy(0.98), 2);
  CAPTURE(theory);
  CAPTURE(band);
  CHECK(near(theory, Rgb8{0x55, 0x55, 0x55}, 12));
  CHECK((band.r == band.g && band.g == band.b && band.r > 150 && band.r < 240));  // grey tint, neither white nor ink
  CHECK(near(at_fraction(img, f.plots[1], 0.5, fy(1.02), 2), to_rgb8(series_color(1)), 12));
  const std::vector<std::string> texts = drawn_texts(f);
  CHECK(std::count(texts.begin(), texts.end(), "± 3 standard errors") == 2);  // in both legends
  // One width spans no octave: plain axes, not a "log₂ scale" with linear ticks.
  CHECK(std::count(texts.begin(), texts.end(), "d_k (key/query width)") == 2);
  for (const std::string& t : texts) CHECK(t.find("log₂") == std::string::npos);
  const Figure s = saturation_figure(r);
  CHECK(s.subtitle.find("one d_k: give --dk several widths") != std::string::npos);
  CHECK(s.subtitle.find("as d_k grows; scaled rows look alike") == std::string::npos);
}

TEST_CASE("experiment pictures: with one T the temperature plot compares no steps, rather than saying no") {
  const Figure one = temperature_figure(run_temperature({3, 1, 0.2}, {1}));
  CHECK(one.subtitle.find("one T: no step to compare") != std::string::npos);
  CHECK(one.subtitle.find("rises at every step: no") == std::string::npos);
  const Figure many = temperature_figure(run_temperature({3, 1, 0.2}, {0.5, 1, 2}));
  CHECK(many.subtitle.find("rises at every step: yes") != std::string::npos);
}

TEST_CASE("train head pictures say their one linear scale, so a pale untrained head reads as spread, not empty") {
  Tensor3 a = Tensor3::from_shape({1, 3, 3});
  a.fill(0);
  for (std::size_t i = 0; i < 3; ++i)
    for (std::size_t j = 0; j <= i; ++j) a(0, i, j) = 1.0f / float(i + 1);
  const Figure f = train_heads_figure({a}, {"0", "1", "2"}, "Every head before training", "rows: query", "Blues");
  CHECK(f.subtitle.find("one linear colour scale 0 to 1") != std::string::npos);
}
