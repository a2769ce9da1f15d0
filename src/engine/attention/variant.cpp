// Attention variants as descriptors (variant.hpp): what every variant's rule does together.
#include "attn/engine/attention/variant.hpp"

namespace attn {

tile::MaskCover AttentionMask::cover(std::size_t i0, std::size_t rows, std::size_t j0, std::size_t cols,
                                     std::size_t Lq, std::size_t Lk) const {
  const long off = long(Lk) - long(Lq);
  const variants::MaskTile t{i0, rows, j0, cols, long(i0) + off, long(i0 + rows - 1) + off, long(j0),
                             long(j0 + cols - 1)};
  tile::MaskCover c = tile::MaskCover::all;
  std::apply([&](const auto&... r) { ((c = r ? tile::joined_cover(c, r->cover(t)) : c), ...); }, rules());
  return c;
}

Mask2 AttentionMask::allowed(std::size_t Lq, std::size_t Lk) const {
  Mask2 m = Mask2::from_shape({Lq, Lk});
  for (std::size_t i = 0; i < Lq; ++i)
    for (std::size_t j = 0; j < Lk; ++j) m(i, j) = visible(i, j, Lq, Lk);
  return m;
}

void AttentionMask::check(std::size_t Lq, std::size_t Lk) const {
  std::apply([&](const auto&... r) { ((r ? r->check(Lq, Lk) : void()), ...); }, rules());
}

void ScoreMod::check(std::size_t num_heads) const {
  std::apply([&](const auto&... m) { ((m ? m->check(num_heads) : void()), ...); }, modifiers());
}

}  // namespace attn
