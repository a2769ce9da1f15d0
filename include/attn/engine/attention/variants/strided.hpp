#pragma once
// Child et al. 2019's strided sparse pattern: key j <= p is visible when p - j < stride (the
// local band) or (p - j) mod stride = 0 (the strided keys); later keys never.
// attend: "method": "sparse", "stride": s.
#include <cstddef>

#include "attn/engine/attention/variants/mask_point.hpp"

namespace attn::variants {

struct Strided {
  std::size_t stride = 1;

  ATTN_HOST_DEVICE bool visible(const MaskPoint& at) const {
    const long back = at.p - long(at.j), s = long(stride);
    return back >= 0 && (back < s || back % s == 0);
  }
  // "some" for the periodic part: index-tested.
  ATTN_HOST_DEVICE MaskCover cover(const MaskTile& t) const {
    if (t.lo > t.last) return MaskCover::none;                                   // after every row's position
    if (t.hi <= t.first && t.last - t.lo < long(stride)) return MaskCover::all;  // inside every row's band
    return MaskCover::some;
  }
  void check(std::size_t, std::size_t) const {}
};

}  // namespace attn::variants
