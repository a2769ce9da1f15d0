#pragma once
// The --model flag of demo, forward, generate and tokenize: a model folder, never an empty name
// (which would quietly mean "no model" to one command and "the current folder" to another).
#include <string>

#include <CLI/CLI.hpp>

namespace attn::cli {

CLI::Option* add_model_option(CLI::App* cmd, std::string& folder, const std::string& help);

}  // namespace attn::cli
