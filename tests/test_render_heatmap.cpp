// Heatmaps and head grids, decoded back from PNG: the right colour in the right cell, masked
// cells unmistakable, labels checked against the weights' shape.
#include <doctest/doctest.h>

#include "attn/engine/core/error.hpp"
#include "attn/engine/attention/sdpa.hpp"
#include "attn/render/draw/head_grid.hpp"
#include "attn/render/draw/heatmap.hpp"
#include "attn/render/draw/text_table.hpp"
#include "render/draw/figure_parts.hpp"
#include "attn/engine/attention/mask.hpp"
#include "picture_support.hpp"

using namespace attn;
using namespace attn::test;

namespace {

// matplotlib's Blues anchors (_cm.py) at t = 0, 2/8, 4/8, 6/8, 1.
const Rgb8 kBlues0{0xf7, 0xfb, 0xff}, kBlues25{0xc6, 0xdb, 0xef}, kBlues50{0x6b, 0xae, 0xd6},
    kBlues75{0x21, 0x71, 0xb5}, kBlues100{0x08, 0x30, 0x6b};

// Uniform causal weights: row i spreads 1 over keys 0..i.
Tensor2 causal_softmax_rows(std::size_t L) {
  Tensor2 w = xt::zeros<float>({L, L});
  for (std::size_t i = 0; i < L; ++i)
    for (std::size_t j = 0; j <= i; ++j) w(i, j) = 1.0f / float(i + 1);
  return w;
}

HeatmapSpec two_by_two() {
  HeatmapSpec s;
  s.weights = Tensor2{{0.25f, 0.75f}, {1.0f, 0.0f}};
  s.query_tokens = s.key_tokens = {"我", "喜欢"};
  s.vmax = 1.0;
  return s;
}

}  // namespace

TEST_CASE("heatmap: each cell has the colormap's colour for its weight") {
  const Figure f = heatmap_figure(two_by_two());
  REQUIRE(f.grids.size() == 1);
  const CellGrid& g = f.grids[0];
  CHECK(g.rows == 2);
  CHECK(g.cols == 2);
  for (double scale : {1.0, 2.0}) {
    CAPTURE(scale);
    const DecodedPng img = DecodedPng::from_bytes(render_png(f, scale));
    REQUIRE(img.ok());
    CHECK(img.width() == static_cast<int>(std::ceil(f.width * scale)));
    CHECK(near(img.cell_corner(g, 0, 0, scale), kBlues25));
    CHECK(near(img.cell_corner(g, 0, 1, scale), kBlues75));
    CHECK(near(img.cell_corner(g, 1, 0, scale), kBlues100));
    CHECK(near(img.cell_corner(g, 1, 1, scale), kBlues0));
  }
}

TEST_CASE("heatmap: without --vmax the colour scale tops out at the largest weight") {
  HeatmapSpec s = two_by_two();
  s.vmax.reset();
  s.weights = Tensor2{{0.1f, 0.2f}, {0.4f, 0.2f}};
  const Figure f = heatmap_figure(s);
  const DecodedPng img = DecodedPng::from_bytes(render_png(f, 1));
  CHECK(near(img.cell_corner(f.grids[0], 1, 0, 1), kBlues100));  // 0.4 is the top
  CHECK(near(img.cell_corner(f.grids[0], 0, 1, 1), kBlues50));   // 0.2 is halfway
  const ColorScale cs = color_scale_for(std::vector<float>{0.1f, 0.4f}, std::nullopt);
  CHECK(cs.vmin == 0);
  CHECK(cs.vmax == doctest::Approx(0.4));
}

