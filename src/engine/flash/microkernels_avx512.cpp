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
}  // namespace attn::flash::avx512

template <class T>
const attn::flash::Microkernels<T>* attn::flash::microkernels_avx512() {
  static const Microkernels<T> set = avx512::Set<T>::make("avx512");
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
