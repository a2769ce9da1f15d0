#pragma once
// Private to the flash kernel: one row's online-softmax step (Algorithm 1 of arXiv 2205.14135,
// lines 10-11), shared by the tiled kernel and the decode path.
#include <algorithm>
#include <cmath>
#include <cstddef>

#include "attn/engine/attention/tile_math.hpp"
#include "microkernels.hpp"

namespace attn::flash {

// s[0, n) are the row's visible scores of this tile (masked keys already -inf), s[n, width) the
// keys it may not see. Moves the running max, adds to the running sum, turns s into P =
// exp2(s - m) with zeros past n (or all zeros while every key so far was masked), and returns
// the factor exp2(m_old - m_new) by which the row's accumulated output must be rescaled.
// lane_max (not null): the row's maxima per lane from Microkernels::qk over exactly s[0, n).
template <class T>
T online_row_step(const Microkernels<T>& mk, tile::RowState<T>& st, T* s, std::size_t n, std::size_t width,
                  const T* lane_max = nullptr) {
  const T tile_max = !n ? -T(INFINITY) : lane_max ? mk.lane_max_of(lane_max) : mk.row_max(s, n);
  const T alpha = tile::row_rescale(st, tile_max);
  if (std::isnan(st.m) || st.m == T(INFINITY)) {
    // The scores overflow (float32 scores of 1e30 squared): exp2(inf - inf) has no value, and
    // the vector exp2 would flush it to 0, as if every key were masked. P = NaN carries the
    // overflow into the output, where the caller reports it.
    std::fill(s, s + width, T(NAN));
    return T(NAN);
  }
  if (st.m == -T(INFINITY)) {
    std::fill(s, s + width, T(0));  // every key so far masked: contributes nothing yet
  } else {
    st.l += n ? mk.exp2_sum(s, n, st.m) : T(0);
    std::fill(s + n, s + width, T(0));
  }
  return alpha;
}

}  // namespace attn::flash
