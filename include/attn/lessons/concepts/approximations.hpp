#pragma once
// The efficient-attention family on one head of a sentence (the demo's approximations section;
// `attn-cli tradeoff` measures the same methods at long n). Exact causal softmax attention
// beside what each approximation computes from the same q, k, v:
//
//   window     a causal sliding window of w keys (Mistral): softmax over keys p - w < j <= p
//   strided    Child et al. 2019's strided pattern, stride s: keys with p - j < s or
//              (p - j) mod s = 0
//   linear     Katharopoulos et al. 2020, phi = elu + 1: A_ij = phi(q_i).phi(k_j) / sum_j' ...
//   performer  Choromanski et al. 2021, m positive random features (an unbiased estimate of
//              exp(scale q.k), normalised like linear attention)
//
// w and s are both ceil(sqrt(L)), at least 2 (Child et al.'s choice, l ~ sqrt(n)): on a
// sentence of L <= w tokens the window is exact, and the lesson says so. Linformer is left
// out: it is not causal, and its weights are over projected rows, not keys.
//
// Each method's weights [L, L], the cells it may weigh, and two errors against exact: the
// largest |A_ij - P_ij|, and ||O - O_exact||_F / ||O_exact||_F over the outputs. Exact,
// window and strided run through attention()'s float64 reference; linear and performer
// through attention_methods.hpp (float64).
#include <cstdint>
#include <string>
#include <vector>

#include "attn/engine/core/tensor.hpp"
#include "attn/io/json_io.hpp"

namespace attn {

struct ApproximationsConfig {
  std::size_t features = 64;  // performer's m
  std::uint64_t seed = 42;    // performer's random features
};

struct ApproximationRun {
  std::string method;  // "exact softmax", "window 3", "strided 3", "linear (elu + 1)", "performer m = 64"
  std::string family;  // exact, window, sparse, linear, performer
  Tensor2 weights;     // [L, L]
  Mask2 allowed;       // [L, L]: the cells the method may weigh
  std::size_t visible = 0;      // how many cells that is
  double weight_error = 0;      // max |A - P| over every cell (0 for exact)
  double output_error = 0;      // ||O - O_exact||_F / ||O_exact||_F (0 for exact)
};

struct ApproximationsLesson {
  std::string head;                 // which head, as the picture and the terminal name it
  std::vector<std::string> tokens;  // [L]
  std::size_t window = 0, stride = 0, features = 0;
  std::vector<ApproximationRun> runs;  // exact first, then window, strided, linear, performer
};

// q, k, v [1, L, d] of one head, scale its softmax scale. InputError for other shapes, an
// empty sequence, tokens not one per position, or features of 0.
ApproximationsLesson run_approximations(const Tensor3& q, const Tensor3& k, const Tensor3& v, double scale,
                                        const std::vector<std::string>& tokens, const std::string& head,
                                        const ApproximationsConfig& config = {});

// The sizes, and per method: method, family, visible, weight_error, output_error, weights (the
// shortest decimal of each float32, as the demo's manifest writes weights).
Json approximations_json(const ApproximationsLesson& lesson);

// A few lines for the terminal: one per method, its error and what it keeps.
std::string approximations_text(const ApproximationsLesson& lesson);

}  // namespace attn
