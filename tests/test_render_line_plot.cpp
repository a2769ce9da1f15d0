// Line plots, decoded back from PNG: a data point lands where its axes say (linear, log2 and
// log10), series get different colours, bands and reference lines are where they should be,
// ticks are powers of two on a log2 axis, and the SVG is well-formed.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "attn/engine/core/error.hpp"
#include "attn/lessons/models/train.hpp"
#include "attn/render/draw/line_plot.hpp"
#include "attn/render/views/train_pictures.hpp"
#include "picture_support.hpp"

using namespace attn;
using namespace attn::test;

namespace {

const Rgb kRed{1, 0, 0}, kBlue{0, 0, 1}, kGreen{0, 0.5, 0};

// One big square marker, no line: the pixel under (x, y) must be its colour.
PlotSeries dot(double x, double y, Rgb color) {
  PlotSeries s;
  s.x = {x};
  s.y = {y};
  s.line = false;
  s.marker = Marker::square;
  s.marker_size = 8;
  s.color = color;
  return s;
}

LinePlotSpec fixed_axes(AxisScale xs, double x0, double x1, AxisScale ys, double y0, double y1) {
  LinePlotSpec s;
  s.x.title = "x";
  s.x.scale = xs;
  s.x.min = x0;
  s.x.max = x1;
  s.y.title = "y";
  s.y.scale = ys;
  s.y.min = y0;
  s.y.max = y1;
  s.title = "test";
  s.legend = LegendPlace::none;
  return s;
}

// The colour at a fraction (fx from the left, fy from the bottom) of the plot area.
Rgb8 at_fraction(const DecodedPng& img, const PlotRect& r, double fx, double fy, double scale) {
  return img.pixel(r.x + fx * r.width, r.y + (1 - fy) * r.height, scale);
}

struct Box {
  double x0 = 0, y0 = 0, x1 = 0, y1 = 0;
};

// The legend's box as drawn: around its entries' texts, whose swatches lie 30 points to their
// left inside a 6-point padding. REQUIRE that every entry was drawn.
Box legend_box(const std::vector<DrawnText>& drawn, const std::vector<std::string>& entries) {
  Box b{1e300, 1e300, -1e300, -1e300};
  std::size_t found = 0;
  for (const DrawnText& d : drawn) {
    if (std::find(entries.begin(), entries.end(), d.text) == entries.end()) continue;
    ++found;
    b = {std::min(b.x0, d.x - 36), std::min(b.y0, d.y - 6), std::max(b.x1, d.x + d.width + 6),
         std::max(b.y1, d.y + d.height + 6)};
  }
  REQUIRE(found == entries.size());
  return b;
}

// Whether the segment a-b passes through the box, sampled every quarter point.
bool crosses(Canvas::Point a, Canvas::Point b, const Box& box) {
  const double n = std::max(1.0, std::ceil(4 * std::hypot(b.x - a.x, b.y - a.y)));
  for (double k = 0; k <= n; ++k) {
    const double x = a.x + k / n * (b.x - a.x), y = a.y + k / n * (b.y - a.y);
    if (x >= box.x0 && x <= box.x1 && y >= box.y0 && y <= box.y1) return true;
  }
  return false;
}

// A panel's data-to-point mapping read back from two of its drawn tick labels per axis: the
// y labels end left of the plot area, the x labels start below it.
struct ReadAxes {
  double x_value[2], x_at[2], y_value[2], y_at[2];
  Canvas::Point at(double x, double y) const {
    return {x_at[0] + (x - x_value[0]) * (x_at[1] - x_at[0]) / (x_value[1] - x_value[0]),
            y_at[0] + (y - y_value[0]) * (y_at[1] - y_at[0]) / (y_value[1] - y_value[0])};
  }
};

ReadAxes read_axes(const std::vector<DrawnText>& drawn, const PlotRect& r) {
  std::vector<std::pair<double, double>> xs, ys;  // (value, centre)
  for (const DrawnText& d : drawn) {
    if (d.text.empty() || d.text.find_first_not_of("0123456789.") != std::string::npos) continue;
    const double v = std::stod(d.text);
    const double cx = d.x + d.width / 2, cy = d.y + d.height / 2;
    if (d.x + d.width < r.x && d.x + d.width > r.x - 12 && cy >= r.y - 8 && cy <= r.y + r.height + 8) ys.push_back({v, cy});
    if (d.y > r.y + r.height && d.y < r.y + r.height + 12 && cx >= r.x - 8 && cx <= r.x + r.width + 8) xs.push_back({v, cx});
  }
  REQUIRE(xs.size() >= 2);
  REQUIRE(ys.size() >= 2);
  return {{xs.front().first, xs.back().first}, {xs.front().second, xs.back().second},
          {ys.front().first, ys.back().first}, {ys.front().second, ys.back().second}};
}

// Every segment of the series, and every vertical or horizontal reference, against the box.
int crossings(const ReadAxes& axes, const PlotRect& r, const std::vector<PlotSeries>& series,
              const std::vector<ReferenceLine>& references, const Box& box) {
  int n = 0;
  for (const PlotSeries& s : series)
    for (std::size_t i = 0; i + 1 < s.x.size(); ++i)
      n += crosses(axes.at(s.x[i], s.y[i]), axes.at(s.x[i + 1], s.y[i + 1]), box);
  for (const ReferenceLine& ref : references) {
    if (ref.kind == ReferenceLine::Kind::vertical)
      n += crosses({axes.at(ref.value, 0).x, r.y}, {axes.at(ref.value, 0).x, r.y + r.height}, box);
    if (ref.kind == ReferenceLine::Kind::horizontal)
      n += crosses({r.x, axes.at(0, ref.value).y}, {r.x + r.width, axes.at(0, ref.value).y}, box);
  }
  return n;
}

}  // namespace

