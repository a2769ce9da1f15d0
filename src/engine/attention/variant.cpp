// Attention variants as descriptors (variant.hpp).
#include "attn/engine/attention/variant.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "attn/engine/core/error.hpp"

namespace attn {

namespace {

using tile::MaskCover;

// Positions first..last (rows) against keys lo..hi (cols), all inclusive.
struct TileSpan {
  long first, last, lo, hi;
};

MaskCover window_cover(const AttentionMask& m, const TileSpan& t) {
  const long left = long((*m.window)[0]), right = long((*m.window)[1]);
  if (t.hi < long(m.sinks)) return MaskCover::all;                                    // sinks only
  if (t.lo >= t.last - left && t.hi <= t.first + right) return MaskCover::all;        // inside every row's window
  if (t.lo >= long(m.sinks) && (t.hi < t.first - left || t.lo > t.last + right)) return MaskCover::none;
  return MaskCover::some;
}

MaskCover segments_cover(const AttentionMask& m, std::size_t i0, std::size_t rows, std::size_t j0, std::size_t cols) {
  const auto [qlo, qhi] = std::minmax_element(m.segments_q.begin() + long(i0), m.segments_q.begin() + long(i0 + rows));
  const auto [klo, khi] = std::minmax_element(m.segments_k.begin() + long(j0), m.segments_k.begin() + long(j0 + cols));
  if (*qhi < *klo || *khi < *qlo) return MaskCover::none;  // no id in common
  if (*qlo == *qhi && *klo == *khi && *qlo == *klo) return MaskCover::all;
  return MaskCover::some;
}

MaskCover prefix_cover(std::size_t prefix, const TileSpan& t) {  // self-attention: position = query index
  if (t.hi < long(prefix) || t.hi <= t.first) return MaskCover::all;
  if (t.lo >= long(prefix) && t.lo > t.last) return MaskCover::none;
  return MaskCover::some;
}

MaskCover stride_cover(std::size_t stride, const TileSpan& t) {
  if (t.lo > t.last) return MaskCover::none;  // every key after every row's position
  if (t.hi <= t.first && t.last - t.lo < long(stride)) return MaskCover::all;  // inside every row's local band
  return MaskCover::some;
}

}  // namespace

MaskCover AttentionMask::cover(std::size_t i0, std::size_t rows, std::size_t j0, std::size_t cols, std::size_t Lq,
                               std::size_t Lk) const {
  const long off = long(Lk) - long(Lq);
  const TileSpan t{long(i0) + off, long(i0 + rows - 1) + off, long(j0), long(j0 + cols - 1)};
  // Sinks without a window add nothing: every key is visible to them anyway.
  MaskCover c = window ? window_cover(*this, t) : MaskCover::all;
  if (!segments_q.empty()) c = tile::joined_cover(c, segments_cover(*this, i0, rows, j0, cols));
  if (prefix) c = tile::joined_cover(c, prefix_cover(*prefix, t));
  if (stride) c = tile::joined_cover(c, stride_cover(stride, t));
  return c;
}

Mask2 AttentionMask::allowed(std::size_t Lq, std::size_t Lk) const {
  Mask2 m = Mask2::from_shape({Lq, Lk});
  for (std::size_t i = 0; i < Lq; ++i)
    for (std::size_t j = 0; j < Lk; ++j) m(i, j) = visible(i, j, Lq, Lk);
  return m;
}

void AttentionMask::check(std::size_t Lq, std::size_t Lk) const {
  if (segments_q.size() != segments_k.size() && (segments_q.empty() || segments_k.empty()))
    throw InputError("segments: expected both \"q\" and \"k\"");
  if (!segments_q.empty() && segments_q.size() != Lq)
    throw InputError("segments.q: expected " + std::to_string(Lq) + " ids (one per query), got " +
                     std::to_string(segments_q.size()));
  if (!segments_k.empty() && segments_k.size() != Lk)
    throw InputError("segments.k: expected " + std::to_string(Lk) + " ids (one per key), got " +
                     std::to_string(segments_k.size()));
  if (prefix && Lq != Lk)
    throw InputError("prefix: prefix-LM is self-attention (Lq = Lk), got Lq = " + std::to_string(Lq) +
                     ", Lk = " + std::to_string(Lk));
}

double ScoreMod::apply(double x, std::size_t h, long p, long j) const {
  if (softcap) x = *softcap * std::tanh(x / *softcap);
  if (!alibi.empty()) x -= alibi[h] * double(p - j);
  return x;
}

double ScoreMod::derivative(double x) const {
  if (!softcap) return 1.0;
  const double t = std::tanh(x / *softcap);
  return 1.0 - t * t;
}

void ScoreMod::check(std::size_t num_heads) const {
  if (softcap && !(std::isfinite(*softcap) && *softcap > 0))
    throw InputError("softcap: expected a finite number > 0");
  if (!alibi.empty() && alibi.size() != num_heads)
    throw InputError("alibi: expected one slope per query head (" + std::to_string(num_heads) + "), got " +
                     std::to_string(alibi.size()));
  for (double m : alibi)
    if (!std::isfinite(m)) throw InputError("alibi: every slope must be finite");
}

}  // namespace attn
