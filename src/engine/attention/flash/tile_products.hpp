#pragma once
// Private to flash_cpu.cpp: what the tiled forward's loop works on. The problem (sizes, tiles,
// options), each thread's workspace, each key/value head's packed K and V, and the two sets of
// products the loop runs: NativeProducts (float32 or float64 micro-kernels) and Bf16Products
// (FlashPrecision::bfloat16: microkernels_bf16.hpp). The loop itself (flash_cpu.cpp's
// attend_query_block) sees only load_q, scores, round_p and accumulate, so both precisions share
// it: masks, causal trimming, the observer and the online softmax are written once.
#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <thread>
#include <vector>

#include "attn/engine/attention/flash.hpp"
#include "attn/engine/attention/tile_math.hpp"
#include "microkernels.hpp"
#include "microkernels_bf16.hpp"
#include "platform/parallel.hpp"
#include "scratch.hpp"

namespace attn::flash::tiled {

inline std::size_t round_up(std::size_t x, std::size_t m) { return (x + m - 1) / m * m; }

// K and V of one key/value head, packed for the micro-kernels: K^T panels [Lk/PW][d][PW] and
// V with rows padded to dvp columns, or in panels of Problem::v_panel columns (or read in place,
// `v`, where dv == dvp and there are no panels). Packed once per
// head (not per tile, which is what makes per-tile sgemm calls slow), and its memory given back
// (scratch.hpp) as soon as the last query block of its heads is done, so at most about one head
// per thread is packed at a time.
template <class T>
struct PackedHead {
  // 0 unpacked, 1 being allocated, 2 being packed (its pieces open to every thread that comes),
  // 3 packed. Not a std::once_flag: glibc's call_once makes a futex system call on every first
  // call, and a training step of the toy transformer packs 512 heads of 32 keys (the calls cost
  // as much as the packing).
  std::atomic<int> state{0};
  std::atomic<std::size_t> blocks_left{0};
  std::atomic<std::size_t> next_piece{0}, pieces_done{0};
  std::size_t pieces = 0;  // set before state becomes 2
  Scratch<T> k_panels, v_rows;
  const T* v = nullptr;  // V's rows or panels (Problem::v_panel): v_rows, or the input's own
  Scratch<std::uint16_t> k_bf16, v_bf16;  // FlashPrecision::bfloat16's (microkernels_bf16.hpp)

  // Packs the head once, whichever threads need it. The first to come allocates (allocate();
  // if it throws, the head is unallocated again and the next thread to come tries), then every
  // thread that comes while pieces are left packs pieces (pack_piece(i) for i < count, which
  // must not throw) and waits for the pieces others hold. Head-major work items bring both
  // threads to a new head at about the same time: one used to pack while the other slept on a
  // futex until it had done (woken 50-150 us late on a hypervisor); at n = 4096 on an Emerald
  // Rapids Xeon, timers counted 0.2-0.37 ms a head packing and as long again waiting. Now the
  // two pack it together.
  template <class Allocate, class PackPiece>
  void ensure_packed(std::size_t count, Allocate&& allocate, PackPiece&& pack_piece) {
    for (std::size_t spins = 0;; relax(spins)) {
      int seen = state.load(std::memory_order_acquire);
      if (seen == 3) return;
      if (seen == 0 && state.compare_exchange_strong(seen, 1, std::memory_order_acq_rel)) {
        try {
          allocate();
        } catch (...) {
          state.store(0, std::memory_order_release);
          throw;
        }
        pieces = count;
        state.store(count ? 2 : 3, std::memory_order_release);
        if (count == 0) return;
        seen = 2;
      }
      if (seen != 2) continue;  // being allocated
      for (std::size_t i; (i = next_piece.fetch_add(1, std::memory_order_relaxed)) < pieces;) {
        pack_piece(i);
        if (pieces_done.fetch_add(1, std::memory_order_acq_rel) + 1 == pieces)
          state.store(3, std::memory_order_release);
      }
      for (spins = 0; state.load(std::memory_order_acquire) != 3; relax(spins)) {
      }
      return;
    }
  }

  // Gives the packed buffers back to the stock (the head's last query block is done).
  void release() {
    k_panels.reset();
    v_rows.reset();
    v = nullptr;
    k_bf16.reset();
    v_bf16.reset();
  }

