#pragma once
// Every numeric flag of every subcommand read by io/numbers.hpp's checked parsers.
#include <CLI/CLI.hpp>

namespace attn::cli {

// Puts a checked reader in front of CLI11's own conversion on each FLOAT, INT and UINT option
// of `app` and its subcommands: CLI11 would take "nan" and "inf", clamp "-1" or "1e23" to
// 2^64 - 1 and read "010" as octal. The reader throws InputError naming the flag, and hands
// CLI11 the number in plain decimal, so both agree on the value. Call after the setup_*.
void check_number_flags(CLI::App& app);

}  // namespace attn::cli