TEST_CASE("heatmap: a masked cell looks nothing like a weight of 0, and the mask, not the value, decides") {
  HeatmapSpec s;
  s.weights = Tensor2{{1.0f, 0.0f, 0.0f}, {0.5f, 0.5f, 0.0f}, {0.2f, 0.3f, 0.5f}};
  s.allowed = causal_allowed(3, 3);
  s.allowed.value()(0, 1) = true;  // an allowed key whose weight happens to be 0
  s.vmax = 1.0;
  const Figure f = heatmap_figure(s);
  const CellGrid& g = f.grids[0];
  const DecodedPng img = DecodedPng::from_bytes(render_png(f, 2));
  const Rgb8 zero_weight = img.cell_corner(g, 0, 1, 2);  // clear of its "0.000"
  const Rgb8 masked = img.cell_mean(g, 0, 2, 2);
  CHECK(near(zero_weight, kBlues0, 3));
  CHECK_FALSE(near(masked, zero_weight, 20));
  CHECK(masked == img.cell_mean(g, 1, 2, 2));  // every masked cell looks the same
  // A masked cell is grey: no channel stands out (Blues always has more blue than red).
  CHECK(std::abs(masked.r - masked.b) <= 3);
  // With the mask, the figure also carries a legend line below the grid.
  HeatmapSpec unmasked = s;
  unmasked.allowed.reset();
  CHECK(f.height > heatmap_figure(unmasked).height);
}

TEST_CASE("heatmap: labels and mask must match the weights' shape") {
  HeatmapSpec s = two_by_two();
  s.query_tokens = {"only one"};
  CHECK_THROWS_AS(heatmap_figure(s), InputError);
  s = two_by_two();
  s.allowed = causal_allowed(3, 3);
  CHECK_THROWS_AS(heatmap_figure(s), InputError);
  s = two_by_two();
  s.colormap = "rainbow";
  CHECK_THROWS_AS(heatmap_figure(s), InputError);
}

TEST_CASE("heatmap: long sentences get smaller cells, and the figure stays a sensible size") {
  HeatmapSpec s;
  s.weights = xt::ones<float>({60, 60}) / 60.0f;
  const Figure f = heatmap_figure(s);
  CHECK(f.grids[0].cell_w < 12);
  CHECK(f.width < 900);
  CHECK(DecodedPng::from_bytes(render_png(f, 1)).ok());
}

TEST_CASE("head grid: one panel per head plus the mean, all on one colour scale") {
  HeadGridSpec s;
  s.weights = Tensor3{{{1.0f, 0.0f}, {0.0f, 1.0f}}, {{0.0f, 1.0f}, {0.0f, 1.0f}}};
  s.query_tokens = s.key_tokens = {"深度", "学习"};
  s.vmax = 1.0;
  const Tensor2 mean = mean_over_heads(s.weights);
  CHECK(mean(0, 0) == 0.5f);
  CHECK(mean(1, 1) == 1.0f);
  const Figure f = head_grid_figure(s);
  REQUIRE(f.grids.size() == 3);
  const DecodedPng img = DecodedPng::from_bytes(render_png(f, 1));
  CHECK(near(img.cell_corner(f.grids[0], 0, 0, 1), kBlues100));
  CHECK(near(img.cell_corner(f.grids[1], 0, 0, 1), kBlues0));
  CHECK(near(img.cell_corner(f.grids[2], 0, 0, 1), kBlues50));  // the mean of 1 and 0
  s.show_mean = false;
  CHECK(head_grid_figure(s).grids.size() == 2);
}

TEST_CASE("head grid: a per-head mask hatches that head's cells, the mean is masked only where every head is") {
  HeadGridSpec s;
  s.weights = Tensor3{{{1.0f, 0.0f}, {0.5f, 0.5f}}, {{0.5f, 0.5f}, {0.5f, 0.5f}}};
  Mask3 allowed = xt::ones<bool>({2, 2, 2});
  allowed(0, 0, 1) = false;
  s.allowed = allowed;
  s.vmax = 1.0;
  const Figure f = head_grid_figure(s);
  const DecodedPng img = DecodedPng::from_bytes(render_png(f, 2));
  const Rgb8 hatched = img.cell_mean(f.grids[0], 0, 1, 2);
  CHECK_FALSE(near(hatched, kBlues0, 20));
  CHECK(near(img.cell_corner(f.grids[1], 0, 1, 2), kBlues50));
  CHECK(near(img.cell_corner(f.grids[2], 0, 1, 2), to_rgb8(Colormap::by_name("Blues").at(0.25))));
  s.allowed = Mask3(xt::ones<bool>({3, 2, 2}));
  CHECK_THROWS_AS(head_grid_figure(s), InputError);
}

