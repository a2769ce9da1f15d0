#pragma once
// The split-KV (Flash-Decoding) merge as one picture, top to bottom, drawn from a
// SplitKvLesson and nothing else:
//   1. the KV cache: one cell per key, coloured by the query's scaled score (masked keys
//      hatched), a coloured bracket under each chunk;
//   2. one row per chunk: its keys, m_i, ℓ_i, o_i as a strip of dv cells, and the merge's
//      rescale factor exp(m_i − m) as a number and a bar (a chunk with no visible key: −∞, 0,
//      and a factor of exact 0, said in words);
//   3. the merged (m, ℓ, o), then o / ℓ beside the one-pass softmax·V, and their max difference.
// grids: [0] the cache (1 x n), [1] the o_i strips (C x dv), [2] the two output rows (2 x dv:
// merged, one pass).
#include <string>
#include <vector>

#include "attn/lessons/concepts/split_kv.hpp"
#include "attn/render/draw/canvas.hpp"

namespace attn {

// key_labels: one per key (the tokens), or empty for "0", "1", ...; query_label names the row
// ("'学习' [3]"). InputError when key_labels has the wrong length.
Figure split_kv_figure(const SplitKvLesson& lesson, const std::vector<std::string>& key_labels,
                       const std::string& query_label);

}  // namespace attn
