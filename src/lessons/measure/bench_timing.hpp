#pragma once
// Private to attn::lessons: timing and memory measurement shared by the benchmarks
// (bench.cpp: prefill and backward; bench_decode.cpp: decode).
#include <time.h>  // like any C library header, defines __GLIBC__ for the test below
#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <string>
#include <vector>

#include <xtensor/xmath.hpp>

#include "attn/engine/attention/flash.hpp"
#include "attn/engine/core/random.hpp"
#include "attn/engine/core/tensor.hpp"
#include "attn/engine/platform/memory.hpp"

namespace attn::bench_detail {

using Clock = std::chrono::steady_clock;

inline double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// Linux keeps the peak resident set in VmHWM; writing "5" to clear_refs resets it, so each
// run's peak is its own and not that of an earlier, larger run.
inline void reset_peak_rss() {
  std::ofstream("/proc/self/clear_refs") << "5";
}

// "VmHWM:" (peak) or "VmRSS:" (now) from /proc/self/status, in bytes.
inline std::size_t rss_field(const std::string& field) {
  std::ifstream status("/proc/self/status");
  std::string key;
  while (status >> key) {
    if (key == field) {
      std::size_t kib = 0;
      status >> kib;
      return kib * 1024;
    }
    status.ignore(1 << 20, '\n');
  }
  return 0;
}

// Hands memory kept for reuse back to the kernel: the flash kernel's scratch stock, and the C
// library's free blocks (attn-cli keeps those too, memory_policy.hpp). Before a benchmark
// measures memory: otherwise a run could reuse an earlier run's pages, and its peak and "+MiB"
// would count or leave out the wrong ones.
inline void hand_back_kept_memory() {
  flash_release_scratch();
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
}

// The process's size before a run, kept memory handed back first.
inline std::size_t baseline_rss() {
  hand_back_kept_memory();
  return rss_field("VmRSS:");
}

// On 2 MiB pages where Linux offers them, as a production engine would hold a KV cache: with 4
// KiB pages, a decode step over a 64 MiB cache walks the page tables every 4 KiB of each stream;
// 2 MiB pages took 9-21 % off its time on the Intel Xeon of docs/performance.md.
inline Tensor3 random_tensor(Rng& rng, std::size_t a, std::size_t b, std::size_t c) {
  Tensor3 t = Tensor3::from_shape({a, b, c});  // not yet written: the advice still applies
  prefer_huge_pages(t.data(), t.size() * sizeof(float));
  for (float& x : t) x = float(rng.normal());
  return t;
}

inline double thread_cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) * 1e3 + double(ts.tv_nsec) * 1e-6;
}

struct Timings {
  std::vector<double> wall_ms;   // sorted
  double min_thread_cpu_ms = 0;  // CPU time of the calling thread: immune to other processes
};

// The middle value, the upper of the two middle ones for an even count (every bench column's
// median).
inline double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// The same for a ratio against a yardstick (higher is better): the lower of the two middle ones,
// the cautious side, as median_of's upper one is for a time.
inline double lower_middle(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[(v.size() - 1) / 2];
}

template <class F>
Timings time_runs(std::size_t repeat, F&& f) {
  Timings t;
  t.min_thread_cpu_ms = INFINITY;
  for (std::size_t r = 0; r < repeat; ++r) {
    const auto t0 = Clock::now();
    const double c0 = thread_cpu_ms();
    f();
    t.min_thread_cpu_ms = std::min(t.min_thread_cpu_ms, thread_cpu_ms() - c0);
    t.wall_ms.push_back(ms_since(t0));
  }
  std::sort(t.wall_ms.begin(), t.wall_ms.end());
  return t;
}

inline double max_abs_diff(const Tensor3& a, const Tensor3& b) { return double(xt::amax(xt::abs(a - b))()); }

}  // namespace attn::bench_detail
