// Mask diagrams: the blocked and allowed panels show exactly the mask, as complements.
#include <doctest/doctest.h>

#include <optional>

#include "attn/engine/attention/mask.hpp"
#include "attn/render/views/mask_diagram.hpp"
#include "picture_support.hpp"

using namespace attn;
using namespace attn::test;

namespace {

// Checks that the grid's cells take exactly two colours, split as `allowed` splits them, and
// returns {colour of allowed cells, colour of blocked cells}.
std::pair<Rgb8, Rgb8> two_colours(const DecodedPng& img, const CellGrid& g, const Mask2& allowed) {
  std::optional<Rgb8> yes, no;
  for (std::size_t i = 0; i < g.rows; ++i) {
    for (std::size_t j = 0; j < g.cols; ++j) {
      CAPTURE(i);
      CAPTURE(j);
      const Rgb8 c = img.cell_corner(g, i, j, 2);
      std::optional<Rgb8>& slot = allowed(i, j) ? yes : no;
      if (!slot) slot = c;
      CHECK(near(*slot, c, 1));
    }
  }
  REQUIRE(yes);
  REQUIRE(no);
  CHECK_FALSE(near(*yes, *no, 30));
  return {*yes, *no};
}

}  // namespace

TEST_CASE("mask diagram: causal, blocked and allowed side by side, as complements") {
  MaskDiagramSpec s;
  const Mask2 causal = causal_allowed(5, 5);
  s.rows.push_back({causal, {}, {}, ""});
  const Figure f = mask_figure(s);
  REQUIRE(f.grids.size() == 2);
  CHECK(f.grids[0].x < f.grids[1].x);  // side by side
  CHECK(f.grids[0].y == f.grids[1].y);
  const DecodedPng img = DecodedPng::from_bytes(render_png(f, 2));
  const auto [blocked_view_ok, blocked_view_blocked] = two_colours(img, f.grids[0], causal);
  const auto [allowed_view_ok, allowed_view_blocked] = two_colours(img, f.grids[1], causal);
  // Each panel highlights its own subject: the blocked cells on the left, the allowed on the right.
  CHECK(near(blocked_view_ok, allowed_view_blocked, 2));
}

TEST_CASE("mask diagram: padding (one row per sequence), window, graph and rectangular causal") {
  MaskDiagramSpec s;
  const std::vector<std::size_t> lengths{5, 3};
  const Mask3 pad = padding_allowed(lengths, 5);
  for (std::size_t b = 0; b < 2; ++b) s.rows.push_back({xt::view(pad, b, xt::all(), xt::all()), {}, {}, "seq"});
  const Figure padded = mask_figure(s);
  REQUIRE(padded.grids.size() == 4);
  CHECK(padded.grids[2].y > padded.grids[0].y);
  const DecodedPng img = DecodedPng::from_bytes(render_png(padded, 2));
  two_colours(img, padded.grids[3], xt::view(pad, 1, xt::all(), xt::all()));

  for (const Mask2& m : {sliding_window_allowed(6, 6, 2, 0), causal_allowed(2, 6)}) {
    MaskDiagramSpec one;
    one.rows.push_back({m, time_labels(m.shape(0), 6 - m.shape(0)), {}, ""});
    const Figure f = mask_figure(one);
    CHECK(f.grids[1].rows == m.shape(0));
    two_colours(DecodedPng::from_bytes(render_png(f, 2)), f.grids[1], m);
  }
  const std::vector<std::pair<std::size_t, std::size_t>> edges{{0, 1}, {1, 2}};
  MaskDiagramSpec graph;
  graph.rows.push_back({graph_allowed(3, edges), {}, {}, ""});
  graph.axis_noun = "node";
  const Figure g = mask_figure(graph);
  two_colours(DecodedPng::from_bytes(render_png(g, 2)), g.grids[1], graph.rows[0].allowed);
  CHECK(time_labels(2, 4) == std::vector<std::string>{"t=4", "t=5"});
}

TEST_CASE("mask diagram: two query rows still show the whole rotated axis title") {
  // "Query position — attending" is longer than a grid of 2 rows is tall: the panel grows
  // above and below so that the title is not cut at the picture's edges.
  MaskDiagramSpec s;
  s.rows.push_back({causal_allowed(2, 6), time_labels(2, 4), {}, ""});
  CHECK(DecodedPng::from_bytes(render_png(mask_figure(s), 1)).ink_on_border(4) == 0);
}

TEST_CASE("mask diagram: one query against 48 keys is a row at least 40 points tall, its thinning counted over 48") {
  MaskDiagramSpec s;
  const Mask2 row = xt::view(causal_allowed(48, 48), xt::range(20, 21), xt::all());  // keys 0..20 allowed
  s.rows.push_back({row, {}, {}, ""});
  const Figure f = mask_figure(s);
  REQUIRE(f.grids.size() == 2);
  CHECK(f.grids[0].rows == 1);
  CHECK(f.grids[0].cell_h * double(f.grids[0].rows) >= 40);  // it was one 6-point strip
  CHECK(f.subtitle.find("position labelled") != std::string::npos);  // the axes' noun, not "token"
  CHECK(f.subtitle.find("of 48") != std::string::npos);       // the 48 keys, not "of 1"
  CHECK(f.subtitle.find("of 1") == std::string::npos);
  const DecodedPng img = DecodedPng::from_bytes(render_png(f, 2));
  REQUIRE(img.ok());
  two_colours(img, f.grids[1], row);  // every cell of the tall row drawn as the mask says
}
