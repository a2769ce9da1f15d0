// The flash micro-kernels for the compiler's baseline instruction set (SSE2 on x86-64), and
// the run-time choice among the compiled sets.
#include "microkernels_prelude.hpp"

#include "attn/engine/error.hpp"

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

template <class T>
std::vector<std::string> qk_blocking_names(const Microkernels<T>& base) {
  std::vector<std::string> names;
  for (const QkBlocking<T>& b : base.blockings->qk) names.push_back(b.name);
  return names;
}

template <class T>
std::vector<std::string> pv_blocking_names(const Microkernels<T>& base) {
  std::vector<std::string> names;
  for (const PvBlocking<T>& b : base.blockings->pv) names.push_back(b.name);
  return names;
}

template <class T>
Microkernels<T> with_blockings(const Microkernels<T>& base, const std::string& qk, const std::string& pv) {
  Microkernels<T> mk = base;
  auto unknown = [&](const char* what, const std::string& name, const std::vector<std::string>& offered) {
    std::string list;
    for (const std::string& n : offered) list += (list.empty() ? "" : ", ") + n;
    return InputError(std::string(what) + ": \"" + name + "\" is not a blocking of the " + base.isa +
                      " kernels (they offer " + list + ")");
  };
  if (!qk.empty()) {
    const QkBlocking<T>* found = nullptr;
    for (const QkBlocking<T>& b : base.blockings->qk) found = b.name == qk ? &b : found;
    if (!found) throw unknown("qk_kernel", qk, qk_blocking_names(base));
    mk.qk_rows = found->rows, mk.key_panel = found->key_panel;
    mk.pack_k = found->pack_k, mk.qk = found->qk, mk.gemm = found->gemm;
  }
  if (!pv.empty()) {
    const PvBlocking<T>* found = nullptr;
    for (const PvBlocking<T>& b : base.blockings->pv) found = b.name == pv ? &b : found;
    if (!found) throw unknown("pv_kernel", pv, pv_blocking_names(base));
    mk.pv_rows = found->rows, mk.pv = found->pv, mk.pv_bf16 = found->pv_bf16;
  }
  return mk;
}

template std::vector<std::string> qk_blocking_names<float>(const Microkernels<float>&);
template std::vector<std::string> pv_blocking_names<float>(const Microkernels<float>&);
template std::vector<std::string> qk_blocking_names<double>(const Microkernels<double>&);
template std::vector<std::string> pv_blocking_names<double>(const Microkernels<double>&);
template Microkernels<float> with_blockings<float>(const Microkernels<float>&, const std::string&, const std::string&);
template Microkernels<double> with_blockings<double>(const Microkernels<double>&, const std::string&,
                                                     const std::string&);
template const Microkernels<float>& microkernels_for<float>(const std::string&);
template const Microkernels<double>& microkernels_for<double>(const std::string&);
template const Microkernels<float>* microkernels_named<float>(const std::string&);
template const Microkernels<double>* microkernels_named<double>(const std::string&);
template const Microkernels<float>& microkernels_generic<float>();
template const Microkernels<double>& microkernels_generic<double>();
template const Microkernels<float>& best_microkernels<float>();
template const Microkernels<double>& best_microkernels<double>();

}  // namespace attn::flash
