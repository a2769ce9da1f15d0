// Attention variants as descriptors (variant.hpp): what every variant's rule does together.
#include "attn/engine/attention/variant.hpp"

namespace attn {

tile::MaskCover AttentionMask::cover(std::size_t i0, std::size_t rows, std::size_t j0, std::size_t cols,
                                     std::size_t Lq, std::size_t Lk) const {
  const variants::MaskTile t = variants::mask_tile(i0, rows, j0, cols, Lq, Lk);
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

namespace {

template <class Rule>
bool fill(variants::Slot<Rule>& slot, const Rule& rule) {
  slot = {true, rule};
  return true;
}

// A rule into its slot of IndexRules; false for a rule that has none.
bool put(variants::IndexRules& r, const variants::SlidingWindow& w) { return fill(r.window, w); }
bool put(variants::IndexRules& r, const variants::Documents& d) { return fill(r.segments, d.ids()); }
bool put(variants::IndexRules& r, const variants::PrefixLM& p) { return fill(r.prefix, p); }
bool put(variants::IndexRules& r, const variants::Strided& s) { return fill(r.stride, s); }
bool put(variants::IndexRules& r, const variants::Chunked& c) { return fill(r.chunk, c); }
template <class Rule>
bool put(variants::IndexRules&, const Rule&) {
  return false;
}

}  // namespace

std::optional<variants::IndexRules> AttentionMask::index_rules() const {
  variants::IndexRules r;
  bool every = true;
  std::apply([&](const auto&... rule) { ((every = (!rule || put(r, *rule)) && every), ...); }, rules());
  return every ? std::optional<variants::IndexRules>(r) : std::nullopt;
}

void AttentionMask::check(std::size_t Lq, std::size_t Lk) const {
  std::apply([&](const auto&... r) { ((r ? r->check(Lq, Lk) : void()), ...); }, rules());
}

void ScoreMod::check(std::size_t num_heads) const {
  std::apply([&](const auto&... m) { ((m ? m->check(num_heads) : void()), ...); }, modifiers());
}

}  // namespace attn
