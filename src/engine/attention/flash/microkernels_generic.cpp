// The flash micro-kernels for the compiler's baseline instruction set (SSE2 on x86-64), and
// the run-time choice among the compiled sets.
#include "microkernels_prelude.hpp"

#include "attn/engine/core/error.hpp"

namespace attn::flash::generic {
#include "microkernels_impl.hpp"
// In double, one register of 2 lanes per key panel: 2-key panels let a teaching run (demo)
// cut even a 4-token sentence into 2 x 2 tiles. In float, 2 registers (8 keys) per panel.
template <class T>
using Set = KernelSet<xsimd::default_arch, T, 4, std::is_same_v<T, double> ? 1 : 2, 4, 2>;
}  // namespace attn::flash::generic

namespace attn::flash {

template <class T>
const Microkernels<T>& microkernels_generic() {
  static const Microkernels<T> set = generic::Set<T>::make("generic");
  return set;
}

template <class T>
const Microkernels<T>& best_microkernels() {
  static const Microkernels<T>& best = []() -> const Microkernels<T>& {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && microkernels_avx512<T>()) return *microkernels_avx512<T>();
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && microkernels_avx2<T>())
      return *microkernels_avx2<T>();
#endif
    return microkernels_generic<T>();
  }();
  return best;
}

template <class T>
const Microkernels<T>* microkernels_named(const std::string& isa) {
  if (isa == "generic") return &microkernels_generic<T>();
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  if (isa == "avx512" && __builtin_cpu_supports("avx512f")) return microkernels_avx512<T>();
  if (isa == "avx2" && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    return microkernels_avx2<T>();
#endif
  return nullptr;
}

template <class T>
const Microkernels<T>& microkernels_for(const std::string& isa) {
  const Microkernels<T>* chosen = isa.empty() ? &best_microkernels<T>() : microkernels_named<T>(isa);
  if (!chosen) throw InputError("isa: \"" + isa + "\" is not available on this CPU or build");
  return *chosen;
}

namespace {

template <class List>
std::size_t index_of(const List& offered, const std::string& name, const char* what, const char* isa) {
  if (name.empty()) return 0;
  std::string names;
  for (std::size_t i = 0; i < offered.size(); ++i) {
    if (offered[i].name == name) return i;
    names += (i ? ", " : "") + offered[i].name;
  }
  throw InputError(std::string(what) + ": \"" + name + "\" is not a blocking of the " + isa +
                   " kernels (they offer " + names + ")");
}

}  // namespace

template <class T>
std::size_t qk_blocking_index(const Microkernels<T>& base, const std::string& name) {
  return index_of(base.blockings->qk, name, "qk_kernel", base.isa);
}

template <class T>
std::size_t pv_blocking_index(const Microkernels<T>& base, const std::string& name) {
  return index_of(base.blockings->pv, name, "pv_kernel", base.isa);
}

template std::size_t qk_blocking_index<float>(const Microkernels<float>&, const std::string&);
template std::size_t pv_blocking_index<float>(const Microkernels<float>&, const std::string&);
template std::size_t qk_blocking_index<double>(const Microkernels<double>&, const std::string&);
template std::size_t pv_blocking_index<double>(const Microkernels<double>&, const std::string&);

template const Microkernels<float>& microkernels_for<float>(const std::string&);
template const Microkernels<double>& microkernels_for<double>(const std::string&);
template const Microkernels<float>* microkernels_named<float>(const std::string&);
template const Microkernels<double>* microkernels_named<double>(const std::string&);
template const Microkernels<float>& microkernels_generic<float>();
template const Microkernels<double>& microkernels_generic<double>();
template const Microkernels<float>& best_microkernels<float>();
template const Microkernels<double>& best_microkernels<double>();

}  // namespace attn::flash
