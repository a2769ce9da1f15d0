// FlashAttention forward on CUDA: the algorithm and the per-row arithmetic of the CPU kernel
// (include/attn/engine/attention/tile_math.hpp's online softmax, exercised by the CPU tests), in the
// FlashAttention-2 arrangement (Dao 2023, arXiv 2307.08691, Algorithm 1): one thread block per
// (block of query rows, head), each warp owning a group of query rows, and K and V streamed
// through shared memory one tile of keys at a time, so that no row ever needs another warp.
//
// Two kernels share that structure:
//   flash_f32_kernel  float32 on the CUDA cores, any head dim up to 256. A warp owns 8 query
//                     rows; for scores each lane takes one key of the tile, for P V each lane
//                     takes the output columns lane, lane + 32, ...
//   flash_tc_kernel   float16 or bfloat16 inputs on the tensor cores (mma.sync m16n8k16, float32
//                     accumulation), head dims 64 and 128. A warp owns 16 query rows (one m16
//                     tile); the score accumulators are re-packed in registers as the A operand
//                     of P V, as FlashAttention-2 does, so P never touches shared memory.
// Causal tiles above the diagonal are skipped by index (the key loop ends at the last key the
// block's last row sees); so are the tiles the mask variants' rules hide (variants::IndexRules,
// read by index, not as a bitmap: see "Kernel variants" below). Masks and fully masked rows
// behave as on the CPU: a row that sees no key gets output 0 and lse -inf. The score modifiers
// (soft-cap, ALiBi) are applied to each visible score before the online softmax, as sdpa.cpp
// orders them (score_mod_math.hpp), and the backward multiplies dS by their slope.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "attn/engine/attention/score_mod_math.hpp"
#include "attn/engine/attention/tile_math.hpp"
#include "flash_cuda.hpp"

