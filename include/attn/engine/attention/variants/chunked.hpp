#pragma once
// Chunked attention (Llama 4's local layers, "iRoPE"): the sequence is cut into chunks of
// `size` positions and a query sees only keys of its own chunk; with causal, block-causal.
// Unlike a sliding window, the first query of a chunk sees nothing before it, so a chunked
// layer's KV cache empties at every chunk boundary. attend: "chunk": C.
#include <cstddef>

#include "attn/engine/attention/variants/mask_point.hpp"

namespace attn::variants {

struct Chunked {
  std::size_t size = 1;

  // Floor division: with more queries than keys the first queries sit at negative positions.
  ATTN_HOST_DEVICE long chunk_of(long position) const {
    const long s = long(size);
    return position >= 0 ? position / s : -((-position + s - 1) / s);
  }
  ATTN_HOST_DEVICE bool visible(const MaskPoint& at) const { return chunk_of(at.p) == chunk_of(long(at.j)); }
  ATTN_HOST_DEVICE MaskCover cover(const MaskTile& t) const {
    const long rows_lo = chunk_of(t.first), rows_hi = chunk_of(t.last);
    const long keys_lo = chunk_of(t.lo), keys_hi = chunk_of(t.hi);
    if (keys_hi < rows_lo || keys_lo > rows_hi) return MaskCover::none;  // no chunk in common
    if (rows_lo == rows_hi && keys_lo == keys_hi) return MaskCover::all;  // one chunk on both sides
    return MaskCover::some;
  }
  void check(std::size_t, std::size_t) const {}
};

}  // namespace attn::variants
