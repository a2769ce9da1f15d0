#pragma once
// Headers microkernels_impl.hpp needs, included at file scope before the ISA namespace.
#include <xsimd/xsimd.hpp>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "attn/engine/attention/tile_math.hpp"
#include "core/transpose_simd.hpp"
#include "microkernels.hpp"
