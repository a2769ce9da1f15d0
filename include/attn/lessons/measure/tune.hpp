#pragma once
// Choosing the float32 flash kernel's register blockings and query tile for this machine by
// measurement (`attn-cli tune`). A kernel tuned on one microarchitecture is not the fastest on
// another (AVX-512 executed as two 256-bit halves on Zen 4, two full 512-bit FMA ports on Intel
// and Zen 5), so the choice is measured where it runs. Every candidate gives the built-in's bits
// (FlashTuning, flash.hpp), and the run checks that too: tuning changes speed, never a result.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "attn/engine/attention/flash.hpp"

namespace attn {

struct TuneConfig {
  std::size_t n = 2048, heads = 8, head_dim = 64;  // the shape timed (non-causal and causal)
  std::size_t threads = 0;                         // 0 = all hardware threads
  std::size_t rounds = 5;  // timed runs per candidate, in rounds that visit every candidate in turn
  // A candidate replaces the one chosen so far only when it is faster by more than this
  // fraction: two equal kernels then keep the built-in instead of flipping on noise.
  double margin = 0.03;
  std::uint64_t seed = 42;
  std::function<void(std::size_t done, std::size_t total)> progress;  // after each timed run
};

// One candidate as timed: its best non-causal and causal run, and their sum (its score).
struct TuneCandidate {
  std::string stage;  // "qk_kernel", "pv_kernel" or "block_q": what this candidate varies
  FlashTuning tuning;  // names and query tile all given
  double full_ms = 0, causal_ms = 0, score_ms = 0;
  bool same_bits = false;  // its output and lse are the built-in's bytes (memcmp)
};

struct TuneResult {
  std::string isa;
  std::size_t threads = 0;  // as resolved
  FlashTuning builtin;
  FlashTuning staged;  // what the three stages chose
  FlashTuning chosen;  // staged when it also beat the built-in head to head; else the built-in
  std::vector<TuneCandidate> candidates;  // stage by stage, each stage's incumbent first
  // Scores of the built-in and of `staged`, timed against each other in `rounds` more rounds
  // (when staged is the built-in, its score in the last stage, twice).
  double builtin_ms = 0, staged_ms = 0;
};

// Three stages, each timing its candidates against the choice so far: the Q K^T blocking, then
// the P V blocking, then the query tile (tune_block_qs). A candidate whose bits differ from the
// built-in's is never chosen (and would be a bug: the tests forbid it). What the stages chose
// is kept only if it then beats the built-in by the margin in rounds of its own. InputError when
// a candidate cannot run its blocking at this n (its key panels do not divide the key tile).
TuneResult tune_flash(const TuneConfig& config);

// The query tiles tune tries: the built-in, half and twice it. A saved tuning must hold one.
std::vector<std::size_t> tune_block_qs();

// The index of the candidate to keep: the fastest, when it beats `incumbent` by more than
// `margin` (a fraction of the incumbent's time); else the incumbent.
std::size_t pick_faster(const std::vector<double>& ms, std::size_t incumbent, double margin);

}  // namespace attn
