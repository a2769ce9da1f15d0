#pragma once
// The FlashAttention tile grid as a picture: the [Lq, Lk] score matrix cut into the tiles a
// run walks (flash.hpp's flash_tiles), each drawn as the kernel treats it:
//   computed in full   every score of the tile is visible: no index test at all;
//   diagonal           computed, then each score index-tested (bottom-right causal, or the
//                      mask of a tile it covers in part); the scores the test hides are
//                      hatched, the one look of "masked";
//   skipped            entirely above the diagonal, or hidden by the mask: never read.
// One panel per run side by side (e.g. non-causal and causal), thick lines on the tile
// boundaries, the counts in each panel's title, and a legend for the three kinds.
#include <string>
#include <vector>

#include "attn/render/draw/canvas.hpp"
#include "attn/engine/attention/flash.hpp"

namespace attn {

struct FlashTilesPanel {
  std::vector<FlashTile> tiles;  // covering [Lq, Lk] exactly once
  bool causal = false;           // a diagonal tile's scores are tested with the causal rule
  std::string title;             // e.g. "causal: 2 of 6 tiles skipped"
  Mask2 allowed = {};            // [Lq, Lk], the mask the tiles were classified by; empty = none
};

struct FlashTilesSpec {
  std::size_t Lq = 0, Lk = 0;
  std::vector<std::string> query_tokens, key_tokens;  // empty: positions 0, 1, ...
  std::vector<FlashTilesPanel> panels;
  std::string title, subtitle;
};

// The fills of the three tile kinds (tests look for them in the PNG).
Rgb flash_tile_color(FlashTile::Kind kind);

// "2 queries × 4 keys": the tile shape a run used, clamped to the matrix (a tile of a 1-token
// sentence holds 1 query × 1 key, whatever block size was asked for), counted in words.
std::string tile_shape_text(std::size_t block_q, std::size_t block_k, std::size_t Lq, std::size_t Lk);

// Checks that each panel's tiles cover the matrix once (InputError) and lays out the figure.
// grids[p] is panel p's grid, one cell per score.
Figure flash_tiles_figure(const FlashTilesSpec& spec);

}  // namespace attn