TEST_CASE("line plot: points land where log2 and log10 axes put them") {
  // x on log2 from 1 to 16 (four octaves), y on log10 from 1 to 10^4 (four decades).
  LinePlotSpec s = fixed_axes(AxisScale::log2, 1, 16, AxisScale::log10, 1, 1e4);
  s.series = {dot(4, 100, kRed), dot(2, 10, kBlue), dot(8, 1000, kGreen)};
  const Figure f = line_plot_figure(s);
  REQUIRE(f.plots.size() == 1);
  const PlotRect& r = f.plots[0];
  for (double scale : {1.0, 2.0}) {
    CAPTURE(scale);
    const DecodedPng img = DecodedPng::from_bytes(render_png(f, scale));
    REQUIRE(img.ok());
    // log2(4) = 2 of 4 octaves, log10(100) = 2 of 4 decades: the middle of the plot area.
    CHECK(at_fraction(img, r, 0.5, 0.5, scale) == to_rgb8(kRed));
    CHECK(at_fraction(img, r, 0.25, 0.25, scale) == to_rgb8(kBlue));
    CHECK(at_fraction(img, r, 0.75, 0.75, scale) == to_rgb8(kGreen));
    // Where a linear axis would have put x = 4 (a fifth of the way) there is nothing red.
    CHECK_FALSE(at_fraction(img, r, 0.2, 0.5, scale) == to_rgb8(kRed));
  }
}

TEST_CASE("line plot: linear axes map min..max onto the plot area's edges, y growing upwards") {
  LinePlotSpec s = fixed_axes(AxisScale::linear, 0, 10, AxisScale::linear, -1, 1);
  s.series = {dot(2.5, 0.5, kRed), dot(7.5, -0.5, kBlue)};
  const Figure f = line_plot_figure(s);
  const DecodedPng img = DecodedPng::from_bytes(render_png(f, 2));
  CHECK(at_fraction(img, f.plots[0], 0.25, 0.75, 2) == to_rgb8(kRed));
  CHECK(at_fraction(img, f.plots[0], 0.75, 0.25, 2) == to_rgb8(kBlue));
}