namespace attn::cuda {
namespace {

constexpr unsigned kFullWarp = 0xffffffffu;

// Warp-wide max and sum over the lanes given by `width` (a power of two; xor shuffles).
__device__ inline float warp_max(float x, int width) {
  for (int off = width / 2; off > 0; off /= 2) x = fmaxf(x, __shfl_xor_sync(kFullWarp, x, off));
  return x;
}
__device__ inline float warp_sum(float x, int width) {
  for (int off = width / 2; off > 0; off /= 2) x += __shfl_xor_sync(kFullWarp, x, off);
  return x;
}

// Whether query row i may see key j: in range, causal by index, then the mask [mask_heads, Lq, Lk].
__device__ inline bool key_visible(int i, int j, int h, int Lq, int Lk, bool causal,
                                   const unsigned char* allowed, int mask_heads) {
  if (i >= Lq || j >= Lk) return false;
  if (causal && !tile::causal_visible(i, j, Lq, Lk)) return false;
  return !allowed || allowed[(size_t(mask_heads == 1 ? 0 : h) * Lq + i) * Lk + j] != 0;
}

// key_visible's fixed arguments and the mask variants' rules (variants/index_rules.hpp, none
// when rules.any() is false), for the kernels' pieces: vis(i, j, h).
struct Visibility {
  int Lq, Lk;
  bool causal;
  const unsigned char* allowed;
  int mask_heads;
  variants::IndexRules rules;
  __device__ bool operator()(int i, int j, int h) const {
    return key_visible(i, j, h, Lq, Lk, causal, allowed, mask_heads) && (!rules.any() || rules.visible(i, j, Lq, Lk));
  }
  // How the rules cover query rows [i0, i_end) against keys [j0, j_end) (both in range, not
  // empty): none = no score of it is visible (the kernels skip the tile), all = no rule hides one.
  __device__ tile::MaskCover rule_cover(int i0, int i_end, int j0, int j_end) const {
    return rules.any() ? rules.cover(i0, i_end - i0, j0, j_end - j0, Lq, Lk) : tile::MaskCover::all;
  }
};

// The score modifiers (flash_cuda.hpp's ScoreMods) as a kernel takes them, by value.
//
// Kernel variants: every kernel is compiled three times, as <MODS, RULES> = <false, false> (no
// variant: exactly the arithmetic, and the registers, it had before variants existed), <true,
// false> (score modifiers) and <true, true> (mask rules read by index, with or without
// modifiers: modifiers of cap 0 and slope 0 change a score by its rounding only). The rules'
// code and their by-value parameter are folded away where RULES is false. They cost registers:
// with the rules a run-time parameter of every kernel, the float16 kernel at d = 64 went from 116
// registers to 168 and ran at half its speed on an H100; compiled apart, only runs with rules
// pay (that kernel has 171).
struct KernelMods {
  float cap;            // soft-cap c; 0 = none
  const float* slopes;  // ALiBi [H] in device memory; null = none
  float to_raw;         // q.k -> x = scale * T * q.k, the score the modifiers take (sdpa.cpp's)
  float from_raw;       // mod(x) -> the kernel's units: log2(e) / T (forward), 1 / T (backward)
};

// One query head's share of them: its ALiBi slope (0: none).
struct HeadMods {
  float cap, slope, to_raw, from_raw;
};
__device__ __forceinline__ HeadMods head_mods(const KernelMods& m, int h) {
  return {m.cap, m.slopes ? m.slopes[h] : 0.0f, m.to_raw, m.from_raw};
}

// Query row i's position minus key j's: rows are bottom-right aligned (p = i + Lk - Lq).
__device__ __forceinline__ long alibi_distance(int i, int j, int Lq, int Lk) {
  return long(i) + long(Lk) - long(Lq) - long(j);
}

// A visible score q.k of query row i and key j in the kernel's units: q.k times `scale` (the
// temperature folded in; log2(e) too in the forward) without modifiers, and with them
// mod(scale T q.k) / T, the modifier on the score before the temperature as sdpa.cpp applies it.
template <bool MODS>
__device__ __forceinline__ float kernel_score(float dot, float scale, const HeadMods& hm, int i, int j, int Lq,
                                              int Lk) {
  if constexpr (MODS)
    return tile::modify_score(dot * hm.to_raw, hm.cap, hm.slope, alibi_distance(i, j, Lq, Lk)).score * hm.from_raw;
  else
    return dot * scale;
}

// ---------------------------------------------------------------------------------------------
// float32 kernel

constexpr int kF32Warps = 4;
constexpr int kF32RowsPerWarp = 8;
constexpr int kF32Br = kF32Warps * kF32RowsPerWarp;  // query rows per block
constexpr int kF32Bc = 32;                           // keys per tile: one per lane

std::size_t f32_shared_bytes(int d, int dv) {
  return sizeof(float) * (std::size_t(kF32Br) * d + std::size_t(kF32Bc) * (d + 1) +
                          std::size_t(kF32Bc) * dv + std::size_t(kF32Warps) * kF32RowsPerWarp * kF32Bc);
}

// DVT = output columns per lane (dv <= 32 * DVT), so each lane's accumulators are a fixed-size
// register array indexed by compile-time constants only. The pieces below are the kernel's steps
// in order, each inlined into it; the kernel's arithmetic and its order are theirs.

// The block's query rows [i0, i0 + kF32Br) of head h into q_tile [kF32Br][d]; rows past Lq are zeros.
__device__ __forceinline__ void f32_load_q(float* q_tile, const float* q, int h, int i0, int Lq, int d) {
  for (int x = threadIdx.x; x < kF32Br * d; x += blockDim.x) {
    const int i = i0 + x / d;
    q_tile[x] = i < Lq ? q[(size_t(h) * Lq + i) * d + x % d] : 0.0f;
  }
}

// Keys [j0, j0 + cols) of KV head g into k_tile [kF32Bc][d + 1] and v_tile [kF32Bc][dv]; the
// tile's rows past `cols` are zeros.
__device__ __forceinline__ void f32_load_kv(float* k_tile, float* v_tile, const float* k, const float* v, int g,
                                            int Lk, int d, int dv, int j0, int cols) {
  const int kd = d + 1;
  for (int x = threadIdx.x; x < kF32Bc * d; x += blockDim.x) {
    const int jj = x / d, c = x % d;
    k_tile[jj * kd + c] = jj < cols ? k[(size_t(g) * Lk + j0 + jj) * d + c] : 0.0f;
  }
  for (int x = threadIdx.x; x < kF32Bc * dv; x += blockDim.x) {
    const int jj = x / dv;
    v_tile[x] = jj < cols ? v[(size_t(g) * Lk + j0 + jj) * dv + x % dv] : 0.0f;
  }
}

// Scores: lane j scores key j0 + j (row j of k_tile) against the warp's rows, s[r] = q.k.
__device__ __forceinline__ void f32_scores(float (&s)[kF32RowsPerWarp], const float* q_tile, const float* k_tile,
                                           int warp, int lane, int d) {
  const int kd = d + 1;
#pragma unroll
  for (int r = 0; r < kF32RowsPerWarp; ++r) s[r] = 0.0f;
  for (int c = 0; c < d; ++c) {
    const float kc = k_tile[lane * kd + c];
#pragma unroll
    for (int r = 0; r < kF32RowsPerWarp; ++r) s[r] = fmaf(q_tile[(warp * kF32RowsPerWarp + r) * d + c], kc, s[r]);
  }
}

// Online softmax (Algorithm 1, lines 9-11): mask, scale (and modify) this lane's score of each
// row, the row max over the warp, the rescale factor alpha, and P into p_rows
// [kF32RowsPerWarp][kF32Bc].
template <bool MODS>
__device__ __forceinline__ void f32_softmax_tile(tile::RowState<float> (&st)[kF32RowsPerWarp],
                                                 float (&alpha)[kF32RowsPerWarp], const float (&s)[kF32RowsPerWarp],
                                                 float* p_rows, const Visibility& vis, const HeadMods& hm, int h,
                                                 int row0, int j0, int cols, int lane, float scale_log2) {
#pragma unroll
  for (int r = 0; r < kF32RowsPerWarp; ++r) {
    const bool visible = lane < cols && vis(row0 + r, j0 + lane, h);
    const float sr =
        visible ? kernel_score<MODS>(s[r], scale_log2, hm, row0 + r, j0 + lane, vis.Lq, vis.Lk) : -INFINITY;
    alpha[r] = tile::row_rescale(st[r], warp_max(sr, 32));
    const float p = st[r].m == -INFINITY ? 0.0f : exp2f(sr - st[r].m);
    st[r].l += p;  // this lane's share of the row sum; the shares are added at the end
    p_rows[r * kF32Bc + lane] = p;
  }
}

// Line 12: O = alpha O + P V, each lane its own output columns (lane, lane + 32, ...).
template <int DVT>
__device__ __forceinline__ void f32_accumulate_pv(float (&o)[kF32RowsPerWarp][DVT],
                                                  const float (&alpha)[kF32RowsPerWarp], const float* p_rows,
                                                  const float* v_tile, int cols, int dv, int lane) {
#pragma unroll
  for (int r = 0; r < kF32RowsPerWarp; ++r)
#pragma unroll
    for (int u = 0; u < DVT; ++u) o[r][u] *= alpha[r];
  for (int jj = 0; jj < cols; ++jj) {
    float vv[DVT];
#pragma unroll
    for (int u = 0; u < DVT; ++u) vv[u] = lane + 32 * u < dv ? v_tile[jj * dv + lane + 32 * u] : 0.0f;
#pragma unroll
    for (int r = 0; r < kF32RowsPerWarp; ++r) {
      const float p = p_rows[r * kF32Bc + jj];
#pragma unroll
      for (int u = 0; u < DVT; ++u) o[r][u] = fmaf(p, vv[u], o[r][u]);
    }
  }
}

// Lines 13-15: O / l and the lse of the warp's rows (the row sums' lane shares added first).
template <int DVT>
__device__ __forceinline__ void f32_write_rows(tile::RowState<float> (&st)[kF32RowsPerWarp],
                                               const float (&o)[kF32RowsPerWarp][DVT], float* out, float* lse,
                                               int h, int row0, int Lq, int dv, int lane) {
#pragma unroll
  for (int r = 0; r < kF32RowsPerWarp; ++r) {
    st[r].l = warp_sum(st[r].l, 32);
    const int i = row0 + r;
    if (i >= Lq) continue;
    const float inv_l = tile::row_output_scale(st[r]);
#pragma unroll
    for (int u = 0; u < DVT; ++u)
      if (lane + 32 * u < dv) out[(size_t(h) * Lq + i) * dv + lane + 32 * u] = o[r][u] * inv_l;
    if (lane == 0) lse[size_t(h) * Lq + i] = tile::row_lse(st[r]);
  }
}

template <bool MODS, bool RULES, int DVT>
__global__ void __launch_bounds__(kF32Warps * 32)
    flash_f32_kernel(const float* q, const float* k, const float* v, const unsigned char* allowed,
                     int mask_heads, variants::IndexRules rules, int H, int Hkv, int Lq, int Lk, int d, int dv,
                     bool causal, float scale_log2, KernelMods mods, float* out, float* lse) {
  extern __shared__ float f32_smem[];
  const int kd = d + 1;  // K rows padded by one float: the 32 lanes read 32 different banks
  float* q_tile = f32_smem;                   // [kF32Br][d]
  float* k_tile = q_tile + kF32Br * d;        // [kF32Bc][d + 1]
  float* v_tile = k_tile + kF32Bc * kd;       // [kF32Bc][dv]
  float* p_tile = v_tile + kF32Bc * dv;       // [kF32Warps][kF32RowsPerWarp][kF32Bc]
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int h = blockIdx.y, g = h / (H / Hkv);
  const int i0 = (gridDim.x - 1 - blockIdx.x) * kF32Br;  // last rows first: see flash_tc_kernel
  const int row0 = i0 + warp * kF32RowsPerWarp;  // this warp's first query row
  float* p_rows = p_tile + warp * kF32RowsPerWarp * kF32Bc;
  const Visibility vis{Lq, Lk, causal, allowed, mask_heads, RULES ? rules : variants::IndexRules{}};
  const HeadMods hm = MODS ? head_mods(mods, h) : HeadMods{};

  f32_load_q(q_tile, q, h, i0, Lq, d);
  float o[kF32RowsPerWarp][DVT];
  tile::RowState<float> st[kF32RowsPerWarp];
#pragma unroll
  for (int r = 0; r < kF32RowsPerWarp; ++r) {
    st[r] = tile::row_start<float>();
#pragma unroll
    for (int u = 0; u < DVT; ++u) o[r][u] = 0.0f;
  }

  const int rows_end = min(i0 + kF32Br, Lq);
  const int key_end = causal ? int(tile::causal_key_end(rows_end, Lq, Lk)) : Lk;
  for (int j0 = 0; j0 < key_end; j0 += kF32Bc) {
    const int cols = min(kF32Bc, key_end - j0);
    if (vis.rule_cover(i0, rows_end, j0, j0 + cols) == tile::MaskCover::none) continue;  // the whole block alike
    __syncthreads();  // the last tile is consumed by every warp (and q_tile is written)
    f32_load_kv(k_tile, v_tile, k, v, g, Lk, d, dv, j0, cols);
    __syncthreads();
    float s[kF32RowsPerWarp], alpha[kF32RowsPerWarp];
    f32_scores(s, q_tile, k_tile, warp, lane, d);
    f32_softmax_tile<MODS>(st, alpha, s, p_rows, vis, hm, h, row0, j0, cols, lane, scale_log2);
    __syncwarp();
    f32_accumulate_pv<DVT>(o, alpha, p_rows, v_tile, cols, dv, lane);
  }
  f32_write_rows<DVT>(st, o, out, lse, h, row0, Lq, dv, lane);
}

// ---------------------------------------------------------------------------------------------
// float16 / bfloat16 kernel on the tensor cores

// The element type's two tensor-core operations: two floats rounded into one 32-bit register
// (low half = first), and D = A B + D for m16n8k16 with float32 accumulators (PTX ISA,
// "Matrix fragments for mma.m16n8k16"). E is __half or __nv_bfloat16.
template <class E>
struct TensorCore {
  static constexpr bool kHalf = std::is_same_v<E, __half>;
  __device__ static uint32_t pack(float lo, float hi) {
    uint32_t u;
    if constexpr (kHalf) {
      const __half2 h = __floats2half2_rn(lo, hi);
      memcpy(&u, &h, sizeof u);
    } else {
      const __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
      memcpy(&u, &h, sizeof u);
    }
    return u;
  }
  __device__ static void mma(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
    if constexpr (kHalf)
      asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                   : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                   : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
    else
      asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                   : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                   : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
};

// Four 8x8 matrices of 16-bit elements from shared memory, one row address per lane (lanes
// 8m..8m+7 give matrix m's rows); lane l receives row l / 4, columns 2 (l % 4) and 2 (l % 4) + 1
// of each, or with .trans that element pair read down a column.
__device__ inline void ldmatrix_x4(uint32_t (&r)[4], const void* row) {
  const unsigned a = static_cast<unsigned>(__cvta_generic_to_shared(row));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(a));
}
__device__ inline void ldmatrix_x4_trans(uint32_t (&r)[4], const void* row) {
  const unsigned a = static_cast<unsigned>(__cvta_generic_to_shared(row));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(a));
}

// 16 bytes global -> shared without passing through registers (cp.async, sm_80); with
// `inside` false nothing is read and the 16 bytes are zero-filled.
__device__ inline void cp_async16(void* dst, const void* src, bool inside) {
  const unsigned a = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(a), "l"(src), "r"(inside ? 16 : 0));
}
__device__ inline void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int Pending>  // wait until at most `Pending` of this thread's newest groups are in flight
__device__ inline void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(Pending)); }

