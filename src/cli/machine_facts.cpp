#include "machine_facts.hpp"

#include <cstdlib>

#include "attn/engine/attention/flash.hpp"
#include "attn/engine/core/stored_matrix.hpp"
#include "attn/engine/platform/machine.hpp"
#include "tuning_file.hpp"

extern "C" char* openblas_get_corename(void);

namespace attn::cli {

void give_openblas_the_right_core() {
  if (std::getenv("OPENBLAS_CORETYPE")) return;  // the user's own choice
  // The tests stand in for a CPU that OpenBLAS does not know: ATTN_CLI_TEST_BLAS_CORE=Prescott
  // first puts OpenBLAS on that core, as Debian 12's does on an Intel Xeon of family 6, model 207.
  if (const char* pretend = std::getenv("ATTN_CLI_TEST_BLAS_CORE")) {
    use_openblas_core(pretend);
    unsetenv("OPENBLAS_CORETYPE");
  }
  const std::string chosen = openblas_get_corename();
  const std::optional<std::string> better = better_openblas_core(cpu_facts(), chosen);
  if (!better) return;
  setenv(kOpenblasChoseEnv, chosen.c_str(), 1);
  if (!use_openblas_core(*better)) unsetenv(kOpenblasChoseEnv);  // bench and doctor will warn
}

Json machine_json() {
  const CpuFacts cpu = cpu_facts();
  const BlasFacts blas = blas_facts();
  Json b = {{"library", blas.library}, {"core", blas.core}, {"threads", blas.threads},
            {"core_fits_cpu", !blas.better_core.has_value()}};
  if (!blas.coretype_env.empty()) b["openblas_coretype"] = blas.coretype_env;
  if (blas.set_by_attn) b["openblas_chose"] = blas.chosen_by_openblas;
  if (blas.better_core) b["better_core"] = *blas.better_core;
  return {{"cpu", cpu.model},
          {"cpu_vectors", std::string(vector_level_name(cpu.level))},
          {"flash_isa", flash_isa()},
          {"bf16_products", flash_bf16_isa()},
          {"weights_isa", stored_matmul_isa()},
          {"flash_tuning", tuning_json()},
          {"blas", b}};
}

std::optional<std::string> blas_fallback_warning() {
  const BlasFacts blas = blas_facts();
  if (!blas.better_core) return std::nullopt;
  const std::string cpu_vectors(vector_level_name(cpu_facts().level));
  std::string why = blas.coretype_env.empty() ? "OpenBLAS did not recognise this CPU"
                                              : "OPENBLAS_CORETYPE=" + blas.coretype_env + " is set";
  return "OpenBLAS runs its " + blas.core + " kernels (" + why + ") on a CPU with " + cpu_vectors +
         ": BLAS speeds and ratios against sgemm are below this machine's; OPENBLAS_CORETYPE=" +
         *blas.better_core + " would use it";
}

}  // namespace attn::cli
