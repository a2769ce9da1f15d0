// The decode path of the flash kernel (flash_decode.hpp explains the split): one task per
// (key/value head, chunk of the cache), each streaming its K and V once, then an exact merge.
#include "flash_decode.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <type_traits>
#include <vector>

#include "attn/engine/attention/tile_math.hpp"
#include "aligned.hpp"
#include "online_row.hpp"
#include "platform/parallel.hpp"

namespace attn::flash {
namespace {

// Decode: up to this many query rows per head, against at least this many keys (shorter
// sequences are cheap either way, and keep the tiled kernel that the pictures explain).
constexpr std::size_t kMaxQueries = 8;
constexpr std::size_t kMinKeys = 256;
// Keys per inner block: the online softmax's step and P V's, whose V rows (128 x dv) stay in
// L1/L2 while every query row of the task meets them, so V comes from memory once.
constexpr std::size_t kBlockKeys = 128;
// One slice of the P V kernel, so that the prefill's prefetch of the next slice never runs here
// on top of this file's own (microkernels_impl.hpp).
static_assert(kBlockKeys <= kPvSliceKeys);
// While asking ahead (Stream, below), a run's scores and a block's P V go this many keys at a
// time (a block's V rows copied into the workspace: asked this many at a time), each step
// asking for its share of the bytes. A multiple of every ISA's W (<= 16) and QK_BT (2 or 4: a
// block of rows sums the last keys % QK_BT as scalars, qk_row_block): each key is a vector or a
// scalar sum as in a whole call, and a vector score's bits do not depend on the keys beside it,
// so the steps give the scores a whole call would, bit for bit.
constexpr std::size_t kStepKeys = 16;
// A task scores up to this many keys (a run) before it reads their V rows (stream_chunk); fewer
// where its rows would hold more than kRunScores scores, so that a run's scores stay in L2, but
// never fewer than a block (past 128 rows a run's scores are more). 2048: on a Zen 3 EPYC, runs
// of 512 or 8192 keys were no faster (docs/performance.md).
constexpr std::size_t kRunKeys = 2048, kRunScores = std::size_t(1) << 14;
static_assert(kRunKeys % kBlockKeys == 0);
// A chunk is at least this many keys, so a task's start-up and its merge stay small next to
// the bytes it streams (at d = 64, float32: 512 KiB of K and V).
constexpr std::size_t kMinChunkKeys = 1024;
// Chunks are cut so that there are this many tasks (KV heads x chunks) where the chunk length
// allows: enough for 16 threads, whatever the machine, since the chunks set the merge points
// and so the bits, and must not depend on the machine or its thread count.
constexpr std::size_t kTargetTasks = 16;

std::size_t round_up(std::size_t x, std::size_t m) { return (x + m - 1) / m * m; }

// Per task: the rows of every query head sharing one KV head (row r = head g*group + r / Lq,
// query r % Lq), padded to the micro-kernels' row blocking.
struct Rows {
  std::size_t count, padded, group;
};

// Asks rows [first, first + count) of a [*, width] array into L2 (a read hint, never a fault).
// Always inlined: GCC 12 counts a function whose only effect is prefetches as free of side
// effects (its pure-const pass) and deletes the calls to it it has not inlined, which is what
// became of the float32 near prefetch while it was a lambda of its own.
template <class KV>
[[gnu::always_inline]] inline void ask_rows(const KV* rows, std::size_t first, std::size_t count, std::size_t width) {
  const char* b = reinterpret_cast<const char*>(rows + first * width);
  for (std::size_t off = 0; off < count * width * sizeof(KV); off += 64) __builtin_prefetch(b + off, 0, 2);
}

template <class T>
struct Workspace {
  Aligned<T> q, v_block, s, o, alpha;  // s: the scores of a run, [rows, run keys]
  Aligned<T> ones;                     // the rescale of a block's later P V steps: none
  std::vector<tile::RowState<T>> rows;
};

// A task's result: each row's (m, l) and its unnormalised O [rows, dv].
template <class T>
struct Partial {
  std::vector<tile::RowState<T>> rows;
  std::vector<T> o;
};

// The online softmax over one block's scores (s: its first key's, rows lds apart), row by row
// (causal and masked keys out), each row's rescale of its earlier output left in ws.alpha.
template <class T>
void block_softmax(const Microkernels<T>& mk, const DecodeProblem& p, const Rows& rows, std::size_t g,
                   std::size_t jb, std::size_t nb, T* s, std::size_t lds, Workspace<T>& ws) {
  for (std::size_t r = 0; r < rows.count; ++r) {
    const std::size_t h = g * rows.group + r / p.Lq, i = r % p.Lq;
    T* sr = s + r * lds;
    // Causal (bottom-right): row i sees a prefix of the block.
    const long end = p.causal ? tile::causal_key_end(long(i) + 1, long(p.Lq), long(p.Lk)) : long(p.Lk);
    const std::size_t n = std::size_t(std::clamp(end - long(jb), 0L, long(nb)));
    if (p.allowed) {
      const bool* m = p.allowed->data() + ((p.allowed->shape(0) == 1 ? 0 : h) * p.Lq + i) * p.Lk + jb;
      for (std::size_t j = 0; j < n; ++j)
        if (!m[j]) sr[j] = -T(INFINITY);
    }
    ws.alpha[r] = online_row_step(mk, ws.rows[r], sr, n, nb);
  }
}

// What a run reads in place (K and V of one KV head, from key 0), and its asks for rows before
// they are read, into L2 (DecodeTuning): `ahead` blocks of kBlockKeys past the rows being read
// (0: never, the hardware prefetcher alone), K's while scores are computed and V's while P V
// runs; for a float cache also `near` keys past them (a bfloat16 cache asks inside its kernels:
// NearPrefetch). Asks stop at the run's end: the next run's K rows are read only after this
// run's V, and its V rows after its K. Either spreads its asks over steps of kStepKeys keys,
// each asking for as many rows as it reads: asked all at once, 32 KiB of V and of K a block (as
// an earlier order did), they overflowed the core's queue of misses (a 64 MiB decode step ran
// at 0.52-0.58 of a streaming read on 1 thread on a Zen 3 EPYC). Without asks, a run's scores
// are one call and a block's P V another.
template <class KV>
struct Stream {
  const KV* k;
  const KV* v;
  std::size_t end;    // the run's end
  std::size_t ahead;  // DecodeTuning::prefetch_blocks
  std::size_t near;   // DecodeTuning::f32_near_keys for a float cache, else 0

