#include "attn/render/views/rope_pictures.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <numbers>

#include "attn/render/draw/heatmap.hpp"
#include "attn/render/draw/line_plot.hpp"
#include "draw/figure_parts.hpp"

namespace attn {
namespace {

constexpr double kTwoPi = 2 * std::numbers::pi;
const Rgb kInk = rgb_from_hex(0x1a1a1a);
const Rgb kAxisInk = rgb_from_hex(0x404040);

std::string fmt(const char* format, double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, x);
  return buf;
}

std::string subscript(std::size_t n) {
  static const char* digits[] = {"₀", "₁", "₂", "₃", "₄", "₅", "₆", "₇", "₈", "₉"};
  std::string s;
  for (char c : std::to_string(n)) s += digits[c - '0'];
  return s;
}

std::pair<std::size_t, std::size_t> pair_dims(const RopeLesson& r, std::size_t pair, RopeStyle style) {
  const RopeFrequency& f = r.frequencies[pair];
  return style == RopeStyle::Half ? f.half_dims : f.interleaved_dims;
}

std::string setup_line(const RopeLesson& r) {
  const RopeLessonConfig& c = r.config;
  return "head dim d = " + std::to_string(c.head_dim) + ", base " + fmt("%g", c.base) + ", " +
         (c.style == RopeStyle::Half ? "rotate-half" : "interleaved");
}

// Every k-th of n items, so that about `most` are labelled.
std::size_t label_step(std::size_t n, std::size_t most) { return std::max<std::size_t>(1, (n + most - 1) / most); }


// The pair's unit vector at every position on the unit circle: spokes and position labels,
// skipping a point that lands within 0.25 rad of one already labelled (crowded points, or after
// a full turn the points coming round again). `labelled` gets the labelled points' angles.
LinePlotSpec circle_plot(const RopeLesson& r, const std::string& th, std::vector<double>& labelled) {
  const RopeLessonConfig& c = r.config;
  const auto dims = pair_dims(r, c.pair, c.style);
  LinePlotSpec circle;
  circle.title = "The pair on the unit circle";
  PlotSeries ring;
  for (int k = 0; k <= 240; ++k) {
    ring.x.push_back(std::cos(kTwoPi * k / 240));
    ring.y.push_back(std::sin(kTwoPi * k / 240));
  }
  ring.color = rgb_from_hex(0xb0b0b0);
  ring.line_width = 1;
  circle.series.push_back(ring);
  for (const RopeRotationPoint& p : r.rotation) {
    const double at = std::fmod(p.angle, kTwoPi);
    const bool crowded = std::any_of(labelled.begin(), labelled.end(), [at](double other) {
      const double gap = std::fabs(at - other);
      return std::min(gap, kTwoPi - gap) < 0.25;
    });
    if (crowded || labelled.size() >= 24) continue;
    labelled.push_back(at);
    PlotSeries spoke;
    spoke.x = {0, p.x};
    spoke.y = {0, p.y};
    spoke.color = rgb_from_hex(0xa6c8e6);
    spoke.line_width = 0.9;
    circle.series.push_back(spoke);
    circle.labels.push_back({1.2 * p.x, 1.2 * p.y, std::to_string(p.position), 0.5, 0.5, kInk, 9});
  }
  PlotSeries points;
  for (const RopeRotationPoint& p : r.rotation) {
    points.x.push_back(p.x);
    points.y.push_back(p.y);
  }
  points.line = false;
  points.marker = Marker::circle;
  points.color = series_color(0);
  circle.series.push_back(points);
  circle.x = {"dim " + std::to_string(dims.first) + ":  cos(pos · " + th + ")", AxisScale::linear, -1.4, 1.4};
  circle.y = {"dim " + std::to_string(dims.second) + ":  sin(pos · " + th + ")", AxisScale::linear, -1.4, 1.4};
  circle.width = circle.height = 250;
  circle.equal_aspect = true;
  circle.legend = LegendPlace::none;
  return circle;
}

// The angle against the position: a straight line, with a reference at every full turn.
LinePlotSpec angle_plot(const RopeLesson& r, const std::string& th) {
  LinePlotSpec angle;
  angle.title = "The angle grows by " + th + " per position";
  PlotSeries line;
  line.name = "angle = pos · " + th;
  for (const RopeRotationPoint& p : r.rotation) {
    line.x.push_back(static_cast<double>(p.position));
    line.y.push_back(p.angle);
  }
  line.marker = r.rotation.size() <= 64 ? Marker::circle : Marker::none;
  line.color = series_color(0);
  angle.series.push_back(line);
  const double top = r.rotation.back().angle;
  for (int turn = 1; turn * kTwoPi <= top && turn <= 6; ++turn) {
    ReferenceLine ref = ReferenceLine::horizontal(turn * kTwoPi, turn == 1 ? "a full turn every 2π rad" : "");
    ref.color = rgb_from_hex(0x999999);
    angle.references.push_back(ref);
  }
  angle.x = {"position pos", AxisScale::linear, std::nullopt, std::nullopt, true};
  angle.y = {"angle (radians)"};
  angle.width = 330;
  angle.height = 250;
  return angle;
}

}  // namespace