// The tensor-core kernel's shape: WARPS warps of 16 query rows each (16 WARPS rows per block)
// and BC keys per tile. Measured on an H100 (docs/performance.md, "CUDA"): 8 warps x 32 keys was fastest or
// within noise of it for d = 64 and 128, causal or not, n = 4096 and 16384, against 4 or 16 warps
// and 16, 64 or 128 keys (larger tiles need more registers and fit fewer blocks per SM).
constexpr int kTcWarps = 8;
constexpr int kTcKeys = 32;
// Row pitch in elements: 16 bytes of padding put the 8 rows one ldmatrix reads in 8 different
// groups of banks (a pitch of 128 bytes would put them all in the same four).
template <int D>
constexpr int kTcPitch = D + 8;

template <int D, int WARPS, int BC>
std::size_t tc_shared_bytes() { return 2 * std::size_t(16 * WARPS + 2 * BC) * kTcPitch<D>; }

// 2^x by the special-function unit (ex2.approx: relative error about 2^-22, far under the 2^-8 of
// rounding P to 16 bits); 2^-inf = 0.
__device__ inline float fast_exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

// Rows [row0, row0 + ROWS) of a [rows_total, D] matrix into a tile; rows past the end are zeros
// (so padded keys contribute 0 * 0 to P V, never NaN). Asynchronous: commit and wait.
template <class E, int D, int ROWS>
__device__ void load_tile_async(E* tile, const E* src, int row0, int rows_total) {
  constexpr int kChunks = D * int(sizeof(E)) / 16;  // 16-byte pieces per row
  for (int x = threadIdx.x; x < ROWS * kChunks; x += blockDim.x) {
    const int r = x / kChunks, c = x % kChunks;
    const bool inside = row0 + r < rows_total;
    cp_async16(tile + r * kTcPitch<D> + c * 8, inside ? src + size_t(row0 + r) * D + c * 8 : src, inside);
  }
}

// The tensor-core kernel's steps, in order, each inlined into it (its arithmetic and its order are
// theirs). A lane holds two rows of its warp's 16 (gid and gid + 8) and, per n8 score tile or
// output tile, the accumulator fragment's columns 2 tig and 2 tig + 1 of each.

// S = Q K^T for the warp's 16 rows and the tile's BC keys: K's rows are the columns of the B
// operand, read straight (no transpose).
template <class E, int D, int BC>
__device__ __forceinline__ void tc_scores(float (&s)[BC / 8][4], const uint32_t (&qf)[D / 16][4], const E* k_tile,
                                          int lane) {
  using TC = TensorCore<E>;
  constexpr int P = kTcPitch<D>;
#pragma unroll
  for (int nt = 0; nt < BC / 8; ++nt) s[nt][0] = s[nt][1] = s[nt][2] = s[nt][3] = 0.0f;
#pragma unroll
  for (int ks = 0; ks < D / 16; ++ks)
#pragma unroll
    for (int nb = 0; nb < BC / 16; ++nb) {
      uint32_t kb[4];  // keys 16 nb .. + 7 and + 8 .. + 15, d columns 16 ks .. + 15
      ldmatrix_x4(kb, k_tile + (nb * 16 + (lane / 16) * 8 + lane % 8) * P + ks * 16 + ((lane / 8) % 2) * 8);
      TC::mma(s[2 * nb], qf[ks], kb[0], kb[1]);
      TC::mma(s[2 * nb + 1], qf[ks], kb[2], kb[3]);
    }
}

// Mask, base-2 scale (and modifiers) and each row's max; a row's scores lie in the 4 lanes of
// its group.
// Keys are tested one by one only where some may be hidden: a mask, a tile the rules cover in
// part (rule_partial), the last partial tile, or a causal tile that crosses this warp's part of
// the diagonal.
template <bool MODS, int BC>
__device__ __forceinline__ void tc_mask_scale(float (&s)[BC / 8][4], float (&mx)[2], const Visibility& vis,
                                              const HeadMods& hm, const int (&rows)[2], int h, int warp_i0, int j0,
                                              bool rule_partial, int tig, float scale_log2) {
  const bool test_keys = vis.allowed || rule_partial || j0 + BC > vis.Lk ||
                         (vis.causal && !tile::causal_tile_full(warp_i0, j0 + BC, vis.Lq, vis.Lk));
  mx[0] = mx[1] = -INFINITY;
#pragma unroll
  for (int nt = 0; nt < BC / 8; ++nt)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int j = j0 + nt * 8 + tig * 2 + e % 2;
      const bool visible = !test_keys || vis(rows[e / 2], j, h);
      s[nt][e] = visible ? kernel_score<MODS>(s[nt][e], scale_log2, hm, rows[e / 2], j, vis.Lq, vis.Lk) : -INFINITY;
      mx[e / 2] = fmaxf(mx[e / 2], s[nt][e]);
    }
}

// Lines 10-11 of Algorithm 1 for the lane's two rows: the new max over the row's 4 lanes, and O
// rescaled by alpha.
template <int D>
__device__ __forceinline__ void tc_rescale(float (&o)[D / 8][4], tile::RowState<float> (&st)[2],
                                           const float (&mx)[2]) {
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const float alpha = tile::row_rescale(st[r], warp_max(mx[r], 4));
#pragma unroll
    for (int dt = 0; dt < D / 8; ++dt) {
      o[dt][2 * r] *= alpha;
      o[dt][2 * r + 1] *= alpha;
    }
  }
}

// P = exp2(S - m) in float32 for l, rounded to E for P V. Two adjacent n8 score tiles are
// laid out exactly as one k16 A fragment, so P goes from accumulators to operand in place.
template <class E, int BC>
__device__ __forceinline__ void tc_probabilities(uint32_t (&pf)[BC / 16][4], float (&s)[BC / 8][4],
                                                 tile::RowState<float> (&st)[2]) {
  using TC = TensorCore<E>;
#pragma unroll
  for (int nt = 0; nt < BC / 8; ++nt)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const tile::RowState<float>& row = st[e / 2];
      s[nt][e] = row.m == -INFINITY ? 0.0f : fast_exp2(s[nt][e] - row.m);
      st[e / 2].l += s[nt][e];
    }
#pragma unroll
  for (int kk = 0; kk < BC / 16; ++kk) {
    pf[kk][0] = TC::pack(s[2 * kk][0], s[2 * kk][1]);
    pf[kk][1] = TC::pack(s[2 * kk][2], s[2 * kk][3]);
    pf[kk][2] = TC::pack(s[2 * kk + 1][0], s[2 * kk + 1][1]);
    pf[kk][3] = TC::pack(s[2 * kk + 1][2], s[2 * kk + 1][3]);
  }
}

// O += P V: V's rows are the B operand's k dimension, so it is read transposed.
template <class E, int D, int BC>
__device__ __forceinline__ void tc_accumulate_pv(float (&o)[D / 8][4], const uint32_t (&pf)[BC / 16][4],
                                                 const E* v_tile, int lane) {
  using TC = TensorCore<E>;
  constexpr int P = kTcPitch<D>;
#pragma unroll
  for (int kk = 0; kk < BC / 16; ++kk)
#pragma unroll
    for (int dp = 0; dp < D / 16; ++dp) {
      uint32_t vb[4];  // keys 16 kk .. + 15, output columns 16 dp .. + 7 and + 8 .. + 15
      ldmatrix_x4_trans(vb, v_tile + (kk * 16 + lane % 16) * P + dp * 16 + (lane / 16) * 8);
      TC::mma(o[2 * dp], pf[kk], vb[0], vb[1]);
      TC::mma(o[2 * dp + 1], pf[kk], vb[2], vb[3]);
    }
}

