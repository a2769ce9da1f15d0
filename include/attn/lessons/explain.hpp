#pragma once
// The five steps of scaled dot-product attention (the five steps interview answers give), each one kept so
// it can be printed, written and checked:
//
//   x  [L, D]  seeded token embeddings (tokenize.hpp), Q = x W_q^T, K = x W_k^T, V = x W_v^T
//   1. scores   S = Q K^T                  [L, L]  similarity of query i and key j
//   2. scaled   S / sqrt(d)                [L, L]  keeps the variance at 1 (variance.hpp)
//   3. masked   -inf where i may not see j [L, L]  causal by default (mask.hpp convention)
//   4. softmax  P = softmax(row)           [L, L]  every row sums to 1
//   5. output   O = P V                    [L, D]  each query's weighted mix of values
//
// One head with d = D, like the classic small example (seq_len 4, d_k 3). The last step is
// compared with attn::sdpa on the same Q, K, V: computing step by step (rounding to float32
// after each step) and in one call (float64 throughout) must agree to float32 rounding.
#include <cstdint>
#include <string>
#include <vector>

#include "attn/io/json_io.hpp"
#include "attn/engine/tensor.hpp"

namespace attn {

struct ExplainConfig {
  std::string sentence = "我喜欢深度学习";  // ICU splits it into 我 / 喜欢 / 深度 / 学习
  std::size_t d_model = 4;
  std::uint64_t seed = 42;
  bool causal = true;
  std::size_t max_tokens = 16;  // the matrices are printed: keep them readable
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
  Tensor2 weights;      // step 4
  Tensor1 row_sums;     // of step 4
  Tensor2 output;       // step 5
  Tensor2 sdpa_output;  // attn::sdpa(Q, K, V) in one call
  double max_abs_diff = 0;  // max |output - sdpa_output|
};

// Throws InputError for an empty or invalid sentence, more than max_tokens tokens, or d_model 0.
ExplainResult explain_attention(const ExplainConfig& config);

Json explain_json(const ExplainResult& result);

}  // namespace attn