Figure rope_rotation_figure(const RopeLesson& r) {
  const RopeLessonConfig& c = r.config;
  const auto [a, b] = pair_dims(r, c.pair, c.style);
  const std::string th = "θ" + subscript(c.pair);
  const double theta = r.frequencies[c.pair].theta;
  std::vector<double> labelled;
  const LinePlotSpec circle = circle_plot(r, th, labelled);
  const LinePlotSpec angle = angle_plot(r, th);
  const std::string subtitle =
      "pair " + std::to_string(c.pair) + " = dims (" + std::to_string(a) + ", " + std::to_string(b) + ") in the " +
      (c.style == RopeStyle::Half ? "rotate-half" : "interleaved") + " layout, " + th + " = " + fmt("%.4g", theta) +
      " rad per token (one turn every " + fmt("%.4g", kTwoPi / theta) + " tokens) · the unit vector on dim " +
      std::to_string(a) + ", rotated by the kernel to " +
      (r.rotation.size() == 1 ? std::string("position 0") : "positions 0–" + std::to_string(r.rotation.size() - 1)) +
      (labelled.size() == r.rotation.size()
           ? std::string()
           : " (" + std::to_string(labelled.size()) + " of " + std::to_string(r.rotation.size()) + " labelled" +
                 (labelled.size() >= 24 ? ", at most 24" : "") + ": points within 0.25 rad of a labelled one" +
                 (r.rotation.back().angle >= kTwoPi ? ", as the turns bring them round again," : "") +
                 " are skipped)");
  return line_plot_row_figure({circle, angle}, "RoPE turns each pair of dims by an angle proportional to the position",
                              subtitle);
}

Figure rope_scores_figure(const RopeLesson& r) {
  const std::size_t N = r.scores.size();
  HeatmapSpec s;
  s.weights = Tensor2::from_shape({N, N});
  double largest = 0;
  for (std::size_t i = 0; i < N; ++i) {
    for (std::size_t j = 0; j < N; ++j) {
      s.weights(i, j) = static_cast<float>(r.scores[i][j]);
      largest = std::max(largest, std::fabs(r.scores[i][j]));
    }
  }
  s.vmin = -largest;  // a symmetric scale: 0 is the light middle of the diverging map
  s.vmax = largest;
  s.colormap = "RdBu_r";
  s.row_title = "query position i";
  s.col_title = "key position j";
  s.value_label = "score rope(q, i) · rope(k, j)";
  s.title = "Under RoPE the score depends only on the offset i − j";
  s.subtitle = "constant along every diagonal i − j = const (largest spread along one: " + fmt("%.1e", r.max_spread) +
               ", float64 rounding) · without RoPE every cell would be q · k = " + fmt("%.3f", r.score_without_rope) +
               " · one seeded q and k, " + setup_line(r);
  return heatmap_figure(s);
}

std::string rope_frequency_summary(const RopeLesson& r) {
  const RopeFrequency &first = r.frequencies.front(), &last = r.frequencies.back();
  const std::string turn = " turns " + fmt("%.4g", first.theta) + " radian per token (a full turn every " +
                           fmt("%.4g", first.wavelength) + " tokens)";
  if (r.frequencies.size() == 1) return "a head of width 2 has one pair: pair 0" + turn;
  return "pair 0" + turn + "; pair " + std::to_string(last.pair) + " turns every " + fmt("%.4g", last.wavelength) +
         " tokens: fast pairs tell near positions apart, slow pairs far ones";
}

Figure rope_frequencies_figure(const RopeLesson& r) {
  PlotSeries theta, wavelength;
  for (const RopeFrequency& f : r.frequencies) {
    theta.x.push_back(static_cast<double>(f.pair));
    theta.y.push_back(f.theta);
    wavelength.x.push_back(static_cast<double>(f.pair));
    wavelength.y.push_back(f.wavelength);
  }
  const Marker marker = r.frequencies.size() <= 64 ? Marker::circle : Marker::none;
  theta.marker = wavelength.marker = marker;
  theta.color = series_color(0);
  wavelength.color = series_color(1);
  const PlotAxis pair_axis{"pair i", AxisScale::linear, std::nullopt, std::nullopt, true};

  LinePlotSpec left;
  left.title = "Frequency θᵢ = base^(−2i/d)";
  left.series = {theta};
  left.x = pair_axis;
  left.y = {"θᵢ (radians per token, log scale)", AxisScale::log10};
  left.width = 300;
  left.height = 230;
  LinePlotSpec right = left;
  right.title = "Wavelength 2π/θᵢ";
  right.series = {wavelength};
  right.y = {"tokens per full turn (log scale)", AxisScale::log10};
  return line_plot_row_figure({left, right}, "RoPE frequencies: each pair turns at its own speed",
                              rope_frequency_summary(r) + " · " + setup_line(r));
}

