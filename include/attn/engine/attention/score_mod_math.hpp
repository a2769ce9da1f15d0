#pragma once
// The score modifiers of variant.hpp (ScoreMod: the soft-cap, then ALiBi) on one score, with
// their slope, as plain arithmetic the CUDA kernels run (src/engine/attention/cuda/) and the CPU
// tests check against ScoreMod itself (tests/test_score_mod_math.cpp): __host__ __device__ under
// nvcc, ordinary inline functions otherwise. ScoreMod keeps its optionals and per-head vector for
// the CPU backends; a kernel takes these few numbers instead.
//
// What a modifier sees is sdpa.cpp's x = scale * q.k, before the temperature (the tiled kernels
// fold 1 / T into their scale and undo it for the modifier): S = mod(x) / T.
//   soft-cap (Gemma 2):  x -> c tanh(x / c)           slope 1 - tanh^2(x / c)
//   ALiBi:               x -> x - m_h (p - j)         slope 1
// with p = i + Lk - Lq the query's position (bottom-right aligned) and j the key's.
#include "attn/engine/attention/tile_math.hpp"  // ATTN_HOST_DEVICE

namespace attn::tile {

ATTN_HOST_DEVICE inline float score_tanh(float x) { return tanhf(x); }
ATTN_HOST_DEVICE inline double score_tanh(double x) { return tanh(x); }

// A modified score and d score / dx, the factor by which the backward multiplies dS.
template <class T>
struct ModifiedScore {
  T score, slope;
};

// One head's modifiers: cap = c > 0 caps, 0 = no soft-cap; alibi_slope = m_h (0 with no ALiBi
// adds nothing). `distance` = p - j.
template <class T>
ATTN_HOST_DEVICE inline ModifiedScore<T> modify_score(T x, T cap, T alibi_slope, long distance) {
  ModifiedScore<T> m{x, T(1)};
  if (cap > T(0)) {  // first the cap, as ScoreMod::modifiers() lists it
    const T t = score_tanh(x / cap);
    m.score = cap * t;
    m.slope = T(1) - t * t;
  }
  if (alibi_slope != T(0)) m.score -= alibi_slope * T(distance);  // then the bias (slope 1)
  return m;
}

}  // namespace attn::tile
