#pragma once
// Private to the flash kernel: the register-blocked inner loops, one set per instruction set
// and element type (float for speed, double for reference-grade JSON output), chosen at run
// time (microkernels_impl.hpp explains the blocking).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "backward_tile.hpp"

namespace attn::flash {

template <class T>
struct Blockings;

// Rows of a bfloat16 K or V a decode step asks into L1 while it reads the cache: `keys` rows
// past the row being read, when that row is among the first `readable` rows of the array the
// product was given (0 keys: none). A hint: the results never depend on it. Why bfloat16 only:
// widening makes each line of a bfloat16 row feed twice the instructions a float32 line does
// (a vpermw, then the FMA), and they wait in the core's scheduler while the line is missing, so
// fewer lines are in flight. With the hardware prefetcher alone, a bfloat16 step read 0.52-0.62
// of a streaming read from memory on the Intel Xeon, where float32 read 0.89-0.94; 64 keys
// ahead, 0.78-0.80 (docs/performance.md).
struct NearPrefetch {
  std::size_t keys = 0, readable = 0;
};

// Keys per pass of the prefill's P V kernel (microkernels_impl.hpp: pv_columns): a slice of V
// that stays in L1 while every row block of the tile streams past it. At least kPvSliceKeys, and
// more where a pass's columns are narrow: as many as fill kPvSliceBytes (AVX2's 16-column
// passes: 384 keys, 24 KiB; AVX-512's 64 columns stay at 128 keys, 32 KiB). Each slice costs a
// load and a store of the row block's outputs; on a Zen 3 EPYC (V in panels, 192 x 768 P,
// alternated in one process) P V ran 1.04-1.05x faster at 256 keys than at 128, 1.05-1.09x at
// 384. The same sums in the same order, whatever the slice.
inline constexpr std::size_t kPvSliceKeys = 128;
inline constexpr std::size_t kPvSliceBytes = 24 * 1024;

// Items [first, end) of n, share b of `blocks` near-equal shares in order (sizes differ by at most
// one; b >= blocks: empty): what each row block of a prefill product asks ahead of the next K
// panel or V slice (microkernels_impl.hpp).
struct Share {
  std::size_t first, end;
};
inline Share share_of(std::size_t n, std::size_t b, std::size_t blocks) {
  if (b >= blocks) return {n, n};
  return {b * n / blocks, (b + 1) * n / blocks};
}

template <class T>
struct Microkernels {
  const char* isa;
  std::size_t lanes;        // elements per SIMD register
  std::size_t qk_rows;      // MR of the Q K^T kernel: query rows per register block
  std::size_t key_panel;    // NR * lanes: keys per packed K^T panel
  std::size_t pv_rows;      // MR of the P V kernel
  std::size_t pv_columns;   // NR * lanes of the P V kernel: output columns per pass over a V slice
                            // for blocks of pv_rows rows (blocks of 1 or 2 rows pass wider)

  // K block [keys, d] (row stride ldk) -> panels of key_panel keys, each [d][key_panel],
  // zero-padded past `keys`.
  void (*pack_k)(const T* k, std::size_t ldk, std::size_t keys, std::size_t d, T* panels);

  // S[rows, panels*key_panel] = Q[rows, d] . K^T, rows a multiple of qk_rows. With lane_max
  // (not null: rows * lanes values), also each row's running maximum per lane, taken from the
  // registers before they are stored: lane_max[r * lanes + l] = the max of S[r, j] over the
  // row's columns j = l mod lanes, so the online softmax need not read S back to find its row
  // max (row_max). The same value as row_max's, except where scores are NaN (inf - inf in an
  // overflowing sum): then, as for row_max, the order of the comparisons decides.
  void (*qk)(const T* q, std::size_t d, std::size_t rows, const T* panels,
             std::size_t npanels, T* s, std::size_t lds, T* lane_max);

  // The same kernel as a general product: C[rows, npanels*key_panel] (+ C when accumulate) =
  // A . B with A(r, c) = a[r * ars + c * acs] for c < depth and B packed by pack_k (B[c, j] =
  // the packed "key" j's element c); rows a multiple of qk_rows.
  void (*gemm)(const T* a, std::size_t ars, std::size_t acs, std::size_t depth, std::size_t rows,
               const T* panels, std::size_t npanels, T* c, std::size_t ldc, bool accumulate);

  // Online-softmax step for a tile row: returns the row max over s[0..n) (n >= 1).
  T (*row_max)(const T* s, std::size_t n);
  // The same max from qk's lane_max for one row: the max of its `lanes` values.
  T (*lane_max_of)(const T* lane_max);
  // s[j] = exp2(s[j] - m) in place; returns their sum. m is finite.
  T (*exp2_sum)(T* s, std::size_t n, T m);