namespace {

// For each dim of a head, the RoPE pair (frequency index) it belongs to in one layout.
std::vector<std::size_t> pair_of_dim(const RopeLesson& r, bool rotate_half) {
  std::vector<std::size_t> owner(r.config.head_dim);
  for (std::size_t i = 0; i < r.frequencies.size(); ++i) {
    const auto [a, b] = rotate_half ? r.frequencies[i].half_dims : r.frequencies[i].interleaved_dims;
    owner[a] = owner[b] = i;
  }
  return owner;
}

// The footer of the layouts figure: the permutation between them and why it matters.
std::string permutation_note(const RopeLesson& r) {
  std::string perm;
  for (std::size_t p : r.permutation) perm += (perm.empty() ? "" : " ") + std::to_string(p);
  return "Arrows: the permutation P that de-interleaves, half[m] = interleaved[perm[m]] with perm = (" + perm +
         "). Then rope_half(P x) = P rope_interleaved(x) for every x and position (largest difference here " +
         fmt("%.1e", r.permutation_max_diff) +
         "): one rotation in two memory layouts. Loading Meta's checkpoints into rotate-half code permutes "
         "the rows of W_q and W_k this way (HF's convert_llama_weights_to_hf.py).";
}

// Pair i's colour: tab10 for up to 10 pairs, else viridis spread over the pairs.
Rgb pair_color(std::size_t i, std::size_t pairs) {
  return pairs <= 10 ? series_color(i) : Colormap::by_name("viridis").at(static_cast<double>(i) / static_cast<double>(pairs - 1));
}

// The two rows of dims, rotate-half above and interleaved below, and where they are drawn.
struct DimRows {
  std::size_t d = 0, pairs = 0, index_step = 1;  // every index_step-th dim numbered
  double box = 0, width = 0, level = 0;          // a dim's box; the bracket spacing above the first row
  double x0 = 0, row1_y = 0, row2_y = 0, arrows_h = 70;
  std::vector<std::size_t> half_pair, inter_pair;
  double centre(std::size_t dim) const { return x0 + (static_cast<double>(dim) + 0.5) * box; }
};

DimRows dim_rows(const RopeLesson& r) {
  DimRows rows;
  rows.d = r.config.head_dim;
  rows.pairs = rows.d / 2;
  rows.box = std::clamp(520.0 / static_cast<double>(rows.d), 8.0, 34.0);
  rows.width = rows.box * static_cast<double>(rows.d);
  const bool numbered = rows.box >= 14;
  rows.index_step = numbered ? 1 : label_step(rows.d, 16);
  rows.level = std::clamp(40.0 / static_cast<double>(rows.pairs), 1.5, 7.0);
  rows.half_pair = pair_of_dim(r, true);
  rows.inter_pair = pair_of_dim(r, false);
  return rows;
}

// The permutation: interleaved dim perm[m] (below) feeds half dim m (above); both belong
// to the same pair, so each arrow takes that pair's colour.
void draw_permutation(Canvas& c, const RopeLesson& lesson, const DimRows& rows) {
  const double box = rows.box;
  for (std::size_t k = 0; k < rows.d; ++k) {
    const double xa = rows.centre(lesson.permutation[k]), ya = rows.row2_y - 3;
    const double xb = rows.centre(k), yb = rows.row1_y + box + 3;
    const Rgb ink = pair_color(rows.half_pair[k], rows.pairs);
    c.polyline({{xa, ya}, {xb, yb + 4}}, ink, 0.9);
    const double ang = std::atan2(yb - ya, xb - xa), hl = std::min(6.0, box * 0.4);
    c.fill_polygon({{xb, yb}, {xb - hl * std::cos(ang - 0.4), yb - hl * std::sin(ang - 0.4)},
                    {xb - hl * std::cos(ang + 0.4), yb - hl * std::sin(ang + 0.4)}}, ink);
  }
}

// Row 0 (rotate-half) or 1 (interleaved): the dims in their pairs' colours, and the brackets
// that join each pair: above the rotate-half row (nested, one level per pair), below the
// interleaved row (neighbours, all at one level).
void draw_dim_row(Canvas& c, const RopeLesson& lesson, const DimRows& rows, int row) {
  const double box = rows.box, y = row == 0 ? rows.row1_y : rows.row2_y;
  const std::vector<std::size_t>& owner = row == 0 ? rows.half_pair : rows.inter_pair;
  for (std::size_t k = 0; k < rows.d; ++k) {
    const Rgb col = pair_color(owner[k], rows.pairs);
    const Rgb light{1 - 0.45 * (1 - col.r), 1 - 0.45 * (1 - col.g), 1 - 0.45 * (1 - col.b)};
    c.fill_rect(rows.x0 + static_cast<double>(k) * box, y, box, box, light);
    c.stroke_rect(rows.x0 + static_cast<double>(k) * box + 0.5, y + 0.5, box - 1, box - 1, col, 1);
    if (k % rows.index_step == 0) {
      c.text(std::to_string(k), rows.centre(k), y + box / 2, {std::min(10.0, box * 0.45), false, kInk}, 0.5, 0.5);
    }
  }
  for (std::size_t i = 0; i < rows.pairs; ++i) {
    const auto dims = row == 0 ? lesson.frequencies[i].half_dims : lesson.frequencies[i].interleaved_dims;
    const double p = rows.centre(dims.first), q = rows.centre(dims.second);
    const Rgb col = pair_color(i, rows.pairs);
    if (row == 0) {
      const double yt = y - 4 - rows.level * static_cast<double>(rows.pairs - i);
      c.polyline({{p, y - 1}, {p, yt}, {q, yt}, {q, y - 1}}, col, 1.3);
    } else {
      const double yt = y + box + 6;
      c.polyline({{p, y + box + 1}, {p, yt}, {q, yt}, {q, y + box + 1}}, col, 1.3);
    }
  }
}

}  // namespace