  // Keys per call over n keys: kStepKeys while it asks, else all n at once.
  std::size_t step(std::size_t n) const { return ahead || near ? kStepKeys : n; }
  // Asks for the rows both distances past the n rows from row j of `rows` (k or v, `width`
  // wide), those of them before the run's end. Always inlined, as ask_rows is.
  [[gnu::always_inline]] void ask(const KV* rows, std::size_t j, std::size_t n, std::size_t width) const {
    for (const std::size_t dist : {ahead * kBlockKeys, near})
      if (const std::size_t ja = j + dist; dist && ja < end) ask_rows(rows, ja, std::min(n, end - ja), width);
  }
};

// The scores of the n keys from key j0 into s: [rows.count, n], rows lds apart.
template <class T, class KV>
void score_run(const Microkernels<T>& mk, const DecodeProblem& p, const Rows& rows, const Stream<KV>& st,
               std::size_t j0, std::size_t n, T* s, std::size_t lds, const T* q) {
  const std::size_t step = st.step(n);
  for (std::size_t s0 = 0; s0 < n; s0 += step) {
    const std::size_t j = j0 + s0, m = std::min(step, n - s0);
    st.ask(st.k, j, m, p.d);
    if constexpr (!std::is_same_v<T, KV>)  // bfloat16 widened in registers
      mk.qk_unpacked_bf16(q, rows.count, p.d, st.k + j * p.d, p.d, m, s + s0, lds, {p.tuning.bf16_near_keys, st.end - j});
    else
      mk.qk_unpacked(q, rows.count, p.d, st.k + j * p.d, p.d, m, s + s0, lds);
  }
}

// P V over the nb keys of the block at jb (s: their weights, rows lds apart), for the task's
// rows only (padding rows would be FMAs on zeros). V rows whose length is a whole number of
// registers are read in place (bfloat16 widened in registers); others are first copied or
// widened into the padded rows of the L1-sized workspace (asked ahead 16 rows at a time as they
// are copied). Read in place while it asks, P V goes in steps that rescale by alpha in the
// first and by 1 after: the same bits as one call.
template <class T, class KV>
void pv_block(const Microkernels<T>& mk, const DecodeProblem& p, const Rows& rows, const Stream<KV>& st,
              std::size_t jb, std::size_t nb, const T* s, std::size_t lds, Workspace<T>& ws) {
  const std::size_t dv = p.dv, dvp = round_up(dv, mk.lanes);
  const KV* vrows = st.v + jb * dv;
  if (dv != dvp) {
    for (std::size_t j = 0; j < nb; ++j) {
      if (j % kStepKeys == 0) st.ask(st.v, jb + j, std::min(kStepKeys, nb - j), dv);
      if constexpr (std::is_same_v<T, KV>) std::copy(vrows + j * dv, vrows + (j + 1) * dv, ws.v_block.data() + j * dvp);
      else mk.widen_bf16(vrows + j * dv, dv, ws.v_block.data() + j * dvp);
    }
    mk.pv(s, lds, rows.count, nb, ws.v_block.data(), dvp, dvp, ws.alpha.data(), ws.o.data(), dvp);
    return;
  }
  for (std::size_t s0 = 0, step = st.step(nb); s0 < nb; s0 += step) {
    const std::size_t j = jb + s0, n = std::min(step, nb - s0);
    const T* alpha = (s0 == 0 ? ws.alpha : ws.ones).data();
    st.ask(st.v, j, n, dv);
    if constexpr (!std::is_same_v<T, KV>)
      mk.pv_bf16(s + s0, lds, rows.count, n, vrows + s0 * dv, dv, dvp, alpha, ws.o.data(), dvp,
                 {p.tuning.bf16_near_keys, st.end - j});
    else
      mk.pv(s + s0, lds, rows.count, n, vrows + s0 * dv, dv, dvp, alpha, ws.o.data(), dvp);
  }
}

// One task: the task's rows against keys [j0, j1) of KV head g. KV is T or std::uint16_t,
// bfloat16 bits; either way K and V are read in place. The keys go in runs of run_keys: all of
// a run's scores first, reading only K, then block by block its online softmax and P V, reading
// only V. So each of K and V is read in long stretches, as a streaming read goes, and no read
// waits on arithmetic that waits on the reads before it (P V needs only scores computed
// earlier). Where K and V took turns every block, on a Zen 3 EPYC, a 64 MiB decode step read
// at 0.87-0.94 of a streaming read of the same bytes on 1 thread, 0.90-0.97 in runs (bench
// --mode decode, 11 alternated pairs). The blocks' sums are those of the plain order (a
// block's scores, its softmax, its P V), so the bits are too.
template <class T, class KV>
void stream_chunk(const Microkernels<T>& mk, const DecodeProblem& p, const Rows& rows, std::size_t g,
                  std::size_t j0, std::size_t j1, std::size_t run_keys, const T* q, const KV* k, const KV* v,
                  Workspace<T>& ws, Partial<T>& part) {
  const std::size_t d = p.d, dv = p.dv, dvp = round_up(dv, mk.lanes);
  const T scale_log2 = T(p.scale * tile::kLog2ed);  // scores in base-2 units (tile_math.hpp)
  std::fill(ws.q.begin(), ws.q.end(), T(0));
  for (std::size_t r = 0; r < rows.count; ++r) {
    const T* qr = q + ((g * rows.group + r / p.Lq) * p.Lq + r % p.Lq) * d;
    for (std::size_t c = 0; c < d; ++c) ws.q[r * d + c] = qr[c] * scale_log2;
  }
  std::fill(ws.o.begin(), ws.o.end(), T(0));
  std::fill(ws.alpha.begin(), ws.alpha.end(), T(1));
  std::fill(ws.rows.begin(), ws.rows.end(), tile::row_start<T>());
  const std::size_t near = std::is_same_v<T, KV> ? p.tuning.f32_near_keys : 0;
  T* s = ws.s.data();
  for (std::size_t jr = j0; jr < j1; jr += run_keys) {
    const std::size_t jr1 = std::min(j1, jr + run_keys);
    const Stream<KV> st{k, v, jr1, p.tuning.prefetch_blocks, near};
    score_run(mk, p, rows, st, jr, jr1 - jr, s, run_keys, ws.q.data());
    for (std::size_t jb = jr; jb < jr1; jb += kBlockKeys) {
      const std::size_t nb = std::min(kBlockKeys, jr1 - jb);
      block_softmax(mk, p, rows, g, jb, nb, s + (jb - jr), run_keys, ws);
      pv_block(mk, p, rows, st, jb, nb, s + (jb - jr), run_keys, ws);
    }
  }
  part.rows.assign(ws.rows.begin(), ws.rows.begin() + long(rows.count));
  part.o.resize(rows.count * dv);
  for (std::size_t r = 0; r < rows.count; ++r)
    std::copy(ws.o.data() + r * dvp, ws.o.data() + r * dvp + dv, part.o.data() + r * dv);
}

}  // namespace

bool decode_path_applies(std::size_t Lq, std::size_t Lk, std::size_t block_q, std::size_t block_k) {
  return Lq >= 1 && Lq <= kMaxQueries && Lk >= kMinKeys && block_q == 0 && block_k == 0;
}

DecodeSplit decode_split(std::size_t Hkv, std::size_t Lk, std::size_t rows_per_task, std::size_t threads,
                         std::size_t min_thread_work) {
  // Enough tasks for 16 threads (so that a slow one does not hold up the rest), but never
  // chunks shorter than kMinChunkKeys.
  const std::size_t max_chunks = std::max<std::size_t>(1, Lk / kMinChunkKeys);
  const std::size_t chunks = std::clamp<std::size_t>((kTargetTasks + Hkv - 1) / Hkv, 1, max_chunks);
  const std::size_t chunk_keys = round_up((Lk + chunks - 1) / chunks, kBlockKeys);
  const std::size_t real_chunks = (Lk + chunk_keys - 1) / chunk_keys;
  // Waking a thread and handing it work costs microseconds: each must have at least
  // min_thread_work (key, query row) pairs, so a second thread never slows a small cache down.
  const double work = double(Hkv) * double(Lk) * double(std::max<std::size_t>(1, rows_per_task));
  return {chunk_keys, real_chunks, threads_for_work(threads, Hkv * real_chunks, work, min_thread_work)};
}

template <class T, class KV>
void flash_decode(const Microkernels<T>& mk, const DecodeProblem& p, const T* q, const KV* k, const KV* v,
                  T* out, T* lse) {
  const std::size_t group = p.H / p.Hkv, row_align = std::lcm(mk.qk_rows, mk.pv_rows);
  const Rows rows{group * p.Lq, round_up(group * p.Lq, row_align), group};
  const DecodeSplit split = decode_split(p.Hkv, p.Lk, rows.count, p.threads, p.tuning.decode_thread_work);
  const std::size_t dvp = round_up(p.dv, mk.lanes);
  // Keys per run: up to kRunKeys, fewer where the task's rows' scores would outgrow kRunScores,
  // at least a block.
  const std::size_t run_keys =
      std::clamp(kRunScores / rows.count / kBlockKeys * kBlockKeys, kBlockKeys, kRunKeys);

  std::vector<Workspace<T>> workspaces(split.threads);
  for (Workspace<T>& ws : workspaces) {
    ws.q.resize(rows.padded * p.d);
    ws.v_block.resize(kBlockKeys * dvp);
    ws.s.resize(rows.count * run_keys);
    ws.o.resize(rows.padded * dvp);
    ws.alpha.resize(rows.padded);
    ws.ones.assign(rows.padded, T(1));
    ws.rows.resize(rows.padded);
  }
  std::vector<Partial<T>> parts(p.Hkv * split.chunks);  // [KV head][chunk]
  detail::parallel_items(parts.size(), split.threads, [&](std::size_t worker, std::size_t n) {
    const std::size_t g = n / split.chunks, j0 = (n % split.chunks) * split.chunk_keys;
    stream_chunk(mk, p, rows, g, j0, std::min(p.Lk, j0 + split.chunk_keys), run_keys, q, k + g * p.Lk * p.d,
                 v + g * p.Lk * p.dv, workspaces[worker], parts[n]);
  });

  // The merge: per row, fold the chunks' partials into one (tile::row_merge), then O / l.
  std::vector<T> o(p.dv);
  for (std::size_t g = 0; g < p.Hkv; ++g)
    for (std::size_t r = 0; r < rows.count; ++r) {
      tile::RowState<T> st = tile::row_start<T>();
      std::fill(o.begin(), o.end(), T(0));
      for (std::size_t c = 0; c < split.chunks; ++c) {
        const Partial<T>& part = parts[g * split.chunks + c];
        const tile::MergeFactors<T> f = tile::row_merge(st, part.rows[r]);
        for (std::size_t x = 0; x < p.dv; ++x) o[x] = o[x] * f.a + part.o[r * p.dv + x] * f.b;
      }
      const std::size_t row = (g * group + r / p.Lq) * p.Lq + r % p.Lq;
      const T inv_l = tile::row_output_scale(st);
      for (std::size_t x = 0; x < p.dv; ++x) out[row * p.dv + x] = o[x] * inv_l;
      lse[row] = tile::row_lse(st);
    }
}

template void flash_decode(const Microkernels<float>&, const DecodeProblem&, const float*, const float*,
                           const float*, float*, float*);
template void flash_decode(const Microkernels<double>&, const DecodeProblem&, const double*, const double*,
                           const double*, double*, double*);
template void flash_decode(const Microkernels<float>&, const DecodeProblem&, const float*, const std::uint16_t*,
                           const std::uint16_t*, float*, float*);

}  // namespace attn::flash