  // O[rows, dvp] = alpha[r] * O[r, :] + P[rows, keys] . V[keys, dvp], dvp a multiple of lanes;
  // fastest for rows a multiple of pv_rows (the rest in blocks of 2 to 4).
  void (*pv)(const T* p, std::size_t ldp, std::size_t rows, std::size_t keys, const T* v,
             std::size_t ldv, std::size_t dvp, const T* alpha, T* o, std::size_t ldo);
  // The same on V stored as bfloat16 bits (rows of ldv >= dvp elements), widened in registers;
  // near asks for V's rows ahead (NearPrefetch).
  void (*pv_bf16)(const T* p, std::size_t ldp, std::size_t rows, std::size_t keys, const std::uint16_t* v,
                  std::size_t ldv, std::size_t dvp, const T* alpha, T* o, std::size_t ldo, NearPrefetch near);
  // The same as pv on V packed in panels of pv_columns columns (zero-padded past dvp): columns
  // [c * pv_columns, (c + 1) * pv_columns) of key j at v[c * panel_stride + j * pv_columns]. Rows
  // a multiple of pv_rows (as a tile's are). A pass reads its panel's rows one after another.
  void (*pv_panels)(const T* p, std::size_t ldp, std::size_t rows, std::size_t keys, const T* v,
                    std::size_t panel_stride, std::size_t dvp, const T* alpha, T* o, std::size_t ldo);

  // S[r, j] = Q[r, :] . K[j, :] for `rows` query rows and `keys` key rows read in place (row
  // stride ldk, no packing): the decode path's scores, where one K row meets few query rows.
  void (*qk_unpacked)(const T* q, std::size_t rows, std::size_t d, const T* k, std::size_t ldk,
                  std::size_t keys, T* s, std::size_t lds);
  // The same on K stored as bfloat16 bits, widened in registers as it is read; near asks for
  // K's rows ahead (NearPrefetch).
  void (*qk_unpacked_bf16)(const T* q, std::size_t rows, std::size_t d, const std::uint16_t* k,
                           std::size_t ldk, std::size_t keys, T* s, std::size_t lds, NearPrefetch near);

  // The sum of x[0..n): a streaming read at the widest loads this ISA has (stream_read(), the
  // memory-bandwidth yardstick the decode benchmark sets beside the kernel).
  T (*sum)(const T* x, std::size_t n);

  // out[i] = in[i] as float, in[i] the bits of a bfloat16 (the decode path's bfloat16 KV cache).
  void (*widen_bf16)(const std::uint16_t* in, std::size_t n, T* out);

  // One query head of FlashAttention-2's backward (backward_tile.hpp).
  BackwardHeadFn<T> backward_head;

  // The tiled forward's two products at the register blockings this set offers, its own first.
  const Blockings<T>* blockings;
};

// The Q K^T product (with its packing and its general-product form) at one register blocking:
// `rows` query rows x key_panel / lanes registers.
template <class T>
struct QkBlocking {
  std::string name;  // "6x4": rows x registers
  std::size_t rows, key_panel;
  decltype(Microkernels<T>::pack_k) pack_k;
  decltype(Microkernels<T>::qk) qk;
  decltype(Microkernels<T>::gemm) gemm;
};

// The P V product at one register blocking: `rows` query rows x registers of output columns.
template <class T>
struct PvBlocking {
  std::string name;
  std::size_t rows, columns;
  decltype(Microkernels<T>::pv) pv;
  decltype(Microkernels<T>::pv_bf16) pv_bf16;
  decltype(Microkernels<T>::pv_panels) pv_panels;
};

// The blockings an ISA file offers to `attn-cli tune` (float only), its set's own first. Each
// output element sums its terms in the same order whatever the blocking (Q K^T over d, P V over
// the keys), so every blocking gives the same bits: choosing one by measurement changes speed,
// never a result (tests/test_flash_tuning.cpp).
template <class T>
struct Blockings {
  std::vector<QkBlocking<T>> qk;
  std::vector<PvBlocking<T>> pv;
};

// Where the named blocking is in base's list of Q K^T (or P V) blockings; "" is 0, its own.
// InputError when base offers none of that name.
template <class T>
std::size_t qk_blocking_index(const Microkernels<T>& base, const std::string& name);
template <class T>
std::size_t pv_blocking_index(const Microkernels<T>& base, const std::string& name);

// `base` with its Q K^T and P V products at the blockings of those indices.
template <class T>
Microkernels<T> with_blockings(const Microkernels<T>& base, std::size_t qk, std::size_t pv) {
  Microkernels<T> mk = base;
  const QkBlocking<T>& q = base.blockings->qk.at(qk);
  mk.qk_rows = q.rows, mk.key_panel = q.key_panel, mk.pack_k = q.pack_k, mk.qk = q.qk, mk.gemm = q.gemm;
  const PvBlocking<T>& p = base.blockings->pv.at(pv);
  mk.pv_rows = p.rows, mk.pv_columns = p.columns, mk.pv = p.pv, mk.pv_bf16 = p.pv_bf16, mk.pv_panels = p.pv_panels;
  return mk;
}

// Instantiated for float and double in the per-ISA files.
template <class T>
const Microkernels<T>& microkernels_generic();
template <class T>
const Microkernels<T>* microkernels_avx2();    // null when not compiled in
template <class T>
const Microkernels<T>* microkernels_avx512();  // null when not compiled in

// The best set this CPU supports (checked once with __builtin_cpu_supports).
template <class T>
const Microkernels<T>& best_microkernels();

// The set named "avx512", "avx2" or "generic", or null when it was not compiled in or this
// CPU lacks the instructions.
template <class T>
const Microkernels<T>* microkernels_named(const std::string& isa);

// What FlashOptions::isa asks for: the best set when isa is empty, else the named one;
// InputError when that set is not available.
template <class T>
const Microkernels<T>& microkernels_for(const std::string& isa);

}  // namespace attn::flash
