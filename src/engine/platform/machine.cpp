#include "attn/engine/platform/machine.hpp"

#include <cpuid.h>
#include <dlfcn.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <utility>

extern "C" {
char* openblas_get_corename(void);
char* openblas_get_config(void);
int openblas_get_num_threads(void);
void openblas_set_num_threads(int);
}

namespace attn {
namespace {

std::string env_or_empty(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

bool same_name(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

// cpuid's brand string (leaves 0x80000002..4), spaces trimmed.
std::string brand_string() {
  unsigned regs[12] = {};
  for (unsigned leaf = 0; leaf < 3; ++leaf)
    if (!__get_cpuid(0x80000002u + leaf, &regs[4 * leaf], &regs[4 * leaf + 1], &regs[4 * leaf + 2],
                     &regs[4 * leaf + 3]))
      return "unknown x86-64 CPU";
  char text[sizeof regs + 1] = {};
  std::memcpy(text, regs, sizeof regs);
  std::string s = text;
  s.erase(0, s.find_first_not_of(' '));
  s.erase(s.find_last_not_of(' ') + 1);
  return s;
}

}  // namespace

std::string_view vector_level_name(VectorLevel level) {
  switch (level) {
    case VectorLevel::avx512: return "AVX-512";
    case VectorLevel::avx2: return "AVX2";
    case VectorLevel::avx: return "AVX";
    case VectorLevel::sse: break;
  }
  return "SSE";
}

CpuFacts cpu_facts() {
  __builtin_cpu_init();
  CpuFacts cpu;
  cpu.model = brand_string();
  // OpenBLAS's SkylakeX kernels need F, BW, VL, DQ and CD; its Haswell ones AVX2 and FMA.
  const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
                      __builtin_cpu_supports("avx512cd");
  if (avx512) cpu.level = VectorLevel::avx512;
  else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) cpu.level = VectorLevel::avx2;
  else if (__builtin_cpu_supports("avx")) cpu.level = VectorLevel::avx;
  cpu.avx512_bf16 = avx512 && __builtin_cpu_supports("avx512bf16");
  return cpu;
}

std::optional<VectorLevel> openblas_core_level(std::string_view core) {
  static constexpr std::pair<const char*, VectorLevel> kCores[] = {
      {"Katmai", VectorLevel::sse},        {"Coppermine", VectorLevel::sse}, {"Northwood", VectorLevel::sse},
      {"Prescott", VectorLevel::sse},      {"Banias", VectorLevel::sse},     {"Atom", VectorLevel::sse},
      {"Core2", VectorLevel::sse},         {"Penryn", VectorLevel::sse},     {"Dunnington", VectorLevel::sse},
      {"Nehalem", VectorLevel::sse},       {"Athlon", VectorLevel::sse},     {"Opteron", VectorLevel::sse},
      {"Opteron_SSE3", VectorLevel::sse},  {"Barcelona", VectorLevel::sse},  {"Nano", VectorLevel::sse},
      {"Bobcat", VectorLevel::sse},        {"Sandybridge", VectorLevel::avx}, {"Bulldozer", VectorLevel::avx},
      {"Piledriver", VectorLevel::avx},    {"Steamroller", VectorLevel::avx}, {"Excavator", VectorLevel::avx2},
      {"Haswell", VectorLevel::avx2},      {"Zen", VectorLevel::avx2},       {"SkylakeX", VectorLevel::avx512},
      {"Cooperlake", VectorLevel::avx512}, {"SapphireRapids", VectorLevel::avx512},
  };
  for (const auto& [name, level] : kCores)
    if (same_name(core, name)) return level;
  return std::nullopt;
}

std::optional<std::string> better_openblas_core(const CpuFacts& cpu, std::string_view chosen) {
  const std::optional<VectorLevel> chosen_level = openblas_core_level(chosen);
  if (!chosen_level || *chosen_level >= cpu.level) return std::nullopt;
  switch (cpu.level) {
    case VectorLevel::avx512: return cpu.avx512_bf16 ? "Cooperlake" : "SkylakeX";
    case VectorLevel::avx2: return "Haswell";
    case VectorLevel::avx: return "Sandybridge";
    case VectorLevel::sse: break;
  }
  return std::nullopt;
}

bool use_openblas_core(const std::string& core) {
  using Entry = void (*)();
  const auto quit = reinterpret_cast<Entry>(dlsym(RTLD_DEFAULT, "gotoblas_dynamic_quit"));
  const auto init = reinterpret_cast<Entry>(dlsym(RTLD_DEFAULT, "gotoblas_dynamic_init"));
  if (!quit || !init) return false;
  setenv("OPENBLAS_CORETYPE", core.c_str(), 1);
  // OpenBLAS starts its worker threads as it loads, and each takes its buffer from the core's
  // memory routines as it starts: switching the core under a worker still starting crashed
  // about one command in 300 on an Intel Xeon of family 6, model 207 (a segmentation fault in
  // gotoblas_dynamic_init, a worker in blas_memory_alloc). Stopped first, they start again on
  // the new core at OpenBLAS's next threaded call.
  rest_openblas_threads();
  quit();
  init();
  return true;
}

void set_openblas_threads(std::size_t threads) {
  openblas_set_num_threads(int(threads));
  rest_openblas_threads();
}

bool rest_openblas_threads() {
  using Entry = int (*)();
  const auto shutdown = reinterpret_cast<Entry>(dlsym(RTLD_DEFAULT, "blas_thread_shutdown_"));
  if (!shutdown) return false;
  shutdown();
  return true;
}

BlasFacts blas_facts() {
  BlasFacts blas;
  blas.library = openblas_get_config();
  blas.core = openblas_get_corename();
  blas.threads = openblas_get_num_threads();
  blas.coretype_env = env_or_empty("OPENBLAS_CORETYPE");
  blas.chosen_by_openblas = env_or_empty(kOpenblasChoseEnv);
  blas.set_by_attn = !blas.chosen_by_openblas.empty();
  blas.better_core = better_openblas_core(cpu_facts(), blas.core);
  return blas;
}

}  // namespace attn