TEST_CASE("heatmap and head grid: a causal map of 1 to 3 tokens keeps its legend inside the picture") {
  // The masked-cells legend starts under the grid and is wider than a small grid: the figure
  // must grow to hold it (it used to end in "(not a weigh").
  for (std::size_t L : {1, 2, 3}) {
    CAPTURE(L);
    HeatmapSpec s;
    s.weights = causal_softmax_rows(L);
    s.query_tokens = s.key_tokens = std::vector<std::string>(L, "a");
    s.allowed = causal_allowed(L, L);
    CHECK(DecodedPng::from_bytes(render_png(heatmap_figure(s), 1)).ink_on_border(4) == 0);
    HeadGridSpec g;
    g.weights = Tensor3(xt::expand_dims(s.weights, 0));
    g.query_tokens = g.key_tokens = s.query_tokens;
    g.allowed = Mask3(xt::expand_dims(causal_allowed(L, L), 0));
    CHECK(DecodedPng::from_bytes(render_png(head_grid_figure(g), 1)).ink_on_border(4) == 0);
  }
}

namespace {

// The box of non-white pixels (points) inside [x0, x1) x [y0, y1): where a label's ink lies.
struct InkBox {
  double left = 1e9, right = -1e9, top = 1e9, bottom = -1e9;
  double width() const { return right - left; }
  double height() const { return bottom - top; }
};
InkBox ink_box(const DecodedPng& img, double x0, double x1, double y0, double y1, double scale) {
  InkBox b;
  for (double y = y0; y < y1; y += 1 / scale)
    for (double x = x0; x < x1; x += 1 / scale) {
      const Rgb8 p = img.pixel(x, y, scale);
      if (p.r + p.g + p.b > 3 * 200) continue;
      b.left = std::min(b.left, x);
      b.right = std::max(b.right, x);
      b.top = std::min(b.top, y);
      b.bottom = std::max(b.bottom, y);
    }
  return b;
}

}  // namespace

TEST_CASE("heatmap: one orientation per axis, so a short label among long ones turns with them") {
  HeatmapSpec s;
  s.weights = xt::ones<float>({std::size_t{3}, std::size_t{3}}) / 3.0f;
  s.query_tokens = {"internationalization", "cat", "!"};
  s.key_tokens = s.query_tokens;  // the long one makes the column labels rotate
  const Figure f = heatmap_figure(s);
  const DecodedPng img = DecodedPng::from_bytes(render_png(f, 2));
  REQUIRE(img.ok());
  const CellGrid& g = f.grids[0];
  // The label strip just above the grid, over each column.
  auto label = [&](std::size_t j) { return ink_box(img, g.cell_x(j), g.cell_x(j) + g.cell_w, g.y - 40, g.y - 1, 2); };
  const InkBox rotated = label(0), cat = label(1), bang = label(2);
  CAPTURE(cat.width());
  CAPTURE(cat.height());
  CAPTURE(bang.width());
  CAPTURE(bang.height());
  CHECK(rotated.height() > 3 * rotated.width());  // the long label reads upwards...
  CHECK(cat.height() > 1.5 * cat.width());         // ...and so does "cat", which would fit upright
  CHECK(bang.width() > 2 * bang.height());         // "!" lies along the axis like the rest
  // Labels that all fit their cells stay upright, every one of them.
  s.query_tokens = s.key_tokens = {"a", "cat", "!"};
  const Figure upright = heatmap_figure(s);
  const DecodedPng img2 = DecodedPng::from_bytes(render_png(upright, 2));
  const CellGrid& g2 = upright.grids[0];
  const InkBox cat2 = ink_box(img2, g2.cell_x(1), g2.cell_x(1) + g2.cell_w, g2.y - 40, g2.y - 1, 2);
  CHECK(cat2.width() > 1.5 * cat2.height());
}

