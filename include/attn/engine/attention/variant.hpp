#pragma once
// The attention variants of attend's contract (docs/contracts.md, "variants"), in the spirit of
// PyTorch's FlexAttention: a mask descriptor answers "may query i see key j" (and classifies a
// whole tile from its indices), a score modifier maps a scaled score to another. Every backend
// takes them through attention(): the float64 reference evaluates them element by element; the
// tiled kernels skip the tiles the mask hides, index-test the ones it covers in part, and apply
// the modifier to each score tile before the online softmax (and its slope in the backward).
//
// Each variant is one value type in its own header under variants/ (its rule, its tile cover,
// its checks); the two lists below are the only other place it is named. Adding one
// (docs/architecture.md, "Adding a variant"): its header, a member and its name in rules() or
// modifiers() here, and its JSON field in cli/variant_fields.cpp.
//
// Positions are bottom-right aligned: query i sits at p = i + Lk - Lq (a decode step's query
// is the last position).
#include <cstddef>
#include <optional>
#include <tuple>

#include "attn/engine/attention/tile_math.hpp"
#include "attn/engine/attention/variants/alibi_bias.hpp"
#include "attn/engine/attention/variants/chunked.hpp"
#include "attn/engine/attention/variants/documents.hpp"
#include "attn/engine/attention/variants/index_rules.hpp"
#include "attn/engine/attention/variants/prefix_lm.hpp"
#include "attn/engine/attention/variants/sliding_window.hpp"
#include "attn/engine/attention/variants/softcap.hpp"
#include "attn/engine/attention/variants/strided.hpp"
#include "attn/engine/core/tensor.hpp"

namespace attn {

struct AttentionMask {
  std::optional<variants::SlidingWindow> window;  // with attention sinks
  std::optional<variants::Documents> segments;
  std::optional<variants::PrefixLM> prefix;
  std::optional<variants::Strided> stride;
  std::optional<variants::Chunked> chunk;

  // Every mask variant: a key is visible when each one present says so.
  auto rules() const { return std::tie(window, segments, prefix, stride, chunk); }

  bool any() const {
    return std::apply([](const auto&... r) { return (r.has_value() || ...); }, rules());
  }
  // Query i and key j (0-based) of an Lq x Lk problem. Inline: the tiled kernel asks it of each
  // score of a tile the rule covers only in part.
  bool visible(std::size_t i, std::size_t j, std::size_t Lq, std::size_t Lk) const {
    const variants::MaskPoint at = variants::mask_point(i, j, Lq, Lk);
    return std::apply([&](const auto&... r) { return ((!r || r->visible(at)) && ...); }, rules());
  }
  // How the rule covers the tile of queries [i0, i0 + rows) and keys [j0, j0 + cols), from the
  // indices alone (FlexAttention's block mask without a bitmap): none = no score of it is
  // visible, all = every one is, some = test each. A variant may say "some" of a tile a bitmap
  // would call all or none (the tile is then index-tested, the same scores come out), never the
  // reverse. Causality is the kernel's own, not counted here.
  tile::MaskCover cover(std::size_t i0, std::size_t rows, std::size_t j0, std::size_t cols, std::size_t Lq,
                        std::size_t Lk) const;
  // [Lq, Lk], true = visible.
  Mask2 allowed(std::size_t Lq, std::size_t Lk) const;
  // The rules as one plain value a kernel takes (the CUDA kernels: variants/index_rules.hpp); its
  // document ids point into this mask's, which must outlive it. nullopt when a rule has no slot
  // there: the kernel then takes allowed()'s bitmap.
  std::optional<variants::IndexRules> index_rules() const;
  // InputError for a descriptor that does not fit these sizes (segment lengths, prefix without
  // self-attention).
  void check(std::size_t Lq, std::size_t Lk) const;
};

struct ScoreMod {
  std::optional<variants::SoftCap> softcap;
  std::optional<variants::AlibiBias> alibi;

  // Every score modifier, applied in this order (the cap first, then the bias).
  auto modifiers() const { return std::tie(softcap, alibi); }

  bool any() const {
    return std::apply([](const auto&... m) { return (m.has_value() || ...); }, modifiers());
  }
  // x: scale * q.k of query head h, query position p, key j.
  double apply(double x, std::size_t h, long p, long j) const {
    std::apply([&](const auto&... m) { ((x = m ? m->apply(x, h, p, j) : x), ...); }, modifiers());
    return x;
  }
  // apply(x) and d apply / dx together (the chain rule through the modifiers in order needs
  // each one's input, so the two come out of one pass).
  struct Sloped {
    double score, slope;
  };
  Sloped apply_with_slope(double x, std::size_t h, long p, long j) const {
    Sloped out{x, 1.0};
    auto step = [&](const auto& m) {
      if (!m) return;
      out.slope *= m->derivative(out.score, h, p, j);
      out.score = m->apply(out.score, h, p, j);
    };
    std::apply([&](const auto&... m) { (step(m), ...); }, modifiers());
    return out;
  }
  double derivative(double x, std::size_t h, long p, long j) const { return apply_with_slope(x, h, p, j).slope; }
  // InputError for a modifier that does not fit (a cap not finite and > 0, slopes not one per
  // head or not finite).
  void check(std::size_t num_heads) const;
};

}  // namespace attn
