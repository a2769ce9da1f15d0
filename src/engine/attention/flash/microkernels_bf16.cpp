// The bfloat16 products of the flash kernel (microkernels_bf16.hpp): the packing, shared by
// every ISA, the portable kernels, and the run-time choice.
#include "microkernels_bf16.hpp"

#include <algorithm>
#include <bit>

namespace attn::flash {
namespace {

float widen(std::uint16_t bits) { return std::bit_cast<float>(std::uint32_t(bits) << 16); }

// The sums of vdpbf16ps, in its order: for each pair, the odd element's product, then the even
// one's. Each product of two bfloat16s is exact in float32, so acc + a * b is one rounding,
// fused or not, as in the instruction.
void qk_portable(const std::uint16_t* q, std::size_t dp, std::size_t rows, const std::uint16_t* panels,
                 std::size_t npanels, float scale, float* s, std::size_t lds) {
  constexpr std::size_t PW = Bf16Kernels::kKeyPanel;
  for (std::size_t p = 0; p < npanels; ++p) {
    const std::uint16_t* kp = panels + p * dp * PW;
    for (std::size_t r = 0; r < rows; ++r) {
      float acc[PW] = {};
      for (std::size_t c = 0; c < dp / 2; ++c) {
        const float q0 = widen(q[r * dp + 2 * c]), q1 = widen(q[r * dp + 2 * c + 1]);
        const std::uint16_t* kc = kp + c * 2 * PW;
        for (std::size_t t = 0; t < PW; ++t) {
          acc[t] += q1 * widen(kc[2 * t + 1]);
          acc[t] += q0 * widen(kc[2 * t]);
        }
      }
      for (std::size_t t = 0; t < PW; ++t) s[r * lds + p * PW + t] = acc[t] * scale;
    }
  }
}

void pv_portable(const std::uint16_t* p, std::size_t ldp, std::size_t rows, std::size_t keys,
                 const std::uint16_t* v, std::size_t dvp, const float* alpha, float* o, std::size_t ldo) {
  for (std::size_t r = 0; r < rows; ++r) {
    float* orow = o + r * ldo;
    for (std::size_t c = 0; c < dvp; ++c) orow[c] *= alpha[r];  // Algorithm 1, line 12's rescale
    for (std::size_t k2 = 0; k2 < bf16_even(keys) / 2; ++k2) {
      const float p0 = widen(p[r * ldp + 2 * k2]), p1 = widen(p[r * ldp + 2 * k2 + 1]);
      const std::uint16_t* vk = v + k2 * 2 * dvp;
      for (std::size_t c = 0; c < dvp; ++c) {
        orow[c] += p1 * widen(vk[2 * c + 1]);
        orow[c] += p0 * widen(vk[2 * c]);
      }
    }
  }
}

}  // namespace

void pack_k_bf16(const std::uint16_t* k, std::size_t keys, std::size_t d, std::uint16_t* panels) {
  constexpr std::size_t PW = Bf16Kernels::kKeyPanel;
  const std::size_t dp = bf16_even(d), npanels = (keys + PW - 1) / PW;
  for (std::size_t p = 0; p < npanels; ++p)
    for (std::size_t c = 0; c < dp; ++c)  // dim c of each key goes to half c % 2 of pair c / 2
      for (std::size_t t = 0; t < PW; ++t) {
        const std::size_t key = p * PW + t;
        panels[(p * dp + c / 2 * 2) * PW + 2 * t + c % 2] = key < keys && c < d ? k[key * d + c] : 0;
      }
}

void pack_v_bf16(const std::uint16_t* v, std::size_t keys, std::size_t dv, std::size_t dvp, std::uint16_t* pairs) {
  for (std::size_t j = 0; j < bf16_even(keys); ++j)  // key j goes to half j % 2 of pair j / 2
    for (std::size_t c = 0; c < dvp; ++c)
      pairs[(j / 2 * dvp + c) * 2 + j % 2] = j < keys && c < dv ? v[j * dv + c] : 0;
}

const Bf16Kernels& bf16_kernels_portable() {
  static const Bf16Kernels portable{"portable", "1x64", &qk_portable, &pv_portable};
  return portable;
}

const Bf16Kernels& bf16_kernels_for(const std::string& isa) {
  if (isa.empty() || isa == "avx512") {
    if (const Bf16Kernels* tiles = bf16_kernels_amx()) return *tiles;
    if (const Bf16Kernels* fast = bf16_kernels_avx512()) return *fast;
  }
  if (isa.empty() || isa == "avx512" || isa == "avx2")
    if (const Bf16Kernels* wide = bf16_kernels_avx2()) return *wide;
  return bf16_kernels_portable();
}

}  // namespace attn::flash