TEST_CASE("heatmap: an emoji label is drawn in colour from the emoji font, not as a box") {
  HeatmapSpec s;
  s.weights = xt::ones<float>({std::size_t{2}, std::size_t{2}}) / 2.0f;
  s.query_tokens = {"🍕", "cat"};
  s.key_tokens = s.query_tokens;
  const Figure f = heatmap_figure(s);
  const DecodedPng img = DecodedPng::from_bytes(render_png(f, 2));
  REQUIRE(img.ok());
  const CellGrid& g = f.grids[0];
  // Row 0's label, left of the grid: a text glyph or a missing-glyph box is grey to black; the
  // pizza (fonts-noto-color-emoji, installed by scripts/install-deps.sh) is red and yellow.
  auto coloured = [&](std::size_t i) {
    int n = 0;
    for (double y = g.cell_y(i); y < g.cell_y(i) + g.cell_h; y += 0.5)
      for (double x = std::max(0.0, g.x - 40); x < g.x; x += 0.5) {
        const Rgb8 p = img.pixel(x, y, 2);
        n += std::abs(p.r - p.g) + std::abs(p.g - p.b) + std::abs(p.r - p.b) > 120;
      }
    return n;
  };
  CHECK(coloured(0) > 20);
  CHECK(coloured(1) == 0);  // "cat" is plain text: the count tells colour from ink
}

TEST_CASE("heatmap: a long causal map gets a stated log colour scale, so its later rows are not white") {
  const std::size_t L = 32;
  Tensor2 w = xt::zeros<float>({L, L});
  for (std::size_t i = 0; i < L; ++i)
    for (std::size_t j = 0; j <= i; ++j) w(i, j) = 1.0f / float(i + 1);  // even shares
  const Mask2 causal = causal_allowed(L, L);
  const auto log = long_causal_log_scale(w, causal);
  REQUIRE(log);
  CHECK(log->log);
  CHECK(log->vmax == 1.0);
  CHECK(log->vmin == doctest::Approx(0.01));  // the power of ten at or below 1 / 64
  CHECK(log->position(1.0) == doctest::Approx(1.0));
  CHECK(log->position(0.1) == doctest::Approx(0.5));
  CHECK(log->position(0.001) == 0.0);
  // Short maps, and maps where every row sees as many keys, keep the linear scale.
  const Tensor2 w8 = xt::view(w, xt::range(0, 8), xt::range(0, 8));
  CHECK(!long_causal_log_scale(w8, causal_allowed(8, 8)));
  CHECK(!long_causal_log_scale(xt::ones<float>({L, L}) / float(L), Mask2(xt::ones<bool>({L, L}))));

  HeatmapSpec s;
  s.weights = w;
  s.allowed = causal;
  const Figure f = heatmap_figure(s);
  const DecodedPng img = DecodedPng::from_bytes(render_png(f, 2));
  REQUIRE(img.ok());
  // The last row's even share 1/32 sits a quarter up the log scale, not 3 % up a linear one.
  const Rgb8 last = img.cell_mean(f.grids[0], L - 1, 0, 2);
  CHECK(near(last, to_rgb8(Colormap::by_name("Blues").at(log->position(1.0 / 32))), 6));
  CHECK(!near(last, to_rgb8(Colormap::by_name("Blues").at(1.0 / 32)), 20));
  // A given top keeps the scale linear.
  s.vmax = 1.0;
  const Figure lin = heatmap_figure(s);
  const DecodedPng limg = DecodedPng::from_bytes(render_png(lin, 2));
  CHECK(near(limg.cell_mean(lin.grids[0], L - 1, 0, 2), to_rgb8(Colormap::by_name("Blues").at(1.0 / 32)), 6));
}

