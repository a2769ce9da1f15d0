// The FlashAttention tile picture: each tile drawn as the kernel treats it, read back from the PNG.
#include <doctest/doctest.h>

#include "attn/engine/error.hpp"
#include "attn/render/flash_tiles_picture.hpp"
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
