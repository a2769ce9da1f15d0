// Heatmaps and head grids, decoded back from PNG: the right colour in the right cell, masked
// cells unmistakable, labels checked against the weights' shape.
#include <doctest/doctest.h>

#include "attn/engine/error.hpp"
#include "attn/engine/sdpa.hpp"
#include "attn/render/head_grid.hpp"
#include "attn/render/heatmap.hpp"
#include "attn/engine/mask.hpp"
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

TEST_CASE("head grid: a per-head mask hatches that head's cells; the mean is masked only where every head is") {
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