Figure rope_styles_figure(const RopeLesson& r) {
  DimRows rows = dim_rows(r);
  const std::size_t d = rows.d;
  const double box = rows.box, row_w = rows.width;
  Canvas m = Canvas::measuring();
  const TextStyle caption{11, true, kInk};
  const TextStyle note{10, false, kAxisInk, std::max(row_w, 460.0), true};
  const std::string footer = permutation_note(r);
  const std::string half_caption = "rotate-half (GPT-NeoX, LLaMA-HF, Qwen): pair i = dims (i, i + d/2)";
  const std::string inter_caption = "interleaved (GPT-J, RoFormer, Meta's llama): pair i = dims (2i, 2i + 1)";
  const double margin = 16;
  const double captions_w = std::max({m.measure(half_caption, caption).width,
                                      m.measure(inter_caption, caption).width, 460.0});
  const render::FigureFrame frame = render::frame_figure(
      m, "Two RoPE layouts: which dims pair up",
      "head dim d = " + std::to_string(d) + " · same colour = same pair = same frequency θᵢ", {row_w}, captions_w, margin);
  const double caption_h = m.measure(half_caption, caption).height;
  const std::string p_label = "P: de-interleave";
  const double p_label_w = m.measure(p_label, {10.5}).width;
  const double brackets_h = 8 + rows.level * static_cast<double>(rows.pairs);
  rows.x0 = frame.centred_x(row_w);
  const double cap1_y = frame.body_y();
  rows.row1_y = cap1_y + caption_h + 4 + brackets_h;
  rows.row2_y = rows.row1_y + box + rows.arrows_h;
  const double cap2_y = rows.row2_y + box + 14;
  const double footer_y = cap2_y + caption_h + 14;
  Figure f;
  f.width = frame.width();
  f.height = footer_y + m.measure(footer, note).height + margin;
  f.grids.push_back({rows.x0, rows.row1_y, box, box, 1, d});
  f.grids.push_back({rows.x0, rows.row2_y, box, box, 1, d});
  const double cx = f.width / 2;
  const RopeLesson lesson = r;
  f.draw = [=](Canvas& c) {
    frame.draw_title(c);
    c.text(half_caption, margin, cap1_y, caption);
    c.text(inter_caption, margin, cap2_y, caption);
    draw_permutation(c, lesson, rows);
    for (int row = 0; row < 2; ++row) draw_dim_row(c, lesson, rows, row);
    const double mid = rows.row1_y + box + rows.arrows_h / 2;
    if (rows.x0 - margin > p_label_w + 10) c.text(p_label, rows.x0 - 10, mid, {10.5, false, kAxisInk}, 1, 0.5);
    c.text(footer, cx, footer_y, note, 0.5, 0);
  };
  return f;
}

}  // namespace attn
