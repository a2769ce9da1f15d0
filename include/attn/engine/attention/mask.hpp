#pragma once
// Attention masks. Convention everywhere in attn-cli: allowed(i, j) == true means query i
// MAY attend to key j (PyTorch SDPA's boolean convention; nn.MultiheadAttention's
// key_padding_mask uses the opposite polarity, and so does one of the seeds).
#include <cstddef>
#include <span>
#include <utility>
#include <vector>

#include "attn/engine/core/tensor.hpp"

namespace attn {

// Causal mask [Lq, Lk], bottom-right aligned: query i sees keys j <= i + (Lk - Lq).
// With Lq == Lk this is the usual lower triangle; with Lq < Lk the queries are the *last*
// Lq positions of the sequence (KV-cache decoding, FlashAttention >= 2.1). With Lq > Lk the
// first Lq - Lk query rows see no key at all.
Mask2 causal_allowed(std::size_t Lq, std::size_t Lk);

// Padding mask [B, L, L] from per-sequence lengths: in sequence b, keys j >= lengths[b] are
// padding and are blocked for every query (like key_padding_mask, with the polarity flipped).
Mask3 padding_allowed(std::span<const std::size_t> lengths, std::size_t L);

// Sliding window [Lq, Lk] (bottom-right aligned like causal): query i, at absolute position
// p = i + Lk - Lq, sees keys p - left <= j <= p + right. left = w - 1, right = 0 is the causal
// window of w tokens used by Mistral and Longformer-style local attention.
Mask2 sliding_window_allowed(std::size_t Lq, std::size_t Lk, std::size_t left, std::size_t right);

// Mask [n, n] from a graph's edge list, as in a graph attention network: node i attends to
// node j only if (i, j) is an edge (or (j, i), when undirected), and to itself if self_loops.
Mask2 graph_allowed(std::size_t n, std::span<const std::pair<std::size_t, std::size_t>> edges,
                    bool directed = false, bool self_loops = true);

}  // namespace attn
