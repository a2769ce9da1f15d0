#pragma once
// The steps of scaled dot-product attention (the five steps interview answers give, plus the
// max-subtraction every real softmax does), each one kept so it can be printed, written and checked:
//
//   x  [L, D]  seeded token embeddings (tokenize.hpp), Q = x W_q^T, K = x W_k^T, V = x W_v^T
//   1. scores   S = Q K^T                  [L, L]  similarity of query i and key j
//   2. scaled   S / sqrt(d)                [L, L]  keeps the variance at 1 (variance.hpp)
//   3. masked   -inf where i may not see j [L, L]  causal by default (mask.hpp convention)
//   4. shifted  minus each row's max       [L, L]  every exp is in (0, 1]: no overflow, same softmax
//   5. softmax  P = softmax(row)           [L, L]  every row sums to 1
//   6. output   O = P V                    [L, D]  each query's weighted mix of values
//
// And three lessons on one row or the whole matrix, computed when asked:
//   online     the online softmax (FlashAttention's recurrence) on one row, key by key: running max
//              m, running sum l, the rescale exp(m_old - m_new) of l and of the partial output o;
//              at the end o / l is the output row and exp(s_j - m) / l the softmax row.
//   jacobian   d softmax / d scores on one row, diag(p) - p p^T, checked by central differences in
//              float64; and the gradient of the cross-entropy -log p_y, p - onehot(y).
//   symmetry   without W_q and W_k the scores x x^T are symmetric (max |S - S^T| = 0); with them
//              they are not; the softmax weights are not symmetric either way (rows normalize).
//   heads      multi-head attention by hand on the same x: split, per-head attention, concat,
//              W_o, with every shape (multihead_by_hand.hpp).
//   split_kv   Flash-Decoding's split-KV merge on one row: its keys cut into C chunks, each
//              chunk's (m_i, l_i, o_i), the rescale factors exp(m_i - m), the merged row against
//              the one-pass softmax V (split_kv.hpp).
//
// One head with d = D, like the classic small example (seq_len 4, d_k 3). The last step is
// compared with attn::sdpa on the same Q, K, V: computing step by step (rounding to float32
// after each step) and in one call (float64 throughout) must agree to float32 rounding.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "attn/io/json_io.hpp"
#include "attn/engine/core/tensor.hpp"
#include "attn/lessons/concepts/multihead_by_hand.hpp"
#include "attn/lessons/concepts/split_kv.hpp"

namespace attn {

struct ExplainConfig {
  std::string sentence = "我喜欢深度学习";  // ICU splits it into 我 / 喜欢 / 深度 / 学习
  std::size_t d_model = 4;
  std::uint64_t seed = 42;
  bool causal = true;
  std::size_t max_tokens = 16;  // the matrices are printed: keep them readable
  bool online = false, jacobian = false, symmetry = false;
  std::size_t heads = 1;  // > 1: the multi-head lesson with this many heads (its weights: seed + 2)
  std::optional<std::size_t> split_kv;  // C: the split-KV lesson with C chunks of the row's keys
  std::optional<std::size_t> row;     // the query row of online, jacobian and split_kv; default the last
  std::optional<std::size_t> target;  // the cross-entropy's target key; default the row's own position
};

// One key of the online softmax on one row: the state after key j is read.
struct OnlineStep {
  std::size_t key = 0;
  bool masked = false;         // -inf score: the state does not change
  double score = 0;            // s_j (scaled, before the mask)
  double m = 0, l = 0;         // running max and sum after this key
  double rescale = 1;          // exp(m_before - m): what l and o were multiplied by
  std::vector<double> o;       // running unnormalized output after this key [d]
};

struct OnlineTrace {
  std::size_t row = 0;
  std::vector<OnlineStep> steps;
  std::vector<double> weights;   // exp(s_j - m) / l at the end
  std::vector<double> output;    // o / l at the end
  double max_weight_diff = 0;    // against step 5's softmax row
  double max_output_diff = 0;    // against step 6's output row
};

struct JacobianLesson {
  std::size_t row = 0, target = 0;
  Tensor2 jacobian;              // [L, L] diag(p) - p p^T, float64 values rounded for printing
  double max_fd_diff = 0;        // against central differences of softmax in float64
  double max_row_sum = 0;        // |sum_j J(i, j)|: adding a constant to every score changes nothing
  double max_asymmetry = 0;      // |J - J^T|
  std::vector<double> grad_ce;   // p - onehot(target) [L]
  double max_ce_fd_diff = 0;     // against central differences of -log p_target
  std::vector<std::size_t> masked_keys;  // the row's keys at -inf: p = 0, so their rows and columns are 0
};

struct SymmetryLesson {
  double scores_no_projection = 0;    // max |S - S^T| for S = x x^T / sqrt(d)
  double scores_with_projection = 0;  // the same for Q K^T / sqrt(d)
  double weights_no_projection = 0;   // max |P - P^T| for P = softmax(x x^T / sqrt(d)), no mask
};

struct ExplainResult {
  ExplainConfig config;
  std::vector<std::string> tokens;
  Tensor2 x, q, k, v;   // [L, D]
  Tensor2 scores;       // step 1
  double scale = 0;     // 1 / sqrt(d)
  Tensor2 scaled;       // step 2
  Mask2 allowed;        // step 3's mask, true = may attend
  Tensor2 masked;       // step 3, -inf where blocked
  Tensor1 row_max;      // of step 3, over the allowed keys
  Tensor2 shifted;      // step 4, masked - row_max (-inf stays -inf)
  Tensor2 weights;      // step 5
  Tensor1 row_sums;     // of step 5
  Tensor2 output;       // step 6
  Tensor2 sdpa_output;  // attn::sdpa(Q, K, V) in one call
  double max_abs_diff = 0;  // max |output - sdpa_output|
  std::optional<OnlineTrace> online;
  std::optional<JacobianLesson> jacobian;
  std::optional<SymmetryLesson> symmetry;
  std::optional<MultiHeadByHand> multihead;
  std::optional<SplitKvLesson> split_kv;  // on config.row's query, K, V and mask
};

// Throws InputError for an empty or invalid sentence, more than max_tokens tokens, d_model 0, a row
// or target outside the sentence (or a target the row may not attend to), or split_kv outside
// 1 to L chunks.
ExplainResult explain_attention(const ExplainConfig& config);

Json explain_json(const ExplainResult& result);

// What the Jacobian's row says of masking, for the terminal and the picture: "No key of row 2 is
// masked." or "Masked keys 3 'on', 4 'the' (the causal mask): p = 0 there, so their rows and
// columns are all 0."
std::string jacobian_masked_text(const ExplainResult& result);

}  // namespace attn
