#pragma once
// What only a trained Llama-family model can show, measured on the user's own folder and text:
//
//   attention sinks  Xiao et al. 2023 ("Efficient Streaming Language Models with Attention
//                    Sinks", arXiv 2309.17453) found that trained decoders put a large share of
//                    many heads' weight on the first token, whatever it is, and that a sliding
//                    window which evicts it breaks the model, while keeping it as a "sink"
//                    beside the window does not. Here: each head's mean weight on token 0, and
//                    the next-token distribution under a window with and without that token;
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
  // query heads h and g's attention rows.
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

Json sink_lesson_json(const SinkLesson& lesson);
Json gqa_lesson_json(const GqaLesson& lesson);

}  // namespace attn