 private:
  // A spin-wait's turn: the wait is a piece's packing (microseconds), so spin, but yield the
  // core now and then in case the thread waited for has none (more threads than cores).
  static void relax(std::size_t& spins) {
    if (++spins % 1024 == 0) std::this_thread::yield(); else detail::cpu_relax();
  }
};

template <class T>
struct Problem {
  std::size_t H, Lq, d, Hkv, Lk, dv, dvp, group;
  std::size_t v_panel;  // 0: V as rows of dvp; else in panels of this many columns (packed_v_panel)
  std::size_t Bq, Bk, row_align;  // Bq any size; tiles pad their rows to row_align
  T scale_log2;  // scale * log2(e): scores come out in base-2 units (tile_math.hpp)
  bool causal;
  const Mask3* allowed;
  const ScoreMod* score_mod;  // null: none
  double temperature;         // folded into scale_log2; undone for the score modifier
  // The variant mask read by its indices (FlashOptions::mask_rule): null = none.
  const AttentionMask* rule;
};

// Workspace of one thread: O(block) memory, reused for every tile it processes (and, through
// scratch.hpp, by the next call).
template <class T>
struct Workspace {
  Scratch<T> q, s, o, alpha;
  Scratch<T> lane_max;  // per row, the scores' maximum in each vector lane (Microkernels::qk)
  Scratch<std::uint16_t> q_bf16, p_bf16;  // FlashPrecision::bfloat16: Q and P as its products read them
  std::vector<tile::RowState<T>> rows;
  Workspace(const Problem<T>& p, bool bf16, std::size_t lanes)
      : q(bf16 ? 0 : padded(p) * p.d), s(padded(p) * p.Bk), o(padded(p) * p.dvp), alpha(padded(p)),
        lane_max(bf16 ? 0 : padded(p) * lanes), q_bf16(bf16 ? padded(p) * flash::bf16_even(p.d) : 0),
        p_bf16(bf16 ? padded(p) * p.Bk : 0), rows(padded(p)) {}
  static std::size_t padded(const Problem<T>& p) { return round_up(p.Bq, p.row_align); }
};

// How a packed head holds V: 0 = as rows of dvp (read in place where dv == dvp), else in panels
// of that many columns (Microkernels::pv_panels). Where the P V kernel reads a row in several
// passes of pv_columns (AVX2 at d_v = 64: four of 16; AVX-512 at d_v = 128: two of 64), each
// pass read 64 bytes of a key a row apart: at 4 lines a row, one pass's slice (kPvSliceKeys rows)
// sat in 16 of a Zen 3 core's 64 L1 sets, 8 lines in each, every way, and the rows of P
// streaming past evicted them. A stride of an odd number of lines spread them over every set (P
// V's samples 0.79 of what they were, the run's 0.92); packed in panels, a pass reads its rows one
// after another, as a GEMM reads its packed B, and on the Zen 3 EPYC P V ran 1.05-1.33x faster
// again than at that stride (192 x 768 P, d_v = 64, alternated in one process). Only the layout
// changes: the same products in the same order, the same bits. Other ISAs follow the same rule,
// untimed. A tile of tile_rows query rows (padded) reads each slice once per block of pv_rows:
// where it has one block (a decode-sized tiled call), nothing is read twice, and a copy would be
// pure cost.
inline std::size_t packed_v_panel(std::size_t dvp, std::size_t pv_columns, std::size_t tile_rows,
                                  std::size_t pv_rows) {
  return tile_rows > pv_rows && pv_columns < dvp ? pv_columns : 0;
}

// Keys per piece of a head's packing (PackedHead::ensure_packed), before rounding up to whole
// K panels: 128 KiB of K and V at d = 64 in float32, microseconds to copy.
constexpr std::size_t kPackPieceKeys = 256;

// Keys [j0, j1) of one head's K and V packed, j0 a multiple of the K panel. Every element is
// written (pack_k zero-pads the last panel; V's padding columns are zeroed here): the buffers
// come from the stock holding an earlier call's numbers. V is copied only where its rows need
// padding or panels (packed_v_panel): at n = 4096 the packing reads and writes memory, not cache
// (0.2-0.37 ms a head on each of 2 threads of an Emerald Rapids Xeon), and a copy of V as it is
// was half of that; where V goes into panels, the copy buys a faster P V.
template <class T>
void pack_keys(const Microkernels<T>& mk, const Problem<T>& p, const T* k, const T* v, std::size_t j0,
               std::size_t j1, PackedHead<T>& packed) {
  mk.pack_k(k + j0 * p.d, p.d, j1 - j0, p.d, packed.k_panels.data() + j0 * p.d);  // panel j0 / PW
  if (packed.v == v) return;  // read in place
  const std::size_t width = p.v_panel ? p.v_panel : p.dvp;  // of a row in a panel, or of a whole row
  for (std::size_t j = j0; j < j1; ++j)
    for (std::size_t c0 = 0; c0 < p.dvp; c0 += width) {
      T* row = packed.v_rows.data() + (c0 / width * p.Lk + j) * width;
      const std::size_t real = c0 < p.dv ? std::min(width, p.dv - c0) : 0;  // columns of V, then zeros
      std::copy(v + j * p.dv + c0, v + j * p.dv + c0 + real, row);
      std::fill(row + real, row + width, T(0));
    }
}

// The tile loop's products at the working precision T (float32 or float64): the ISA's
// micro-kernels on Q pre-scaled by scale * log2(e), K^T panels and V rows, all in T.
template <class T>
struct NativeProducts {
  static constexpr bool kBf16 = false;
  Microkernels<T> mk;  // at the run's blockings (tiled_problem); also the online softmax's row_max and exp2_sum
  const T *q, *k, *v;         // [H, Lq, d], [Hkv, Lk, d], [Hkv, Lk, dv]

