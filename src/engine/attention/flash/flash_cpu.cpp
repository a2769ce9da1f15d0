// FlashAttention forward on the CPU: the tile loop (Algorithm 1 of arXiv 2205.14135, in the
// loop order of FlashAttention-2: each query block streams over all key blocks), threads, and
// the per-head packing of K and V. What the loop works on (problem, workspaces, packed K/V, and
// the float or bfloat16 products) is in tile_products.hpp, the inner loops in
// microkernels_impl.hpp and microkernels_bf16*.cpp, the per-row online-softmax arithmetic in
// include/attn/tile_math.hpp.
#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <deque>
#include <limits>
#include <memory>
#include <mutex>
#include <numeric>
#include <type_traits>
#include <vector>

#include "attn/engine/core/error.hpp"
#include "attn/engine/core/random.hpp"
#include "attn/engine/attention/flash.hpp"
#include "attn/engine/attention/tile_math.hpp"
#include "flash_decode.hpp"
#include "online_row.hpp"
#include "platform/parallel.hpp"
#include "attention/sdpa_f64.hpp"
#include "microkernels.hpp"
#include "microkernels_bf16.hpp"
#include "scratch.hpp"
#include "tile_products.hpp"

namespace attn {
namespace {

using flash::Bf16Kernels;
using flash::Microkernels;
using flash::Scratch;
using flash::tiled::Bf16Products;
using flash::tiled::NativeProducts;
using flash::tiled::PackedHead;
using flash::tiled::Problem;
using flash::tiled::round_up;
using flash::tiled::Workspace;

constexpr std::size_t kDefaultBlockQ = 192;  // a multiple of every ISA's row blocking (8, 6, 4)
constexpr std::size_t kDefaultBlockK = 768;  // a multiple of every ISA's key panel (64, 16, 8)


// Sets s[j] = -inf for the keys of this tile row that the explicit mask hides from query i
// (global). Causal visibility needs no mask: it is a prefix of the row (see visible() below).
template <class T>
void mask_row(const Problem<T>& p, std::size_t h, std::size_t i, std::size_t j0, std::size_t n, T* s) {
  const bool* m = p.allowed->data() + ((p.allowed->shape(0) == 1 ? 0 : h) * p.Lq + i) * p.Lk + j0;
  for (std::size_t j = 0; j < n; ++j)
    if (!m[j]) s[j] = -T(INFINITY);
}

// Applies the score modifier to this tile row's n scores of query i (global), which are in
// base-2 units of scale / T * q.k: the modifier works on scale * q.k.
template <class T>
void modify_row(const Problem<T>& p, std::size_t h, std::size_t i, std::size_t j0, std::size_t n, T* s) {
  const double to_score = p.temperature / tile::kLog2ed, back = tile::kLog2ed / p.temperature;
  const long pos = long(i) + long(p.Lk) - long(p.Lq);
  for (std::size_t j = 0; j < n; ++j)
    s[j] = T(p.score_mod->apply(double(s[j]) * to_score, h, pos, long(j0 + j)) * back);
}

// How the explicit mask (a variant's bitmap joined with the user's) treats the tile of rows
// [i0, i0 + rows) and keys [j0, j0 + cols): FlexAttention's block mask, computed per tile.
// A tile it hides entirely (a sliding window's, a document's) is skipped, as a causal tile
// above the diagonal is: every score would be -inf and change nothing. A tile it shows
// entirely runs unmasked; only the others test each score against the bitmap.
template <class T>
tile::MaskCover tile_cover(const Problem<T>& p, std::size_t h, std::size_t i0, std::size_t rows, std::size_t j0,
                           std::size_t cols) {
  if (!p.allowed) return tile::MaskCover::all;
  const bool* m = p.allowed->data() + (p.allowed->shape(0) == 1 ? 0 : h) * p.Lq * p.Lk;
  return tile::mask_cover(m, p.Lk, i0, rows, j0, cols);
}

// How the variant rule covers the tile of rows [i0, i0 + rows) and keys [j0, j0 + cols), from
// the indices alone: the block mask without a bitmap (variant.hpp's AttentionMask::cover).
template <class T>
tile::MaskCover rule_cover(const Problem<T>& p, std::size_t i0, std::size_t rows, std::size_t j0, std::size_t cols) {
  return p.rule ? p.rule->cover(i0, rows, j0, cols, p.Lq, p.Lk) : tile::MaskCover::all;
}

// Sets s[j] = -inf for the keys of this tile row the rule hides from query i (global).
template <class T>
void rule_row(const Problem<T>& p, std::size_t i, std::size_t j0, std::size_t n, T* s) {
  for (std::size_t j = 0; j < n; ++j)
    if (!p.rule->visible(i, j0 + j, p.Lq, p.Lk)) s[j] = -std::numeric_limits<T>::infinity();
}

struct NoTileStep {};  // what an unobserved tile loop keeps of a tile: nothing

// The observer hook's view of one tile: the running (m, l) of the block's rows as the tile
// starts, then the same variables, P and O as it ends. Only instantiated with kObserve.
template <class T>
FlashTileStep tile_step_start(const Problem<T>& p, const Workspace<T>& ws, std::size_t h, std::size_t i0,
                              std::size_t rows, std::size_t j0, std::size_t cols) {
  FlashTileStep step;
  step.head = h, step.i0 = i0, step.rows = rows, step.j0 = j0, step.cols = cols, step.dv = p.dv;
  for (std::size_t r = 0; r < rows; ++r) {
    step.m_before.push_back(double(ws.rows[r].m) / tile::kLog2ed);  // base 2 -> natural log
    step.l_before.push_back(double(ws.rows[r].l));
  }
  return step;
}

template <class T>
void tile_step_finish(const Problem<T>& p, const Workspace<T>& ws, FlashTileStep& step, bool read) {
  for (std::size_t r = 0; r < step.rows; ++r) {
    step.m_after.push_back(double(ws.rows[r].m) / tile::kLog2ed);
    step.l_after.push_back(double(ws.rows[r].l));
    step.rescale.push_back(read ? double(ws.alpha[r]) : 1.0);
    // Past the keys a row may see, s holds whatever an earlier tile left there: P is 0.
    for (std::size_t c = 0; c < step.cols; ++c)
      step.p.push_back(read && c < step.visible[r] ? double(ws.s[r * p.Bk + c]) : 0.0);
    for (std::size_t c = 0; c < p.dv; ++c) step.output.push_back(double(ws.o[r * p.dvp + c]));
  }
}

// The tiles past key_end, which the tile loop never reaches (causality skips them by index), as
// the observer sees them.
template <class T>
void observe_skipped_tiles(const Problem<T>& p, Workspace<T>& ws, std::size_t h, std::size_t i0, std::size_t rows,
                           std::size_t key_end, FlashObserver* observer) {
  for (std::size_t j0 = round_up(key_end, p.Bk); j0 < p.Lk; j0 += p.Bk) {
    FlashTileStep step = tile_step_start(p, ws, h, i0, rows, j0, std::min(p.Bk, p.Lk - j0));
    step.skipped = true;
    step.visible.assign(rows, 0);
    tile_step_finish(p, ws, step, /*read=*/false);
    observer->on_tile(step);
  }
}

// Algorithm 1, lines 13-15, for the block's rows: O_i = diag(l_i)^-1 O_i, L_i = m_i + log(l_i).
template <class T>
void write_block_output(const Problem<T>& p, const Workspace<T>& ws, std::size_t i0, std::size_t rows, T* out,
                        T* lse) {
  for (std::size_t r = 0; r < rows; ++r) {
    const T inv_l = tile::row_output_scale(ws.rows[r]);
    for (std::size_t c = 0; c < p.dv; ++c) out[(i0 + r) * p.dv + c] = ws.o[r * p.dvp + c] * inv_l;
    lse[i0 + r] = tile::row_lse(ws.rows[r]);
  }
}

// Algorithm 1, lines 5-6, for the query block's rows: Q_i loaded (pre-scaled), O_i = 0, m_i =
// -inf, l_i = 0.
template <class T, class Products>
void start_query_block(const Products& prod, const Problem<T>& p, std::size_t h, std::size_t i0, std::size_t rows,
                       std::size_t rows_pad, Workspace<T>& ws) {
  prod.load_q(p, h, i0, rows, rows_pad, ws);
  std::fill(ws.o.begin(), ws.o.begin() + rows_pad * p.dvp, T(0));
  for (std::size_t r = 0; r < rows_pad; ++r) {
    ws.rows[r] = tile::row_start<T>();
    ws.alpha[r] = T(1);
  }
}

// Whether a tile's row group takes its maxima from the Q K^T kernel's registers: every row sees
// every key the kernel computes (no masking, no modifier, no padding keys).
template <class T>
bool plain_group(const Problem<T>& p, const Microkernels<T>& mk, bool on_diagonal, tile::MaskCover by_rule,
                 tile::MaskCover by_mask, std::size_t keys) {
  return !on_diagonal && !p.score_mod && by_rule == tile::MaskCover::all && by_mask == tile::MaskCover::all &&
         keys % mk.key_panel == 0;
}

// One query block of one head: Algorithm 1, lines 5-15, for rows [i0, i0 + rows). With
// kObserve, the observer sees every tile (FlashTileStep); without it the hook compiles away.
template <class T, bool kObserve, class Products>
void attend_query_block(const Products& prod, const Problem<T>& p, std::size_t h, std::size_t i0,
                        const PackedHead<T>& kv, T* out, T* lse, Workspace<T>& ws, FlashObserver* observer) {
  const std::size_t rows = std::min(p.Bq, p.Lq - i0);
  const std::size_t rows_pad = round_up(rows, p.row_align);
  start_query_block(prod, p, h, i0, rows, rows_pad, ws);

  // Causal: key blocks past the last key any row of this block can see are never read.
  const std::size_t key_end =
      p.causal ? std::size_t(tile::causal_key_end(long(i0 + rows), long(p.Lq), long(p.Lk))) : p.Lk;
  for (std::size_t j0 = 0; j0 < key_end; j0 += p.Bk) {  // for each key/value block K_j, V_j
    const std::size_t kcols = std::min(p.Bk, key_end - j0);
    const tile::MaskCover by_rule = rule_cover(p, i0, rows, j0, kcols), by_mask = tile_cover(p, h, i0, rows, j0, kcols);
    const tile::MaskCover cover = tile::joined_cover(by_rule, by_mask);
    if constexpr (!kObserve) {  // the observer sees every tile the masks leave (as before)
      if (cover == tile::MaskCover::none) continue;
    }
    // Tiles below the diagonal are fully visible. A tile on the diagonal is walked in groups
    // of row_align rows, each computing only up to the last key its last row sees: the
    // triangle above the diagonal is then skipped at register-block granularity, not a tile's.
    const bool on_diagonal =
        p.causal && !tile::causal_tile_full(long(i0), long(j0 + kcols), long(p.Lq), long(p.Lk));
    // Without the hook, step is an empty struct: no vectors made or freed per tile.
    [[maybe_unused]] std::conditional_t<kObserve, FlashTileStep, NoTileStep> step;
    if constexpr (kObserve) {
      step = tile_step_start(p, ws, h, i0, rows, j0, std::min(p.Bk, p.Lk - j0));
      step.diagonal = on_diagonal;
    }
    const std::size_t group = on_diagonal ? p.row_align : rows_pad;
    for (std::size_t g0 = 0; g0 < rows; g0 += group) {
      const std::size_t g_rows = std::min(group, rows_pad - g0);  // a multiple of row_align
      // Keys of this tile visible to row i: [0, visible(i)).
      auto visible = [&](std::size_t i) -> std::size_t {
        if (!on_diagonal) return kcols;
        const long end = tile::causal_key_end(long(i0 + i) + 1, long(p.Lq), long(p.Lk)) - long(j0);
        return std::size_t(std::clamp(end, 0L, long(kcols)));
      };
      const std::size_t g_keys = visible(std::min(g0 + g_rows, rows) - 1);  // the group's last row
      // A plain group's maxima come from the Q K^T kernel's registers: S is not read back for them.
      const bool plain = plain_group(p, prod.mk, on_diagonal, by_rule, by_mask, g_keys);
      bool use_lane_max = false;
      // S_ij = Q_i K_j^T (line 9).
      if (g_keys > 0) use_lane_max = prod.scores(p, ws, kv, g0, g_rows, j0, g_keys, plain);
      for (std::size_t r = g0; r < std::min(g0 + g_rows, rows); ++r) {
        T* s = ws.s.data() + r * p.Bk;
        const std::size_t n = visible(r);
        if constexpr (kObserve) step.visible.push_back(n);
        if (p.score_mod) modify_row(p, h, i0 + r, j0, n, s);
        if (by_rule != tile::MaskCover::all) rule_row(p, i0 + r, j0, n, s);
        if (by_mask != tile::MaskCover::all) mask_row(p, h, i0 + r, j0, n, s);
        // Lines 10-11: new running max, rescale factor for what was accumulated, P = exp2(S - m).
        ws.alpha[r] = flash::online_row_step(prod.mk, ws.rows[r], s, n, g_keys,
                                             use_lane_max ? ws.lane_max.data() + r * prod.mk.lanes : nullptr);
        prod.round_p(p, ws, r, g_keys);
      }
      // Line 12: O_i = diag(alpha) O_i + P_ij V_j.
      if (g_keys > 0) prod.accumulate(p, ws, kv, g0, g_rows, j0, g_keys);
    }
    if constexpr (kObserve) {
      tile_step_finish(p, ws, step, /*read=*/true);
      observer->on_tile(step);
    }
  }
  if constexpr (kObserve) observe_skipped_tiles(p, ws, h, i0, rows, key_end, observer);
  write_block_output(p, ws, i0, rows, out, lse);
}

// The decode path's prefetch distance and the thread crossovers: the options', else the tuning.
DecodeTuning tuning_of(const FlashOptions& options) {
  return options.decode_tuning ? *options.decode_tuning : decode_tuning();
}

template <class T>
const Microkernels<T>& kernels_for(const FlashOptions& options) {
  return flash::microkernels_for<T>(options.isa);
}

// set_flash_tuning's choice as indices into the best float32 set's blockings. Every call reads
// it without a lock: set_flash_tuning publishes a new immutable choice, and the old ones are
// kept (a call may still be reading one; a process sets a tuning once or twice).
struct TunedChoice {
  FlashTuning named;                // as set, for flash_tuning()
  std::size_t qk = 0, pv = 0;       // blocking indices
  std::size_t block_q = 0;          // 0 = the built-in
};

struct TuningSlot {
  std::mutex lock;  // serialises set_flash_tuning
  std::deque<TunedChoice> made;
  std::atomic<const TunedChoice*> current{nullptr};  // null = nothing set
  static TuningSlot& get() {
    static TuningSlot slot;
    return slot;
  }
};

// The kernels and tiles a tiled run uses. Blockings and query tile: the options', else (float32
// on the best ISA) the tuning's, else the built-in. Tiles: no larger than the problem, the key
// tile rounded up to whole K panels of the built-in blocking, so that no blocking changes the
// tiles; a Q K^T blocking whose panels do not divide the key tile gives way to the built-in.
template <class T>
struct TiledKernels {
  Microkernels<T> mk;
  std::size_t block_q, block_k;
  std::size_t qk, pv;  // the blockings' indices in the set's lists
};

template <class T>
TiledKernels<T> tiled_kernels(std::size_t Lq, std::size_t Lk, const FlashOptions& o) {
  const Microkernels<T>& base = kernels_for<T>(o);
  std::size_t qk = 0, pv = 0, block_q = o.block_q;
  if constexpr (std::is_same_v<T, float>) {
    const TunedChoice* tuned = &base == &flash::best_microkernels<float>()
                                   ? TuningSlot::get().current.load(std::memory_order_acquire)
                                   : nullptr;
    qk = !o.qk_kernel.empty() ? flash::qk_blocking_index(base, o.qk_kernel) : tuned ? tuned->qk : 0;
    pv = !o.pv_kernel.empty() ? flash::pv_blocking_index(base, o.pv_kernel) : tuned ? tuned->pv : 0;
    if (!block_q && tuned) block_q = tuned->block_q;
  }
  const std::size_t block_k = round_up(std::min(o.block_k ? o.block_k : kDefaultBlockK, Lk), base.key_panel);
  if (block_k % base.blockings->qk[qk].key_panel != 0) qk = 0;
  return {flash::with_blockings(base, qk, pv), std::min(block_q ? block_q : kDefaultBlockQ, Lq), block_k, qk, pv};
}

// The tiles a bfloat16 run uses: its own products' row block and key panel, no tuning.
TiledKernels<float> bf16_tiles(std::size_t Lq, std::size_t Lk, const FlashOptions& o) {
  const std::size_t block_k = round_up(std::min(o.block_k ? o.block_k : kDefaultBlockK, Lk), Bf16Kernels::kKeyPanel);
  return {kernels_for<float>(o), std::min(o.block_q ? o.block_q : kDefaultBlockQ, Lq), block_k, 0, 0};
}

}  // namespace

FlashTiling flash_tiling(std::size_t Lq, std::size_t Lk, const FlashOptions& options) {
  auto tiling = [&](const auto& t) {
    return FlashTiling{t.block_q, t.block_k, t.mk.isa, t.mk.blockings->qk[t.qk].name, t.mk.blockings->pv[t.pv].name};
  };
  if (options.precision == FlashPrecision::bfloat16) {  // its own products, one blocking
    const TiledKernels<float> t = bf16_tiles(Lq, Lk, options);
    const Bf16Kernels& kernels = flash::bf16_kernels_for(options.isa);
    return {t.block_q, t.block_k, kernels.isa, kernels.blocking, kernels.blocking};
  }
  return options.precision == FlashPrecision::float32 ? tiling(tiled_kernels<float>(Lq, Lk, options))
                                                      : tiling(tiled_kernels<double>(Lq, Lk, options));
}

FlashBlockings flash_blockings(const std::string& isa) {
  const Microkernels<float>& mk = flash::microkernels_for<float>(isa);
  FlashBlockings offered{mk.isa, {}, {}, kDefaultBlockQ};
  for (const auto& b : mk.blockings->qk) offered.qk.push_back(b.name);
  for (const auto& b : mk.blockings->pv) offered.pv.push_back(b.name);
  return offered;
}

void set_flash_tuning(const FlashTuning& tuning) {
  const Microkernels<float>& best = flash::best_microkernels<float>();
  TunedChoice choice{tuning, flash::qk_blocking_index(best, tuning.qk_kernel),
                     flash::pv_blocking_index(best, tuning.pv_kernel), tuning.block_q};
  if (tuning.block_q > 65536)
    throw InputError("block_q: expected at most 65536, got " + std::to_string(tuning.block_q));
  TuningSlot& slot = TuningSlot::get();
  std::lock_guard hold(slot.lock);
  slot.current.store(&slot.made.emplace_back(std::move(choice)), std::memory_order_release);
}

FlashTuning flash_tuning() {
  const TunedChoice* tuned = TuningSlot::get().current.load(std::memory_order_acquire);
  return tuned ? tuned->named : FlashTuning{};
}

std::vector<FlashTile> flash_tiles(std::size_t Lq, std::size_t Lk, const FlashOptions& options, const Mask2* allowed) {
  if (allowed && (allowed->shape(0) != Lq || allowed->shape(1) != Lk))
    throw InputError("flash tiles: the mask is " + shape_string(allowed->shape()) + ", the scores [" + std::to_string(Lq) +
                     ", " + std::to_string(Lk) + "]");
  const FlashTiling t = flash_tiling(Lq, Lk, options);
  std::vector<FlashTile> tiles;
  for (std::size_t i0 = 0; i0 < Lq; i0 += t.block_q) {
    const std::size_t rows = std::min(t.block_q, Lq - i0);
    // The same index tests as attend_query_block: tiles past key_end are never read.
    const std::size_t key_end =
        options.causal ? std::size_t(tile::causal_key_end(long(i0 + rows), long(Lq), long(Lk))) : Lk;
    for (std::size_t j0 = 0; j0 < Lk; j0 += t.block_k) {
      const std::size_t cols = std::min(t.block_k, Lk - j0);
      FlashTile::Kind kind = FlashTile::Kind::full;
      if (j0 >= key_end) {
        kind = FlashTile::Kind::skipped;
      } else if (options.causal &&
                 !tile::causal_tile_full(long(i0), long(j0 + std::min(cols, key_end - j0)), long(Lq), long(Lk))) {
        kind = FlashTile::Kind::diagonal;
      }
      if (allowed && kind != FlashTile::Kind::skipped) {  // the block mask, over the keys the tile reads
        const tile::MaskCover cover = tile::mask_cover(allowed->data(), Lk, i0, rows, j0, std::min(cols, key_end - j0));
        if (cover == tile::MaskCover::none) kind = FlashTile::Kind::skipped;
        if (cover == tile::MaskCover::some) kind = FlashTile::Kind::diagonal;
      }
      tiles.push_back({i0, rows, j0, cols, kind});
    }
  }
  return tiles;
}

std::size_t flash_default_block_q() { return kDefaultBlockQ; }
std::size_t flash_default_block_k() { return kDefaultBlockK; }
std::string flash_isa() { return flash::best_microkernels<float>().isa; }
std::string flash_bf16_isa() { return flash::bf16_kernels_for("").isa; }

std::size_t flash_scratch_bytes() {
  return flash::ScratchStock<float>::get().bytes() + flash::ScratchStock<double>::get().bytes() +
         flash::ScratchStock<std::uint16_t>::get().bytes();
}

void flash_release_scratch() {
  flash::ScratchStock<float>::get().release();
  flash::ScratchStock<double>::get().release();
  flash::ScratchStock<std::uint16_t>::get().release();
}

namespace {

// The problem's sizes, tiles and options (Problem above), and `prod` with the float kernels at
// the blockings those tiles are cut for; InputError for a tile past the limit.
template <class T, class Products>
Problem<T> tiled_problem(const std::array<std::size_t, 6>& dims, const Mask3* allowed, const FlashOptions& options,
                         double scale, Products& prod) {
  Problem<T> p{};
  p.H = dims[0], p.Lq = dims[1], p.d = dims[2], p.Hkv = dims[3], p.Lk = dims[4], p.dv = dims[5];
  p.group = p.H / p.Hkv;
  // Tiles no larger than the problem: a 3-token sentence should not pay for 192 x 768 tiles.
  if constexpr (Products::kBf16) {
    const TiledKernels<float> tiled = bf16_tiles(p.Lq, p.Lk, options);
    p.dvp = round_up(p.dv, Bf16Kernels::kColumns), p.row_align = Bf16Kernels::kRows;
    p.Bq = tiled.block_q, p.Bk = tiled.block_k;
  } else {
    const TiledKernels<T> tiled = tiled_kernels<T>(p.Lq, p.Lk, options);
    p.dvp = round_up(p.dv, tiled.mk.lanes), p.row_align = std::lcm(tiled.mk.qk_rows, tiled.mk.pv_rows);
    p.Bq = tiled.block_q, p.Bk = tiled.block_k;
    p.v_panel = flash::tiled::packed_v_panel(p.dvp, tiled.mk.pv_columns, round_up(p.Bq, p.row_align), tiled.mk.pv_rows);
    prod.mk = tiled.mk;
  }
  // A tile of scores is the kernel's only O(block^2) memory; refuse tiles that defeat the
  // point (and could exhaust memory) rather than allocate them.
  constexpr std::size_t kMaxTileElements = std::size_t(1) << 24;  // 64 MiB of float scores
  if (round_up(p.Bq, p.row_align) * p.Bk > kMaxTileElements) {
    throw InputError("block_size: a " + std::to_string(p.Bq) + " x " + std::to_string(p.Bk) +
                     " tile is larger than the kernel allows (" + std::to_string(kMaxTileElements) +
                     " scores); use smaller tiles");
  }
  p.scale_log2 = T(scale * tile::kLog2ed);
  p.causal = options.causal;
  p.allowed = allowed;
  p.score_mod = options.score_mod && options.score_mod->any() ? options.score_mod : nullptr;
  p.temperature = options.temperature;
  p.rule = options.mask_rule && options.mask_rule->any() ? options.mask_rule : nullptr;
  return p;
}

// The whole forward pass for element type T (float: fast; double: reference-grade) on the
// products `prod` (NativeProducts or Bf16Products), which hold the inputs:
// q [H, Lq, d], k [Hkv, Lk, d], v [Hkv, Lk, dv] row-major; out [H, Lq, dv], lse [H, Lq].
template <class T, class Products>
void flash_forward(Products prod, const std::array<std::size_t, 6>& dims, const Mask3* allowed,
                   const FlashOptions& options, double scale, T* out, T* lse) {
  if constexpr (!Products::kBf16) {
    const std::size_t Lq = dims[1], Lk = dims[4];
    if (!options.observer && !options.score_mod && !options.mask_rule &&
        flash::decode_path_applies(Lq, Lk, options.block_q, options.block_k)) {  // one query vs a cache
      flash::flash_decode(prod.mk, {dims[0], Lq, dims[2], dims[3], Lk, dims[5], scale, options.causal, allowed,
                                    options.threads, tuning_of(options)},
                          prod.q, prod.k, prod.v, out, lse);
      return;
    }
  }
  const Problem<T> p = tiled_problem<T, Products>(dims, allowed, options, scale, prod);

  // Work items: (head, query block), head-major so the packed K/V of few heads are live at a
  // time. Within a head, causal blocks differ in cost (block b reads b + 1 key blocks), so the
  // most expensive come first and the cheap ones fill the gaps at the end.
  const std::size_t nqb = (p.Lq + p.Bq - 1) / p.Bq;
  std::vector<std::pair<std::size_t, std::size_t>> items;
  for (std::size_t h = 0; h < p.H; ++h)
    for (std::size_t b = 0; b < nqb; ++b) items.emplace_back(h, p.causal ? nqb - 1 - b : b);
  std::unique_ptr<PackedHead<T>[]> packed(new PackedHead<T>[p.Hkv]);
  for (std::size_t g = 0; g < p.Hkv; ++g) packed[g].blocks_left = p.group * nqb;

  // Small prefill: waking a second thread costs more than it saves below prefill_thread_work
  // multiply-adds a thread (Q K^T and P V: d + dv per score; causal visits about half).
  const double work = double(p.H) * double(p.Lq) * double(p.Lk) * double(p.d + p.dv) * (p.causal ? 0.5 : 1.0);
  const std::size_t threads =
      threads_for_work(options.threads, items.size(), work, tuning_of(options).prefill_thread_work);
  // Workspaces are allocated here, so that running out of memory is an exception in the
  // caller's thread; what a worker throws (packing allocates too) is rethrown after the join.
  std::vector<Workspace<T>> workspaces;
  for (std::size_t t = 0; t < threads; ++t) workspaces.emplace_back(p, Products::kBf16, prod.mk.lanes);
  const std::size_t piece = prod.piece_keys(), pieces = (p.Lk + piece - 1) / piece;  // of a head's packing
  detail::parallel_items(items.size(), threads, [&](std::size_t worker, std::size_t n) {
    const auto [h, b] = items[n];
    const std::size_t g = h / p.group;
    PackedHead<T>& kv = packed[g];
    kv.ensure_packed(pieces, [&] { prod.allocate(p, g, kv); },
                     [&](std::size_t i) { prod.pack(p, g, kv, i * piece, std::min(p.Lk, (i + 1) * piece)); });
    if (options.observer) {
      attend_query_block<T, true>(prod, p, h, b * p.Bq, kv, out + h * p.Lq * p.dv, lse + h * p.Lq,
                                  workspaces[worker], options.observer);
    } else {
      attend_query_block<T, false>(prod, p, h, b * p.Bq, kv, out + h * p.Lq * p.dv, lse + h * p.Lq,
                                   workspaces[worker], nullptr);
    }
    if (--kv.blocks_left == 0) kv.release();
  });
}

void check_flash_inputs(const Shape& q, const Shape& k, const Shape& v, const Mask3* allowed,
                        const FlashOptions& options, double scale) {
  check_head_shapes(q, k, v, allowed);
  if (!std::isfinite(scale)) throw InputError("scale: expected a finite number");
  for (std::size_t b : {options.block_q, options.block_k})
    if (b > 65536) throw InputError("block_size: expected at most 65536, got " + std::to_string(b));
}


template <class Q, class K, class V>
std::array<std::size_t, 6> dims_of(const Q& q, const K& k, const V& v) {
  return {q.shape(0), q.shape(1), q.shape(2), k.shape(0), k.shape(1), v.shape(2)};
}

}  // namespace

FlashResult flash_attention(const Tensor3& q, const Tensor3& k, const Tensor3& v,
                            const Mask3* allowed, const FlashOptions& options) {
  const double scale = resolved_scale(options.scale, q.shape(2));
  check_flash_inputs(shape_of(q), shape_of(k), shape_of(v), allowed, options, scale);
  const auto dims = dims_of(q, k, v);
  FlashResult r{Tensor3::from_shape({dims[0], dims[1], dims[5]}), Tensor2::from_shape({dims[0], dims[1]}), {}};
  if (options.precision == FlashPrecision::float32) {
    const NativeProducts<float> prod{kernels_for<float>(options), q.data(), k.data(), v.data()};
    flash_forward<float>(prod, dims, allowed, options, scale, r.output.data(), r.lse.data());
    return r;
  }
  if (options.precision == FlashPrecision::bfloat16) {  // the inputs rounded once, here
    const Bf16Tensor3 qb = to_bf16(q), kb = to_bf16(k), vb = to_bf16(v);
    const Bf16Products prod{kernels_for<float>(options), flash::bf16_kernels_for(options.isa), qb.bits.data(),
                            kb.bits.data(), vb.bits.data()};
    flash_forward<float>(prod, dims, allowed, options, scale, r.output.data(), r.lse.data());
    return r;
  }
  detail::FlashF64 f = detail::flash_f64(xt::cast<double>(q), xt::cast<double>(k), xt::cast<double>(v),
                                         allowed, options);
  detail::check_lse_fits_float32(f.lse);
  r.output = xt::cast<float>(f.output);
  r.lse = xt::cast<float>(f.lse);
  r.lse64 = std::move(f.lse);
  return r;
}

// FlashTileParts: the first tile of an [n, n] run as a problem of one head whose queries are
// the tile's rows and whose keys are the run's n (so that the tiles, blockings and V's panel
// stride are the run's); only the tile's keys exist, and only they are packed and read.
struct FlashTileParts::Impl {
  Tensor3 q, k, v;
  NativeProducts<float> prod;
  Problem<float> p;
  std::size_t rows, keys, rows_pad;
  PackedHead<float> kv;
  std::unique_ptr<Workspace<float>> ws;
  bool lane_max = false;  // scores() left each row's maxima per lane (plain_group)

