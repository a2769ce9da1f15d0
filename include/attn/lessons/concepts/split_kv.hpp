#pragma once
// Split-KV, the merge of Flash-Decoding (Dao, Haziza, Massa, Sizov, "Flash-Decoding for
// long-context inference", 2023), taken apart on one query row:
//
//   q [d], K [n, d], V [n, dv]: one query against a KV cache of n keys (decode's shape, Lq = 1)
//   cut    keys 0..n-1 into C chunks of n / C keys (sizes differ by at most one)
//   chunk  each on its own, as one thread would: m_i = max of its visible scores,
//          l_i = sum_j exp(s_j - m_i), o_i = sum_j exp(s_j - m_i) v_j   (unnormalised [dv])
//   merge  m = max_i m_i; every chunk is rescaled to the common max by exp(m_i - m):
//          l = sum_i exp(m_i - m) l_i,  o = sum_i exp(m_i - m) o_i,  output = o / l
//   check  the one-pass softmax(q K^T * scale) V of the naive kernel (attn::sdpa)
//
// The arithmetic is the engine's: scores in base 2 and float32 as the flash kernel keeps them,
// each chunk's (m_i, l_i) a tile::RowState moved by tile::row_rescale, and the merge
// tile::row_merge (include/attn/engine/attention/tile_math.hpp), the function the decode path merges its
// chunks with. A chunk whose keys are all masked has m_i = -inf, l_i = 0, o_i = 0 and factor 0:
// exp(-inf - (-inf)) would be NaN, and row_merge never computes it.
#include <cstddef>
#include <vector>

#include "attn/engine/core/tensor.hpp"
#include "attn/io/json_io.hpp"

namespace attn {

struct SplitKvChunk {
  std::size_t first = 0, end = 0;  // its keys [first, end)
  std::size_t visible = 0;         // how many of them the query may see
  double m = 0;                    // max visible scaled score (natural log units); -inf: none visible
  double l = 0;                    // sum of exp(s_j - m_i) over its visible keys
  std::vector<double> o;           // sum of exp(s_j - m_i) v_j [dv], not yet divided by anything
  double factor = 0;               // exp(m_i - m), the merge's rescale (0 for a chunk with no visible key)
};

struct SplitKvLesson {
  std::size_t keys = 0;               // n
  double scale = 0;                   // the scores' scale (1 / sqrt(d) by default)
  std::vector<double> scores;         // [n] scaled scores q.k_j * scale, -inf where masked
  std::vector<SplitKvChunk> chunks;   // [C]
  double m = 0, l = 0, lse = 0;       // merged; m = lse = -inf when no key is visible
  std::vector<double> o;              // merged, not yet divided: sum_i exp(m_i - m) o_i [dv]
  std::vector<double> merged;         // o / l [dv]
  std::vector<double> one_pass;       // softmax(scores) V in one pass (the naive kernel) [dv]
  double max_abs_diff = 0;            // max |merged - one_pass|
};

// q [d], k [n, d], v [n, dv], allowed [n] (true = may attend). InputError for chunks < 1 or
// > n, mismatched shapes, or a non-finite scale.
SplitKvLesson split_kv_merge(const Tensor1& q, const Tensor2& k, const Tensor2& v,
                             const std::vector<bool>& allowed, double scale, std::size_t chunks);

// Every number of the lesson; -inf (an empty chunk's m, a fully masked row's m and lse) is null.
Json split_kv_json(const SplitKvLesson& lesson);

}  // namespace attn
