// The FlashAttention tile picture: each tile drawn as the kernel treats it, read back from the PNG.
#include <doctest/doctest.h>

#include "attn/engine/attention/mask.hpp"
#include "attn/engine/attention/tile_math.hpp"
#include "attn/engine/attention/variant.hpp"
#include "attn/engine/core/error.hpp"
#include "attn/render/views/flash_tiles_picture.hpp"
#include "picture_support.hpp"

using namespace attn;
using namespace attn::test;

namespace {

// The teaching grid the demo uses: generic float64 kernel, 2 x 2 tiles (its key panel is 2 keys).
FlashOptions teaching_options(bool causal) {
  FlashOptions o;
  o.causal = causal;
  o.isa = "generic";
  o.precision = FlashPrecision::float64;
  o.block_q = 2;
  o.block_k = 2;
  return o;
}

// What a tile covering rows [i0, i0 + rows) x keys [j0, j0 + cols) must be under the causal rule
// for a square matrix (query i sees keys j <= i), counted here from the rule alone.
FlashTile::Kind causal_kind(std::size_t i0, std::size_t rows, std::size_t j0, std::size_t cols) {
  if (j0 > i0 + rows - 1) return FlashTile::Kind::skipped;  // even the last row sees no key of it
  if (j0 + cols - 1 <= i0) return FlashTile::Kind::full;    // even the first row sees all of it
  return FlashTile::Kind::diagonal;
}

}  // namespace

TEST_CASE("flash tile picture: every tile's colour is its kind, counted from the causal rule") {
  const std::size_t L = 7;
  const std::vector<FlashTile> plain = flash_tiles(L, L, teaching_options(false));
  const std::vector<FlashTile> causal = flash_tiles(L, L, teaching_options(true));
  FlashTilesSpec spec;
  spec.Lq = spec.Lk = L;
  spec.panels = {{plain, false, "non-causal"}, {causal, true, "causal"}};
  spec.title = "tiles";
  const Figure f = flash_tiles_figure(spec);
  REQUIRE(f.grids.size() == 2);
  CHECK(f.grids[0].x < f.grids[1].x);  // side by side, tops aligned
  CHECK(f.grids[0].y == f.grids[1].y);
  const DecodedPng img = DecodedPng::from_bytes(render_png(f, 2));
  REQUIRE(img.ok());

  // The causal panel: classify each 2 x 2 tile from the pixel at its top-right score's corner
  // (for a diagonal tile that score is hidden, so look at its bottom-left score instead).
  const CellGrid& g = f.grids[1];
  std::size_t skipped = 0, full = 0, diagonal = 0, expected_skipped = 0;
  for (std::size_t i0 = 0; i0 < L; i0 += 2) {
    for (std::size_t j0 = 0; j0 < L; j0 += 2) {
      const std::size_t rows = std::min<std::size_t>(2, L - i0), cols = std::min<std::size_t>(2, L - j0);
      const FlashTile::Kind expected = causal_kind(i0, rows, j0, cols);
      expected_skipped += expected == FlashTile::Kind::skipped;
      const Rgb8 seen = img.cell_corner(g, i0 + rows - 1, j0, 2);
      CAPTURE(i0);
      CAPTURE(j0);
      if (near(seen, to_rgb8(flash_tile_color(FlashTile::Kind::skipped)))) {
        ++skipped;
        CHECK(expected == FlashTile::Kind::skipped);
      } else if (near(seen, to_rgb8(flash_tile_color(FlashTile::Kind::full)))) {
        ++full;
        CHECK(expected == FlashTile::Kind::full);
      } else {
        CHECK(near(seen, to_rgb8(flash_tile_color(FlashTile::Kind::diagonal))));
        ++diagonal;
        CHECK(expected == FlashTile::Kind::diagonal);
        // Its score above the diagonal is hatched (masked), not the tile's colour.
        CHECK_FALSE(near(img.cell_corner(g, i0, j0 + cols - 1, 2), seen, 30));
      }
    }
  }
  CHECK(skipped == expected_skipped);
  CHECK(skipped + full + diagonal == causal.size());
  CHECK(skipped == 6);  // by hand: rows 0-1 see none of keys 2-6 (3 tiles), rows 2-3 none of 4-6
                       // (2), rows 4-5 not key 6 (1)
  // A skipped tile looks nothing like a computed one, and the non-causal panel has none.
  CHECK_FALSE(near(to_rgb8(flash_tile_color(FlashTile::Kind::skipped)), to_rgb8(flash_tile_color(FlashTile::Kind::full)), 60));
  for (std::size_t i = 0; i < L; ++i)
    for (std::size_t j = 0; j < L; ++j)
      CHECK(near(img.cell_corner(f.grids[0], i, j, 2), to_rgb8(flash_tile_color(FlashTile::Kind::full))));
}

