#pragma once
// Document masking of packed sequences: query i sees key j only when both carry the same
// document id (with causal: block-causal, as packed pre-training batches are run).
// attend: "segments": {"q": [Lq ids], "k": [Lk ids]}.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "attn/engine/attention/variants/mask_point.hpp"
#include "attn/engine/core/error.hpp"

namespace attn::variants {

// The rule on ids held elsewhere: q [Lq] and k [Lk] in whatever memory reads them (a kernel's
// own copy on the GPU: variants/index_rules.hpp). Documents holds the ids and asks this.
struct DocumentIds {
  const std::int64_t* q = nullptr;
  const std::int64_t* k = nullptr;

  ATTN_HOST_DEVICE bool visible(const MaskPoint& at) const { return q[at.i] == k[at.j]; }
  // "none" when the two id ranges do not meet, "all" when the tile holds one id on both sides.
  ATTN_HOST_DEVICE MaskCover cover(const MaskTile& t) const {
    std::int64_t qlo = q[t.i0], qhi = qlo, klo = k[t.j0], khi = klo;
    for (std::size_t i = t.i0 + 1; i < t.i0 + t.rows; ++i) {
      qlo = q[i] < qlo ? q[i] : qlo;
      qhi = q[i] > qhi ? q[i] : qhi;
    }
    for (std::size_t j = t.j0 + 1; j < t.j0 + t.cols; ++j) {
      klo = k[j] < klo ? k[j] : klo;
      khi = k[j] > khi ? k[j] : khi;
    }
    if (qhi < klo || khi < qlo) return MaskCover::none;
    if (qlo == qhi && klo == khi && qlo == klo) return MaskCover::all;
    return MaskCover::some;
  }
};

struct Documents {
  std::vector<std::int64_t> q, k;

  DocumentIds ids() const { return {q.data(), k.data()}; }
  bool visible(const MaskPoint& at) const { return ids().visible(at); }
  MaskCover cover(const MaskTile& t) const { return ids().cover(t); }
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
