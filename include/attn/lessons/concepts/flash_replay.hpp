#pragma once
// The flash replay: one head of a short sentence through the tiled FlashAttention kernel with
// tiny tiles, recorded tile by tile by the kernel's own observer hook (flash.hpp's
// FlashObserver), so that a learner can step through Algorithm 1 of arXiv 2205.14135: which
// (query block, key block) tile is read or skipped by causality, each row's running max m and
// sum l before and after, the factor exp(m_old - m_new) that rescales the partial output, and
// that partial output itself; then the final division by l, against the naive sdpa.
#include <string>
#include <vector>

#include "attn/engine/attention/flash.hpp"
#include "attn/engine/core/tensor.hpp"
#include "attn/io/json_io.hpp"

namespace attn {

struct FlashReplayOptions {
  std::size_t block_q = 2, block_k = 2;  // asked for; the key tile is whole panels (2 keys, generic)
  bool causal = true;
};

struct FlashReplay {
  std::vector<std::string> tokens;
  bool causal = true;
  std::size_t block_q = 0, block_k = 0;  // the tiles the kernel used
  std::string isa;                       // "generic": the same tiles and numbers on every machine
  double scale = 0;
  std::vector<FlashTileStep> steps;      // in (query block, key block) order
  Tensor2 output, naive_output;          // [L, dv] the kernel's O = O / l, and sdpa's
  std::vector<double> lse, naive_lse;    // [L] (-inf: a fully masked row)
  double max_diff_output = 0, max_diff_lse = 0;
  std::size_t read() const;     // tiles read (full or diagonal)
  std::size_t skipped() const;  // tiles skipped by causality
};

// q, k [1, L, d], v [1, L, dv]: one head. The kernel runs in float64 on the generic
// micro-kernels on one thread (one ordered stream of tiles); tokens label the rows.
FlashReplay replay_flash(const Tensor3& q, const Tensor3& k, const Tensor3& v,
                         const std::vector<std::string>& tokens, const FlashReplayOptions& options);

// The tile size the demo's teaching run asks for at L tokens: 2 up to 16 tokens, then about
// 8 tiles a side.
std::size_t teaching_block(std::size_t tokens);

// Every step as JSON (numbers rounded to float32's shortest text; -inf as null), plus the
// final output's check: the report's step-through animation reads this.
Json flash_replay_json(const FlashReplay& replay);

}  // namespace attn
