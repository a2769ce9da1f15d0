#pragma once
// Choosing the decode path's prefetch distances and the thread crossovers of decode and small
// prefill for this machine by measurement (`attn-cli tune`, after the blockings). How far
// ahead a prefetch must ask depends on the memory's latency and the core's hardware
// prefetcher; from what size a second thread pays for being woken depends on the cores, the
// hypervisor and the memory. None of these changes a number (DecodeTuning, flash.hpp), and
// the run checks that too: every timed run's bytes are compared with the built-in's.
#include <functional>
#include <string>
#include <vector>

#include "attn/engine/attention/flash.hpp"

namespace attn {

struct DecodeTuneConfig {
  std::size_t kv = 16384;                // the cache length the prefetch stages time (one query row)
  std::size_t heads = 8, head_dim = 64;  // the shapes timed (key/value heads = heads)
  std::size_t threads = 0;               // 0 = all hardware threads
  std::size_t rounds = 5;                // timed samples of each setting, in alternating rounds
  double margin = 0.03;                  // as TuneConfig's: a choice must be faster by more than this
  double sample_ms = 1.0;                // a crossover's sample repeats its call until this long, then
                                         // averages (a distance's is one call from cold caches)
  std::uint64_t seed = 42;
  std::function<void(std::size_t done, std::size_t total)> progress;  // after each round
};

// One prefetch distance as timed at a prefetch stage's shape, on one thread and on all: ms per
// call, each its best sample, and the score `ms`, their sum (one_ms alone on one thread). The
// distance is in 128-key blocks (prefetch_blocks) or in keys (bf16_near_keys, f32_near_keys).
struct DistanceCandidate {
  std::size_t distance = 0;
  std::size_t prefetch_blocks = 0;  // the prefetch distance it ran with
  double one_ms = 0, many_ms = 0;
  double ms = 0;
  bool same_bits = false;
};

// One size of a crossover ladder: the same call on one thread and on all of them.
struct CrossoverPoint {
  std::size_t n = 0;  // the cache length (decode) or sequence length (prefill)
  double work = 0;    // what the crossover counts: (key, query row) pairs, or multiply-adds
  double one_ms = 0, many_ms = 0;
  bool same_bits = false;  // all threads gave one thread's bytes
};

// One setting the stages changed, timed against its base on the shapes where the change alone
// runs differently (summed over them): kept when faster by the margin and its base is kept.
// The base is the built-in, except for a near distance when the prefetch stage changed
// prefetch_blocks: a near distance was staged with that prefetch (the two ask for the same
// rows, so each changes what the other is worth), so it is judged against the built-in with
// that prefetch, and kept only if the prefetch is kept too.
struct HeadToHead {
  std::string setting;  // a DecodeTuning field's name: prefetch_blocks, bf16_near_keys, ...
  std::size_t builtin = 0, staged = 0;
  double builtin_ms = 0, staged_ms = 0;  // builtin_ms: the base's time
  std::string base_setting;              // empty: the base is the built-in; else the field it changes
  std::size_t base_value = 0;            // that field's value in the base
  bool kept = false;
};

struct DecodeTuneResult {
  std::size_t threads = 0;  // as resolved
  DecodeTuning builtin, staged, chosen;
  std::vector<DistanceCandidate> prefetch;   // prefetch_blocks, float32 cache; the built-in first
  // The near stages run with the prefetch stage's pick (staged.prefetch_blocks).
  std::vector<DistanceCandidate> bf16_near;  // bf16_near_keys, a bfloat16 cache; the built-in first
  std::vector<DistanceCandidate> f32_near;   // f32_near_keys, the float32 cache; the built-in first
  // The crossovers: the smallest size from which all threads beat one by the margin, at it and
  // every larger size, sets the work a thread needs (its work / threads). Empty on one thread.
  std::vector<CrossoverPoint> decode_ladder, prefill_ladder;
  // Each setting `staged` changed, against its base head to head (HeadToHead) on the shapes
  // where that change runs differently; `chosen` takes the ones kept. The sums over them all,
  // builtin_ms of the bases' times (0 and 0 when nothing runs differently).
  std::vector<HeadToHead> compared;
  double builtin_ms = 0, staged_ms = 0;
  bool all_same_bits = true;
};

// Five stages: the prefetch distance (tune_prefetch_blocks), a bfloat16 cache's near distance
// (tune_bf16_near_keys) and a float32 cache's (tune_f32_near_keys), both with the prefetch the
// first stage picked, the decode crossover, the small prefill crossover; each setting they
// changed is kept only if it then beats its base (HeadToHead) by the margin in rounds of its
// own, on the shapes where that change runs differently.
DecodeTuneResult tune_decode(const DecodeTuneConfig& config);

// Sets each comparison's `kept`: faster than its base by more than `margin` (a fraction of the
// base's time), and its base kept where that is another comparison (base_setting; one missing
// from `compared` is not kept).
void judge_head_to_head(std::vector<HeadToHead>& compared, double margin);

// The distances tune tries, the built-in first: 128-key blocks ahead, and a bfloat16 or
// float32 cache's keys ahead. A saved tuning must hold one of each.
std::vector<std::size_t> tune_prefetch_blocks();
std::vector<std::size_t> tune_bf16_near_keys();
std::vector<std::size_t> tune_f32_near_keys();

// The crossover a ladder measured: work / threads at the smallest point from which `many_ms`
// beats `one_ms` by the margin at every larger point; when it never does, just over the
// largest point's work / threads (one thread throughout the ladder).
std::size_t crossover_work(const std::vector<CrossoverPoint>& ladder, std::size_t threads, double margin);

}  // namespace attn