// Lines 13-15 for the lane's two rows: O / l (two adjacent columns per store) and the lse.
template <int D>
__device__ __forceinline__ void tc_write_rows(tile::RowState<float> (&st)[2], const float (&o)[D / 8][4], float* out,
                                              float* lse, const int (&rows)[2], int h, int Lq, int tig) {
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    st[r].l = warp_sum(st[r].l, 4);
    const int i = rows[r];
    if (i >= Lq) continue;
    const float inv_l = tile::row_output_scale(st[r]);
    float* orow = out + (size_t(h) * Lq + i) * D;
#pragma unroll
    for (int dt = 0; dt < D / 8; ++dt)
      *reinterpret_cast<float2*>(orow + dt * 8 + tig * 2) = make_float2(o[dt][2 * r] * inv_l, o[dt][2 * r + 1] * inv_l);
    if (tig == 0) lse[size_t(h) * Lq + i] = tile::row_lse(st[r]);
  }
}

// The first key tile from t on (tiles of BC keys, ending at key_end) that the rules do not hide
// from rows [i0, i_end): every thread of the block finds the same one.
template <int BC>
__device__ __forceinline__ int tc_next_tile(const Visibility& vis, int i0, int i_end, int t, int tiles, int key_end) {
  while (t < tiles && vis.rule_cover(i0, i_end, t * BC, min((t + 1) * BC, key_end)) == tile::MaskCover::none) ++t;
  return t;
}

template <bool MODS, bool RULES, class E, int D, int WARPS, int BC>
__global__ void __launch_bounds__(WARPS * 32)
    flash_tc_kernel(const E* q, const E* k, const E* v, const unsigned char* allowed, int mask_heads,
                    variants::IndexRules rules, int H, int Hkv, int Lq, int Lk, bool causal, float scale_log2,
                    KernelMods mods, float* out, float* lse) {
  constexpr int P = kTcPitch<D>;
  extern __shared__ __align__(16) unsigned char tc_smem[];
  constexpr int kTcBr = 16 * WARPS, kTcBc = BC;
  E* q_tile = reinterpret_cast<E*>(tc_smem);  // [kTcBr][P]
  E* k_tile = q_tile + kTcBr * P;             // [kTcBc][P]
  E* v_tile = k_tile + kTcBc * P;             // [kTcBc][P]
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int gid = lane / 4, tig = lane % 4;  // the fragment's row group and thread-in-group
  const int h = blockIdx.y, g = h / (H / Hkv);
  // Last query block first: under a causal mask the blocks at the bottom see the most keys,
  // and starting them first keeps them from being the tail of the launch.
  const int i0 = (gridDim.x - 1 - blockIdx.x) * kTcBr;
  const int warp_i0 = i0 + warp * 16;
  const E* kh = k + size_t(g) * Lk * D;
  const E* vh = v + size_t(g) * Lk * D;
  const int rows_end = min(i0 + kTcBr, Lq);
  const int key_end = causal ? int(tile::causal_key_end(rows_end, Lq, Lk)) : Lk;
  const int tiles = (key_end + kTcBc - 1) / kTcBc;
  const Visibility vis{Lq, Lk, causal, allowed, mask_heads, RULES ? rules : variants::IndexRules{}};
  const HeadMods hm = MODS ? head_mods(mods, h) : HeadMods{};
  int t = tc_next_tile<kTcBc>(vis, i0, rows_end, 0, tiles, key_end);  // the first tile the rules do not hide

  load_tile_async<E, D, kTcBr>(q_tile, q + size_t(h) * Lq * D, i0, Lq);
  if (t < tiles) load_tile_async<E, D, kTcBc>(k_tile, kh, t * kTcBc, Lk);
  cp_async_commit();
  cp_async_wait<0>();
  __syncthreads();

  // This warp's 16 query rows as A fragments, one per 16 columns of d, for the whole key loop.
  uint32_t qf[D / 16][4];
#pragma unroll
  for (int ks = 0; ks < D / 16; ++ks)
    ldmatrix_x4(qf[ks], q_tile + (warp * 16 + lane % 16) * P + ks * 16 + (lane / 16) * 8);

  const int rows[2] = {warp_i0 + gid, warp_i0 + gid + 8};
  tile::RowState<float> st[2] = {tile::row_start<float>(), tile::row_start<float>()};
  float o[D / 8][4];
#pragma unroll
  for (int dt = 0; dt < D / 8; ++dt) o[dt][0] = o[dt][1] = o[dt][2] = o[dt][3] = 0.0f;

  while (t < tiles) {
    const int j0 = t * kTcBc, next = tc_next_tile<kTcBc>(vis, i0, rows_end, t + 1, tiles, key_end);
    const bool rule_partial = vis.rule_cover(i0, rows_end, j0, min(j0 + kTcBc, key_end)) != tile::MaskCover::all;
    load_tile_async<E, D, kTcBc>(v_tile, vh, j0, Lk);  // V streams in while S is computed
    cp_async_commit();
    float s[kTcBc / 8][4], mx[2];
    tc_scores<E, D, kTcBc>(s, qf, k_tile, lane);
    __syncthreads();  // every warp is done with k_tile
    if (next < tiles) load_tile_async<E, D, kTcBc>(k_tile, kh, next * kTcBc, Lk);  // next K, behind softmax and P V
    cp_async_commit();
    tc_mask_scale<MODS, kTcBc>(s, mx, vis, hm, rows, h, warp_i0, j0, rule_partial, tig, scale_log2);
    tc_rescale<D>(o, st, mx);
    uint32_t pf[kTcBc / 16][4];
    tc_probabilities<E, kTcBc>(pf, s, st);
    cp_async_wait<1>();  // this tile's V has landed (the next K may still be in flight)
    __syncthreads();
    tc_accumulate_pv<E, D, kTcBc>(o, pf, v_tile, lane);
    cp_async_wait<0>();  // the next K has landed ...
    __syncthreads();     // ... for every thread, and every warp is done with v_tile
    t = next;
  }
  tc_write_rows<D>(st, o, out, lse, rows, h, Lq, tig);
}

// ---------------------------------------------------------------------------------------------
// float32 backward (FlashAttention-2, Algorithm 2), as two kernels that each own what they write,
// so no atomics and the same result every run:
//   flash_dq_kernel    the forward's arrangement (a warp per 8 query rows, a lane per key of a
//                      32-key tile): recomputes P = exp(scale q.k - lse), dP = dO.v and
//                      dS = P (dP - D), and accumulates dQ = scale dS K.
//   flash_dkdv_kernel  the same with queries and keys swapped (a warp per 8 keys, a lane per
//                      query row of a 32-row tile), over every query head that shares the KV
//                      head (GQA): dV = P^T dO, dK = scale dS^T Q.
// D = rowsum(dO o O) and the lse come from the host. A row that sees no key (lse = -inf) gets
// P = 0 and contributes nothing.

constexpr int kBwdWarps = 4;
constexpr int kBwdRowsPerWarp = 8;
constexpr int kBwdBlock = kBwdWarps * kBwdRowsPerWarp;  // rows (dq) or keys (dkdv) per block
constexpr int kBwdTile = 32;                            // keys (dq) or query rows (dkdv) per tile: one per lane

std::size_t bwd_shared_bytes(int d, int dv) {
  return sizeof(float) * (std::size_t(kBwdBlock) * (d + dv) + std::size_t(kBwdTile) * (d + 1 + dv + 1) +
                          2 * std::size_t(kBwdBlock) * kBwdTile + 2 * std::size_t(kBwdTile));
}

// P and dS of one (query i, key j) pair, given s = q.k, dp = dO.v, the row's lse and D. With
// score modifiers, P is taken from the modified score as the forward took it, and dS is
// multiplied by the modifiers' slope d mod / dx at x = scale T q.k (the chain rule; the scale
// itself is applied to dQ and dK at the end, as without).
template <bool MODS>
__device__ __forceinline__ void bwd_pair(bool visible, float s, float dp, float scale, const HeadMods& hm, int i,
                                         int j, int Lq, int Lk, float lse_i, float delta_i, float& p, float& ds) {
  if constexpr (MODS) {
    const tile::ModifiedScore<float> m =
        tile::modify_score(s * hm.to_raw, hm.cap, hm.slope, alibi_distance(i, j, Lq, Lk));
    p = visible && lse_i != -INFINITY ? expf(m.score * hm.from_raw - lse_i) : 0.0f;
    ds = p * (dp - delta_i) * m.slope;
  } else {
    p = visible && lse_i != -INFINITY ? expf(s * scale - lse_i) : 0.0f;
    ds = p * (dp - delta_i);
  }
}

