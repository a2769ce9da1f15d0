// The flash micro-kernels for AVX2 + FMA (compiled with -mavx2 -mfma; see CMakeLists.txt).
#include "microkernels_prelude.hpp"

#if defined(__AVX2__) && defined(__FMA__)
namespace attn::flash::avx2 {
#include "microkernels_impl.hpp"
// 16 ymm registers: Q K^T 4 x 3 (12 accumulators + 3 loads + 1 broadcast), P V 6 x 2 (12 + 2
// + 1). Q K^T at 4 x 3 is OpenBLAS's AVX2 sgemm shape (4 broadcasts and 3 loads to 12 FMAs);
// alternated in one process on a Zen 3 EPYC (192 x 768 scores, d = 64), it ran 2.1-3.9 %
// faster than 6 x 2, whose 6 broadcasts and 2 loads the P V product keeps: at 4 x 3 that
// product reads 64 columns of V in passes of 24, 24, 8 and 8, and ran a quarter slower.
template <class T>
using Set = KernelSet<xsimd::fma3<xsimd::avx2>, T, 4, 3, 6, 2>;
// The float blockings `attn-cli tune` times against those (each within the 16 registers).
template <std::size_t MR, std::size_t NR>
using Qk = KernelSet<xsimd::fma3<xsimd::avx2>, float, MR, NR, 6, 2>;
template <std::size_t MR, std::size_t NR>
using Pv = KernelSet<xsimd::fma3<xsimd::avx2>, float, 6, 2, MR, NR>;
}  // namespace attn::flash::avx2

template <class T>
const attn::flash::Microkernels<T>* attn::flash::microkernels_avx2() {
  static const Microkernels<T> set = [] {
    Microkernels<T> s = avx2::Set<T>::make("avx2");
    if constexpr (std::is_same_v<T, float>) {
      using namespace avx2;
      static const Blockings<float> offered{
          {Set<float>::qk_blocking(), Qk<6, 2>::qk_blocking(), Qk<4, 2>::qk_blocking()},
          {Set<float>::pv_blocking(), Pv<4, 2>::pv_blocking(), Pv<4, 3>::pv_blocking()}};
      s.blockings = &offered;
    }
    return s;
  }();
  return &set;
}
#else
template <class T>
const attn::flash::Microkernels<T>* attn::flash::microkernels_avx2() {
  return nullptr;
}
#endif

template const attn::flash::Microkernels<float>* attn::flash::microkernels_avx2<float>();
template const attn::flash::Microkernels<double>* attn::flash::microkernels_avx2<double>();
