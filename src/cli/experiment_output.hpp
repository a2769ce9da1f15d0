#pragma once
// Output flags shared by the experiment subcommands (variance, temperature, complexity,
// explain, pitfalls): --format picks what stdout gets, --out FILE also writes the JSON.
#include <CLI/CLI.hpp>

#include <functional>
#include <string>
#include <vector>

#include "attn/json_io.hpp"
#include "attn/report_table.hpp"

namespace attn::cli {

struct OutputOptions {
  std::string format = "text";
  std::string out;  // empty = no file
};

// Adds --format (one of `formats`, the first is the default) and --out FILE.
void add_output_options(CLI::App* cmd, OutputOptions& opts, const std::vector<std::string>& formats);

// Writes the JSON to --out (atomically) when asked, then prints to stdout either the JSON
// (--format json) or what `text` renders for the table format chosen.
void emit(const OutputOptions& opts, const Json& json,
          const std::function<std::string(TableFormat)>& text);

}  // namespace attn::cli
