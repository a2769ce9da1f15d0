#pragma once
// The demo's checks, each a faster or cached path against the plain one on the same inputs
// (STYLE.md: the naive kernel is the oracle): the tiled FlashAttention kernel against the naive
// sdpa, split-KV's merge (Flash-Decoding) against one pass, and the multi-head run through a KV
// cache against the one-shot causal run.
#include <cstddef>
#include <vector>

#include "attn/engine/attention/flash.hpp"
#include "attn/engine/attention/mha.hpp"
#include "attn/engine/attention/sdpa.hpp"
#include "attn/engine/core/tensor.hpp"
#include "attn/io/json_io.hpp"
#include "attn/lessons/concepts/flash_replay.hpp"
#include "attn/lessons/concepts/split_kv.hpp"

namespace attn {

// max |flash - naive| on the same inputs (lse: rows with a visible key; none is fully masked).
struct FlashDifference {
  double output = 0, lse = 0;
};

// One flash_attention configuration, run non-causal and causal on the demo's single head.
struct DemoFlashRun {
  FlashOptions options;  // causal is set per run
  FlashTiling tiling;    // the tile sizes and ISA it actually used (flash_tiling)
  FlashDifference plain, causal;
};

// How many tiles of each kind a grid has (FlashTile::Kind).
struct TileCounts {
  std::size_t full = 0, diagonal = 0, skipped = 0;
  std::size_t total() const { return full + diagonal + skipped; }
};
TileCounts count_tiles(const std::vector<FlashTile>& tiles);

struct DemoFlashCheck {
  // The kernel bench times: float32, the best ISA of this CPU, default tiles (one tile or a
  // few for a sentence). Its rounding error and tile width depend on the CPU's SIMD set.
  DemoFlashRun fast;
  // A teaching run on small tiles so that a sentence spans several: float64 on the generic
  // micro-kernels (their key panel is 2 keys), the same on every machine.
  DemoFlashRun teaching;
  std::size_t requested_block_q = 0, requested_block_k = 0;  // what the teaching run asked for
  std::vector<FlashTile> tiles, causal_tiles;                // the teaching run's grid
  FlashReplay replay;  // the teaching run, causal, recorded tile by tile (flash_replay.hpp)
};

// The flash kernel on one head q, k, v [1, L, d], fast and teaching runs, non-causal and causal,
// against the naive sdpa's results on the same inputs; then the teaching run replayed causal.
DemoFlashCheck demo_flash_check(const Tensor3& q, const Tensor3& k, const Tensor3& v, const SdpaResult& naive,
                                const SdpaResult& naive_causal, const std::vector<std::string>& tokens);
// The teaching run (its tiles and replay) and how the reference was computed; the fast run's ISA,
// tiles and rounding differ from CPU to CPU, so the terminal alone shows it.
Json demo_flash_json(const DemoFlashCheck& check);

// Split-KV on one head q, k, v [1, L, d]: the last query, which sees every key (causal or not),
// against the cache cut into min(3, L) chunks.
SplitKvLesson last_query_split_kv(const Tensor3& q, const Tensor3& k, const Tensor3& v, double scale);

// The multi-head run (causal, RoPE when configured) through a KV cache: the first `prefill`
// tokens as one chunk, then one token at a time (mha_decode), against the one-shot run.
struct DemoDecodeCheck {
  std::size_t prefill = 0, steps = 0, kv_cache_len = 0;
  double output = 0, weights = 0;  // max |cached - one-shot|
};
// On any multi-head layer x [L, D]: the first half of the sentence as the prompt.
DemoDecodeCheck demo_decode_check(const Tensor2& x, const MhaWeights& w, MhaOptions options);

}  // namespace attn