// The block's own rows [first, first + kBwdBlock) of head `head` of a [.., total, n] matrix into
// tile [kBwdBlock][n]: query rows (dq) or keys (dkdv); rows past `total` are zeros.
__device__ __forceinline__ void bwd_load_block(float* tile, const float* src, int head, int first, int total, int n) {
  for (int x = threadIdx.x; x < kBwdBlock * n; x += blockDim.x) {
    const int i = first + x / n;
    tile[x] = i < total ? src[(size_t(head) * total + i) * n + x % n] : 0.0f;
  }
}

// Rows [first, first + count) of head `head` of a [.., total, n] matrix into tile
// [kBwdTile][n + 1] (padded: lane i reads row i from its own bank); the tile's rows past
// `count` are zeros.
__device__ __forceinline__ void bwd_load_tile(float* tile, const float* src, int head, int first, int count,
                                              int total, int n) {
  for (int x = threadIdx.x; x < kBwdTile * n; x += blockDim.x) {
    const int jj = x / n;
    tile[jj * (n + 1) + x % n] = jj < count ? src[(size_t(head) * total + first + jj) * n + x % n] : 0.0f;
  }
}

// acc[r][u] += w[r][jj] x[jj][lane + 32 u] over the tile's `count` rows jj: dq_acc += dS K
// (flash_dq_kernel), dv_acc += P^T dO and dk_acc += dS^T Q (flash_dkdv_kernel, two at once).
template <int T>
__device__ __forceinline__ void bwd_accumulate(float (&acc)[kBwdRowsPerWarp][T], const float* w_rows,
                                               const float* x_tile, int count, int n, int lane) {
  for (int jj = 0; jj < count; ++jj) {
    float xv[T];
#pragma unroll
    for (int u = 0; u < T; ++u) xv[u] = lane + 32 * u < n ? x_tile[jj * (n + 1) + lane + 32 * u] : 0.0f;
#pragma unroll
    for (int r = 0; r < kBwdRowsPerWarp; ++r) {
      const float w = w_rows[r * kBwdTile + jj];
#pragma unroll
      for (int u = 0; u < T; ++u) acc[r][u] = fmaf(w, xv[u], acc[r][u]);
    }
  }
}

// flash_dq_kernel's step for one key tile: lane j's dS of key j0 + j against each of the warp's
// rows, into ds_rows [kBwdRowsPerWarp][kBwdTile].
template <bool MODS>
__device__ __forceinline__ void dq_tile_ds(float* ds_rows, const float* q_tile, const float* do_tile,
                                           const float* k_tile, const float* v_tile,
                                           const float (&lse_r)[kBwdRowsPerWarp],
                                           const float (&delta_r)[kBwdRowsPerWarp], const Visibility& vis,
                                           const HeadMods& hm, int h, int row0, int j0, int cols, int warp, int lane,
                                           int d, int dv, float scale) {
#pragma unroll
  for (int r = 0; r < kBwdRowsPerWarp; ++r) {
    const float* qr = q_tile + (warp * kBwdRowsPerWarp + r) * d;
    const float* dor = do_tile + (warp * kBwdRowsPerWarp + r) * dv;
    float s = 0.0f, dp = 0.0f;
    for (int c = 0; c < d; ++c) s = fmaf(qr[c], k_tile[lane * (d + 1) + c], s);
    for (int c = 0; c < dv; ++c) dp = fmaf(dor[c], v_tile[lane * (dv + 1) + c], dp);
    const bool visible = lane < cols && vis(row0 + r, j0 + lane, h);
    float p, ds;
    bwd_pair<MODS>(visible, s, dp, scale, hm, row0 + r, j0 + lane, vis.Lq, vis.Lk, lse_r[r], delta_r[r], p, ds);
    ds_rows[r * kBwdTile + lane] = ds;
  }
}

template <bool MODS, bool RULES, int T>  // output columns per lane: d and dv <= 32 T
__global__ void __launch_bounds__(kBwdWarps * 32)
    flash_dq_kernel(const float* q, const float* k, const float* v, const float* dout, const float* lse,
                    const float* delta, const unsigned char* allowed, int mask_heads, variants::IndexRules rules,
                    int H, int Hkv, int Lq, int Lk, int d, int dv, bool causal, float scale, KernelMods mods,
                    float* dq) {
  extern __shared__ float bwd_smem[];
  float* q_tile = bwd_smem;                     // [kBwdBlock][d]
  float* do_tile = q_tile + kBwdBlock * d;      // [kBwdBlock][dv]
  float* k_tile = do_tile + kBwdBlock * dv;     // [kBwdTile][d + 1] (padded: lane j reads row j)
  float* v_tile = k_tile + kBwdTile * (d + 1);  // [kBwdTile][dv + 1]
  float* ds_tile = v_tile + kBwdTile * (dv + 1);  // [kBwdWarps][kBwdRowsPerWarp][kBwdTile]
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int h = blockIdx.y, g = h / (H / Hkv);
  const int i0 = (gridDim.x - 1 - blockIdx.x) * kBwdBlock, row0 = i0 + warp * kBwdRowsPerWarp;
  float* ds_rows = ds_tile + warp * kBwdRowsPerWarp * kBwdTile;
  const Visibility vis{Lq, Lk, causal, allowed, mask_heads, RULES ? rules : variants::IndexRules{}};
  const HeadMods hm = MODS ? head_mods(mods, h) : HeadMods{};
  bwd_load_block(q_tile, q, h, i0, Lq, d);
  bwd_load_block(do_tile, dout, h, i0, Lq, dv);
  float lse_r[kBwdRowsPerWarp], delta_r[kBwdRowsPerWarp], acc[kBwdRowsPerWarp][T];
#pragma unroll
  for (int r = 0; r < kBwdRowsPerWarp; ++r) {
    const int i = row0 + r;
    lse_r[r] = i < Lq ? lse[size_t(h) * Lq + i] : -INFINITY;
    delta_r[r] = i < Lq ? delta[size_t(h) * Lq + i] : 0.0f;
#pragma unroll
    for (int u = 0; u < T; ++u) acc[r][u] = 0.0f;
  }
  const int rows_end = min(i0 + kBwdBlock, Lq);
  const int key_end = causal ? int(tile::causal_key_end(rows_end, Lq, Lk)) : Lk;
  for (int j0 = 0; j0 < key_end; j0 += kBwdTile) {
    const int cols = min(kBwdTile, key_end - j0);
    if (vis.rule_cover(i0, rows_end, j0, j0 + cols) == tile::MaskCover::none) continue;  // the whole block alike
    __syncthreads();
    bwd_load_tile(k_tile, k, g, j0, cols, Lk, d);
    bwd_load_tile(v_tile, v, g, j0, cols, Lk, dv);
    __syncthreads();
    dq_tile_ds<MODS>(ds_rows, q_tile, do_tile, k_tile, v_tile, lse_r, delta_r, vis, hm, h, row0, j0, cols, warp, lane,
                     d, dv, scale);
    __syncwarp();
    bwd_accumulate<T>(acc, ds_rows, k_tile, cols, d, lane);  // dQ += dS K
    __syncwarp();
  }
#pragma unroll
  for (int r = 0; r < kBwdRowsPerWarp; ++r) {
    const int i = row0 + r;
    if (i >= Lq) continue;
#pragma unroll
    for (int u = 0; u < T; ++u)
      if (lane + 32 * u < d) dq[(size_t(h) * Lq + i) * d + lane + 32 * u] = acc[r][u] * scale;
  }
}

// flash_dkdv_kernel's step for one tile of query rows of head h: lane i's P and dS of query row
// t0 + i against each of the warp's keys, into p_rows and ds_rows [kBwdRowsPerWarp][kBwdTile].
template <bool MODS>
__device__ __forceinline__ void dkdv_tile_pds(float* p_rows, float* ds_rows, const float* k_tile, const float* v_tile,
                                              const float* q_tile, const float* do_tile, const float* lse_tile,
                                              const float* delta_tile, const Visibility& vis, const HeadMods& hm, int h,
                                              int t0, int rows, int key0, int warp, int lane, int d, int dv,
                                              float scale) {
#pragma unroll
  for (int r = 0; r < kBwdRowsPerWarp; ++r) {
    const float* kr = k_tile + (warp * kBwdRowsPerWarp + r) * d;
    const float* vr = v_tile + (warp * kBwdRowsPerWarp + r) * dv;
    float s = 0.0f, dp = 0.0f;
    for (int c = 0; c < d; ++c) s = fmaf(q_tile[lane * (d + 1) + c], kr[c], s);
    for (int c = 0; c < dv; ++c) dp = fmaf(do_tile[lane * (dv + 1) + c], vr[c], dp);
    const bool visible = lane < rows && vis(t0 + lane, key0 + r, h);
    float p, ds;
    bwd_pair<MODS>(visible, s, dp, scale, hm, t0 + lane, key0 + r, vis.Lq, vis.Lk, lse_tile[lane], delta_tile[lane], p,
                   ds);
    p_rows[r * kBwdTile + lane] = p;
    ds_rows[r * kBwdTile + lane] = ds;
  }
}