TEST_CASE("line plot: series without a colour take matplotlib's tab10 cycle, each its own") {
  CHECK(to_rgb8(series_color(0)) == Rgb8{0x1f, 0x77, 0xb4});
  CHECK(to_rgb8(series_color(1)) == Rgb8{0xff, 0x7f, 0x0e});
  CHECK(to_rgb8(series_color(10)) == to_rgb8(series_color(0)));
  // Two thick horizontal lines at y = 1 and y = 2 of [0, 3]: at 1/3 and 2/3 of the height.
  LinePlotSpec s = fixed_axes(AxisScale::linear, 0, 1, AxisScale::linear, 0, 3);
  for (double y : {1.0, 2.0}) {
    PlotSeries line;
    line.name = "y = " + std::to_string(static_cast<int>(y));
    line.x = {0, 1};
    line.y = {y, y};
    line.line_width = 4;
    s.series.push_back(line);
  }
  const Figure f = line_plot_figure(s);
  const DecodedPng img = DecodedPng::from_bytes(render_png(f, 2));
  const Rgb8 first = at_fraction(img, f.plots[0], 0.5, 1.0 / 3, 2), second = at_fraction(img, f.plots[0], 0.5, 2.0 / 3, 2);
  CHECK(first == Rgb8{0x1f, 0x77, 0xb4});
  CHECK(second == Rgb8{0xff, 0x7f, 0x0e});
  CHECK_FALSE(first == second);
}

TEST_CASE("line plot: a band is shaded in its series' colour, a power law is straight on log-log") {
  LinePlotSpec s = fixed_axes(AxisScale::log10, 1, 100, AxisScale::log10, 1, 1e4);
  PlotSeries band;
  band.x = {1, 100};
  band.y = {2, 2};
  band.band_low = {1.5, 1.5};
  band.band_high = {1000, 1000};
  band.color = kRed;
  band.line = false;
  s.series = {band};
  ReferenceLine slope = ReferenceLine::power_law(1, 2, "n²");
  slope.color = kBlue;
  slope.dashed = false;
  s.references = {slope};
  const Figure f = line_plot_figure(s);
  const DecodedPng img = DecodedPng::from_bytes(render_png(f, 2));
  // y = x² passes through (10, 100): the middle of both axes.
  CHECK(near(at_fraction(img, f.plots[0], 0.5, 0.5, 2), to_rgb8(kBlue), 40));
  // Inside the band, away from the line and the grid: red at 22% opacity on white = (255, 199, 199).
  CHECK(near(at_fraction(img, f.plots[0], 0.2, 0.4, 2), Rgb8{255, 199, 199}, 3));
  // Above the band (y = 5000 > 1000): white.
  CHECK(at_fraction(img, f.plots[0], 0.2, 0.95, 2) == Rgb8{255, 255, 255});
}

TEST_CASE("line plot: equal aspect keeps a circle round") {
  LinePlotSpec s = fixed_axes(AxisScale::linear, -1, 1, AxisScale::linear, -1, 1);
  s.series = {dot(0, 0, kRed)};
  s.width = 400;
  s.height = 200;
  s.equal_aspect = true;
  const Figure f = line_plot_figure(s);
  CHECK(f.plots[0].width == doctest::Approx(f.plots[0].height));
  CHECK(f.plots[0].height == doctest::Approx(200));
}

TEST_CASE("line plot: ticks are powers of two on log2, powers of ten on log10, 'nice' on linear") {
  PlotAxis log2{"d_k", AxisScale::log2};
  const std::vector<AxisTick> t = axis_ticks(log2, 1, 1024);
  REQUIRE(t.size() >= 4);
  for (const AxisTick& k : t) {
    CAPTURE(k.value);
    const double e = std::log2(k.value);
    CHECK(e == std::round(e));
    if (!k.label.empty()) CHECK(k.label == std::to_string(static_cast<long>(k.value)));  // 1, 2, 4, ... written out
  }
  CHECK(t.front().label == "1");
  CHECK(t.back().value == 1024);
  const std::vector<AxisTick> huge = axis_ticks(log2, 1.0 / 64, 1 << 22);
  CHECK(huge.front().label == "2⁻⁶");
  CHECK(huge.back().value == 1 << 22);
  std::vector<std::string> huge_labels;
  for (const AxisTick& k : huge) if (!k.label.empty()) huge_labels.push_back(k.label);
  CHECK(huge_labels.size() <= 8);
  CHECK(huge_labels.back() == "2²²");

  const std::vector<AxisTick> dec = axis_ticks({"theta", AxisScale::log10}, 1e-4, 1);
  std::vector<std::string> labels;
  for (const AxisTick& k : dec) if (!k.label.empty()) labels.push_back(k.label);
  // One style per axis: 1e-4 is too long as a plain number, so every label is a power.
  CHECK(labels == std::vector<std::string>{"10⁻⁴", "10⁻³", "10⁻²", "10⁻¹", "10⁰"});
  std::vector<std::string> short_labels;
  for (const AxisTick& k : axis_ticks({"n", AxisScale::log10}, 1, 1000))
    if (!k.label.empty()) short_labels.push_back(k.label);
  CHECK(short_labels == std::vector<std::string>{"1", "10", "100", "1000"});
  CHECK(dec.size() > labels.size());  // minor ticks at 2..9 x 10^k

  std::vector<double> lin;
  for (const AxisTick& k : axis_ticks({"x"}, -1, 1)) lin.push_back(k.value);
  CHECK(lin == std::vector<double>{-1, -0.5, 0, 0.5, 1});
  CHECK(axis_ticks({"x"}, -1, 1).front().label == "−1");  // a typographic minus
  PlotAxis counts{"position"};
  counts.integer_ticks = true;
  for (const AxisTick& k : axis_ticks(counts, 0, 3)) CHECK(k.value == std::round(k.value));
}

