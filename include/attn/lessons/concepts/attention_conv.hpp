#pragma once
// "A convolution is a special case of attention" (Cordonnier, Loukas & Jaggi 2020, "On the
// relationship between self-attention and convolutional layers", arXiv 1911.03584), computed.
//
// A 1-D convolution of kernel size K (odd, zero padding "same") maps x [L, C] to
//   y_i = sum_{k} W_k x_{i + k - (K-1)/2}        W_k [C_out, C]
// Multi-head self-attention with K heads computes y_i = sum_h W_o^h sum_j A^h_ij W_v^h x_j. Give
// head h a relative-position score that is 0 at the offset j - i = h - (K-1)/2 and -inf
// elsewhere (the limit of the paper's quadratic encoding): its softmax row is one-hot on x_{i+δ_h}
// (a query whose offset falls off the sequence sees no key: its row, and the padding, are 0).
// With W_v^h = I and W_o^h = W_h the two are the same sum: the attention runs through the engine's
// one door (attention()), the convolution is the textbook loop, and they agree to round-off.
// The 2-D version does the same with K^2 heads on an H x W image.
//
// The conditions the textbook sentence leaves out, each computed: it takes K heads (K^2 in 2-D) --
// with one head fewer the output misses a tap; the heads' scores are relative positions, which
// content-based attention alone does not have; and a trained head's offset depends on content.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "attn/engine/models/toy_model.hpp"
#include "attn/io/json_io.hpp"

namespace attn {

struct ConvLessonConfig {
  std::size_t length = 12;    // 1-D: tokens
  std::size_t height = 5, width = 5;  // 2-D: the image
  std::size_t channels = 4, out_channels = 3, kernel = 3;  // K odd
  std::uint64_t seed = 42;
  // Keep the 1-D heads' [L, L] weights as the attention door returned them (for a picture):
  // K L^2 numbers, so at most kMaxKeptPositions positions.
  bool keep_head_weights = false;
};

inline constexpr std::size_t kMaxKeptPositions = 64;

using ArrayF64 = xt::xtensor<double, 2>;

struct ConvCase {
  std::size_t heads = 0;               // K, or K^2
  std::vector<std::vector<long>> offsets;  // per head: its offset (1-D) or (row, column) offset
  ArrayF64 x;                          // [N, C]
  std::vector<ArrayF64> weights;       // [heads] of [C_out, C]: the kernel taps
  ArrayF64 conv, attention;            // [N, C_out]
  double max_abs_diff = 0;             // |attention - conv|
  double one_head_short = 0;           // max |conv - attention with the last head left out|
  Tensor3 head_weights;                // [heads, N, N] with keep_head_weights (1-D only), else empty
};

struct TrainedOffsets {
  std::vector<std::string> tokens;    // the sentence twice
  std::size_t layer = 0, head = 0;    // the model's induction head (head_summary.hpp)
  std::vector<long> argmax_offset;    // per query i >= 1: j* - i of its largest weight
  std::size_t distinct = 0;           // how many different offsets
  Tensor2 weights;                    // [12, 12]: that head's causal weights on the sentence twice
};

struct ConvLesson {
  ConvLessonConfig config;
  ConvCase one_d, two_d;
  std::optional<TrainedOffsets> trained;
};

// InputError for an even or zero kernel, sizes of 0, more than 4096 positions, or
// keep_head_weights with a length past kMaxKeptPositions.
void check_conv_lesson(const ConvLessonConfig& config);
// model: a trained toy model whose induction head's offsets are shown (null: none).
ConvLesson run_conv_lesson(const ConvLessonConfig& config, const ToyModel* model);
Json conv_lesson_json(const ConvLesson& lesson);

}  // namespace attn
