#pragma once
// The attention variants of attend's contract (docs/contracts.md, "variants"), in the spirit of
// PyTorch's FlexAttention: a mask descriptor answers "may query i see key j", a score modifier
// maps a scaled score to another. Every backend takes them through attention(): the float64
// reference evaluates them element by element; the tiled kernels get the mask as a bitmap and
// apply the modifier to each score tile before the online softmax.
//
// Positions are bottom-right aligned: query i sits at p = i + Lk - Lq (a decode step's query
// is the last position).
#include <array>
#include <cstdint>
#include <optional>
#include <vector>

#include "attn/engine/attention/tile_math.hpp"
#include "attn/engine/core/tensor.hpp"

namespace attn {

struct AttentionMask {
  // Query at p sees keys j with p - left <= j <= p + right (Longformer, Mistral).
  std::optional<std::array<std::size_t, 2>> window;
  // Keys j < sinks are visible whatever the window says (StreamingLLM's attention sinks);
  // the causal flag and an explicit mask still apply to them.
  std::size_t sinks = 0;
  // Document masking of packed sequences: query i sees key j only when their ids are equal.
  std::vector<std::int64_t> segments_q, segments_k;
  // Prefix-LM (self-attention): keys j < prefix are visible to every query, the others only
  // when j <= i.
  std::optional<std::size_t> prefix;
  // Child et al. 2019's strided sparse pattern (attend's method "sparse"): key j <= p is
  // visible when p - j < stride or (p - j) mod stride = 0; later keys never. 0 = off.
  std::size_t stride = 0;

  bool any() const { return window || sinks > 0 || !segments_q.empty() || prefix || stride > 0; }
  // Query i and key j (0-based) of an Lq x Lk problem. Inline: the tiled kernel asks it of each
  // score of a tile the rule covers only in part.
  bool visible(std::size_t i, std::size_t j, std::size_t Lq, std::size_t Lk) const {
    const long p = long(i) + long(Lk) - long(Lq), key = long(j);
    bool ok = true;
    if (window) ok = key >= p - long((*window)[0]) && key <= p + long((*window)[1]);
    if (key < long(sinks)) ok = true;  // a sink is visible whatever the window says
    if (!segments_q.empty()) ok = ok && segments_q[i] == segments_k[j];
    if (prefix) ok = ok && (j < *prefix || j <= i);
    if (stride) ok = ok && key <= p && ((p - key) < long(stride) || (p - key) % long(stride) == 0);
    return ok;
  }
  // How the rule covers the tile of queries [i0, i0 + rows) and keys [j0, j0 + cols), from the
  // indices alone (FlexAttention's block mask without a bitmap): none = no score of it is
  // visible, all = every one is, some = test each. Exact for a window alone and prefix-LM;
  // where sinks meet a window, for stride's periodic pattern and for documents it may say
  // "some" of a tile the bitmap would call all or none (the tile is then index-tested, the
  // same scores come out), never the reverse. Causality is the kernel's own, not counted here.
  tile::MaskCover cover(std::size_t i0, std::size_t rows, std::size_t j0, std::size_t cols, std::size_t Lq,
                        std::size_t Lk) const;
  // [Lq, Lk], true = visible.
  Mask2 allowed(std::size_t Lq, std::size_t Lk) const;
  // InputError for a descriptor that does not fit these sizes (segment lengths, prefix without
  // self-attention).
  void check(std::size_t Lq, std::size_t Lk) const;
};

struct ScoreMod {
  // Logit soft-capping (Gemma 2): x -> c tanh(x / c), c > 0, before any bias and the mask.
  std::optional<double> softcap;
  // ALiBi (Press et al. 2022): one slope m_h per query head (alibi.hpp's alibi_slopes gives the
  // paper's); the score gets -m_h (p - j) added, after the soft-cap. Empty = off.
  std::vector<double> alibi;

  bool any() const { return softcap || !alibi.empty(); }
  // x: scale * q.k of query head h, query position p, key j.
  double apply(double x, std::size_t h, long p, long j) const;
  // d apply / dx (the soft-cap's 1 - tanh^2; a bias does not depend on x).
  double derivative(double x) const;
  // InputError for a cap that is not finite and > 0, or slopes not one per head, or not finite.
  void check(std::size_t num_heads) const;
};

}  // namespace attn
