#pragma once
// Private to stored_matmul: the order in which every kernel adds its 16 lanes, so that all give
// the same bits.
#include <cstddef>

namespace attn::detail {

inline constexpr std::size_t kStoredLanes = 16;

// ((l0 + l8) + (l4 + l12)) + ... : halves added pairwise, 8, 4, 2, 1.
inline float add_lanes(float* lanes) {
  for (std::size_t width = kStoredLanes / 2; width; width /= 2)
    for (std::size_t j = 0; j < width; ++j) lanes[j] += lanes[j + width];
  return lanes[0];
}

}  // namespace attn::detail