  Impl(std::size_t n, std::size_t d, const FlashOptions& options)
      : prod{kernels_for<float>(options), nullptr, nullptr, nullptr} {
    if (n == 0 || d == 0) throw InputError("flash tile parts: n and the head dim must be at least 1");
    if (options.precision != FlashPrecision::float32 || options.causal || options.score_mod || options.mask_rule ||
        options.observer)
      throw InputError("flash tile parts: a float32 tile without a causal mask, a variant or an observer only");
    for (std::size_t b : {options.block_q, options.block_k})
      if (b > 65536) throw InputError("block_size: expected at most 65536, got " + std::to_string(b));
    FlashOptions o;  // the run's tiles, ISA and blockings; float32, no mask, no modifier
    o.isa = options.isa, o.block_q = options.block_q, o.block_k = options.block_k;
    o.qk_kernel = options.qk_kernel, o.pv_kernel = options.pv_kernel;
    rows = tiled_kernels<float>(n, n, o).block_q;
    Rng rng(7);
    auto seeded = [&](std::size_t count) {
      Tensor3 t = Tensor3::from_shape({1, count, d});
      for (float& x : t) x = float(rng.normal());
      return t;
    };
    p = tiled_problem<float, NativeProducts<float>>({1, rows, d, 1, n, d}, nullptr, o, resolved_scale(std::nullopt, d),
                                                    prod);
    keys = std::min(p.Bk, n);
    q = seeded(rows), k = seeded(keys), v = seeded(keys);  // Lk = n sets V's panel stride; keys rows are read
    prod.q = q.data(), prod.k = k.data(), prod.v = v.data();
    rows_pad = round_up(rows, p.row_align);
    ws = std::make_unique<Workspace<float>>(p, false, prod.mk.lanes);
    prod.allocate(p, 0, kv);
    prod.pack(p, 0, kv, 0, keys);
  }
};

FlashTileParts::FlashTileParts(std::size_t n, std::size_t head_dim, const FlashOptions& options)
    : impl_(std::make_unique<Impl>(n, head_dim, options)) {
  restart();
}
FlashTileParts::~FlashTileParts() = default;
std::size_t FlashTileParts::rows() const { return impl_->rows; }
std::size_t FlashTileParts::keys() const { return impl_->keys; }
const Tensor3& FlashTileParts::q() const { return impl_->q; }
const Tensor3& FlashTileParts::k() const { return impl_->k; }
const Tensor3& FlashTileParts::v() const { return impl_->v; }

void FlashTileParts::restart() {
  Impl& t = *impl_;
  start_query_block(t.prod, t.p, 0, 0, t.rows, t.rows_pad, *t.ws);
}

void FlashTileParts::scores() {
  Impl& t = *impl_;
  const bool plain = plain_group(t.p, t.prod.mk, false, tile::MaskCover::all, tile::MaskCover::all, t.keys);
  t.lane_max = t.prod.scores(t.p, *t.ws, t.kv, 0, t.rows_pad, 0, t.keys, plain);
}

void FlashTileParts::softmax() {
  Impl& t = *impl_;
  Workspace<float>& ws = *t.ws;
  for (std::size_t r = 0; r < t.rows; ++r)
    ws.alpha[r] = flash::online_row_step(t.prod.mk, ws.rows[r], ws.s.data() + r * t.p.Bk, t.keys, t.keys,
                                         t.lane_max ? ws.lane_max.data() + r * t.prod.mk.lanes : nullptr);
}

void FlashTileParts::accumulate() {
  Impl& t = *impl_;
  t.prod.accumulate(t.p, *t.ws, t.kv, 0, t.rows_pad, 0, t.keys);
}

std::vector<float> FlashTileParts::output() const {
  const Impl& t = *impl_;
  std::vector<float> out(t.rows * t.p.dv), lse(t.rows);
  write_block_output(t.p, *t.ws, 0, t.rows, out.data(), lse.data());
  return out;
}

FlashResult flash_decode_bf16(const Tensor3& q, const Bf16Tensor3& k, const Bf16Tensor3& v, const Mask3* allowed,
                              const FlashOptions& options) {
  const double scale = resolved_scale(options.scale, q.shape(2));
  const Shape ks{k.shape[0], k.shape[1], k.shape[2]}, vs{v.shape[0], v.shape[1], v.shape[2]};
  check_flash_inputs(shape_of(q), ks, vs, allowed, options, scale);
  if (k.bits.size() != ks[0] * ks[1] * ks[2] || v.bits.size() != vs[0] * vs[1] * vs[2])
    throw InputError("k, v: bfloat16 tensors hold " + std::to_string(k.bits.size()) + " and " +
                     std::to_string(v.bits.size()) + " values, not what their shapes say");
  const std::array<std::size_t, 6> dims{q.shape(0), q.shape(1), q.shape(2), ks[0], ks[1], vs[2]};
  FlashResult r{Tensor3::from_shape({dims[0], dims[1], dims[5]}), Tensor2::from_shape({dims[0], dims[1]}), {}};
  const flash::Microkernels<float>& mk = kernels_for<float>(options);
  flash::flash_decode(mk, {dims[0], dims[1], dims[2], dims[3], dims[4], dims[5], scale, options.causal, allowed,
                           options.threads, tuning_of(options)},
                      q.data(), k.bits.data(), v.bits.data(), r.output.data(), r.lse.data());
  return r;
}

namespace detail {

FlashF64 flash_f64(const TensorD3& q, const TensorD3& k, const TensorD3& v, const Mask3* allowed,
                   const FlashOptions& options) {
  const double scale = resolved_scale(options.scale, q.shape(2));
  check_flash_inputs(shape_of(q), shape_of(k), shape_of(v), allowed, options, scale);
  const auto dims = dims_of(q, k, v);
  FlashF64 r{TensorD3::from_shape({dims[0], dims[1], dims[5]}), TensorD2::from_shape({dims[0], dims[1]})};
  const NativeProducts<double> prod{kernels_for<double>(options), q.data(), k.data(), v.data()};
  flash_forward<double>(prod, dims, allowed, options, scale, r.output.data(), r.lse.data());
  return r;
}

}  // namespace detail
}  // namespace attn
