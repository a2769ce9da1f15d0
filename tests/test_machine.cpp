// Which OpenBLAS core a CPU should run: the table behind attn-cli's start-up re-exec.
#include <doctest/doctest.h>

#include <cstdlib>
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