TEST_CASE("heatmap pair: two panels, each on its own scale (the RoPE picture's weights beside their change)") {
  HeatmapSpec left;
  left.weights = Tensor2{{1, 0}, {0.25, 0.75}};
  left.allowed = causal_allowed(2, 2);
  left.title = "with RoPE";
  HeatmapSpec right = left;
  right.weights = Tensor2{{0, 0}, {0.5, -0.5}};
  right.colormap = "RdBu_r";
  right.vmin = -0.5;
  right.vmax = 0.5;
  right.title = "with RoPE - without";
  const Figure f = heatmap_pair_figure(left, right, "RoPE", "subtitle");
  REQUIRE(f.grids.size() == 2);
  CHECK(f.grids[1].x > f.grids[0].x + 2 * f.grids[0].cell_w);  // side by side, not overlapping
  const DecodedPng img = DecodedPng::from_bytes(render_png(f, 2));
  REQUIRE(img.ok());
  // Left: Blues on [0, 1]; right: a change of 0 is the diverging map's white centre, +0.5 its red end.
  CHECK(near(img.cell_corner(f.grids[0], 0, 0, 2), to_rgb8(Colormap::by_name("Blues").at(1)), 3));
  const Rgb8 unchanged = img.cell_corner(f.grids[1], 0, 0, 2);
  CHECK(near(unchanged, to_rgb8(Colormap::by_name("RdBu_r").at(0.5)), 3));
  CHECK(near(img.cell_corner(f.grids[1], 1, 0, 2), to_rgb8(Colormap::by_name("RdBu_r").at(1)), 3));
  CHECK(near(img.cell_corner(f.grids[1], 1, 1, 2), to_rgb8(Colormap::by_name("RdBu_r").at(0)), 3));
  // The masked cell is hatched in both panels (grey), never a colour of the scale.
  const Rgb8 masked = img.cell_mean(f.grids[1], 0, 1, 2);
  CHECK(std::abs(masked.r - masked.b) <= 3);
}

TEST_CASE("heatmap row: three panels left to right, one without its colorbar shares the next one's") {
  HeatmapSpec p;
  p.weights = Tensor2{{1, 0}, {0.25, 0.75}};
  p.allowed = causal_allowed(2, 2);
  p.vmin = 0;
  p.vmax = 1;
  p.title = "P";
  HeatmapSpec a = p;
  a.weights = Tensor2{{1, 0}, {0.5, 0.5}};
  a.title = "A";
  p.colorbar = false;
  HeatmapSpec d = a;
  d.weights = Tensor2{{0, 0}, {0.25, -0.25}};
  d.colormap = "RdBu_r";
  d.vmin = -0.25;
  d.vmax = 0.25;
  d.title = "A - P";
  const Figure f = heatmap_row_figure({p, a, d}, "three", "subtitle");
  REQUIRE(f.grids.size() == 3);
  CHECK(f.grids[1].x > f.grids[0].x + 2 * f.grids[0].cell_w);
  CHECK(f.grids[2].x > f.grids[1].x + 2 * f.grids[1].cell_w);
  // Without its colorbar P's panel ends sooner: the gap from P to A is narrower than from A to D.
  CHECK(f.grids[1].x - f.grids[0].x < f.grids[2].x - f.grids[1].x);
  const DecodedPng img = DecodedPng::from_bytes(render_png(f, 2));
  REQUIRE(img.ok());
  const Colormap blues = Colormap::by_name("Blues"), rdbu = Colormap::by_name("RdBu_r");
  CHECK(near(img.cell_corner(f.grids[0], 1, 0, 2), to_rgb8(blues.at(0.25)), 3));
  CHECK(near(img.cell_corner(f.grids[1], 1, 0, 2), to_rgb8(blues.at(0.5)), 3));
  CHECK(near(img.cell_corner(f.grids[2], 1, 0, 2), to_rgb8(rdbu.at(1)), 3));
  CHECK(near(img.cell_corner(f.grids[2], 1, 1, 2), to_rgb8(rdbu.at(0)), 3));
  CHECK_THROWS_AS(heatmap_row_figure({}, "none", ""), InputError);
}

