#pragma once
// Private to the flash kernel: the decode path, for a few query rows against a long KV cache
// (Flash-Decoding: Dao, Haziza, Massa, Sizov, "Flash-Decoding for long-context inference",
// 2023). The tiled kernel is built for many query rows; with one row its Q tile is nearly
// empty and its threads, which split work by heads x query blocks, have nothing to share. Here
// each key/value head's cache is cut into chunks, one task per (KV head, chunk): a task streams
// its K and V once for every query row of every query head that shares that KV head (GQA/MQA
// read K/V once), keeping a partial (m, l, O) per row; a short merge then combines the partials
// exactly, with the online softmax's rescaling (tile_math.hpp, row_merge).
#include <cstddef>
#include <cstdint>

#include "attn/engine/attention/flash.hpp"
#include "attn/engine/core/tensor.hpp"
#include "microkernels.hpp"

namespace attn::flash {

struct DecodeProblem {
  std::size_t H, Lq, d, Hkv, Lk, dv;
  double scale;
  bool causal;
  const Mask3* allowed;  // [1 or H, Lq, Lk] or null
  std::size_t threads;   // 0 = all hardware threads
  DecodeTuning tuning;   // prefetch distance and thread crossover: speed only, never the bits
};

// True when the decode path is the faster one for this shape; flash_attention() asks it, the
// caller never has to. Explicit tile sizes keep the tiled kernel (they ask to see its tiles).
bool decode_path_applies(std::size_t Lq, std::size_t Lk, std::size_t block_q, std::size_t block_k);

// The chunking a decode run uses: keys per chunk and the number of chunks per KV head, from
// the shape alone (Hkv, Lk), so that the merge points and so the bits are the same on every
// machine, thread count and tuning; and the threads, from the work size: at most `threads`
// (0 = all hardware threads) and at least `min_thread_work` (key, query row) pairs each.
struct DecodeSplit {
  std::size_t chunk_keys, chunks, threads;
};
DecodeSplit decode_split(std::size_t Hkv, std::size_t Lk, std::size_t rows_per_task, std::size_t threads,
                         std::size_t min_thread_work = DecodeTuning{}.decode_thread_work);

// q [H, Lq, d], k [Hkv, Lk, d], v [Hkv, Lk, dv] row-major; out [H, Lq, dv], lse [H, Lq]. KV is
// T, or std::uint16_t for a bfloat16 cache (T = float): widened in registers as it is read (V
// rows not a whole number of registers long: a block at a time), arithmetic in T.
template <class T, class KV>
void flash_decode(const Microkernels<T>& mk, const DecodeProblem& p, const T* q, const KV* k, const KV* v,
                  T* out, T* lse);

}  // namespace attn::flash