TEST_CASE("line plot: a legend that fits no corner moves outside, SVG is well-formed XML") {
  LinePlotSpec s = fixed_axes(AxisScale::linear, 0, 1, AxisScale::linear, 0, 1);
  PlotSeries cross;  // ink in all four corners
  cross.name = "an X through every corner";
  cross.x = {0, 1, std::nan(""), 0, 1};
  cross.y = {0, 1, std::nan(""), 1, 0};
  s.series = {cross};
  LinePlotSpec no_legend = s;
  no_legend.legend = LegendPlace::none;
  s.legend = LegendPlace::automatic;
  const Figure with = line_plot_figure(s), without = line_plot_figure(no_legend);
  CHECK(with.width > without.width + 50);
  const std::string svg = render_svg(with);
  CHECK(well_formed_xml(svg));
  CHECK(svg.find("<svg") != std::string::npos);
}

TEST_CASE("line plot: bad data is refused with InputError") {
  LinePlotSpec s = fixed_axes(AxisScale::log10, 1, 10, AxisScale::linear, 0, 1);
  s.series = {dot(0, 0.5, kRed)};  // x = 0 on a log axis
  CHECK_THROWS_AS(line_plot_figure(s), InputError);
  s.series = {dot(2, 0.5, kRed)};
  s.series[0].y.push_back(1);  // 1 x, 2 y
  CHECK_THROWS_AS(line_plot_figure(s), InputError);
  s.series = {dot(2, 0.5, kRed)};
  s.series[0].band_low = {0.1};  // a band needs both edges
  CHECK_THROWS_AS(line_plot_figure(s), InputError);
  CHECK_THROWS_AS(line_plot_row_figure({}, "t", ""), InputError);
  LinePlotSpec empty;
  CHECK_THROWS_AS(line_plot_figure(empty), InputError);
}

TEST_CASE("line plot: a label with a backdrop hides the line behind it, one without is struck through") {
  LinePlotSpec s = fixed_axes(AxisScale::linear, 0, 10, AxisScale::linear, 0, 10);
  PlotSeries line;
  line.x = {0, 10};
  line.y = {5, 5};
  line.color = kRed;
  line.line_width = 3;
  s.series = {line};
  PlotLabel label{5, 5, "MMMM", 0.5, 0.5, std::nullopt, 12};
  Canvas m = Canvas::measuring();
  const double w = m.measure("MMMM", {12}).width;
  for (bool backdrop : {true, false}) {
    CAPTURE(backdrop);
    label.backdrop = backdrop;
    s.labels = {label};
    const Figure f = line_plot_figure(s);
    const DecodedPng img = DecodedPng::from_bytes(render_png(f, 2));
    const PlotRect& r = f.plots[0];
    // Just left of the text, inside the box's 2-point padding, on the line.
    const Rgb8 p = img.pixel(r.x + r.width / 2 - w / 2 - 1, r.y + r.height / 2, 2);
    CAPTURE(p);
    CHECK((p == Rgb8{255, 255, 255}) == backdrop);
    CHECK(near(p, to_rgb8(kRed), 20) == !backdrop);
  }
}