TEST_CASE("label thinning: tiny cells label every k-th token, and the note that says so") {
  Canvas m = Canvas::measuring();
  render::MatrixPanel p;
  p.rows = p.cols = 32;
  p.row_labels = p.col_labels = position_labels(32);
  p.cell = 200.0 / 32;  // the head grid's cell for 32 tokens: 6.25 points
  const render::PanelLayout l = render::layout_panel(m, p);
  CHECK(l.label_step == 2);  // ceil(7.5 / 6.25): labels 6 points high need 7.5 points each
  CHECK(render::label_thinning_note(l.label_step, 32) == "every 2nd token labelled (0, 2, 4, ...) of 32");
  CHECK(render::label_thinning_note(3, 95) == "every 3rd token labelled (0, 3, 6, ...) of 95");
  CHECK(render::label_thinning_note(12, 200) == "every 12th token labelled (0, 12, 24, ...) of 200");
  CHECK(render::label_thinning_note(21, 400) == "every 21st token labelled (0, 21, 42, ...) of 400");
  CHECK(render::label_thinning_note(2, 48, "node") == "every 2nd node labelled (0, 2, 4, ...) of 48");
  CHECK(render::label_thinning_note(1, 5).empty());
  CHECK(render::with_note("a", "") == "a");
  CHECK(render::with_note("", "b") == "b");
  CHECK(render::with_note("a", "b") == "a · b");
}

TEST_CASE("one-row pictures: the rotated row title starts below the panel title, the colour bar holds its label") {
  Canvas m = Canvas::measuring();
  render::MatrixPanel p;
  p.rows = p.cols = 1;
  p.cell = 40;
  p.title = "Blocked: −∞ added to the score";
  p.row_title = "Query position — attending";
  const render::PanelLayout l = render::layout_panel(m, p);
  const double title_h = m.measure(p.title, {p.title_size, true}).height + 4;
  const double row_title_len = m.measure(p.row_title, {p.label_size}).width;
  // The rotated title is centred on the one-cell grid: its top end must not reach the title.
  CHECK(l.grid_y + p.cell / 2 - row_title_len / 2 >= title_h - 1);
  const std::string label = "penalty m·|i − j| subtracted from the score";
  CHECK(render::colorbar_height(m, 40, label) >= m.measure(label, {10}).width);
  CHECK(render::colorbar_height(m, 500, label) == 500);
}

TEST_CASE("heatmap: cells outside the colour scale are counted in the picture's notes, never clipped silently") {
  // --vmax 0.5 under weights of 0.75 and 1: two cells drawn in the top colour.
  HeatmapSpec s = two_by_two();
  s.vmax = 0.5;
  const Figure f = heatmap_figure(s);
  REQUIRE(f.notes.size() == 1);
  CHECK(f.notes[0] == "2 of 4 cells lie above the colour scale's top 0.5 and are drawn in its highest colour");
  s.vmax = 1.0;
  CHECK(heatmap_figure(s).notes.empty());
  // A long causal map's log floor: weights under it are counted, masked cells are not.
  const std::size_t L = 32;
  Tensor2 w = causal_softmax_rows(L);
  w(L - 1, 0) = 0.001f;  // under the floor 0.01
  w(L - 1, 1) = 0.0f;
  const OutsideScale n = count_outside_scale(xt::expand_dims(w, 0), Mask3(xt::expand_dims(causal_allowed(L, L), 0)),
                                             *long_causal_log_scale(w, causal_allowed(L, L)));
  CHECK(n.below == 2);
  CHECK(n.above == 0);
  CHECK(n.visible == L * (L + 1) / 2);
  HeatmapSpec long_map;
  long_map.weights = w;
  long_map.allowed = causal_allowed(L, L);
  const Figure lf = heatmap_figure(long_map);
  REQUIRE(lf.notes.size() == 1);
  CHECK(lf.notes[0] == "2 of 528 cells lie below the colour scale's floor 0.01 and are drawn in its lowest colour");
  // The head grid says the same of its heads.
  HeadGridSpec g;
  g.weights = Tensor3(xt::expand_dims(two_by_two().weights, 0));
  g.vmax = 0.5;
  REQUIRE(head_grid_figure(g).notes.size() == 1);
}

