// float32 -> bfloat16 rounding (bf16.hpp), with AVX512_BF16 behind a run-time check.
#include "attn/engine/core/bf16.hpp"

#include <bit>
#include <cstring>

#include "attn/engine/platform/memory.hpp"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace attn {
namespace {

std::uint16_t round_one(float x) {
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(x);
  const std::uint32_t exponent = bits & 0x7f800000u, sign = bits & 0x80000000u;
  if (exponent == 0x7f800000u && (bits & 0x007fffffu))  // NaN: keep it a NaN, quiet
    return std::uint16_t((bits >> 16) | 0x0040u);
  if (exponent == 0) return std::uint16_t(sign >> 16);  // zero or denormal: a signed zero
  // Ties to even: add just under half of the dropped part, plus its last kept bit.
  return std::uint16_t((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
}

void round_portable(const float* in, std::size_t n, std::uint16_t* out) {
  for (std::size_t i = 0; i < n; ++i) out[i] = round_one(in[i]);
}

#if defined(__x86_64__) && defined(__GNUC__)
#define ATTN_HAVE_AVX2_ROUNDING 1
// round_one on 8 floats at a time, branch-free: the bf16 path rounds every P of a flash tile
// (Bf16Products::round_p), where the scalar loop was 9 % of a run on a Zen 3 EPYC.
__attribute__((target("avx2"))) void round_avx2(const float* in, std::size_t n, std::uint16_t* out) {
  const __m256i exp_mask = _mm256_set1_epi32(0x7f800000), mant_mask = _mm256_set1_epi32(0x007fffff);
  const __m256i sign_mask = _mm256_set1_epi32(int(0x80000000u)), zero = _mm256_setzero_si256();
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256i bits = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + i));
    const __m256i exponent = _mm256_and_si256(bits, exp_mask);
    const __m256i nan = _mm256_andnot_si256(_mm256_cmpeq_epi32(_mm256_and_si256(bits, mant_mask), zero),
                                            _mm256_cmpeq_epi32(exponent, exp_mask));
    const __m256i tiny = _mm256_cmpeq_epi32(exponent, zero);
    const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(bits, 16), _mm256_set1_epi32(1));
    __m256i r = _mm256_srli_epi32(_mm256_add_epi32(bits, _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7fff))), 16);
    r = _mm256_blendv_epi8(r, _mm256_srli_epi32(_mm256_and_si256(bits, sign_mask), 16), tiny);
    r = _mm256_blendv_epi8(r, _mm256_or_si256(_mm256_srli_epi32(bits, 16), _mm256_set1_epi32(0x0040)), nan);
    // 32-bit lanes of at most 0xffff to 16 bits: packus works within each 128-bit half.
    const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(r, r), 0x08);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), _mm256_castsi256_si128(packed));
  }
  round_portable(in + i, n - i, out + i);
}

bool cpu_has_avx2() {
  static const bool has = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2");
  }();
  return has;
}
#endif

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 10
#define ATTN_HAVE_AVX512_BF16 1
__attribute__((target("avx512f,avx512bf16"))) void round_avx512_bf16(const float* in, std::size_t n,
                                                                       std::uint16_t* out) {
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256bh h = _mm512_cvtneps_pbh(_mm512_loadu_ps(in + i));
    std::memcpy(out + i, &h, 32);
  }
  round_portable(in + i, n - i, out + i);
}
#endif

}  // namespace

bool cpu_has_avx512_bf16() {
#if defined(ATTN_HAVE_AVX512_BF16)
  static const bool has = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bf16");
  }();
  return has;
#else
  return false;
#endif
}

void round_to_bf16(const float* in, std::size_t n, std::uint16_t* out, Bf16Rounding how) {
#if defined(ATTN_HAVE_AVX512_BF16)
  if (how == Bf16Rounding::best && cpu_has_avx512_bf16()) return round_avx512_bf16(in, n, out);
#endif
#if defined(ATTN_HAVE_AVX2_ROUNDING)
  if (how == Bf16Rounding::best && cpu_has_avx2()) return round_avx2(in, n, out);
#endif
  (void)how;
  round_portable(in, n, out);
}

Bf16Tensor3 to_bf16(const Tensor3& x) {
  // A bfloat16 KV cache or a prefill's inputs: on 2 MiB pages where Linux offers them.
  Bf16Tensor3 r{{x.shape(0), x.shape(1), x.shape(2)}, huge_page_vector<std::uint16_t>(x.size())};
  round_to_bf16(x.data(), x.size(), r.bits.data());
  return r;
}

Tensor3 from_bf16(const Bf16Tensor3& x) {
  Tensor3 r = Tensor3::from_shape({x.shape[0], x.shape[1], x.shape[2]});
  for (std::size_t i = 0; i < x.bits.size(); ++i) r.data()[i] = std::bit_cast<float>(std::uint32_t(x.bits[i]) << 16);
  return r;
}

}  // namespace attn