// dV += P^T dO and dK += dS^T Q over the tile's `rows` query rows, each lane its own columns.
template <int T>
__device__ __forceinline__ void dkdv_accumulate(float (&dk_acc)[kBwdRowsPerWarp][T],
                                                float (&dv_acc)[kBwdRowsPerWarp][T], const float* p_rows,
                                                const float* ds_rows, const float* q_tile, const float* do_tile,
                                                int rows, int d, int dv, int lane) {
  for (int ii = 0; ii < rows; ++ii) {
    float qv[T], dov[T];
#pragma unroll
    for (int u = 0; u < T; ++u) {
      const int c = lane + 32 * u;
      qv[u] = c < d ? q_tile[ii * (d + 1) + c] : 0.0f;
      dov[u] = c < dv ? do_tile[ii * (dv + 1) + c] : 0.0f;
    }
#pragma unroll
    for (int r = 0; r < kBwdRowsPerWarp; ++r) {
      const float p = p_rows[r * kBwdTile + ii], ds = ds_rows[r * kBwdTile + ii];
#pragma unroll
      for (int u = 0; u < T; ++u) {
        dv_acc[r][u] = fmaf(p, dov[u], dv_acc[r][u]);
        dk_acc[r][u] = fmaf(ds, qv[u], dk_acc[r][u]);
      }
    }
  }
}

template <bool MODS, bool RULES, int T>
__global__ void __launch_bounds__(kBwdWarps * 32)
    flash_dkdv_kernel(const float* q, const float* k, const float* v, const float* dout, const float* lse,
                      const float* delta, const unsigned char* allowed, int mask_heads, variants::IndexRules rules,
                      int H, int Hkv, int Lq, int Lk, int d, int dv, bool causal, float scale, KernelMods mods,
                      float* dk, float* dvout) {
  extern __shared__ float bwd_smem[];
  float* k_tile = bwd_smem;                      // [kBwdBlock][d]   this block's keys
  float* v_tile = k_tile + kBwdBlock * d;        // [kBwdBlock][dv]
  float* q_tile = v_tile + kBwdBlock * dv;       // [kBwdTile][d + 1] (padded: lane i reads row i)
  float* do_tile = q_tile + kBwdTile * (d + 1);  // [kBwdTile][dv + 1]
  float* p_tile = do_tile + kBwdTile * (dv + 1);  // [kBwdWarps][kBwdRowsPerWarp][kBwdTile]
  float* ds_tile = p_tile + kBwdBlock * kBwdTile;
  float* lse_tile = ds_tile + kBwdBlock * kBwdTile;  // [kBwdTile]
  float* delta_tile = lse_tile + kBwdTile;           // [kBwdTile]
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int g = blockIdx.y, group = H / Hkv;
  const int j0 = blockIdx.x * kBwdBlock, key0 = j0 + warp * kBwdRowsPerWarp;
  float* p_rows = p_tile + warp * kBwdRowsPerWarp * kBwdTile;
  float* ds_rows = ds_tile + warp * kBwdRowsPerWarp * kBwdTile;
  const Visibility vis{Lq, Lk, causal, allowed, mask_heads, RULES ? rules : variants::IndexRules{}};
  const int keys_end = min(j0 + kBwdBlock, Lk);
  bwd_load_block(k_tile, k, g, j0, Lk, d);
  bwd_load_block(v_tile, v, g, j0, Lk, dv);
  float dk_acc[kBwdRowsPerWarp][T], dv_acc[kBwdRowsPerWarp][T];
#pragma unroll
  for (int r = 0; r < kBwdRowsPerWarp; ++r)
#pragma unroll
    for (int u = 0; u < T; ++u) dk_acc[r][u] = dv_acc[r][u] = 0.0f;
  // Causal: query rows before the first that sees key j0 skip their tiles by index.
  const int i_begin = causal ? max(0, j0 - (Lk - Lq)) / kBwdTile * kBwdTile : 0;
  for (int h = g * group; h < (g + 1) * group; ++h)
    for (int t0 = i_begin; t0 < Lq; t0 += kBwdTile) {
      const HeadMods hm = MODS ? head_mods(mods, h) : HeadMods{};
      const int rows = min(kBwdTile, Lq - t0);
      if (vis.rule_cover(t0, t0 + rows, j0, keys_end) == tile::MaskCover::none) continue;  // the whole block alike
      __syncthreads();
      bwd_load_tile(q_tile, q, h, t0, rows, Lq, d);
      bwd_load_tile(do_tile, dout, h, t0, rows, Lq, dv);
      for (int ii = threadIdx.x; ii < kBwdTile; ii += blockDim.x) {
        lse_tile[ii] = ii < rows ? lse[size_t(h) * Lq + t0 + ii] : -INFINITY;
        delta_tile[ii] = ii < rows ? delta[size_t(h) * Lq + t0 + ii] : 0.0f;
      }
      __syncthreads();
      dkdv_tile_pds<MODS>(p_rows, ds_rows, k_tile, v_tile, q_tile, do_tile, lse_tile, delta_tile, vis, hm, h, t0, rows,
                          key0, warp, lane, d, dv, scale);
      __syncwarp();
      dkdv_accumulate<T>(dk_acc, dv_acc, p_rows, ds_rows, q_tile, do_tile, rows, d, dv, lane);
      __syncwarp();
    }
#pragma unroll
  for (int r = 0; r < kBwdRowsPerWarp; ++r) {
    const int j = key0 + r;
    if (j >= Lk) continue;
#pragma unroll
    for (int u = 0; u < T; ++u) {
      const int c = lane + 32 * u;
      if (c < d) dk[(size_t(g) * Lk + j) * d + c] = dk_acc[r][u] * scale;
      if (c < dv) dvout[(size_t(g) * Lk + j) * dv + c] = dv_acc[r][u];
    }
  }
}

__device__ inline void round_to(float x, __half* y) { *y = __float2half_rn(x); }
__device__ inline void round_to(float x, __nv_bfloat16* y) { *y = __float2bfloat16_rn(x); }

template <class E>
__global__ void round_kernel(const float* in, E* out, std::size_t n) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x)
    round_to(in[i], out + i);
}

// ---------------------------------------------------------------------------------------------
// Host side

// Device memory that frees itself; not copyable (a copy would free twice).
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() {
    if (ptr_) cudaFree(ptr_);
  }
  cudaError_t allocate(std::size_t bytes) { return cudaMalloc(&ptr_, bytes ? bytes : 1); }
  template <class T>
  T* as() const { return static_cast<T*>(ptr_); }

 private:
  void* ptr_ = nullptr;
};

class Event {
 public:
  Event() { err_ = cudaEventCreate(&e_); }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  ~Event() {
    if (err_ == cudaSuccess) cudaEventDestroy(e_);
  }
  cudaError_t error() const { return err_; }
  cudaEvent_t get() const { return e_; }

 private:
  cudaEvent_t e_{};
  cudaError_t err_;
};

// Raises a kernel's dynamic shared memory limit when it needs more than the default 48 KiB.
template <class Kernel>
cudaError_t allow_shared(Kernel kernel, std::size_t bytes) {
  if (bytes <= 48 * 1024) return cudaSuccess;
  return cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes));
}

// Everything one launch needs, on the device.
struct Launch {
  const void *q, *k, *v;
  const unsigned char* allowed;
  int mask_heads;
  variants::IndexRules rules;
  FlashDims dims;
  bool causal;
  float scale_log2;
  KernelMods mods;
  bool modded;  // any score modifier: the kernels' MODS instantiation
  float *out, *lse;
};

// The score modifiers for a launch: `slopes` holds the ALiBi slopes on the device (when there
// are any); `unit` is what a modified score is multiplied by besides 1 / T: log2(e) for the
// forward's base-2 scores, 1 for the backward. `scale` has 1 / T folded in.
KernelMods kernel_mods(const ScoreMods& m, float scale, double unit, const DeviceBuffer& slopes) {
  return {m.softcap > 0 ? m.softcap : 0.0f, m.alibi_slopes ? slopes.as<float>() : nullptr,
          float(double(scale) * double(m.temperature)), float(unit / double(m.temperature))};
}

