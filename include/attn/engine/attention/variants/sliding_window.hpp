#pragma once
// Sliding-window attention (Longformer, Beltagy et al. 2020; Mistral's is causal: right = 0)
// with attention sinks (StreamingLLM, Xiao et al. 2023): query at p sees keys
// p - left <= j <= p + right, and the first `sinks` keys whatever the window says.
// attend: "window": [left, right], "sinks": s.
#include <cstddef>

#include "attn/engine/attention/variants/mask_point.hpp"

namespace attn::variants {

struct SlidingWindow {
  std::size_t left = 0, right = 0;
  std::size_t sinks = 0;

  ATTN_HOST_DEVICE bool visible(const MaskPoint& at) const {
    const long j = long(at.j);
    return j < long(sinks) || (j >= at.p - long(left) && j <= at.p + long(right));
  }
  // Exact for a window alone; where sinks meet the band a tile may come out "some" that a
  // bitmap would call all or none (it is then index-tested: the same scores).
  ATTN_HOST_DEVICE MaskCover cover(const MaskTile& t) const {
    if (t.hi < long(sinks)) return MaskCover::all;                                              // sinks only
    if (t.lo >= t.last - long(left) && t.hi <= t.first + long(right)) return MaskCover::all;  // in every row's band
    if (t.lo >= long(sinks) && (t.hi < t.first - long(left) || t.lo > t.last + long(right))) return MaskCover::none;
    return MaskCover::some;
  }
  void check(std::size_t, std::size_t) const {}
};

}  // namespace attn::variants
