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

// Query i and key j of an Lq x Lk problem; its tile of rows [i0, i0 + rows) and keys
// [j0, j0 + cols) (rows, cols >= 1).
ATTN_HOST_DEVICE inline MaskPoint mask_point(std::size_t i, std::size_t j, std::size_t Lq, std::size_t Lk) {
  return {i, j, long(i) + long(Lk) - long(Lq)};
}
ATTN_HOST_DEVICE inline MaskTile mask_tile(std::size_t i0, std::size_t rows, std::size_t j0, std::size_t cols,
                                           std::size_t Lq, std::size_t Lk) {
  const long off = long(Lk) - long(Lq);
  return {i0, rows, j0, cols, long(i0) + off, long(i0 + rows - 1) + off, long(j0), long(j0 + cols - 1)};
}

}  // namespace attn::variants
