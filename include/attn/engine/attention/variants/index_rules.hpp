#pragma once
// The mask variants of AttentionMask (variant.hpp) as one plain value that a kernel takes by
// value, in host or device code (the CUDA kernels, src/engine/attention/cuda/). std::optional and
// std::vector are not for device code, so each rule sits in a Slot, and the document ids are
// pointed to (DocumentIds), not held. visible() and cover() are the rules' own, joined as
// AttentionMask joins them: a key is visible when every rule present says so.
// AttentionMask::index_rules() makes one; a rule without a slot here reaches the kernels as the
// bitmap it stands for instead (variant.cpp).
#include <cstddef>

#include "attn/engine/attention/tile_math.hpp"
#include "attn/engine/attention/variants/chunked.hpp"
#include "attn/engine/attention/variants/documents.hpp"
#include "attn/engine/attention/variants/mask_point.hpp"
#include "attn/engine/attention/variants/prefix_lm.hpp"
#include "attn/engine/attention/variants/sliding_window.hpp"
#include "attn/engine/attention/variants/strided.hpp"

namespace attn::variants {

template <class Rule>
struct Slot {
  bool on = false;
  Rule rule{};
};

template <class Rule>
ATTN_HOST_DEVICE inline bool slot_visible(const Slot<Rule>& s, const MaskPoint& at) {
  return !s.on || s.rule.visible(at);
}
template <class Rule>
ATTN_HOST_DEVICE inline MaskCover slot_cover(MaskCover c, const Slot<Rule>& s, const MaskTile& t) {
  return s.on ? tile::joined_cover(c, s.rule.cover(t)) : c;
}

struct IndexRules {
  Slot<SlidingWindow> window;
  Slot<DocumentIds> segments;
  Slot<PrefixLM> prefix;
  Slot<Strided> stride;
  Slot<Chunked> chunk;

  ATTN_HOST_DEVICE bool any() const { return window.on || segments.on || prefix.on || stride.on || chunk.on; }
  // Query i and key j (0-based) of an Lq x Lk problem.
  ATTN_HOST_DEVICE bool visible(std::size_t i, std::size_t j, std::size_t Lq, std::size_t Lk) const {
    const MaskPoint at = mask_point(i, j, Lq, Lk);
    return slot_visible(window, at) && slot_visible(segments, at) && slot_visible(prefix, at) &&
           slot_visible(stride, at) && slot_visible(chunk, at);
  }
  // AttentionMask::cover's answer for the tile of rows [i0, i0 + rows) and keys [j0, j0 + cols).
  ATTN_HOST_DEVICE MaskCover cover(std::size_t i0, std::size_t rows, std::size_t j0, std::size_t cols, std::size_t Lq,
                                   std::size_t Lk) const {
    const MaskTile t = mask_tile(i0, rows, j0, cols, Lq, Lk);
    MaskCover c = MaskCover::all;
    c = slot_cover(c, window, t);
    c = slot_cover(c, segments, t);
    c = slot_cover(c, prefix, t);
    c = slot_cover(c, stride, t);
    return slot_cover(c, chunk, t);
  }
};

}  // namespace attn::variants
