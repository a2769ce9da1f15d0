// Which OpenBLAS core a CPU should run: the table behind attn-cli's start-up re-exec.
#include <doctest/doctest.h>

#include <cblas.h>
#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <vector>
#include <string>

#include "attn/engine/platform/machine.hpp"

using attn::CpuFacts;
using attn::VectorLevel;

namespace {
CpuFacts cpu(VectorLevel level, bool bf16 = false) { return {"test CPU", level, bf16}; }
}  // namespace

TEST_CASE("machine: OpenBLAS core names map to the vectors their kernels use") {
  CHECK(attn::openblas_core_level("Prescott") == VectorLevel::sse);
  CHECK(attn::openblas_core_level("Sandybridge") == VectorLevel::avx);
  CHECK(attn::openblas_core_level("Haswell") == VectorLevel::avx2);
  CHECK(attn::openblas_core_level("zen") == VectorLevel::avx2);  // case does not matter
  CHECK(attn::openblas_core_level("SkylakeX") == VectorLevel::avx512);
  CHECK(attn::openblas_core_level("Cooperlake") == VectorLevel::avx512);
  CHECK_FALSE(attn::openblas_core_level("NotACore").has_value());
}

TEST_CASE("machine: a core below the CPU's vectors gets the best one it runs, never a worse one") {
  // The Intel Xeon that Debian 12's OpenBLAS calls Prescott (AVX-512 with BF16).
  CHECK(attn::better_openblas_core(cpu(VectorLevel::avx512, true), "Prescott") == "Cooperlake");
  CHECK(attn::better_openblas_core(cpu(VectorLevel::avx512), "Haswell") == "SkylakeX");
  CHECK(attn::better_openblas_core(cpu(VectorLevel::avx2), "Core2") == "Haswell");
  CHECK(attn::better_openblas_core(cpu(VectorLevel::avx), "Nehalem") == "Sandybridge");
  // Already right, or better than the table would pick: left alone.
  CHECK_FALSE(attn::better_openblas_core(cpu(VectorLevel::avx2), "Zen").has_value());
  CHECK_FALSE(attn::better_openblas_core(cpu(VectorLevel::avx512, true), "SkylakeX").has_value());
  CHECK_FALSE(attn::better_openblas_core(cpu(VectorLevel::avx2), "SkylakeX").has_value());
  CHECK_FALSE(attn::better_openblas_core(cpu(VectorLevel::sse), "Prescott").has_value());
  // A name the table does not know is not judged (a newer OpenBLAS may know more cores).
  CHECK_FALSE(attn::better_openblas_core(cpu(VectorLevel::avx512), "Emeraldrapids").has_value());
}

TEST_CASE("machine: this process's facts are filled in") {
  const attn::BlasFacts blas = attn::blas_facts();
  CHECK(blas.library.rfind("OpenBLAS", 0) == 0);
  CHECK_FALSE(blas.core.empty());
  CHECK(blas.threads >= 1);
  CHECK_FALSE(attn::cpu_facts().model.empty());
}

TEST_CASE("machine: use_openblas_core switches OpenBLAS's kernels in this process, and back") {
  const std::string before = attn::blas_facts().core;
  REQUIRE(attn::use_openblas_core("Prescott"));
  CHECK(attn::blas_facts().core == "Prescott");
  REQUIRE(attn::use_openblas_core(before));
  CHECK(attn::blas_facts().core == before);
  unsetenv("OPENBLAS_CORETYPE");
}

extern "C" void openblas_set_num_threads(int);
extern "C" int openblas_get_num_threads(void);

TEST_CASE("machine: rest_openblas_threads stops OpenBLAS's workers, set_openblas_threads leaves them stopped, and the next threaded sgemm starts them and is right") {
  // OpenBLAS's own flag: its worker threads are running (1) or not (0).
  const auto* running = static_cast<const int*>(dlsym(RTLD_DEFAULT, "blas_server_avail"));
  REQUIRE(running != nullptr);
  const int threads = openblas_get_num_threads();
  openblas_set_num_threads(2);  // starts them when they are stopped
  CHECK(*running == 1);
  REQUIRE(attn::rest_openblas_threads());
  CHECK(*running == 0);
  attn::set_openblas_threads(2);  // leaves them stopped
  CHECK(*running == 0);
  const int n = 384;  // large enough for OpenBLAS to split it over its threads
  std::vector<float> a(std::size_t(n) * n), b(a.size()), c(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    a[i] = float(int(i * 7 % 13) - 6) / 8.0f;  // small integers over 8: exact products and sums
    b[i] = float(int(i * 5 % 11) - 5) / 8.0f;
  }
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(), n);
  CHECK(*running == 1);
  double worst = 0;
  for (int i = 0; i < n; i += 37)
    for (int j = 0; j < n; j += 41) {
      double want = 0;
      for (int k = 0; k < n; ++k) want += double(a[std::size_t(i) * n + k]) * double(b[std::size_t(k) * n + j]);
      worst = std::max(worst, std::fabs(want - double(c[std::size_t(i) * n + j])));
    }
  CHECK(worst == 0.0);
  openblas_set_num_threads(threads);
}
