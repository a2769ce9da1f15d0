#pragma once
// The limits a run must fit in, checked before any large allocation or long computation:
// memory (--max-memory, default a fraction of this machine's RAM) and time (--max-seconds).
// A run past either is refused up front with one line that names its estimated cost, instead
// of computing for minutes and then running out of memory.
#include <CLI/CLI.hpp>

#include <string>

#include "attn/lessons/demo/demo.hpp"

namespace attn::cli {

// Adds --max-memory SIZE ("8G", "512M", bytes) to a subcommand that allocates by input size.
void add_memory_flag(CLI::App* cmd);
// Adds --max-seconds S to a subcommand whose work grows with its flags.
void add_time_flag(CLI::App* cmd);

// InputError unless `bytes` fits the memory budget. `what` names the allocation ("the weights
// [1, 160000, 160000]"), `hint` what to change ("try --no-weights").
void require_memory(double bytes, const std::string& what, const std::string& hint);

bool fits_memory(double bytes);

// InputError unless `seconds` (an estimate from the rates below) fits the time budget.
void require_time(double seconds, const std::string& what, const std::string& hint);

// Conservative single-core rates the estimates divide by (this machine may well be faster).
inline constexpr double kFlopsPerSecond = 2e9;         // attention, matmuls
inline constexpr double kRandomDrawsPerSecond = 3e7;   // N(0,1) draws and their products

// The FLOPs the estimates count for one attention pass: FlashAttention's 4 H Lq Lk d, plus the
// softmax's exp and max on each score (about 20 FLOPs' worth): with d = 1 the exps are the work.
inline double attention_work(double heads, double Lq, double Lk, double d) { return 4.0 * heads * Lq * Lk * (d + 5.0); }

// InputError unless a demo of this size (lessons/demo.hpp: tokens, width, attention maps) fits
// both budgets: demo, and report on a model folder, which runs the demo.
void require_demo_budgets(const DemoSize& size);

// "1.5 GiB", "954 GiB", "12 MiB".
std::string bytes_text(double bytes);

}  // namespace attn::cli