template <bool MODS, bool RULES, int DVT>
cudaError_t launch_f32(const Launch& a) {
  const std::size_t shared = f32_shared_bytes(int(a.dims.d), int(a.dims.dv));
  if (const cudaError_t err = allow_shared(flash_f32_kernel<MODS, RULES, DVT>, shared); err != cudaSuccess) return err;
  const dim3 grid(unsigned((a.dims.Lq + kF32Br - 1) / kF32Br), unsigned(a.dims.H));
  flash_f32_kernel<MODS, RULES, DVT><<<grid, kF32Warps * 32, shared>>>(
      static_cast<const float*>(a.q), static_cast<const float*>(a.k), static_cast<const float*>(a.v), a.allowed,
      a.mask_heads, a.rules, int(a.dims.H), int(a.dims.Hkv), int(a.dims.Lq), int(a.dims.Lk), int(a.dims.d), int(a.dims.dv),
      a.causal, a.scale_log2, a.mods, a.out, a.lse);
  return cudaGetLastError();
}

template <bool MODS, bool RULES, class E, int D, int WARPS, int BC>
cudaError_t launch_tc(const Launch& a) {
  const std::size_t shared = tc_shared_bytes<D, WARPS, BC>();
  if (const cudaError_t err = allow_shared(flash_tc_kernel<MODS, RULES, E, D, WARPS, BC>, shared); err != cudaSuccess)
    return err;
  const dim3 grid(unsigned((a.dims.Lq + 16 * WARPS - 1) / (16 * WARPS)), unsigned(a.dims.H));
  flash_tc_kernel<MODS, RULES, E, D, WARPS, BC><<<grid, WARPS * 32, shared>>>(
      static_cast<const E*>(a.q), static_cast<const E*>(a.k), static_cast<const E*>(a.v), a.allowed, a.mask_heads,
      a.rules, int(a.dims.H), int(a.dims.Hkv), int(a.dims.Lq), int(a.dims.Lk), a.causal, a.scale_log2, a.mods, a.out, a.lse);
  return cudaGetLastError();
}

template <bool MODS, bool RULES, class E>
cudaError_t launch_tc_for_dim(const Launch& a) {
  return a.dims.d == 64 ? launch_tc<MODS, RULES, E, 64, kTcWarps, kTcKeys>(a)
                        : launch_tc<MODS, RULES, E, 128, kTcWarps, kTcKeys>(a);
}

template <bool MODS, bool RULES>
cudaError_t launch_kernel(const Launch& a, Dtype dtype) {
  switch (dtype) {
    case Dtype::float16: return launch_tc_for_dim<MODS, RULES, __half>(a);
    case Dtype::bfloat16: return launch_tc_for_dim<MODS, RULES, __nv_bfloat16>(a);
    case Dtype::float32: break;
  }
  const std::size_t dv = a.dims.dv;
  return dv <= 32   ? launch_f32<MODS, RULES, 1>(a)
         : dv <= 64  ? launch_f32<MODS, RULES, 2>(a)
         : dv <= 128 ? launch_f32<MODS, RULES, 4>(a)
                     : launch_f32<MODS, RULES, 8>(a);
}

cudaError_t launch(const Launch& a, Dtype dtype) {
  if (a.dims.H == 0 || a.dims.Lq == 0) return cudaSuccess;  // no rows: nothing to launch
  if (a.rules.any()) return launch_kernel<true, true>(a, dtype);  // see "Kernel variants"
  return a.modded ? launch_kernel<true, false>(a, dtype) : launch_kernel<false, false>(a, dtype);
}

template <class E>
cudaError_t round_on_device(const float* in, DeviceBuffer& out, std::size_t n) {
  cudaError_t err = out.allocate(n * sizeof(E));
  if (err != cudaSuccess || n == 0) return err;
  round_kernel<E><<<unsigned(std::min<std::size_t>((n + 255) / 256, 4096)), 256>>>(in, out.as<E>(), n);
  return cudaGetLastError();
}

struct BwdLaunch {
  const float *q, *k, *v, *dout, *lse, *delta;
  const unsigned char* allowed;
  int mask_heads;
  variants::IndexRules rules;
  FlashDims dims;
  bool causal;
  float scale;
  KernelMods mods;
  bool modded;
  float *dq, *dk, *dv;
};

template <bool MODS, bool RULES, int T>
cudaError_t launch_backward_t(const BwdLaunch& a) {
  const std::size_t shared = bwd_shared_bytes(int(a.dims.d), int(a.dims.dv));
  if (cudaError_t err = allow_shared(flash_dq_kernel<MODS, RULES, T>, shared); err != cudaSuccess) return err;
  if (cudaError_t err = allow_shared(flash_dkdv_kernel<MODS, RULES, T>, shared); err != cudaSuccess) return err;
  const FlashDims& m = a.dims;
  if (m.Lq > 0) {
    flash_dq_kernel<MODS, RULES, T><<<dim3(unsigned((m.Lq + kBwdBlock - 1) / kBwdBlock), unsigned(m.H)), kBwdWarps * 32,
                               shared>>>(a.q, a.k, a.v, a.dout, a.lse, a.delta, a.allowed, a.mask_heads, a.rules, int(m.H),
                                         int(m.Hkv), int(m.Lq), int(m.Lk), int(m.d), int(m.dv), a.causal, a.scale,
                                         a.mods, a.dq);
    if (cudaError_t err = cudaGetLastError(); err != cudaSuccess) return err;
  }
  if (m.Lk > 0) {
    flash_dkdv_kernel<MODS, RULES, T><<<dim3(unsigned((m.Lk + kBwdBlock - 1) / kBwdBlock), unsigned(m.Hkv)), kBwdWarps * 32,
                                 shared>>>(a.q, a.k, a.v, a.dout, a.lse, a.delta, a.allowed, a.mask_heads, a.rules, int(m.H),
                                           int(m.Hkv), int(m.Lq), int(m.Lk), int(m.d), int(m.dv), a.causal, a.scale,
                                           a.mods, a.dk, a.dv);
    if (cudaError_t err = cudaGetLastError(); err != cudaSuccess) return err;
  }
  return cudaSuccess;
}

template <bool MODS, bool RULES>
cudaError_t launch_backward_kernels(const BwdLaunch& a) {
  const std::size_t widest = std::max(a.dims.d, a.dims.dv);
  return widest <= 32 ? launch_backward_t<MODS, RULES, 1>(a) : widest <= 64 ? launch_backward_t<MODS, RULES, 2>(a)
       : widest <= 128 ? launch_backward_t<MODS, RULES, 4>(a) : launch_backward_t<MODS, RULES, 8>(a);
}

cudaError_t launch_backward(const BwdLaunch& a) {
  if (a.rules.any()) return launch_backward_kernels<true, true>(a);  // see "Kernel variants"
  return a.modded ? launch_backward_kernels<true, false>(a) : launch_backward_kernels<false, false>(a);
}

// The mask rules as the kernels take them (none for null), their document ids copied into
// q_ids [Lq] and k_ids [Lk] on the device.
cudaError_t device_rules(const variants::IndexRules* rules, const FlashDims& dims, DeviceBuffer& q_ids,
                         DeviceBuffer& k_ids, variants::IndexRules& out) {
  out = rules ? *rules : variants::IndexRules{};
  if (!out.segments.on) return cudaSuccess;
  const std::size_t qb = dims.Lq * sizeof(std::int64_t), kb = dims.Lk * sizeof(std::int64_t);
  cudaError_t err = q_ids.allocate(qb);
  if (err == cudaSuccess) err = k_ids.allocate(kb);
  if (err == cudaSuccess && qb) err = cudaMemcpy(q_ids.as<void>(), out.segments.rule.q, qb, cudaMemcpyHostToDevice);
  if (err == cudaSuccess && kb) err = cudaMemcpy(k_ids.as<void>(), out.segments.rule.k, kb, cudaMemcpyHostToDevice);
  out.segments.rule = {q_ids.as<std::int64_t>(), k_ids.as<std::int64_t>()};
  return err;
}

}  // namespace

bool device_usable(std::string& reason) {
  int count = 0;
  // Without a GPU this returns an error (35, insufficient driver, or 100, no device) and may
  // leave count untouched: test the error, not the count.
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    reason = std::string("no CUDA device (") + cudaGetErrorString(err) + ")";
    return false;
  }
  if (count == 0) {
    reason = "no CUDA device (the driver reports none)";
    return false;
  }
  cudaDeviceProp prop{};
  err = cudaGetDeviceProperties(&prop, 0);
  if (err != cudaSuccess) {
    reason = std::string("no usable CUDA device (") + cudaGetErrorString(err) + ")";
    return false;
  }
  // The build holds machine code for sm_80 and sm_90 and PTX that newer GPUs compile; the
  // kernels use cp.async and bfloat16 mma, which need compute capability 8.0.
  if (prop.major < 8) {
    reason = std::string("no usable CUDA device (") + prop.name + " has compute capability " +
             std::to_string(prop.major) + "." + std::to_string(prop.minor) + "; the kernels need 8.0 or newer)";
    return false;
  }
  reason = prop.name;
  return true;
}

