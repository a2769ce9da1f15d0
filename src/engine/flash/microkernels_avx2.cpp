// The flash micro-kernels for AVX2 + FMA (compiled with -mavx2 -mfma; see CMakeLists.txt).
#include "microkernels_prelude.hpp"

#if defined(__AVX2__) && defined(__FMA__)
namespace attn::flash::avx2 {
#include "microkernels_impl.hpp"
// 16 ymm registers: Q K^T 6 x 2 (12 accumulators + 2 loads + 1 broadcast), P V 6 x 2.
template <class T>
using Set = KernelSet<xsimd::fma3<xsimd::avx2>, T, 6, 2, 6, 2>;
}  // namespace attn::flash::avx2

template <class T>
const attn::flash::Microkernels<T>* attn::flash::microkernels_avx2() {
  static const Microkernels<T> set = avx2::Set<T>::make("avx2");
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
