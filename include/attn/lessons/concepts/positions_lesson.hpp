#pragma once
// Why attention needs positions (Vaswani et al. 2017, section 3.5): without them self-attention
// is permutation-equivariant. A word's row depends only on the word and the set of words around
// it, so two copies of a word get identical rows, and shuffling the sentence shuffles the
// weight matrix's rows and columns the same way. Sinusoidal encodings (added to x) and RoPE
// (rotating q and k) break both; this lesson computes by how much, on the demo's own seeded
// single head (non-causal, so that a row is not shaped by the prefix it happens to see).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "attn/engine/core/tensor.hpp"
#include "attn/engine/text/tokenize.hpp"
#include "attn/io/json_io.hpp"
#include "attn/lessons/concepts/position_kind.hpp"

namespace attn {

// Two copies of one word, at positions first < second.
struct RepeatedWord {
  std::string token;
  std::size_t first = 0, second = 0;
  double max_row_diff = 0;  // max_j |A[first, j] - A[second, j]|
};

struct PositionRun {
  PositionKind kind = PositionKind::none;
  std::vector<RepeatedWord> repeated;  // the first two copies of every repeated word
  // The sentence reversed: max |A_reversed[i, j] - A[L-1-i, L-1-j]|, 0 when order is invisible.
  double reversal_diff = 0;
};

// Each kind on the same embeddings and projections (embed_tokens with seed, init_mha_weights
// with seed + 1, one head of width d_model, as the demo's single head). RoPE (rotate-half, base
// 10000) needs an even d_model; with an odd one it is left out.
std::vector<PositionRun> run_positions_lesson(const std::vector<Token>& tokens, std::size_t d_model,
                                              std::uint64_t seed);

// Attention weights [L, L] of that single head with one kind of position information.
Tensor2 single_head_weights(const std::vector<Token>& tokens, std::size_t d_model, std::uint64_t seed,
                            PositionKind kind);

Json positions_json(const std::vector<PositionRun>& runs, PositionKind used);

}  // namespace attn
