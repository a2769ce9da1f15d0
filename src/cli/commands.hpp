#pragma once
// Each subcommand: an options struct, setup_<cmd>(CLI::App&) that declares its flags, and
// run_<cmd>(const Options&) that calls the library. main.cpp only wires them.
#include <CLI/CLI.hpp>

namespace attn::cli {

void setup_attend(CLI::App& app);
void setup_mha(CLI::App& app);
void setup_tokenize(CLI::App& app);
void setup_demo(CLI::App& app);
void setup_bench(CLI::App& app);
void setup_heatmap(CLI::App& app);
void setup_mask(CLI::App& app);
void setup_rope(CLI::App& app);
void setup_positional(CLI::App& app);
void setup_generate(CLI::App& app);
void setup_doctor(CLI::App& app);
void setup_tune(CLI::App& app);
void setup_train(CLI::App& app);
void setup_forward(CLI::App& app);
void setup_roofline(CLI::App& app);
void setup_flash(CLI::App& app);
void setup_report(CLI::App& app);

// Experiments that prove (or correct) the textbook.
void setup_variance(CLI::App& app);
void setup_temperature(CLI::App& app);
void setup_complexity(CLI::App& app);
void setup_explain(CLI::App& app);
void setup_pitfalls(CLI::App& app);
void setup_rank_collapse(CLI::App& app);
void setup_linear_attention(CLI::App& app);
void setup_attention_conv(CLI::App& app);
void setup_tradeoff(CLI::App& app);

}  // namespace attn::cli
