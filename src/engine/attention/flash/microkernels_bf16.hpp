#pragma once
// Private to the flash kernel: the two products of FlashPrecision::bfloat16 (flash.hpp). Q, K,
// V and P are bfloat16; the product of two bfloat16s is exact in float32, and every sum is a
// float32 sum. AMX's tdpbf16ps does 8,192 products per instruction (microkernels_bf16_amx.cpp,
// where the CPU has the tiles); AVX512_BF16's vdpbf16ps does 32, twice the multiply-adds of a
// float32 FMA (microkernels_bf16_avx512.cpp, where the CPU has it, though not at a float32
// FMA's rate on every CPU); AVX2 has no bfloat16 product, so microkernels_bf16_avx2.cpp widens
// to float32 in registers and does the float32 kernels' FMAs (memory saved, not time); the
// portable kernels are the same sums in plain C++ (microkernels_bf16.cpp). The online softmax
// between the products (row max, exp2, sums, rescale) stays in float32, on the float
// micro-kernels.
//
// vdpbf16ps adds, to float32 lane i, a[2i+1] b[2i+1] and then a[2i] b[2i]: each operand holds
// pairs of consecutive elements of the reduced dimension. So each is stored in pairs along it:
//   Q   [rows][dp]                 d padded with a zero to even dp; one pair is a 32-bit
//                                  broadcast (Q K^T reduces over d)
//   K   [Lk/64][dp/2][64][2]       panels of 64 keys: for each pair of dims, that pair of each
//                                  key; one 512-bit register holds 16 keys' pairs
//   P   [rows][Bk]                 a row as it lies: pairs of consecutive keys (P V reduces
//                                  over the keys), zero past the keys a row sees
//   V   [ceil(Lk/2)][dvp][2]       for each pair of keys, that pair of each output column
// Register blocking (AVX-512): Q K^T 6 rows x 4 registers (64 keys), P V 6 rows x 4 registers
// (64 output columns), as the float32 kernels (microkernels_impl.hpp), with half the steps.
#include <cstddef>
#include <cstdint>
#include <string>

namespace attn::flash {

struct Bf16Kernels {
  static constexpr std::size_t kKeyPanel = 64;  // keys per packed K panel
  static constexpr std::size_t kRows = 6;       // rows of both products: callers pass a multiple
  static constexpr std::size_t kColumns = 16;   // dvp is a multiple of this
  const char* isa;                              // "amx-bf16", "avx512bf16", "avx2" or "portable"
  // The register blocking of both products, as flash_tiling names it: rows x registers of
  // accumulators ("6x4" with AVX-512's, "6x2" with AVX2's), AMX's "32x32" of four 16 x 16
  // tiles, or the portable kernels' "1x64" (one row at a time, a K panel's 64 keys). AMX's
  // Q K^T runs the AVX-512 6x4 kernel where the padded head dim is not a multiple of 32: the
  // name is the set's, not every call's.
  const char* blocking;

  // S[rows, npanels * 64] = scale * Q K^T for Q [rows][dp] and npanels K panels.
  void (*qk)(const std::uint16_t* q, std::size_t dp, std::size_t rows, const std::uint16_t* panels,
             std::size_t npanels, float scale, float* s, std::size_t lds);
  // O[rows, dvp] = alpha[r] O[r, :] + P[rows, keys] V[keys, dvp]; P [rows][ldp] with a zero at
  // index `keys` when keys is odd; V the pairs from key pair 0 of the tile on.
  void (*pv)(const std::uint16_t* p, std::size_t ldp, std::size_t rows, std::size_t keys,
             const std::uint16_t* v, std::size_t dvp, const float* alpha, float* o, std::size_t ldo);
};

inline std::size_t bf16_even(std::size_t n) { return (n + 1) / 2 * 2; }

// k [keys, d] bfloat16 bits -> panels (zero past `keys` and at the padding dim); the buffer
// holds ceil(keys / 64) * 64 * bf16_even(d) elements.
void pack_k_bf16(const std::uint16_t* k, std::size_t keys, std::size_t d, std::uint16_t* panels);
// v [keys, dv] -> key pairs [bf16_even(keys) / 2][dvp][2] (zero past keys and dv).
void pack_v_bf16(const std::uint16_t* v, std::size_t keys, std::size_t dv, std::size_t dvp, std::uint16_t* pairs);

const Bf16Kernels& bf16_kernels_portable();
const Bf16Kernels* bf16_kernels_avx512();  // null when not compiled in or this CPU lacks AVX512_BF16
// AMX tiles (microkernels_bf16_amx.cpp): null when not compiled in, or the CPU lacks AMX-BF16
// or AVX512_BF16, or the kernel does not let this process use the tiles.
const Bf16Kernels* bf16_kernels_amx();
// Float32 FMAs on widened values (microkernels_bf16_avx2.cpp): null when not compiled in or
// this CPU lacks AVX2 or FMA.
const Bf16Kernels* bf16_kernels_avx2();
// FlashOptions::isa: "" or "avx512" = the AMX kernels where the CPU has them, else the
// AVX512_BF16 ones where it has those, else (and for "avx2") the AVX2 ones where it has those;
// any other ISA = the portable kernels (so the float kernels' ISA choice also picks these).
const Bf16Kernels& bf16_kernels_for(const std::string& isa);

}  // namespace attn::flash
