#pragma once
// What a mask variant is asked (variant.hpp): one query/key pair, or one tile of them.
//
// Positions are bottom-right aligned: query i sits at p = i + Lk - Lq (a decode step's query is
// the last position). Keys are their own positions.
#include <cstddef>

#include "attn/engine/attention/tile_math.hpp"

namespace attn::variants {

using tile::MaskCover;

// Query i (at position p) against key j.
struct MaskPoint {
  std::size_t i, j;
  long p;
};

// Queries [i0, i0 + rows) at positions first..last against keys [j0, j0 + cols) = lo..hi.
struct MaskTile {
  std::size_t i0, rows, j0, cols;
  long first, last, lo, hi;
};

}  // namespace attn::variants
