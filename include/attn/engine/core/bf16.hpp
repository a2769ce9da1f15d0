#pragma once
// bfloat16: the high 16 bits of a float32 (Kalamkar et al. 2019, "A Study of BFLOAT16 for Deep
// Learning Training"): float32's 8-bit exponent, so the same range, and 8 bits of significand
// instead of 24, so a relative rounding error of at most 2^-8. A KV cache stored in it is half
// the bytes that every decode step reads (flash.hpp, flash_decode_bf16).
#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "attn/engine/core/tensor.hpp"

namespace attn {

struct Bf16Tensor3 {
  std::array<std::size_t, 3> shape{};  // [heads, length, dim]
  std::vector<std::uint16_t> bits;     // row-major
};

// best: the CPU's AVX512_BF16 conversion (vcvtneps2bf16) where it has one, else the rule on
// AVX2's integer lanes where it has those; portable: the rule in plain C++. All give the same
// bits for every input (tests check it).
enum class Bf16Rounding { best, portable };

// out[i] = in[i] rounded to bfloat16: to nearest, ties to even; float32 denormals become zero
// of the same sign (as vcvtneps2bf16 does); a NaN stays a (quiet) NaN; past the largest
// bfloat16 rounds to infinity.
void round_to_bf16(const float* in, std::size_t n, std::uint16_t* out, Bf16Rounding how = Bf16Rounding::best);
// True when this CPU has AVX512_BF16 and the build has its conversion.
bool cpu_has_avx512_bf16();

Bf16Tensor3 to_bf16(const Tensor3& x);
Tensor3 from_bf16(const Bf16Tensor3& x);  // exact: bfloat16 -> float32 loses nothing

}  // namespace attn
