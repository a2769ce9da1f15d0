#pragma once
// Prefix-LM (T5's prefix language model; UniLM): the first `length` positions are read
// bidirectionally by every query, the rest causally. Self-attention only (Lq = Lk).
// attend: "prefix": P.
#include <cstddef>
#include <string>

#include "attn/engine/attention/variants/mask_point.hpp"
#include "attn/engine/core/error.hpp"

namespace attn::variants {

struct PrefixLM {
  std::size_t length = 0;

  ATTN_HOST_DEVICE bool visible(const MaskPoint& at) const { return at.j < length || at.j <= at.i; }
  ATTN_HOST_DEVICE MaskCover cover(const MaskTile& t) const {  // self-attention: positions are query indices
    if (t.hi < long(length) || t.hi <= t.first) return MaskCover::all;
    if (t.lo >= long(length) && t.lo > t.last) return MaskCover::none;
    return MaskCover::some;
  }
  void check(std::size_t Lq, std::size_t Lk) const {
    if (Lq != Lk)
      throw InputError("prefix: prefix-LM is self-attention (Lq = Lk), got Lq = " + std::to_string(Lq) +
                       ", Lk = " + std::to_string(Lk));
  }
};

}  // namespace attn::variants
