// attn-cli tune: time the float32 flash kernel's register blockings and query tile on this
// machine, keep the fastest for later commands (tuning_file.hpp).
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>
#include <thread>

#include "attn/engine/attention/flash.hpp"
#include "attn/lessons/measure/tune.hpp"
#include "budget.hpp"
#include "commands.hpp"
#include "common.hpp"
#include "machine_facts.hpp"
#include "tuning_file.hpp"

namespace attn::cli {
namespace {

struct TuneOptions {
  TuneConfig config;
  bool json = false, no_save = false, reset = false;
};

std::string tuning_text(const FlashTuning& t) {
  return "Q K^T " + t.qk_kernel + ", P V " + t.pv_kernel + ", query tile " + std::to_string(t.block_q);
}

Json candidate_json(const TuneCandidate& c) {
  Json j = flash_tuning_fields(c.tuning);
  j.update({{"stage", c.stage}, {"min_ms", c.full_ms}, {"min_ms_causal", c.causal_ms}, {"score_ms", c.score_ms},
            {"same_bits", c.same_bits}});
  return j;
}

// --reset: forget the saved tuning, and say whether there was one.
void reset_tuning(bool json) {
  const auto path = tuning_file_path();
  const bool removed = remove_flash_tuning();
  if (json) {
    std::cout << Json{{"file", path ? Json(*path) : Json(nullptr)}, {"removed", removed}}.dump(2) << "\n";
    return;
  }
  std::printf("%s %s\n", removed ? "removed" : "nothing to remove at", path ? path->c_str() : "(no cache folder)");
}

// The runs tune_flash makes, against the time and memory budgets, before the first.
void check_tune_budgets(const TuneConfig& c) {
  const double threads = double(c.threads ? c.threads : std::max(1u, std::thread::hardware_concurrency()));
  const FlashBlockings offered = flash_blockings();
  const double runs = double(c.rounds + 1) * double(offered.qk.size() + offered.pv.size() + tune_block_qs().size() + 2);
  const double pass = attention_work(double(c.heads), double(c.n), double(c.n), double(c.head_dim)) * 1.5;
  // The float32 kernel's rate: at least 25x the slow-core estimate with AVX2 or AVX-512 (it runs at
  // 100-200 GFLOP/s a core there), 5x on the baseline ISA, as bench assumes for flash.
  const double rate = kFlopsPerSecond * (offered.isa == "generic" ? 5 : 25) * threads;
  require_time(runs * pass / rate, "tune with these --n, --heads, --head-dim and --rounds", "lower them");
  require_memory(4.0 * 5 * double(c.heads) * double(c.n) * double(c.head_dim), "the inputs and outputs",
                 "lower --n or --heads");
}

void print_tune_json(const TuneConfig& c, const TuneResult& r, bool all_same, const std::optional<std::string>& saved_to) {
  Json candidates = Json::array();
  for (const TuneCandidate& t : r.candidates) candidates.push_back(candidate_json(t));
  Json out = {{"isa", r.isa},
              {"machine", machine_json()},
              {"shape", {{"n", c.n}, {"heads", c.heads}, {"head_dim", c.head_dim}}},
              {"threads", r.threads},
              {"rounds", c.rounds},
              {"margin", c.margin},
              {"score", "min_ms + min_ms_causal: each the best of the rounds"},
              {"candidates", candidates},
              {"builtin", flash_tuning_fields(r.builtin)},
              {"staged", flash_tuning_fields(r.staged)},
              {"chosen", flash_tuning_fields(r.chosen)},
              {"builtin_ms", r.builtin_ms},
              {"staged_ms", r.staged_ms},
              {"all_same_bits", all_same},
              {"saved_to", saved_to ? Json(*saved_to) : Json(nullptr)}};
  std::cout << out.dump(2) << "\n";
}

// Every candidate's times by stage, then what was chosen and why.
void print_tune_table(const TuneConfig& c, const TuneResult& r, bool all_same, const std::optional<std::string>& saved_to) {
  std::printf("Tuning the float32 flash kernel (%s) on %s:\n"
              "n = %zu, H = %zu, d = %zu, %zu thread(s); each time is the best of %zu runs.\n\n",
              r.isa.c_str(), machine_json()["cpu"].get<std::string>().c_str(), c.n, c.heads, c.head_dim, r.threads,
              c.rounds);
  std::printf("%-10s %-6s %-6s %7s %12s %10s %10s %9s\n", "varies", "Q K^T", "P V", "q tile", "non-causal",
              "causal", "sum", "vs first");
  std::string stage;
  double first = 0;
  for (const TuneCandidate& t : r.candidates) {
    if (t.stage != stage) stage = t.stage, first = t.score_ms;
    std::printf("%-10s %-6s %-6s %7zu %9.2f ms %7.2f ms %7.2f ms %9.3f%s\n", t.stage.c_str(),
                t.tuning.qk_kernel.c_str(), t.tuning.pv_kernel.c_str(), t.tuning.block_q, t.full_ms, t.causal_ms,
                t.score_ms, t.score_ms / first, t.same_bits ? "" : "  DIFFERENT BITS: never chosen");
  }
  std::printf("\nA candidate replaces the first of its stage only when its sum is more than %.0f%% lower.\n",
              100 * c.margin);
  if (r.staged == r.builtin) {
    std::printf("Chosen: the built-in, %s.\n", tuning_text(r.chosen).c_str());
  } else {
    std::printf("The stages chose %s.\nAgainst the built-in (%s) in %zu more rounds: %.2f ms against %.2f ms "
                "(%.3fx as fast).\n",
                tuning_text(r.staged).c_str(), tuning_text(r.builtin).c_str(), c.rounds, r.staged_ms, r.builtin_ms,
                r.builtin_ms / r.staged_ms);
    std::printf("Chosen: %s.\n", r.chosen == r.builtin
                                      ? ("the built-in, " + tuning_text(r.chosen) + " (not faster by the margin)").c_str()
                                      : tuning_text(r.chosen).c_str());
  }
  std::printf("%s\n", all_same ? "Every candidate gave the built-in's output and lse, bit for bit."
                               : "Some candidates changed the bits: a bug, please report it.");
  if (saved_to)
    std::printf("Saved to %s: later commands on this machine run it (attn-cli tune --reset forgets it).\n",
                saved_to->c_str());
}

void run_tune(TuneOptions o) {
  if (o.reset) {
    reset_tuning(o.json);
    return;
  }
  const TuneConfig& c = o.config;
  check_tune_budgets(c);
  if (!o.no_save) tuning_file_for_writing();  // nowhere to save: say so before measuring

  if (isatty(STDERR_FILENO)) {
    o.config.progress = [](std::size_t done, std::size_t total) {
      std::fprintf(stderr, "\rtune: %3.0f%% of the runs", 100.0 * double(done) / double(total));
      if (done == total) std::fprintf(stderr, "\r%*s\r", 30, "");
      std::fflush(stderr);
    };
  }
  const TuneResult r = tune_flash(o.config);
  bool all_same = true;
  for (const TuneCandidate& t : r.candidates) all_same = all_same && t.same_bits;
  if (!o.no_save) save_flash_tuning(c, r);
  const auto path = tuning_file_path();
  const std::optional<std::string> saved_to = o.no_save || !path ? std::nullopt : std::optional<std::string>(*path);
  if (o.json) print_tune_json(c, r, all_same, saved_to);
  else print_tune_table(c, r, all_same, saved_to);
}

}  // namespace

void setup_tune(CLI::App& app) {
  auto o = std::make_shared<TuneOptions>();
  CLI::App* cmd = app.add_subcommand(
      "tune", "Time the flash kernel's register blockings and query tile here; keep the fastest");
  cmd->add_option("--n", o->config.n,
                  "sequence length timed (at least the key tile, " + std::to_string(flash_default_block_k()) +
                      ", so that every blocking can run)")->capture_default_str()->check(CLI::Range(16, 16384));
  cmd->add_option("--heads", o->config.heads, "heads H")->capture_default_str()->check(CLI::Range(1, 256));
  cmd->add_option("--head-dim", o->config.head_dim, "head dim d")->capture_default_str()->check(CLI::Range(1, 1024));
  cmd->add_option("--threads", o->config.threads, "threads (0 = all hardware threads)")
      ->capture_default_str()->check(CLI::Range(0, 1024));
  cmd->add_option("--rounds", o->config.rounds, "timed runs of each candidate (its best counts)")
      ->capture_default_str()->check(CLI::Range(1, 100));
  cmd->add_flag("--json", o->json, "print JSON instead of a table");
  cmd->add_flag("--no-save", o->no_save, "measure and report only; keep the saved tuning as it is");
  cmd->add_flag("--reset", o->reset, "forget the saved tuning (later commands run the built-in) and exit");
  add_memory_flag(cmd);
  add_time_flag(cmd);
  const std::string margin = std::to_string(int(std::lround(TuneConfig{}.margin * 100))) + "%";
  cmd->footer(R"(The flash kernel's inner loops keep a block of query rows x SIMD registers of keys (Q K^T) or
of output columns (P V) in registers. Which block is fastest depends on the core: how many FMA
units it has and how wide, how many loads it issues per cycle. tune times the blockings this
build offers and three query tiles, at one shape, non-causal and causal, in alternating rounds,
and keeps a candidate only when it is more than )" + margin + R"( faster than the choice so far; what
the stages chose must then beat the built-in by as much again, head to head. Every candidate
computes each output in the same order, so the results are the same bits: tuning changes
speed, never a number (the run checks it).

The choice is saved in $XDG_CACHE_HOME/attn-cli/flash-tuning.json (else ~/.cache/attn-cli/)
and used by later commands on the same CPU model and attn-cli version; `attn-cli doctor` shows
what runs. ATTN_CLI_TUNING=off runs the built-in blockings whatever the file says.

Examples:
  attn-cli tune
  attn-cli tune --threads 1 --n 1024 --no-save
  attn-cli tune --n 1024 --rounds 3 --json
  attn-cli tune --reset)");
  cmd->callback([o] { run_tune(*o); });
}

}  // namespace attn::cli
