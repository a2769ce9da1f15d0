#pragma once
// Per-tile math of FlashAttention shared by the CPU kernel (src/flash/) and the CUDA kernel
// (src/cuda/): written once as __host__ __device__ code so the CPU tests exercise exactly what
// the GPU runs.
//
// Online softmax (Milakov & Gimelshein 2018, arXiv 1805.02867; FlashAttention, Dao et al. 2022,
// arXiv 2205.14135, Algorithm 1 lines 9-12). Each query row keeps two running values while the
// key tiles stream past:
//   m = the largest score seen so far            (running max)
//   l = sum over seen keys of exp(s_j - m)        (running sum, relative to the current m)
// and an unnormalised output O = sum_j exp(s_j - m) v_j. When a tile raises the max from m to
// m', everything accumulated so far was relative to the old max and is rescaled by
// exp(m - m'). After the last tile, O / l is the softmax-weighted average and m + log(l) is the
// row's log-sum-exp.
//
// The kernels work in base 2 (scores pre-multiplied by log2(e)), as FlashAttention-2 does:
// exp2 is cheaper than exp, and the lse converts back with one multiply.
#include <cmath>
#include <cstddef>

#if defined(__CUDACC__)
#define ATTN_HOST_DEVICE __host__ __device__
#else
#define ATTN_HOST_DEVICE
#endif

namespace attn::tile {

inline constexpr double kLog2ed = 1.4426950408889634;
inline constexpr double kLn2d = 0.6931471805599453;

// Causal masking by index, bottom-right aligned (mask.hpp): query i sees key j iff
// j <= i + (Lk - Lq). No mask is read: the kernels test indices.
ATTN_HOST_DEVICE inline bool causal_visible(long i, long j, long Lq, long Lk) {
  return j <= i + (Lk - Lq);
}

// One past the last key that any query row in [0, i_end) can see: key tiles from here on are
// entirely above the diagonal and are skipped without being read.
ATTN_HOST_DEVICE inline long causal_key_end(long i_end, long Lq, long Lk) {
  const long end = i_end + (Lk - Lq);
  return end < 0 ? 0 : (end > Lk ? Lk : end);
}

// True when every (i, j) with i in [i0, i1) and j in [j0, j1) is visible, i.e. the tile lies
// on or below the diagonal and needs no per-element test.
ATTN_HOST_DEVICE inline bool causal_tile_full(long i0, long j1, long Lq, long Lk) {
  return j1 - 1 <= i0 + (Lk - Lq);
}

// exp2 and log2 for both element types, on host and device.
ATTN_HOST_DEVICE inline float tile_exp2(float x) { return exp2f(x); }
ATTN_HOST_DEVICE inline double tile_exp2(double x) { return exp2(x); }
ATTN_HOST_DEVICE inline float tile_log2(float x) { return log2f(x); }
ATTN_HOST_DEVICE inline double tile_log2(double x) { return log2(x); }

// Running state of one query row (base-2 units: m is a max of log2(e)-scaled scores).
// T is the element type of the kernel: float, or double for reference-grade output.
template <class T>
struct RowState {
  T m;  // running max; -inf until a visible key has been seen
  T l;  // running sum of exp2(s - m)
};

template <class T = float>
ATTN_HOST_DEVICE inline RowState<T> row_start() { return {-T(INFINITY), T(0)}; }

// Lines 10-11 of Algorithm 1: the tile's row max arrives; returns the factor exp2(m - m') by
// which the old l and O must be scaled, and moves m to m' = max(m, tile_max).
//
// The -inf trap: while every key seen so far is masked, m == tile_max == -inf and
// m - m' = -inf - (-inf) = NaN. Nothing has been accumulated yet (l = 0, O = 0), so any finite
// factor is right; we return 1, and the caller's exp2(s - m') with m' = -inf is not computed
// (the row contributes nothing until a visible key arrives).
template <class T>
ATTN_HOST_DEVICE inline T row_rescale(RowState<T>& st, T tile_max) {
  const T m_new = st.m > tile_max ? st.m : tile_max;
  const T alpha = (m_new == -T(INFINITY)) ? T(1) : tile_exp2(st.m - m_new);
  st.m = m_new;
  st.l *= alpha;
  return alpha;
}

// Line 12 and the final step: the factor that turns the accumulated O into the output
// (1 / l), and the row's natural-log lse. A row that never saw a visible key (l == 0) gets
// output 0 and lse -inf: "attends to nothing", never NaN.
template <class T>
ATTN_HOST_DEVICE inline T row_output_scale(const RowState<T>& st) {
  return st.l > T(0) ? T(1) / st.l : T(0);
}

template <class T>
ATTN_HOST_DEVICE inline T row_lse(const RowState<T>& st) {
  return st.l > T(0) ? (st.m + tile_log2(st.l)) * T(kLn2d) : -T(INFINITY);
}

// Flash-Decoding's merge (Dao et al. 2023): two partial results of one row over disjoint key
// ranges, each an (m, l) with an unnormalised O relative to its own m, become one, exactly: the
// new max is the larger m, and each part's l and O are rescaled by exp2(m_part - m). Sets a to
// the merged state and returns the two factors by which the caller scales O_a and O_b before
// adding them. A part that saw only masked keys (m = -inf, l = 0, O = 0) gets factor 0, never
// exp2(-inf - (-inf)) = NaN; two such parts merge into one (output 0, lse -inf).
template <class T>
struct MergeFactors {
  T a, b;
};

template <class T>
ATTN_HOST_DEVICE inline MergeFactors<T> row_merge(RowState<T>& a, const RowState<T>& b) {
  const T m = a.m > b.m ? a.m : b.m;
  const MergeFactors<T> f{a.m == -T(INFINITY) ? T(0) : tile_exp2(a.m - m),
                          b.m == -T(INFINITY) ? T(0) : tile_exp2(b.m - m)};
  a.m = m;
  a.l = a.l * f.a + b.l * f.b;
  return f;
}

// A block mask (FlexAttention's): how a boolean mask [.., Lk] (true = visible) covers the tile
// of rows [i0, i0 + rows) and keys [j0, j0 + cols). `none` tiles are skipped unread, `all`
// tiles run without looking at the mask, `some` tiles test each score.
enum class MaskCover { none, some, all };

ATTN_HOST_DEVICE inline MaskCover mask_cover(const bool* mask, std::size_t Lk, std::size_t i0, std::size_t rows,
                                             std::size_t j0, std::size_t cols) {
  bool any = false, every = true;
  for (std::size_t i = i0; i < i0 + rows; ++i)
    for (std::size_t j = j0; j < j0 + cols; ++j) {
      any = any || mask[i * Lk + j];
      every = every && mask[i * Lk + j];
      if (any && !every) return MaskCover::some;
    }
  return any ? MaskCover::all : MaskCover::none;
}

// The cover of a tile under two masks at once: hidden by either, shown whole only by both.
ATTN_HOST_DEVICE inline MaskCover joined_cover(MaskCover a, MaskCover b) {
  if (a == MaskCover::none || b == MaskCover::none) return MaskCover::none;
  return a == MaskCover::all && b == MaskCover::all ? MaskCover::all : MaskCover::some;
}

}  // namespace attn::tile