// Issue 34: the train curves' legend, put in a fixed corner, covered the induction curve from
// step ~90 to ~300. A named corner is kept only where the legend hides nothing; here the data
// fill the upper left, so the legend must go elsewhere and cross no line.
TEST_CASE("line plot: a legend asked for a corner the data pass through moves where it hides nothing") {
  LinePlotSpec s = fixed_axes(AxisScale::linear, 0, 1000, AxisScale::linear, 0, 1);
  PlotSeries rise, slow;
  rise.name = "induction score";
  slow.name = "previous-token score";
  for (double step = 0; step <= 1000; step += 10) {
    rise.x.push_back(step);
    rise.y.push_back(0.05 + 0.86 / (1 + std::exp(-(step - 60) / 12)));
    slow.x.push_back(step);
    slow.y.push_back(0.1 + 0.8 / (1 + std::exp(-(step - 400) / 80)));
  }
  s.series = {slow, rise};
  s.references = {ReferenceLine::vertical(80, "phase change, step 80")};
  for (LegendPlace asked : {LegendPlace::upper_left, LegendPlace::upper_right, LegendPlace::automatic}) {
    s.legend = asked;
    const Figure f = line_plot_figure(s);
    const std::vector<DrawnText> drawn = drawn_boxes(f);
    const Box box = legend_box(drawn, {rise.name, slow.name, "phase change, step 80"});
    const PlotRect& r = f.plots[0];
    CHECK(crossings(read_axes(drawn, r), r, s.series, s.references, box) == 0);
    CHECK(box.x0 >= r.x);  // and it found room inside the plot: the lower right is empty
    CHECK(box.x1 <= r.x + r.width);
  }
}

// The same on train's own picture, with curves shaped like the run: neither panel's
// legend crosses a curve or a reference line.
TEST_CASE("train curves: neither legend hides a curve or a reference line") {
  TrainRun run;
  for (std::size_t step = 0; step <= 1000; step += 10) {
    const double t = double(step);
    run.points.push_back({step, 2.2 + 2.3 * std::exp(-t / 40), 0.1 + 0.8 / (1 + std::exp(-(t - 400) / 80)),
                          0.05 + 0.86 / (1 + std::exp(-(t - 60) / 12)), 0.0});
  }
  run.uniform_loss = std::log(64.0);
  run.best_loss = 2.01;
  run.phase_change_step = 80;
  const Figure f = train_curves_figure(run, TrainOptions{});
  REQUIRE(f.plots.size() == 2);
  const std::vector<DrawnText> drawn = drawn_boxes(f);
  std::vector<double> steps, loss, prev, induction;
  for (const TrainPoint& p : run.points) {
    steps.push_back(double(p.step));
    loss.push_back(p.loss);
    prev.push_back(p.prev_token_score);
    induction.push_back(p.induction_score);
  }
  const std::string phase = "phase change, step 80";
  // The left panel: the loss, ln(vocab), the floor and the phase change.
  PlotSeries l;
  l.x = steps;
  l.y = loss;
  std::vector<ReferenceLine> left_refs = {ReferenceLine::horizontal(run.uniform_loss, ""),
                                          ReferenceLine::horizontal(run.best_loss, ""), ReferenceLine::vertical(80, "")};
  std::vector<DrawnText> left_drawn, right_drawn;  // each panel's texts, split at the gap between them
  const double split = (f.plots[0].x + f.plots[0].width + f.plots[1].x) / 2;
  for (const DrawnText& d : drawn) (d.x + d.width / 2 < split ? left_drawn : right_drawn).push_back(d);
  const Box left_box = legend_box(left_drawn, {"loss (nats per token)", "ln(vocab) = 4.16: a uniform guess",
                                               "floor 2.01: the first half is random", phase});
  CHECK(crossings(read_axes(left_drawn, f.plots[0]), f.plots[0], {l}, left_refs, left_box) == 0);
  PlotSeries a, b;
  a.x = b.x = steps;
  a.y = prev;
  b.y = induction;
  const Box right_box = legend_box(right_drawn, {"previous-token score", "induction score", phase});
  CHECK(crossings(read_axes(right_drawn, f.plots[1]), f.plots[1], {a, b}, {ReferenceLine::vertical(80, "")}, right_box) == 0);
}
