#pragma once
// Linear attention is an RNN (Katharopoulos et al. 2020, arXiv 2006.16236), shown on a sentence.
//
// The sentence's seeded embeddings (tokenize.hpp) and one head's projections (init_mha_weights)
// give Q, K, V [L, d]. Causal linear attention (linear_attention.hpp, phi = elu + 1) is computed
// twice: in parallel, as the normalised matrix A = phi(Q) phi(K)^T (masked) times V, and as the
// recurrence S_t = S_{t-1} + phi(k_t) v_t^T, z_t = z_{t-1} + phi(k_t), one token at a time. They
// must agree to float64 round-off. What each step carries is printed beside softmax attention's:
// the state S, z is d dv + d numbers for every t; the KV cache holds t (d + dv).
// Then the weights are not softmax's: causal softmax(Q K^T / sqrt(d)) on the same Q, K (sdpa.hpp)
// beside A, and their difference.
#include <cstdint>
#include <string>
#include <vector>

#include "attn/engine/attention/linear_attention.hpp"
#include "attn/io/json_io.hpp"

namespace attn {

struct LinearRnnConfig {
  std::string sentence = "The cat sat on the mat";
  std::size_t d = 8;  // head dim d = dv
  std::uint64_t seed = 42;
  std::size_t max_tokens = 64;
  std::size_t value_bytes = 4;  // bytes per stored number in the memory table (float32)
};

struct MemoryAtStep {
  std::size_t t = 0;
  double kv_cache_bytes = 0, state_bytes = 0;
};

struct LinearRnnResult {
  LinearRnnConfig config;
  std::vector<std::string> tokens;
  MatrixF64 q, k, v;                     // [L, d], the float32 projections widened
  MatrixF64 parallel, recurrent;         // [L, d] each
  double max_abs_recurrent_vs_parallel = 0;
  MatrixF64 linear_weights;              // [L, L], A
  MatrixF64 softmax_weights;             // [L, L], causal softmax(Q K^T / sqrt(d))
  MatrixF64 softmax_output;              // [L, d]
  double max_abs_weight_difference = 0;  // max |A - P|
  double max_abs_output_difference = 0;  // max |A V - P V|
  std::vector<MemoryAtStep> memory;      // t = 1..L, then a few longer t from the same formulas
  std::size_t crossover_t = 0;           // the first t whose KV cache is larger than the state
};

// InputError for an empty sentence, d of 0 or past 256, or more than max_tokens tokens.
LinearRnnResult run_linear_rnn(const LinearRnnConfig& config);

// Every matrix and number above (float64, shortest round-trip text).
Json linear_rnn_json(const LinearRnnResult& result);

}  // namespace attn
