// The pictures of rope, positional and generate, decoded back from PNG: the teaching point is
// visible in the pixels (RoPE's constant diagonals, PE's −1..1 scale, the cache's triangle).
#include <doctest/doctest.h>

#include <cmath>

#include "attn/engine/positions/alibi.hpp"
#include "attn/render/draw/colormap.hpp"
#include "attn/render/views/kv_cache_picture.hpp"
#include "attn/engine/positions/positional.hpp"
#include "attn/render/views/positional_pictures.hpp"
#include "attn/render/views/rope_pictures.hpp"
#include "picture_support.hpp"

using namespace attn;
using namespace attn::test;

namespace {

// matplotlib's RdBu (_RdBu_data) ends and middle; RdBu_r puts the dark red at the top.
const Rgb8 kRdBuRed{0x67, 0x00, 0x1f}, kRdBuMiddle{0xf7, 0xf7, 0xf7}, kRdBuBlue{0x05, 0x30, 0x61};

}  // namespace

TEST_CASE("rope pictures: the score heatmap is constant along diagonals and varies across them") {
  RopeLessonConfig c;
  c.positions = 6;
  const RopeLesson lesson = rope_lesson(c);
  const Figure f = rope_scores_figure(lesson);
  REQUIRE(f.grids.size() == 1);
  const CellGrid& g = f.grids[0];
  CHECK(g.rows == 6);
  const DecodedPng img = DecodedPng::from_bytes(render_png(f, 1));
  REQUIRE(img.ok());
  for (std::size_t i = 0; i + 1 < 6; ++i) {
    for (std::size_t j = 0; j + 1 < 6; ++j) {
      CAPTURE(i);
      CAPTURE(j);
      CHECK(near(img.cell_corner(g, i, j, 1), img.cell_corner(g, i + 1, j + 1, 1), 1));
    }
  }
  // Across diagonals the colour changes somewhere (RoPE is not a constant score).
  bool differs = false;
  for (std::size_t j = 1; j < 6; ++j) differs = differs || !near(img.cell_corner(g, 0, 0, 1), img.cell_corner(g, 0, j, 1), 10);
  CHECK(differs);
  CHECK(well_formed_xml(render_svg(f)));
}

TEST_CASE("rope pictures: rotation, frequencies and styles render for both styles and odd sizes") {
  for (RopeStyle style : {RopeStyle::Half, RopeStyle::Interleaved}) {
    for (std::size_t d : {std::size_t{2}, std::size_t{8}, std::size_t{64}}) {
      RopeLessonConfig c;
      c.style = style;
      c.head_dim = d;
      c.positions = d == 64 ? 100 : 3;
      c.pair = d / 2 - 1;
      const RopeLesson lesson = rope_lesson(c);
      CAPTURE(d);
      for (const Figure& f : {rope_rotation_figure(lesson), rope_frequencies_figure(lesson), rope_styles_figure(lesson)}) {
        CHECK(f.width > 300);
        CHECK(f.width < 2000);
        CHECK(DecodedPng::from_bytes(render_png(f, 1)).ok());
      }
      CHECK(rope_rotation_figure(lesson).plots.size() == 2);
    }
  }
}

TEST_CASE("positional pictures: PE uses a diverging scale from -1 (blue) through 0 (white) to 1 (red)") {
  const Tensor2 pe = sinusoidal_encoding(4, 6);
  const Figure f = sinusoidal_figure(pe, 10000);
  const CellGrid& g = f.grids[0];
  CHECK(g.rows == 4);
  CHECK(g.cols == 6);
  const DecodedPng img = DecodedPng::from_bytes(render_png(f, 1));
  CHECK(near(img.cell_corner(g, 0, 0, 1), kRdBuMiddle));  // sin(0) = 0
  CHECK(near(img.cell_corner(g, 0, 1, 1), kRdBuRed));     // cos(0) = 1
  // pos 3, dim 1: cos(3) = -0.99, within 1% of the blue end.
  CHECK(near(img.cell_corner(g, 3, 1, 1), kRdBuBlue, 12));
}

TEST_CASE("positional pictures: ALiBi draws the penalty: none on the diagonal is white, the largest darkest") {
  const std::vector<double> slopes = alibi_slopes(4);
  const Tensor3 bias = alibi_bias(slopes, 5, 5);
  const Figure f = alibi_figure(bias, slopes);
  REQUIRE(f.grids.size() == 4);  // no mean panel: a mean of biases means nothing
  const DecodedPng img = DecodedPng::from_bytes(render_png(f, 1));
  // Like a weight of 0 everywhere else, no penalty is the light end of the scale.
  CHECK(near(img.cell_corner(f.grids[0], 2, 2, 1), to_rgb8(Colormap::by_name("Reds").at(0))));
  // Head 0's farthest key has the largest penalty of all heads: the dark end.
  CHECK(near(img.cell_corner(f.grids[0], 4, 0, 1), to_rgb8(Colormap::by_name("Reds").at(1))));
}