std::string flash_forward(const float* q, const float* k, const float* v,
                          const unsigned char* allowed, std::size_t mask_heads,
                          const variants::IndexRules* rules, const FlashDims& dims, bool causal, float scale, const ScoreMods& mods,
                          Dtype dtype, float* out, float* lse, std::size_t timed_runs,
                          std::vector<double>* kernel_ms) {
  const std::size_t nq = dims.H * dims.Lq * dims.d, nk = dims.Hkv * dims.Lk * dims.d,
                    nv = dims.Hkv * dims.Lk * dims.dv, no = dims.H * dims.Lq * dims.dv,
                    nl = dims.H * dims.Lq, nm = allowed ? mask_heads * dims.Lq * dims.Lk : 0;
  DeviceBuffer dq, dk, dv, dm, dslopes, dout, dlse, eq, ek, ev, dq_ids, dk_ids;
  cudaError_t err = cudaSuccess;
  auto alloc_copy = [&](DeviceBuffer& b, const void* host, std::size_t bytes) {
    if (err == cudaSuccess) err = b.allocate(bytes);
    if (err == cudaSuccess && host && bytes) err = cudaMemcpy(b.as<void>(), host, bytes, cudaMemcpyHostToDevice);
  };
  alloc_copy(dq, q, nq * sizeof(float));
  alloc_copy(dk, k, nk * sizeof(float));
  alloc_copy(dv, v, nv * sizeof(float));
  alloc_copy(dm, allowed, nm);
  alloc_copy(dslopes, mods.alibi_slopes, mods.alibi_slopes ? dims.H * sizeof(float) : 0);
  alloc_copy(dout, nullptr, no * sizeof(float));
  alloc_copy(dlse, nullptr, nl * sizeof(float));
  variants::IndexRules on_device;
  if (err == cudaSuccess) err = device_rules(rules, dims, dq_ids, dk_ids, on_device);
  if (err != cudaSuccess) return cudaGetErrorString(err);

  Launch a{dq.as<void>(), dk.as<void>(), dv.as<void>(), allowed ? dm.as<unsigned char>() : nullptr,
           int(mask_heads), on_device, dims, causal, scale * float(tile::kLog2ed),
           kernel_mods(mods, scale, tile::kLog2ed, dslopes), mods.any(), dout.as<float>(), dlse.as<float>()};
  if (dtype != Dtype::float32) {  // round Q, K, V once on the device; the kernel reads only those
    auto round_all = [&](auto tag) {
      using E = decltype(tag);
      if (err == cudaSuccess) err = round_on_device<E>(dq.as<float>(), eq, nq);
      if (err == cudaSuccess) err = round_on_device<E>(dk.as<float>(), ek, nk);
      if (err == cudaSuccess) err = round_on_device<E>(dv.as<float>(), ev, nv);
    };
    if (dtype == Dtype::float16) round_all(__half());
    else round_all(__nv_bfloat16());
    if (err != cudaSuccess) return cudaGetErrorString(err);
    a.q = eq.as<void>();
    a.k = ek.as<void>();
    a.v = ev.as<void>();
  }
  // Poison the outputs (all-ones bits: NaN) so that an element the kernel failed to write
  // cannot pass for a result.
  err = cudaMemset(dout.as<void>(), 0xff, no * sizeof(float));
  if (err == cudaSuccess) err = cudaMemset(dlse.as<void>(), 0xff, nl * sizeof(float));
  if (err == cudaSuccess) err = launch(a, dtype);
  if (err == cudaSuccess) err = cudaMemcpy(out, dout.as<void>(), no * sizeof(float), cudaMemcpyDeviceToHost);
  if (err == cudaSuccess) err = cudaMemcpy(lse, dlse.as<void>(), nl * sizeof(float), cudaMemcpyDeviceToHost);
  if (err != cudaSuccess) return cudaGetErrorString(err);

  if (timed_runs > 0 && kernel_ms) {  // the same launch again, timed by events around it alone
    Event start, stop;
    if ((err = start.error()) != cudaSuccess || (err = stop.error()) != cudaSuccess) return cudaGetErrorString(err);
    for (std::size_t run = 0; run < timed_runs && err == cudaSuccess; ++run) {
      err = cudaEventRecord(start.get());
      if (err == cudaSuccess) err = launch(a, dtype);
      if (err == cudaSuccess) err = cudaEventRecord(stop.get());
      if (err == cudaSuccess) err = cudaEventSynchronize(stop.get());
      float ms = 0;
      if (err == cudaSuccess) err = cudaEventElapsedTime(&ms, start.get(), stop.get());
      if (err == cudaSuccess) kernel_ms->push_back(double(ms));
    }
    if (err != cudaSuccess) return cudaGetErrorString(err);
  }
  return std::string();
}

std::string flash_backward(const float* q, const float* k, const float* v, const unsigned char* allowed,
                           std::size_t mask_heads, const variants::IndexRules* rules, const FlashDims& dims, bool causal, float scale,
                           const ScoreMods& mods, const float* dout, const float* lse, const float* delta, float* dq,
                           float* dk, float* dv) {
  const std::size_t nq = dims.H * dims.Lq * dims.d, nk = dims.Hkv * dims.Lk * dims.d,
                    nv = dims.Hkv * dims.Lk * dims.dv, no = dims.H * dims.Lq * dims.dv,
                    nl = dims.H * dims.Lq, nm = allowed ? mask_heads * dims.Lq * dims.Lk : 0;
  DeviceBuffer bq, bk, bv, bm, bslopes, bdo, blse, bdelta, bdq, bdk, bdv, bq_ids, bk_ids;
  cudaError_t err = cudaSuccess;
  auto alloc_copy = [&](DeviceBuffer& b, const void* host, std::size_t bytes) {
    if (err == cudaSuccess) err = b.allocate(bytes);
    if (err == cudaSuccess && host && bytes) err = cudaMemcpy(b.as<void>(), host, bytes, cudaMemcpyHostToDevice);
    if (err == cudaSuccess && !host && bytes) err = cudaMemset(b.as<void>(), 0xff, bytes);  // NaN: unwritten shows
  };
  alloc_copy(bq, q, nq * sizeof(float));
  alloc_copy(bk, k, nk * sizeof(float));
  alloc_copy(bv, v, nv * sizeof(float));
  alloc_copy(bm, allowed, nm);
  alloc_copy(bslopes, mods.alibi_slopes, mods.alibi_slopes ? dims.H * sizeof(float) : 0);
  alloc_copy(bdo, dout, no * sizeof(float));
  alloc_copy(blse, lse, nl * sizeof(float));
  alloc_copy(bdelta, delta, nl * sizeof(float));
  alloc_copy(bdq, nullptr, nq * sizeof(float));
  alloc_copy(bdk, nullptr, nk * sizeof(float));
  alloc_copy(bdv, nullptr, nv * sizeof(float));
  variants::IndexRules on_device;
  if (err == cudaSuccess) err = device_rules(rules, dims, bq_ids, bk_ids, on_device);
  if (err != cudaSuccess) return cudaGetErrorString(err);
  if (dims.H > 0) {
    err = launch_backward({bq.as<float>(), bk.as<float>(), bv.as<float>(), bdo.as<float>(), blse.as<float>(),
                           bdelta.as<float>(), allowed ? bm.as<unsigned char>() : nullptr, int(mask_heads), on_device, dims,
                           causal, scale, kernel_mods(mods, scale, 1.0, bslopes), mods.any(), bdq.as<float>(),
                           bdk.as<float>(), bdv.as<float>()});
  }
  if (err == cudaSuccess) err = cudaMemcpy(dq, bdq.as<void>(), nq * sizeof(float), cudaMemcpyDeviceToHost);
  if (err == cudaSuccess) err = cudaMemcpy(dk, bdk.as<void>(), nk * sizeof(float), cudaMemcpyDeviceToHost);
  if (err == cudaSuccess) err = cudaMemcpy(dv, bdv.as<void>(), nv * sizeof(float), cudaMemcpyDeviceToHost);
  return err == cudaSuccess ? std::string() : std::string(cudaGetErrorString(err));
}

}  // namespace attn::cuda