  // Packing a head: its buffers, then pieces of piece_keys() keys (whole K panels), any order.
  std::size_t piece_keys() const { return round_up(kPackPieceKeys, mk.key_panel); }
  void allocate(const Problem<T>& p, std::size_t g, PackedHead<T>& kv) const {
    kv.k_panels = Scratch<T>(round_up(p.Lk, mk.key_panel) * p.d);
    if (p.dv == p.dvp && !p.v_panel) {
      kv.v = v + g * p.Lk * p.dv;
    } else {  // rows padded to dvp, or ceil(dvp / v_panel) panels of Lk rows
      kv.v_rows = Scratch<T>(p.Lk * (p.v_panel ? round_up(p.dvp, p.v_panel) : p.dvp));
      kv.v = kv.v_rows.data();
    }
  }
  void pack(const Problem<T>& p, std::size_t g, PackedHead<T>& kv, std::size_t j0, std::size_t j1) const {
    pack_keys(mk, p, k + g * p.Lk * p.d, v + g * p.Lk * p.dv, j0, j1, kv);
  }
  // Q_i of head h, pre-scaled; padding rows are zero so their scores are zero.
  void load_q(const Problem<T>& p, std::size_t h, std::size_t i0, std::size_t rows, std::size_t rows_pad,
              Workspace<T>& ws) const {
    const T* qh = q + h * p.Lq * p.d;
    for (std::size_t r = 0; r < rows_pad; ++r)
      for (std::size_t c = 0; c < p.d; ++c) ws.q[r * p.d + c] = r < rows ? qh[(i0 + r) * p.d + c] * p.scale_log2 : T(0);
  }
  // S = Q K^T for rows [g0, g0 + rows) and the tile's first `keys` keys (whole panels). With
  // lane_max, also ws.lane_max (Microkernels::qk), and returns true: then `keys` must be whole
  // panels, or the zero scores of padding keys would enter the maxima.
  bool scores(const Problem<T>& p, Workspace<T>& ws, const PackedHead<T>& kv, std::size_t g0, std::size_t rows,
              std::size_t j0, std::size_t keys, bool lane_max) const {
    mk.qk(ws.q.data() + g0 * p.d, p.d, rows, kv.k_panels.data() + (j0 / mk.key_panel) * p.d * mk.key_panel,
          (keys + mk.key_panel - 1) / mk.key_panel, ws.s.data() + g0 * p.Bk, p.Bk,
          lane_max ? ws.lane_max.data() + g0 * mk.lanes : nullptr);
    return lane_max;
  }
  void round_p(const Problem<T>&, Workspace<T>&, std::size_t, std::size_t) const {}  // P stays T
  // O = diag(alpha) O + P V for the same rows and keys.
  void accumulate(const Problem<T>& p, Workspace<T>& ws, const PackedHead<T>& kv, std::size_t g0, std::size_t rows,
                  std::size_t j0, std::size_t keys) const {
    if (p.v_panel) {
      mk.pv_panels(ws.s.data() + g0 * p.Bk, p.Bk, rows, keys, kv.v + j0 * p.v_panel, p.Lk * p.v_panel, p.dvp,
                   ws.alpha.data() + g0, ws.o.data() + g0 * p.dvp, p.dvp);
      return;
    }
    mk.pv(ws.s.data() + g0 * p.Bk, p.Bk, rows, keys, kv.v + j0 * p.dvp, p.dvp, p.dvp, ws.alpha.data() + g0,
          ws.o.data() + g0 * p.dvp, p.dvp);
  }
};

// FlashPrecision::bfloat16's products (microkernels_bf16.hpp): Q, K, V rounded to bfloat16
// once, before the loop; P rounded to bfloat16 after the float32 exp2; each product summed in
// float32. The scale is applied to the float32 scores, not to Q, so that Q is rounded once.
struct Bf16Products {
  static constexpr bool kBf16 = true;
  Microkernels<float> mk;  // the online softmax's row_max and exp2_sum
  const Bf16Kernels& bk;
  const std::uint16_t *q, *k, *v;  // the inputs' bfloat16 bits, shaped as NativeProducts'