TEST_CASE("kv cache picture: prefill block, the causal triangle, masked and not-yet-cached keys") {
  GenerateConfig c;
  c.sentence = "a b c d e";
  c.prefill = 2;
  const GenerateResult r = run_generate(c);
  const Figure f = kv_cache_figure(r);
  REQUIRE(f.grids.size() == 1);
  const CellGrid& g = f.grids[0];
  CHECK(g.rows == 5);
  const DecodedPng img = DecodedPng::from_bytes(render_png(f, 2));
  const Rgb8 masked = img.cell_mean(g, 0, 1, 2);    // inside the prefill: causal, -inf
  const Rgb8 not_yet = img.cell_corner(g, 0, 4, 2); // token 4 is fed two steps later
  const Rgb8 first = img.cell_corner(g, 0, 0, 2);   // token 0 attends only to itself: weight 1
  CHECK(std::abs(masked.r - masked.b) <= 3);         // grey hatching
  CHECK(not_yet == Rgb8{255, 255, 255});
  CHECK(near(first, to_rgb8(Colormap::by_name("Blues").at(1))));
  for (std::size_t t = 1; t < 5; ++t) CHECK_FALSE(img.cell_corner(g, t, 0, 2) == Rgb8{255, 255, 255});

  c.window = 2;
  c.prefill = 0;
  const Figure w = kv_cache_figure(run_generate(c));
  const DecodedPng wimg = DecodedPng::from_bytes(render_png(w, 2));
  // Key 0 is outside the window of token 4: evicted, drawn reddish, not as the grey hatching
  // of a causally masked key (the window's evictions used to look like the causal mask).
  const Rgb8 evicted = wimg.cell_corner(w.grids[0], 4, 0, 2);
  CHECK(evicted.r - evicted.b > 30);
  CHECK(evicted.r > 200);
  // A window wide enough for every token evicts nothing: no reddish key anywhere.
  c.window = 5;
  const Figure all = kv_cache_figure(run_generate(c));
  const DecodedPng aimg = DecodedPng::from_bytes(render_png(all, 2));
  for (std::size_t t = 0; t < 5; ++t)
    for (std::size_t j = 0; j < t; ++j) CHECK(aimg.cell_corner(all.grids[0], t, j, 2).r - aimg.cell_corner(all.grids[0], t, j, 2).b < 30);
  // Nor does its legend show the evicted swatch (the legend lists only what the picture has),
  // while the window of 2 does; and the legend ends inside the picture, not past its edge.
  auto has_evicted_swatch = [](const DecodedPng& im) {
    for (int y = 0; y < im.height(); ++y)
      for (int x = 0; x < im.width(); ++x)
        if (im.pixel(x / 2.0, y / 2.0, 2) == Rgb8{0xf2, 0xc6, 0xbd}) return true;
    return false;
  };
  CHECK_FALSE(has_evicted_swatch(aimg));
  CHECK(has_evicted_swatch(wimg));
  for (int y = 0; y < wimg.height(); ++y) CHECK(wimg.pixel((wimg.width() - 2) / 2.0, y / 2.0, 2) == Rgb8{255, 255, 255});
}

TEST_CASE("rope frequencies: a head of width 2 has one pair, named once, not as its own fastest and slowest") {
  RopeLessonConfig c;
  c.head_dim = 2;
  const std::string one = rope_frequency_summary(rope_lesson(c));
  CHECK(one.find("one pair") != std::string::npos);
  CHECK(one.find("pair 0") == one.rfind("pair 0"));
  c.head_dim = 8;
  const std::string four = rope_frequency_summary(rope_lesson(c));
  CHECK(four.rfind("pair 0 turns 1 radian per token", 0) == 0);
  CHECK(four.find("pair 3 turns every") != std::string::npos);
}

TEST_CASE("rope pictures: the rotation's label note says why labels are skipped, and 'come round' only after a turn") {
  RopeLessonConfig c;
  c.style = RopeStyle::Interleaved;
  c.head_dim = 32;
  c.positions = 12;
  c.pair = 3;  // theta = 10000^(-6/32) = 0.178 rad a token: 12 positions cover 2 rad, under one turn
  const Figure short_run = rope_rotation_figure(rope_lesson(c));
  CHECK(short_run.subtitle.find("6 of 12 labelled") != std::string::npos);
  CHECK(short_run.subtitle.find("round again") == std::string::npos);
  c.pair = 0;  // 1 rad a token: 40 positions turn six times
  c.positions = 40;
  const Figure long_run = rope_rotation_figure(rope_lesson(c));
  CHECK(long_run.subtitle.find("round again") != std::string::npos);
}

// Issue 34: on one linear scale ALiBi's heads 2 and 3 (m = 1/64, 1/256) were blank, their
// largest penalty a few per cent of head 0's. Every head must show its distance gradient: its
// nearest off-diagonal cell, its farthest cell and its diagonal are three distinguishable
// colours, in that order of darkness, and the picture says which scale makes that so.
TEST_CASE("positional pictures: every ALiBi head shows its gradient, the weakest included") {
  for (std::size_t H : {std::size_t{4}, std::size_t{8}}) {
    for (std::size_t L : {std::size_t{3}, std::size_t{8}, std::size_t{12}}) {
      CAPTURE(H);
      CAPTURE(L);
      const std::vector<double> slopes = alibi_slopes(H);
      const Figure f = alibi_figure(alibi_bias(slopes, L, L), slopes);
      REQUIRE(f.grids.size() == H);
      CHECK(f.subtitle.find("log colour scale") != std::string::npos);
      const DecodedPng img = DecodedPng::from_bytes(render_png(f, 2));
      REQUIRE(img.ok());
      auto darkness = [](const Rgb8& c) { return 3 * 255 - c.r - c.g - c.b; };
      for (std::size_t h = 0; h < H; ++h) {
        CAPTURE(h);
        const int diagonal = darkness(img.cell_corner(f.grids[h], L - 1, L - 1, 2));
        const int near_key = darkness(img.cell_corner(f.grids[h], L - 1, L - 2, 2));
        const int far_key = darkness(img.cell_corner(f.grids[h], L - 1, 0, 2));
        CAPTURE(diagonal);
        CAPTURE(near_key);
        CAPTURE(far_key);
        CHECK(near_key - diagonal >= 30);
        if (L > 2) CHECK(far_key - near_key >= 30);
      }
    }
  }
}
