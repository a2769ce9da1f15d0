#pragma once
// The flash kernel's buffers: std::vector with rows starting on a cache line, as the vector
// loads of the micro-kernels like.
#include <vector>

#include <xsimd/memory/xsimd_aligned_allocator.hpp>

namespace attn::flash {

template <class T>
using Aligned = std::vector<T, xsimd::aligned_allocator<T, 64>>;

}  // namespace attn::flash
