#pragma once
// What only a trained Llama-family model can show, measured on the user's own folder and text:
//
//   attention sinks  Xiao et al. 2023 ("Efficient Streaming Language Models with Attention
//                    Sinks", arXiv 2309.17453) found that trained decoders put a large share of
//                    many heads' weight on the first token, whatever it is, and that a sliding
//                    window which evicts it breaks the model, while keeping it as a "sink"
//                    beside the window does not. Here: each head's mean weight on token 0, and
//                    the next-token distribution under a window with and without that token;
//   RoPE             Su et al. 2021 (RoFormer) rotate q and k pair by pair, pair f by f theta_f
//                    per position, so that q.k depends on the distance between the tokens. Here:
//                    each head's mean q.k by distance with the rotation and without it, and how
//                    its q and k spread their size over the pairs: a head that lives in the fast
//                    pairs can tell neighbours apart, one in the slow pairs barely sees position
//                    (Barbero et al. 2024, "Round and Round We Go! What makes Rotary Positional
//                    Encodings useful?", arXiv 2410.06205);
//   grouped-query    query heads that share a key/value head (Ainslie et al. 2023, GQA) read
//                    the same keys with their own queries: how alike their attention is, within
//                    a group and across groups, and the KV-cache bytes GQA saves at this shape.
//
// Random weights show neither effect; the numbers are computed the same way on any folder.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "attn/engine/models/decoder_model.hpp"
#include "attn/io/json_io.hpp"

namespace attn {

struct SinkLesson {
  std::size_t tokens = 0;
  // [layer][head]: the mean over queries 1..n-1 of the weight on key 0 (query 0 sees only key 0).
  std::vector<std::vector<double>> first_token;
  // What a head spreading its weight evenly over the visible keys would put there: the mean of
  // 1 / (i + 1) over the same queries.
  double uniform = 0;
  // The eviction experiment: every layer under a sliding window of `window` keys, the last
  // position's next-token distribution compared with the full model's by KL(full || windowed),
  // in nats, with key 0 evicted and with key 0 kept as a sink.
  std::size_t window = 0;
  double kl_evicted = 0, kl_kept = 0;
};

// InputError for fewer than 3 tokens (no query past the first to measure, no key to evict).
// `full` is decoder_forward(model, ids) (its attention and logits); window 0 = ceil(n / 4), at
// least 2, at most n - 1.
SinkLesson sink_lesson(const DecoderModel& model, const std::vector<std::int32_t>& ids, const DecoderForward& full,
                       std::size_t window = 0);

struct GqaLesson {
  std::size_t heads = 0, kv_heads = 0, layers = 0, head_dim = 0;
  // [layer][h][g]: mean over query rows of the Jensen-Shannon divergence (nats, 0..ln 2) between
  // query heads h and g's attention rows (every row up to 64 tokens; past that, 64 rows evenly
  // spread from the first to the last).
  std::vector<std::vector<std::vector<double>>> divergence;
  // The mean of those divergences over pairs of heads that share a key/value head, and over pairs
  // that do not (NaN when there are no such pairs: MHA has no sharing pairs, MQA no others).
  double within = 0, across = 0;
  // KV-cache bytes per token at this shape, bfloat16: 2 (K and V) x layers x heads x head_dim x 2,
  // for multi-head (every query head its own), this model's grouped heads, and multi-query (one).
  std::size_t bytes_mha = 0, bytes_gqa = 0, bytes_mqa = 0;
};

// From the full forward's attention; InputError for fewer than 2 tokens.
GqaLesson gqa_lesson(const DecoderConfig& config, const DecoderForward& full);

struct ModelRopeLesson {
  std::vector<double> frequencies;  // theta_f, f < d/2: radians per position of pair f = dims (f, f + d/2)
  std::size_t tokens = 0;
  // [layer][head][r], r = 0..n-1: the mean over queries i >= r of q_i . k_{i-r} / sqrt(d), with the
  // rotation (what the model computes) and without it (the same q, k before RoPE).
  std::vector<std::vector<std::vector<double>>> score_rotated, score_raw;
  // [layer][head][f]: the head's mean |q_f| x mean |k_f| (the pair's length, which the rotation
  // keeps) as a share of its sum over f: which frequencies the head's q and k use.
  std::vector<std::vector<std::vector<double>>> band_share;
};

// From decoder_forward(..., keep_qkv = true): q, k and q_raw, k_raw. InputError without them.
ModelRopeLesson model_rope_lesson(const DecoderConfig& config, const DecoderForward& full);

Json sink_lesson_json(const SinkLesson& lesson);
Json model_rope_lesson_json(const ModelRopeLesson& lesson);
Json gqa_lesson_json(const GqaLesson& lesson);

}  // namespace attn
