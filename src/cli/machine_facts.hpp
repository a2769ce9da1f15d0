#pragma once
// The machine facts every measurement carries (CPU, flash ISA, BLAS core), and the start-up
// step that gives OpenBLAS the right core when it fell back to an old one.
#include <optional>
#include <string>

#include "attn/io/json_io.hpp"

namespace attn::cli {

// First thing in main: when OpenBLAS chose a core older than this CPU runs and the user has not
// set OPENBLAS_CORETYPE, switch it to the right one (use_openblas_core).
void give_openblas_the_right_core();

// {cpu, cpu_vectors, flash_isa, blas: {library, core, threads, ...}} for bench --json and doctor.
Json machine_json();

// A one-line warning when OpenBLAS runs a core slower than this CPU allows (the user's own
// OPENBLAS_CORETYPE, or an exec that failed); none when its core fits the CPU.
std::optional<std::string> blas_fallback_warning();

}  // namespace attn::cli
