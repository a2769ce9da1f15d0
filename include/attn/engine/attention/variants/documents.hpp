#pragma once
// Document masking of packed sequences: query i sees key j only when both carry the same
// document id (with causal: block-causal, as packed pre-training batches are run).
// attend: "segments": {"q": [Lq ids], "k": [Lk ids]}.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "attn/engine/attention/variants/mask_point.hpp"
#include "attn/engine/core/error.hpp"

namespace attn::variants {

struct Documents {
  std::vector<std::int64_t> q, k;

  bool visible(const MaskPoint& at) const { return q[at.i] == k[at.j]; }
  // "none" when the two id ranges do not meet, "all" when the tile holds one id on both sides.
  MaskCover cover(const MaskTile& t) const {
    const auto [qlo, qhi] = std::minmax_element(q.begin() + long(t.i0), q.begin() + long(t.i0 + t.rows));
    const auto [klo, khi] = std::minmax_element(k.begin() + long(t.j0), k.begin() + long(t.j0 + t.cols));
    if (*qhi < *klo || *khi < *qlo) return MaskCover::none;
    if (*qlo == *qhi && *klo == *khi && *qlo == *klo) return MaskCover::all;
    return MaskCover::some;
  }
  void check(std::size_t Lq, std::size_t Lk) const {
    if (q.size() != Lq)
      throw InputError("segments.q: expected " + std::to_string(Lq) + " ids (one per query), got " +
                       std::to_string(q.size()));
    if (k.size() != Lk)
      throw InputError("segments.k: expected " + std::to_string(Lk) + " ids (one per key), got " +
                       std::to_string(k.size()));
  }
};

}  // namespace attn::variants
