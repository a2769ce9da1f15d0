#pragma once
// FlashAttention forward pass on the CPU (Dao et al. 2022, arXiv 2205.14135, Algorithm 1):
// Q is split into row blocks, K and V into column blocks, and each query block streams over
// the key blocks with an online softmax (tile_math.hpp). The [Lq, Lk] score matrix never
// exists: extra memory is O(block) per thread plus one packed copy of the K and V of the heads
// in flight. Float32 in and out; inside, float32 (fast) or float64 (FlashPrecision below).
//
// Same semantics as the naive sdpa(): explicit mask, bottom-right causal, fully masked rows
// -> zero output and lse -inf, custom scale, GQA, any sizes. Causal runs skip the key tiles
// above the diagonal by index; tiles on the diagonal are walked in row groups, each only up
// to the last key it may see.
#include <memory>
#include <string>
#include <vector>

#include "attn/engine/core/bf16.hpp"
#include "attn/engine/attention/sdpa.hpp"

namespace attn {

// float32 is the fast kernel (bench, demo). float64 runs the same tile loop and micro-kernels
// instantiated for double: its only error against a float64 reference is the final rounding,
// which is what attend/mha use so their JSON is reference-grade whatever the backend.
// bfloat16 rounds Q, K and V to bfloat16 once (to nearest even, bf16.hpp) and P after each
// tile's exp; both products multiply bfloat16 pairs exactly and sum in float32 (on AMX tiles'
// tdpbf16ps where the CPU has them, else AVX512_BF16's vdpbf16ps where it has that, the same
// sums in plain C++ elsewhere); the online softmax (max, exp, sums, rescale) is float32. Its error is judged against sdpa_bf16_reference below.
enum class FlashPrecision { float32, float64, bfloat16 };

// What the tile loop did with one tile of one head, as the kernel's own variables hold it at the
// end of that tile (for `attn-cli flash --replay` and the report's step-through). Numbers are
// in natural-log units of the scaled scores: the kernel keeps m in base 2 (tile_math.hpp) and
// m here is that m / log2(e); l and the rescale factor are the same in either base.
struct FlashTileStep {
  std::size_t head = 0;
  std::size_t i0 = 0, rows = 0;  // query rows [i0, i0 + rows)
  std::size_t j0 = 0, cols = 0;  // keys [j0, j0 + cols)
  bool skipped = false;          // above the causal diagonal: never read, nothing changes
  bool diagonal = false;         // on the diagonal: each row computes only the keys it may see
  std::vector<std::size_t> visible;         // [rows] keys of this tile each row may see
  std::vector<double> m_before, l_before;   // [rows] running max and sum before the tile
  std::vector<double> m_after, l_after;     // [rows] ... and after it
  std::vector<double> rescale;              // [rows] exp(m_before - m_after), applied to l and O
  std::vector<double> p;                    // [rows, cols] exp(s - m_after), 0 where hidden
  std::size_t dv = 0;
  std::vector<double> output;               // [rows, dv] the unnormalised partial O after the tile
};

// Receives every tile the kernel walks, in the order one worker walks them (set threads = 1
// for one ordered stream: with more threads, calls for different query blocks overlap).
// Costs nothing when absent: the tile loop is instantiated without the hook.
class FlashObserver {
 public:
  virtual ~FlashObserver() = default;
  virtual void on_tile(const FlashTileStep& step) = 0;
};

struct DecodeTuning;  // below

struct FlashOptions {
  bool causal = false;
  std::optional<double> scale;  // default 1/sqrt(d)
  std::size_t block_q = 0;      // query rows per tile (0 = the engine's default)
  std::size_t block_k = 0;      // keys per tile (0 = the engine's default)
  std::size_t threads = 0;      // 0 = all hardware threads
  FlashPrecision precision = FlashPrecision::float32;
  std::string isa;  // "" = the best this CPU has; or "avx512", "avx2", "generic" (tests, bench)
  // float32 only: the tiled kernel's Q K^T and P V register blockings (flash_blockings(); "" =
  // set_flash_tuning's choice, else the built-in). Every blocking gives the same bits.
  std::string qk_kernel, pv_kernel;
  // Called by the tiled loop for every tile (with an observer the one-query decode path is not
  // taken, so the tiles are always the ones observed). Null = the loop without the hook.
  FlashObserver* observer = nullptr;
  // A score modifier (variant.hpp: soft-cap, ALiBi) applied to each tile's scores before the
  // online softmax, on scale * q.k; `temperature` is the one folded into `scale`. Null = none
  // (the loop without it). With one, the one-query decode path is not taken.
  const ScoreMod* score_mod = nullptr;
  double temperature = 1.0;
  // A variant mask (variant.hpp: window, sinks, documents, prefix-LM, stride) evaluated by its
  // indices in the tile loop, with no [Lq, Lk] bitmap: tiles it hides entirely are skipped,
  // tiles it shows entirely run unmasked, the others test each score (AttentionMask::cover and
  // visible). Joined with `allowed` when both are given. Null = none. With one, the one-query
  // decode path is not taken.
  const AttentionMask* mask_rule = nullptr;
  // The decode path's prefetch distance and the thread crossovers of decode and small prefill
  // (DecodeTuning below). Null = set_decode_tuning's choice, else the built-in. `tune` and the
  // tests set it to run one candidate.
  const DecodeTuning* decode_tuning = nullptr;
};

struct FlashResult {
  Tensor3 output;                 // [H, Lq, dv]
  Tensor2 lse;                    // [H, Lq], natural log; -inf for a fully masked row
  xt::xtensor<double, 2> lse64;   // the same before rounding to float (float64 precision only)
};

// q [H, Lq, d], k [Hkv, Lk, d], v [Hkv, Lk, dv]; allowed [1 or H, Lq, Lk] or null.
FlashResult flash_attention(const Tensor3& q, const Tensor3& k, const Tensor3& v,
                            const Mask3* allowed, const FlashOptions& options);

// The plain bfloat16 attention that FlashPrecision::bfloat16 is judged against (FlashAttention's
// test rule: a kernel's error against float64 at most 2x that of the plain computation in its
// type): Q, K, V rounded to bfloat16; scores, softmax and its normalisation in float64; the
// weights P rounded to bfloat16 (through float32); P V summed in float64. Same semantics as
// sdpa (explicit mask, bottom-right causal, GQA, fully masked rows -> zeros, scale).
Tensor3 sdpa_bf16_reference(const Tensor3& q, const Tensor3& k, const Tensor3& v, const Mask3* allowed, bool causal,
                            std::optional<double> scale = std::nullopt);

// Few query rows against a KV cache stored in bfloat16 (bf16.hpp): the decode path of
// flash_attention (flash_decode.hpp) with each block of K and V widened to float32 as it is
// streamed, and all arithmetic in float32, so the only difference from a float32 cache is the
// rounding of K and V. Same semantics (masks, bottom-right causal, GQA, fully masked rows);
// block sizes, the observer and the precision of `options` are not used.
FlashResult flash_decode_bf16(const Tensor3& q, const Bf16Tensor3& k, const Bf16Tensor3& v, const Mask3* allowed,
                              const FlashOptions& options);

// The attention weights of a tiled run, which the kernel never forms, recomputed row by row
// in float64 from q and k (as FlashAttention's backward pass recomputes them). The lse only
// says which rows the kernel found fully masked (-inf): those stay zero; every other row is
// the softmax of its visible scores, normalised by its own sum.
// score_mod and temperature as FlashOptions has them; heads split across `threads` (0 = all),
// the same bits whatever their number.
Tensor3 recompute_weights(const Tensor3& q, const Tensor3& k, const xt::xtensor<double, 2>& lse,
                          const Mask3* allowed, bool causal, std::optional<double> scale,
                          const ScoreMod* score_mod = nullptr, double temperature = 1.0, std::size_t threads = 1);

// The tile sizes a run with these options uses (block_q query rows x block_k keys; the key
// tile is rounded up to whole packed panels of the micro-kernel), and the ISA it runs on.
struct FlashTiling {
  std::size_t block_q, block_k;
  std::string isa;
  std::string qk_kernel, pv_kernel;  // the register blockings it runs (FlashTuning)
};
FlashTiling flash_tiling(std::size_t Lq, std::size_t Lk, const FlashOptions& options);

// The three parts of one query tile of a float32 flash run, each runnable alone so that its
// time can be taken apart from the others' (bench --parts): the first tile an [n, n] run of
// this head dim and these options cuts (flash_tiling's block_q x block_k, its ISA and
// blockings), on seeded N(0, 1) inputs, through the tile loop's own calls for a tile that no
// mask touches. Of `options` it takes the ISA, the tiles and the blockings; anything else a
// tile of that run would not do (float64, causal, a variant, an observer) is an InputError.
// FlashAttention-2 (Dao 2023, section 3.1) makes the point these times measure: the softmax
// between the two products costs far more per FLOP than they do.
class FlashTileParts {
 public:
  FlashTileParts(std::size_t n, std::size_t head_dim, const FlashOptions& options);
  ~FlashTileParts();
  FlashTileParts(const FlashTileParts&) = delete;
  FlashTileParts& operator=(const FlashTileParts&) = delete;
  std::size_t rows() const;  // query rows of the tile (before padding to the row blocking)
  std::size_t keys() const;  // its keys
  void restart();     // every row's running max -inf, sum 0, O = 0 (Algorithm 1, lines 5-6)
  void scores();      // S = Q K^T, pre-scaled (line 9), with each row's maxima per lane
  void softmax();     // lines 10-11, every row: the new max, P = exp2(S - m) in place, the sums
  void accumulate();  // line 12: O = diag(alpha) O + P V
  // O's rows over their sums (lines 13-15): after restart, scores, softmax and accumulate, the
  // output of flash_attention on the tile's inputs where the run is that one tile.
  std::vector<float> output() const;
  // The tile's inputs, seeded: Q [1, rows, d], K and V [1, keys, d].
  const Tensor3& q() const;
  const Tensor3& k() const;
  const Tensor3& v() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Every tile of the [Lq, Lk] score matrix as the kernel sees it: computed in full, computed
// with a per-element test (`diagonal`: on the causal diagonal, or a tile the mask covers in
// part), or skipped without being read (above the diagonal, or hidden entirely by the mask).
// For pictures and for teaching what "skip by index" means. `allowed` [Lq, Lk] is the bitmap
// the kernel would get (a variant's descriptor joined with an explicit mask; null = none):
// tiles are classified by it exactly as the kernel's block mask does (tile_math.hpp).
struct FlashTile {
  enum class Kind { full, diagonal, skipped };
  std::size_t i0, rows, j0, cols;
  Kind kind;
};
std::vector<FlashTile> flash_tiles(std::size_t Lq, std::size_t Lk, const FlashOptions& options,
                                   const Mask2* allowed = nullptr);

// Reads the n floats at a and the m floats at b once, on `threads` threads (0 = all), with the
// flash kernels' widest loads, and returns their sum (so the read cannot be optimised away).
// The decode benchmark times it on the very K and V a decode run reads: its bandwidth is the
// ceiling a memory-bound kernel can reach on this machine, with the same bytes in the same
// caches.
double stream_read(const float* a, std::size_t n, const float* b, std::size_t m, std::size_t threads);

// The SIMD instruction set the float32 kernel dispatched to on this machine ("avx512", "avx2",
// "generic"), and the default tile sizes.
std::string flash_isa();
// What multiplies FlashPrecision::bfloat16's products here, with the default ISA: "amx-bf16",
// "avx512bf16" or "portable".
std::string flash_bf16_isa();
std::size_t flash_default_block_q();
std::size_t flash_default_block_k();

// How the float32 tiled kernel is blocked: its Q K^T and P V register blockings ("6x4": 6 query
// rows x 4 SIMD registers of keys or output columns) and its query tile. Every choice gives the
// same bits for finite inputs (each output sums its terms in the same order, and the terms a
// larger row block adds on the causal diagonal are exact zeros; an infinite V would make them
// NaN, as 0 x inf is in any matmul; tests/test_flash_tuning.cpp), so
// choosing by measurement on each machine (`attn-cli tune`) changes speed, never a result.
// set_flash_tuning makes a choice the default of every later call on the best ISA that leaves
// FlashOptions' qk_kernel, pv_kernel or block_q unset. A Q K^T blocking whose key panel does
// not divide the key tile is not used there (the built-in is): tiles, and so bits, stay as
// they are.
struct FlashTuning {
  std::string qk_kernel, pv_kernel;  // "" = the built-in blocking
  std::size_t block_q = 0;           // 0 = the built-in query tile
  bool operator==(const FlashTuning&) const = default;
};
// What the float32 kernels of `isa` ("" = the best this CPU has) offer, the built-in first.
struct FlashBlockings {
  std::string isa;
  std::vector<std::string> qk, pv;
  std::size_t block_q;  // the built-in query tile
};
FlashBlockings flash_blockings(const std::string& isa = "");
// InputError for a blocking the best ISA does not offer or a block_q over 65536.
void set_flash_tuning(const FlashTuning& tuning);
FlashTuning flash_tuning();  // as last set ("" and 0 where unset)

// The machine-dependent choices of the decode path (a few query rows against a long KV cache)
// and of small prefill: how far ahead the decode path prefetches K and V (whole blocks into L2,
// a bfloat16 cache's rows into L1, a float32 cache's into L2), and from what work size a second thread pays for
// waking it (below it one thread is faster: the work is shorter than the hand-over).
// `attn-cli tune` measures them as it measures the blockings. None of them changes a number:
// the decode path's chunks (its split-KV merge points) come from the shape alone, never from
// the thread count or the tuning, and each tiled work item is computed the same whichever
// thread runs it (tests/test_decode_tuning.cpp compares the bytes).
struct DecodeTuning {
  // K and V are asked for this many 128-key blocks ahead (0 = never). 0: `tune` chose 0 on the
  // Intel Xeon (1.06-1.22x as fast as 1) and on the Zen 3 EPYC (1.09-1.26x, on 1 thread 1.43x
  // from cold caches; again once the decode path read K and V in runs, scores before P V:
  // flash_decode.cpp); on the Zen 5 it kept 1, then the built-in, 0 not being faster by its
  // margin (docs/performance.md). `tune` times 1, 2 and 4 where it runs.
  std::size_t prefetch_blocks = 0;
  // A decode thread must have at least this many (key, query row) pairs (keys of its KV heads
  // x the query rows that share them); fewer threads run below it. 4096: on the 2-core Zen 5
  // machine, with the pool's threads kept awake, 2 threads beat 1 by 1.3-1.6x at 8192 pairs
  // (H = 8, 1024 keys) in every run of `attn-cli tune`, and not clearly at 4096 (docs/performance.md).
  std::size_t decode_thread_work = 4096;
  // A tiled (prefill) thread must have at least this many multiply-adds (Lq x Lk x (d + dv)
  // per head, half that when causal); fewer threads run below it.
  std::size_t prefill_thread_work = std::size_t(1) << 20;
  // A bfloat16 cache's K and V rows are asked into L1 this many keys ahead of the row the
  // products read (0 = never). 64: from memory on the Intel Xeon it beat 32 and 128, and 32 was
  // slower from its L3 (docs/performance.md); `attn-cli tune` times 0 to 256 where it runs.
  std::size_t bf16_near_keys = 64;
  // A float32 (or float64) cache's rows are asked into L2 this many keys ahead (0 = never).
  // 0: on the Zen 5 and Intel machines the hardware prefetcher alone kept a float32 step near
  // 0.9 of a streaming read; `attn-cli tune` times 16 to 256 keys where it runs (a Zen 3 EPYC:
  // docs/performance.md).
  std::size_t f32_near_keys = 0;
  bool operator==(const DecodeTuning&) const = default;
};
// The built-in values, measured on the machine the kernel was written on (docs/performance.md).
DecodeTuning decode_tuning_builtin();
// InputError for a value outside what tune tries (prefetch_blocks over 16, a work of 0,
// bf16_near_keys or f32_near_keys over 1024).
void set_decode_tuning(const DecodeTuning& tuning);
DecodeTuning decode_tuning();  // as last set, else the built-in
// Threads a run of this work uses: `requested` (0 = all hardware threads), at most `items`, and
// no more than work / min_work_per_thread (at least 1).
std::size_t threads_for_work(std::size_t requested, std::size_t items, double work, std::size_t min_work_per_thread);

// The tiled forward kernel (float32 and float64; not the decode path or the backward) keeps the
// memory of its packed K/V and tile workspaces from one call for the next, at most 64 MiB per
// element type: first touching fresh pages costs a page fault each, which under some
// hypervisors is dearer than the packing. These tell how much is kept and free it (bench does
// before it measures a run's memory). Not counted: the bfloat16 AVX2 products' float32 copy of
// a tile's Q or P, which each thread keeps up to 4 MiB of (microkernels_bf16_avx2.cpp).
std::size_t flash_scratch_bytes();
void flash_release_scratch();

}  // namespace attn