  // As NativeProducts': pieces of whole K panels (an even number of keys: V's key pairs).
  std::size_t piece_keys() const { return round_up(kPackPieceKeys, Bf16Kernels::kKeyPanel); }
  void allocate(const Problem<float>& p, std::size_t, PackedHead<float>& kv) const {
    kv.k_bf16 = Scratch<std::uint16_t>(round_up(p.Lk, Bf16Kernels::kKeyPanel) * flash::bf16_even(p.d));
    kv.v_bf16 = Scratch<std::uint16_t>(flash::bf16_even(p.Lk) * p.dvp);
  }
  // Every element is written (padding zeroed): the buffers come from the stock.
  void pack(const Problem<float>& p, std::size_t g, PackedHead<float>& kv, std::size_t j0, std::size_t j1) const {
    flash::pack_k_bf16(k + (g * p.Lk + j0) * p.d, j1 - j0, p.d, kv.k_bf16.data() + j0 * flash::bf16_even(p.d));
    flash::pack_v_bf16(v + (g * p.Lk + j0) * p.dv, j1 - j0, p.dv, p.dvp, kv.v_bf16.data() + j0 * p.dvp);
  }
  void load_q(const Problem<float>& p, std::size_t h, std::size_t i0, std::size_t rows, std::size_t rows_pad,
              Workspace<float>& ws) const {
    const std::size_t dp = flash::bf16_even(p.d);
    const std::uint16_t* qh = q + h * p.Lq * p.d;
    for (std::size_t r = 0; r < rows_pad; ++r)
      for (std::size_t c = 0; c < dp; ++c) ws.q_bf16[r * dp + c] = r < rows && c < p.d ? qh[(i0 + r) * p.d + c] : 0;
    // The padding rows' P, which P V reads and no row step writes.
    std::fill(ws.p_bf16.data() + rows * p.Bk, ws.p_bf16.data() + rows_pad * p.Bk, std::uint16_t(0));
  }
  // Never lane maxima (returns false): the online softmax finds the max with row_max.
  bool scores(const Problem<float>& p, Workspace<float>& ws, const PackedHead<float>& kv, std::size_t g0,
              std::size_t rows, std::size_t j0, std::size_t keys, bool) const {
    const std::size_t dp = flash::bf16_even(p.d), PW = Bf16Kernels::kKeyPanel;
    bk.qk(ws.q_bf16.data() + g0 * dp, dp, rows, kv.k_bf16.data() + j0 / PW * dp * PW, (keys + PW - 1) / PW,
          p.scale_log2, ws.s.data() + g0 * p.Bk, p.Bk);
    return false;
  }
  // Row r's P (its first `keys` values, zero past what it sees) to bfloat16, with a zero after
  // an odd count: P V reads keys in pairs.
  void round_p(const Problem<float>& p, Workspace<float>& ws, std::size_t r, std::size_t keys) const {
    round_to_bf16(ws.s.data() + r * p.Bk, keys, ws.p_bf16.data() + r * p.Bk);
    if (keys % 2) ws.p_bf16[r * p.Bk + keys] = 0;
  }
  void accumulate(const Problem<float>& p, Workspace<float>& ws, const PackedHead<float>& kv, std::size_t g0,
                  std::size_t rows, std::size_t j0, std::size_t keys) const {
    bk.pv(ws.p_bf16.data() + g0 * p.Bk, p.Bk, rows, keys, kv.v_bf16.data() + j0 * p.dvp, p.dvp, ws.alpha.data() + g0,
          ws.o.data() + g0 * p.dvp, p.dvp);
  }
};

}  // namespace attn::flash::tiled