TEST_CASE("flash tile picture: tiles that miss or overlap a score are refused") {
  FlashTilesSpec spec;
  spec.Lq = spec.Lk = 4;
  spec.panels = {{{{0, 2, 0, 4, FlashTile::Kind::full}}, false, ""}};  // rows 2-3 uncovered
  CHECK_THROWS_AS(flash_tiles_figure(spec), InputError);
  spec.panels = {{{{0, 4, 0, 4, FlashTile::Kind::full}, {0, 1, 0, 1, FlashTile::Kind::full}}, false, ""}};
  CHECK_THROWS_AS(flash_tiles_figure(spec), InputError);
  spec.panels = {{{{0, 4, 0, 5, FlashTile::Kind::full}}, false, ""}};
  CHECK_THROWS_AS(flash_tiles_figure(spec), InputError);
  spec.panels = {};
  CHECK_THROWS_AS(flash_tiles_figure(spec), InputError);
}

TEST_CASE("flash tile picture: the tile shape in words never exceeds the matrix") {
  CHECK(tile_shape_text(2, 2, 1, 1) == "1 query × 1 key");  // a 1-token sentence, tiles of 2 asked for
  CHECK(tile_shape_text(2, 4, 12, 12) == "2 queries × 4 keys");
  CHECK(tile_shape_text(8, 8, 3, 5) == "3 queries × 5 keys");
}

TEST_CASE("block mask: a tile the mask hides is skipped, one it shows whole runs unmasked, the rest are tested") {
  // tile::mask_cover on a 2 x 3 mask, by hand.
  const bool m[6] = {true, true, false,   // row 0
                     true, true, false};  // row 1
  CHECK(tile::mask_cover(m, 3, 0, 2, 0, 2) == tile::MaskCover::all);
  CHECK(tile::mask_cover(m, 3, 0, 2, 2, 1) == tile::MaskCover::none);
  CHECK(tile::mask_cover(m, 3, 0, 2, 1, 2) == tile::MaskCover::some);

  // A causal sliding window of 2 keys (the query and the one before) on 6 positions, 2 x 2 tiles:
  // the diagonal tiles and the ones just below it hold both kinds of score (5 tested); the
  // others none (above the diagonal: 3; rows 4-5 against keys 0-1: 1).
  AttentionMask window;
  window.window = variants::SlidingWindow{1, 0};
  Mask2 allowed = window.allowed(6, 6) && causal_allowed(6, 6);
  std::size_t n[3] = {0, 0, 0};
  for (const FlashTile& t : flash_tiles(6, 6, teaching_options(false), &allowed)) ++n[static_cast<int>(t.kind)];
  CHECK(n[static_cast<int>(FlashTile::Kind::skipped)] == 4);
  CHECK(n[static_cast<int>(FlashTile::Kind::diagonal)] == 5);
  CHECK(n[static_cast<int>(FlashTile::Kind::full)] == 0);

  // Documents 0,0 | 1,1,1,1 (packed sequences): every tile is all one document or none of it.
  AttentionMask docs;
  docs.segments = variants::Documents{{0, 0, 1, 1, 1, 1}, {0, 0, 1, 1, 1, 1}};
  allowed = docs.allowed(6, 6);
  const std::vector<FlashTile> tiles = flash_tiles(6, 6, teaching_options(false), &allowed);
  std::fill(std::begin(n), std::end(n), 0);
  for (const FlashTile& t : tiles) ++n[static_cast<int>(t.kind)];
  CHECK(n[static_cast<int>(FlashTile::Kind::skipped)] == 4);  // (0,1) (0,2) (1,0) (2,0)
  CHECK(n[static_cast<int>(FlashTile::Kind::full)] == 5);     // (0,0) and the four of document 1
  CHECK(n[static_cast<int>(FlashTile::Kind::diagonal)] == 0);

  // The picture of that block mask: the full tiles in the full colour, the skipped ones not.
  FlashTilesSpec spec;
  spec.Lq = spec.Lk = 6;
  spec.panels = {{tiles, false, "documents", allowed}};
  const Figure f = flash_tiles_figure(spec);
  const DecodedPng img = DecodedPng::from_bytes(render_png(f, 2));
  REQUIRE(img.ok());
  CHECK(near(img.cell_corner(f.grids[0], 0, 0, 2), to_rgb8(flash_tile_color(FlashTile::Kind::full))));
  CHECK(near(img.cell_corner(f.grids[0], 5, 2, 2), to_rgb8(flash_tile_color(FlashTile::Kind::full))));
  CHECK(near(img.cell_corner(f.grids[0], 0, 5, 2), to_rgb8(flash_tile_color(FlashTile::Kind::skipped))));
  Mask2 wrong = xt::ones<bool>({5, 6});
  spec.panels[0].allowed = wrong;
  CHECK_THROWS_AS(flash_tiles_figure(spec), InputError);
  CHECK_THROWS_AS(flash_tiles(6, 6, teaching_options(false), &wrong), InputError);
}
