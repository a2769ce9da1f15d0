// attn-cli doctor: what this machine runs -- the CPU, the flash kernels' ISA, and the BLAS core
// every float64 reference, `--backend blas` and `bench --sgemm` depend on.
#include <cstdio>
#include <iostream>
#include <memory>

#include "attn/version.hpp"
#include "commands.hpp"
#include "common.hpp"
#include "machine_facts.hpp"
#include "tuning_file.hpp"

namespace attn::cli {
namespace {

// The compiler that built this binary: float32 results (a trained model's bytes) depend on its
// code generation as much as on the CPU's kernels.
std::string compiler_name() {
#if defined(__clang__)
  std::string name = "clang " __clang_version__;
#elif defined(__GNUC__)
  std::string name = "gcc " __VERSION__;
#else
  std::string name = "unknown compiler";
#endif
#if defined(__SANITIZE_ADDRESS__)
  name += ", sanitizers";
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
  name += ", sanitizers";
#endif
#endif
  return name;
}

}  // namespace


void setup_doctor(CLI::App& app) {
  auto json = std::make_shared<bool>(false);
  CLI::App* cmd = app.add_subcommand("doctor", "Say what this machine runs: CPU, flash ISA, BLAS core and threads");
  cmd->add_flag("--json", *json, "print JSON instead of lines");
  cmd->footer(R"(Every ratio bench prints is against this machine's OpenBLAS. OpenBLAS picks its kernels
("core") when it loads; when it does not know the CPU it falls back to an old core, and attn-cli
starts itself again once with OPENBLAS_CORETYPE set to the right one. A core you set yourself
is kept, with a warning here and in bench when it leaves the CPU's vectors unused.

"bf16 flash" is what multiplies `bench --dtype bf16`'s bfloat16 products: AMX tiles where the
CPU has them (Intel Xeon since Sapphire Rapids; Q K^T with a head dim that is not a multiple of
32 runs on AVX512_BF16), else AVX512_BF16's dot products, else plain C++.

"weights" is what reads a model's float32, bfloat16 or float16 matrices where they are stored, a
row of weights at a time (forward's and generate's few rows): AVX-512, else AVX2 with FMA and
F16C, else plain C++ ("generic", many times slower).

"flash tune" is the flash kernel's register blocking and query tile: the built-in, or what
`attn-cli tune` measured fastest on this machine (the same bits either way). "decode" is the
decode path's prefetch distance and the work from which decode and small prefill use a second
thread: the built-in until `attn-cli tune` has measured this machine's (again the same bits).

Examples:
  attn-cli doctor
  attn-cli doctor --json)");
  cmd->callback([json] {
    const Json m = machine_json();
    if (const auto warning = blas_fallback_warning()) warn(*warning);
    if (*json) {
      Json out = m;
      out["version"] = kVersion;
      out["compiler"] = compiler_name();
      std::cout << out.dump(2) << "\n";
      return;
    }
    const Json& b = m["blas"];
    std::printf("attn-cli %s (%s)\n", kVersion, compiler_name().c_str());
    std::printf("cpu:        %s (%s)\n", m["cpu"].get<std::string>().c_str(), m["cpu_vectors"].get<std::string>().c_str());
    std::printf("flash ISA:  %s\n", m["flash_isa"].get<std::string>().c_str());
    const std::string bf16 = m["bf16_products"];
    const char* how = bf16 == "amx-bf16"     ? " (AMX tiles' tdpbf16ps; Q K^T on vdpbf16ps when d is not a multiple of 32)"
                      : bf16 == "avx512bf16" ? " (AVX512_BF16's vdpbf16ps)"
                      : bf16 == "avx2"       ? " (no AVX512_BF16 or AMX here: float32 FMAs on widened values, "
                                               "half the memory, not fewer steps)"
                                             : " (no AVX512_BF16 or AMX here)";
    std::printf("bf16 flash: %s%s\n", bf16.c_str(), how);
    std::printf("weights:    %s (a model's matrices as stored, widened in registers: generate's steps)\n",
                m["weights_isa"].get<std::string>().c_str());
    const Json& t = m["flash_tuning"];
    std::printf("flash tune: %s\n", flash_tuning_line(t).c_str());
    std::printf("decode:     %s\n", decode_tuning_line(t).c_str());
    std::printf("BLAS:       %s\n", b["library"].get<std::string>().c_str());
    std::printf("BLAS core:  %s, %d thread(s)", b["core"].get<std::string>().c_str(), b["threads"].get<int>());
    if (b.contains("openblas_chose"))
      std::printf(" (set by attn-cli: OpenBLAS chose %s)", b["openblas_chose"].get<std::string>().c_str());
    else if (b.contains("openblas_coretype"))
      std::printf(" (OPENBLAS_CORETYPE=%s, yours)", b["openblas_coretype"].get<std::string>().c_str());
    std::printf("\n");
  });
}

}  // namespace attn::cli
