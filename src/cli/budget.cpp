#include "budget.hpp"

#include <unistd.h>

#include <cmath>
#include <cstdio>

#include "attn/engine/core/error.hpp"
#include "attn/io/numbers.hpp"
#include "attn/lessons/demo/demo.hpp"

namespace attn::cli {
namespace {

// Half of the physical memory: room for the rest of the machine and for what the estimates
// leave out (the allocator, the JSON text of the inputs).
double default_memory() {
  return 0.5 * static_cast<double>(::sysconf(_SC_PHYS_PAGES)) * static_cast<double>(::sysconf(_SC_PAGE_SIZE));
}

struct Budget {
  double memory = default_memory();
  double seconds = 60;  // a teaching run answers within a minute
};

Budget& budget() {
  static Budget b;
  return b;
}

std::string seconds_text(double s) {
  char buf[48];
  if (s < 120) std::snprintf(buf, sizeof buf, "%.0f s", s);
  else if (s < 7200) std::snprintf(buf, sizeof buf, "%.0f min", s / 60);
  else std::snprintf(buf, sizeof buf, "%.2g h", s / 3600);
  return buf;
}

}  // namespace

std::string bytes_text(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  std::size_t u = 0;
  while (bytes >= 1024 && u + 1 < std::size(units)) {
    bytes /= 1024;
    ++u;
  }
  char buf[48];
  std::snprintf(buf, sizeof buf, bytes < 10 ? "%.1f %s" : "%.0f %s", bytes, units[u]);
  return buf;
}

void add_memory_flag(CLI::App* cmd) {
  cmd->add_option_function<std::string>(
         "--max-memory", [](const std::string& text) { budget().memory = double(parse_size(text, "--max-memory")); },
         "refuse runs estimated to need more memory (e.g. 8G, 512M; default: half of this machine's, " +
             bytes_text(default_memory()) + ")")
      ->type_name("SIZE");
}

void add_time_flag(CLI::App* cmd) {
  cmd->add_option_function<double>(
         "--max-seconds", [](double s) { budget().seconds = s; },
         "refuse runs estimated to take longer (default 60; the estimate assumes one slow core)")
      ->check(CLI::Range(1.0, 1e6));
}

bool fits_memory(double bytes) { return bytes <= budget().memory; }

void require_memory(double bytes, const std::string& what, const std::string& hint) {
  if (fits_memory(bytes)) return;
  throw InputError(what + " would need about " + bytes_text(bytes) + ", over the memory budget of " +
                   bytes_text(budget().memory) + " (--max-memory); " + hint);
}

void require_time(double seconds, const std::string& what, const std::string& hint) {
  if (seconds <= budget().seconds) return;
  throw InputError(what + " would take about " + seconds_text(seconds) + ", over the time budget of " +
                   seconds_text(budget().seconds) + " (--max-seconds); " + hint);
}

// What a demo of this size costs, refused up front past the budgets above rather than
// after minutes and gigabytes. Per [L, L] map: the float64 weights and scores with their
// copies, the JSON text of every number, and a picture's cells; per token: the D-wide
// embeddings, projections and outputs. The per-cell rates were measured (peak memory, time)
// on demos of 200 to 800 tokens (about 200 B and 3.4 us per cell) and rounded up.
void require_demo_budgets(const DemoSize& s) {
  const double L = double(s.tokens), D = double(s.d_model), maps = double(s.maps);
  constexpr double kBytesPerCell = 240, kSecondsPerCell = 4e-6;
  const double bytes = maps * L * L * kBytesPerCell + L * D * 8 * 64;
  const double flops = 8 * L * D * D * 4 + attention_work(maps, L, L, double(s.head_dim));
  const std::string what = "demo of " + std::to_string(s.tokens) + " tokens with " + std::to_string(s.maps) +
                           " attention maps (d_model " + std::to_string(s.d_model) + ")";
  require_memory(bytes, what, "use a shorter sentence, or fewer --heads");
  require_time(flops / kFlopsPerSecond + maps * L * L * kSecondsPerCell, what,
               "use a shorter sentence, a smaller --d-model or fewer --heads");
}

}  // namespace attn::cli
