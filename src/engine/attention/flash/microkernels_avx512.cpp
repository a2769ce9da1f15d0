// The flash micro-kernels for AVX-512 (compiled with -mavx512f etc.; see CMakeLists.txt).
#include "microkernels_prelude.hpp"

#if defined(__AVX512F__)
namespace attn::flash::avx512 {
#include "microkernels_impl.hpp"
// 32 zmm registers: Q K^T 6 x 4 (24 accumulators: 6 query rows x 64 keys), P V 6 x 4 (24
// accumulators: 6 query rows x 64 output columns). Measured on a Xeon with AVX-512, 6 x 4
// beat 8 x 2 and 8 x 3 for Q K^T (bench --n 4096 --heads 8, thread CPU time).
template <class T>
using Set = KernelSet<xsimd::avx512f, T, 6, 4, 6, 4>;
// The float blockings `attn-cli tune` times against those on a new CPU: more rows (fewer K
// loads per FMA, more broadcasts) or fewer (fewer accumulators in flight). On a Zen 5 EPYC at
// n = 4096, H = 8, d = 64 (one thread), Q K^T 8 x 3 took 9 % longer than 6 x 4, 12 x 2 36 %;
// P V 4 x 4 the same, 12 x 2 26 % longer.
template <std::size_t MR, std::size_t NR>
using Qk = KernelSet<xsimd::avx512f, float, MR, NR, 6, 4>;
template <std::size_t MR, std::size_t NR>
using Pv = KernelSet<xsimd::avx512f, float, 6, 4, MR, NR>;
}  // namespace attn::flash::avx512

template <class T>
const attn::flash::Microkernels<T>* attn::flash::microkernels_avx512() {
  static const Microkernels<T> set = [] {
    Microkernels<T> s = avx512::Set<T>::make("avx512");
    if constexpr (std::is_same_v<T, float>) {
      using namespace avx512;
      static const Blockings<float> offered{
          {Set<float>::qk_blocking(), Qk<8, 3>::qk_blocking(), Qk<4, 4>::qk_blocking(), Qk<12, 2>::qk_blocking()},
          {Set<float>::pv_blocking(), Pv<4, 4>::pv_blocking(), Pv<12, 2>::pv_blocking()}};
      s.blockings = &offered;
    }
    return s;
  }();
  return &set;
}
#else
template <class T>
const attn::flash::Microkernels<T>* attn::flash::microkernels_avx512() {
  return nullptr;
}
#endif

template const attn::flash::Microkernels<float>* attn::flash::microkernels_avx512<float>();
template const attn::flash::Microkernels<double>* attn::flash::microkernels_avx512<double>();
