#pragma once
// Private to the flash kernel: one query head of FlashAttention-2's backward (Dao 2023,
// Algorithm 2, lines 5-19), shared by flash_backward.cpp and the per-ISA micro-kernel sets that
// compile it (microkernels_impl.hpp: the float loops run at the ISA's width there, the float64
// reference stays on the generic set so that its numbers are the same on every CPU).
#include <cstddef>
#include <vector>

#include "attn/engine/attention/variant.hpp"
#include "attn/engine/core/tensor.hpp"

namespace attn::flash {

struct BackwardProblem {
  std::size_t H, Lq, d, Hkv, Lk, dv, group;
  std::size_t Br, Bc;  // query rows and keys per tile (Algorithm 2's B_r, B_c)
  double scale;        // S = scale * Q K^T (temperature folded in)
  bool causal;
  const Mask3* allowed;
  const AttentionMask* rule;  // a variant mask read by its indices (FlashOptions::mask_rule); null = none
  // A score modifier (soft-cap, ALiBi) on scale * q.k before the temperature, as the forward
  // applies it (FlashOptions::score_mod); null = none. `temperature` is the one in `scale`.
  const ScoreMod* score_mod;
  double temperature;
};

// One thread's tiles, reused for every tile it processes.
template <class T>
struct BackwardTiles {
  std::vector<T> kt, vt;  // K_j^T [d][Bc], V_j^T [dv][Bc]: products run along keys
  std::vector<T> p, ds;   // P_ij and dP_ij -> dS_ij, [Br][Bc]
  std::vector<T> slope;   // d modified score / d score of one row, [Bc] (a soft-cap's 1 - tanh^2)
  // Causal trimming of a tile: row r sees keys [0, vis[r]); key c is seen by rows [first[c], Br).
  std::vector<std::size_t> vis, first;
  explicit BackwardTiles(const BackwardProblem& pb)
      : kt(pb.d * pb.Bc), vt(pb.dv * pb.Bc), p(pb.Br * pb.Bc), ds(pb.Br * pb.Bc), slope(pb.Bc), vis(pb.Br),
        first(pb.Bc) {}
};

// Query head h: q, dO, lse, D, dq are this head's rows; k, v its key/value head's; dk, dv this
// head's own share of dK, dV (zero on entry).
template <class T>
using BackwardHeadFn = void (*)(const BackwardProblem& p, std::size_t h, const T* q, const T* k, const T* v,
                                const T* dO, const T* lse, const T* D, T* dq, T* dk, T* dv, BackwardTiles<T>& t);

}  // namespace attn::flash