TEST_CASE("heatmap: rows that are not softmax rows are named, a fully masked row of zeros is not") {
  const Tensor3 softmax_rows{{{0.25f, 0.75f}, {1.0f, 0.0f}}};
  CHECK(row_sum_note(softmax_rows, std::nullopt) == "");
  const Tensor3 zero_row{{{0.0f, 0.0f}, {1.0f, 0.0f}}};  // attends to nothing: all masked
  CHECK(row_sum_note(zero_row, std::nullopt) == "");
  const Tensor3 scores{{{2.0f, 1.0f}, {1.0f, 0.0f}, {0.5f, 0.0f}}};
  CHECK(row_sum_note(scores, std::nullopt) == "2 of 3 rows do not sum to 1 (sums 0.5 to 3): not softmax weights?");
  // Masked cells do not count: 0.9 on a masked key leaves a visible row of 1.
  const Tensor3 masked_junk{{{1.0f, 0.9f}}};
  CHECK(row_sum_note(masked_junk, Mask3{{{true, false}}}) == "");
  CHECK(row_sum_note(masked_junk, std::nullopt) == "1 of 1 row does not sum to 1 (its sum 1.9): not softmax weights?");
}

// Issue 34: Chinese column labels lay on their side in heads.png (rotated 90° with the Latin
// ones). A CJK label too wide for its cell is stacked upright, a character per line; at 1, 3,
// 12 and 48 tokens no text with a CJK character is drawn turned, the stacks over the first grid
// do not overlap one another or the grid, and without thinning every character is drawn.
TEST_CASE("head grid: CJK column labels stand upright, stacked, never on their side") {
  const std::vector<std::string> words = {"我们", "今天", "在", "北京", "的", "大学", "里", "学习", "自然", "语言", "处理", "和"};
  for (std::size_t L : {std::size_t{1}, std::size_t{3}, std::size_t{12}, std::size_t{48}}) {
    CAPTURE(L);
    HeadGridSpec s;
    s.weights = xt::ones<float>({std::size_t{2}, L, L}) / float(L);
    for (std::size_t i = 0; i < L; ++i) s.key_tokens.push_back(words[i % words.size()]);
    s.query_tokens = s.key_tokens;
    const Figure f = head_grid_figure(s);
    const CellGrid& g = f.grids[0];
    std::vector<DrawnText> above;  // CJK text over the first grid: its column labels
    std::size_t cjk_chars = 0;
    for (const DrawnText& d : drawn_boxes(f)) {
      if (display_width(d.text) == characters(d.text)) continue;  // no wide character
      CAPTURE(d.text);
      CHECK(d.angle == 0);
      if (d.y + d.height <= g.y + 0.01 && d.x >= g.x - 1 && d.x + d.width <= g.x + g.cell_w * double(L) + 1 &&
          d.y > g.y - 200) {
        above.push_back(d);
        cjk_chars += characters(d.text);
      }
    }
    REQUIRE(!above.empty());
    for (std::size_t a = 0; a < above.size(); ++a) {
      for (std::size_t b = a + 1; b < above.size(); ++b) {
        const double w = std::min(above[a].x + above[a].width, above[b].x + above[b].width) - std::max(above[a].x, above[b].x);
        const double h = std::min(above[a].y + above[a].height, above[b].y + above[b].height) - std::max(above[a].y, above[b].y);
        CAPTURE(above[a].text);
        CAPTURE(above[b].text);
        CHECK(!(w > 0.5 && h > 0.5));
      }
    }
    if (L <= 12) {
      std::size_t expected = 0;
      for (const std::string& t : s.key_tokens) expected += characters(t);
      CHECK(cjk_chars == expected);
    }
  }
}
