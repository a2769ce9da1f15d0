#pragma once
// Where a number came from: the CPU, the ISA the flash kernels run, and the BLAS core.
//
// OpenBLAS built with DYNAMIC_ARCH (Debian's) picks a kernel set ("core") for the CPU when the
// library loads. A version that does not know a CPU falls back to an old core: Debian 12's
// OpenBLAS 0.3.21 calls an Intel Xeon of family 6, model 207 "Prescott" (SSE3) and runs sgemm
// at a fifth of the machine. It reads OPENBLAS_CORETYPE only while it initialises, before main;
// use_openblas_core() runs that initialisation again with the variable set, in the process.
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace attn {

// The widest x86-64 vector level a CPU (or an OpenBLAS core) uses, in order.
enum class VectorLevel { sse = 0, avx = 1, avx2 = 2, avx512 = 3 };

std::string_view vector_level_name(VectorLevel level);

struct CpuFacts {
  std::string model;  // the brand string cpuid reports, e.g. "AMD EPYC 9R45"
  VectorLevel level = VectorLevel::sse;
  bool avx512_bf16 = false;
};

// What this CPU reports through cpuid.
CpuFacts cpu_facts();

// The vector level of an OpenBLAS 0.3.x x86-64 core name (kernel/Makefile.L3 and the
// driver/others/dynamic.c core table); none for a name it does not know.
std::optional<VectorLevel> openblas_core_level(std::string_view core);

// The OpenBLAS core to ask for on a CPU, when the one it chose is slower than the CPU allows:
// "Cooperlake" (AVX-512 with BF16), "SkylakeX" (AVX-512) or "Haswell" (AVX2 + FMA); none when
// the chosen core already uses the CPU's widest vectors (or is a name this table cannot judge).
std::optional<std::string> better_openblas_core(const CpuFacts& cpu, std::string_view chosen);

struct BlasFacts {
  std::string library;  // openblas_get_config(), e.g. "OpenBLAS 0.3.21 NO_LAPACKE DYNAMIC_ARCH ..."
  std::string core;     // openblas_get_corename()
  int threads = 1;      // openblas_get_num_threads()
  std::string coretype_env;  // OPENBLAS_CORETYPE as this process saw it ("" when unset)
  bool set_by_attn = false;  // attn-cli replaced OpenBLAS's own choice at start-up
  std::string chosen_by_openblas;  // the core OpenBLAS took by itself, when attn-cli replaced it
  std::optional<std::string> better_core;  // set when `core` leaves this CPU's vectors unused
};

BlasFacts blas_facts();

// Makes OpenBLAS use `core` from now on, as if OPENBLAS_CORETYPE=core had been set before it
// loaded: sets the variable and re-runs OpenBLAS's own DYNAMIC_ARCH start-up
// (gotoblas_dynamic_quit, then gotoblas_dynamic_init, which reads it), found with dlsym. False
// when this BLAS has no such entry points (not OpenBLAS, or built without DYNAMIC_ARCH). It stops
// OpenBLAS's worker threads first (rest_openblas_threads). Call it before BLAS work is in flight
// on other threads; a core name OpenBLAS does not know makes it detect the CPU itself again.
bool use_openblas_core(const std::string& core);

// Stops OpenBLAS's worker threads now (its blas_thread_shutdown_, found with dlsym); OpenBLAS
// starts them again at its next threaded call, and openblas_set_num_threads starts them at once
// (set_openblas_threads does not). Its workers do not sleep when idle at first: they
// spin, calling sched_yield, for 2^28 cycles (OpenBLAS's THREAD_TIMEOUT, about 0.1 s) after
// they start and after each job. Started as the library loads, one of them took a core from
// the engine's own threads through the first tenth of a second of every command; on 2 cores
// GPT-2's 64-token forward pass ran at 83-111 GFLOP/s with it, 103-119 without. False when this
// BLAS has no such entry point (not OpenBLAS's pthreads build).
bool rest_openblas_threads();

// openblas_set_num_threads(threads) for OpenBLAS's next calls, leaving its workers stopped until
// one of them needs them (rest_openblas_threads).
void set_openblas_threads(std::size_t threads);

// Set (to the core OpenBLAS had chosen) when attn-cli replaced that core at start-up.
inline constexpr const char* kOpenblasChoseEnv = "ATTN_CLI_OPENBLAS_CHOSE";

}  // namespace attn
