// attn-cli tune: time the float32 flash kernel's register blockings and query tile on this
// machine, keep the fastest for later commands (tuning_file.hpp).
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <functional>
#include <iostream>
#include <memory>
#include <thread>

#include "attn/engine/attention/flash.hpp"
#include "attn/lessons/measure/tune.hpp"
#include "attn/lessons/measure/tune_decode.hpp"
#include "budget.hpp"
#include "commands.hpp"
#include "common.hpp"
#include "machine_facts.hpp"
#include "tuning_file.hpp"

namespace attn::cli {
namespace {

struct TuneOptions {
  TuneConfig config;
  DecodeTuneConfig decode;
  std::string only = "all";  // all, flash (the blockings) or decode
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

Json tune_json(const TuneConfig& c, const TuneResult& r, bool all_same) {
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
              {"all_same_bits", all_same}};
  return out;
}

// Every candidate's times by stage, then what was chosen and why.
void print_tune_table(const TuneConfig& c, const TuneResult& r, bool all_same) {
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
}

// The decode stages' runs, against the time and memory budgets, before the first.
void check_decode_tune_budgets(const DecodeTuneConfig& c) {
  const double cache = 2.0 * 4 * double(c.heads) * double(c.kv) * double(c.head_dim);  // float32 K and V
  // The float32 cache, its bfloat16 copy, which the near-distance stage reads, and the bytes
  // read before each sample of the distance stages (as many as the float32 cache).
  require_memory(2.5 * cache + 64.0 * (1 << 20), "tune's decode cache (--decode-kv)", "lower --decode-kv or --heads");
  // A crossover's sample repeats its call for sample_ms, or runs it once when it is longer; a
  // distance's runs it once. The cache's read at 5 GB/s (a slow machine's memory) bounds the
  // longest call.
  const double call_s = std::max(c.sample_ms / 1000, cache / 5e9);
  // A distance's sample first reads as many bytes as the float32 cache, and each distance is
  // timed on one thread and on all: four calls' time (at most). The head-to-head times up to 8
  // more such pairs of samples (a changed prefetch: base and change on both caches; each near
  // distance: on its cache).
  const double distances = double(tune_prefetch_blocks().size() + tune_bf16_near_keys().size() +
                                  tune_f32_near_keys().size() + 8);
  const double samples = double(c.rounds + 1) * (4 * distances + 2 * (6 + 8) + 12);
  require_time(samples * call_s, "tune's decode stages with these --decode-kv, --heads and --rounds", "lower them");
}

Json decode_tune_json(const DecodeTuneConfig& c, const DecodeTuneResult& r) {
  auto distances = [](const std::vector<DistanceCandidate>& candidates, const char* field) {
    Json out = Json::array();
    for (const DistanceCandidate& p : candidates) {
      Json candidate = {{field, p.distance},          {"one_thread_ms", p.one_ms}, {"all_threads_ms", p.many_ms},
                        {"ms", p.ms},                  {"same_bits", p.same_bits}};
      if (std::string(field) != "prefetch_blocks") candidate["prefetch_blocks"] = p.prefetch_blocks;
      out.push_back(candidate);
    }
    return out;
  };
  Json compared = Json::array();
  for (const HeadToHead& h : r.compared) {
    Json base = Json::object();  // the base's settings that are not the built-in's
    if (!h.base_setting.empty()) base[h.base_setting] = h.base_value;
    compared.push_back({{"setting", h.setting}, {"builtin", h.builtin}, {"staged", h.staged}, {"base", base},
                        {"builtin_ms", h.builtin_ms}, {"staged_ms", h.staged_ms}, {"kept", h.kept}});
  }
  auto ladder = [](const std::vector<CrossoverPoint>& points) {
    Json out = Json::array();
    for (const CrossoverPoint& p : points)
      out.push_back({{"n", p.n}, {"work", p.work}, {"one_thread_ms", p.one_ms}, {"all_threads_ms", p.many_ms},
                     {"same_bits", p.same_bits}});
    return out;
  };
  return {{"shape", {{"kv", c.kv}, {"heads", c.heads}, {"head_dim", c.head_dim}}},
          {"threads", r.threads},
          {"score", "ms per call, the best of the rounds' samples; a distance's ms: one_thread_ms + all_threads_ms "
                    "(one_thread_ms alone on one thread), each sample one call after reading as many other bytes as "
                    "the float32 cache; head_to_head's builtin_ms and staged_ms: the sums over the shapes and thread "
                    "counts compared"},
          {"prefetch", distances(r.prefetch, "prefetch_blocks")},
          {"bf16_near", distances(r.bf16_near, "bf16_near_keys")},
          {"f32_near", distances(r.f32_near, "f32_near_keys")},
          {"decode_ladder", ladder(r.decode_ladder)},
          {"prefill_ladder", ladder(r.prefill_ladder)},
          {"builtin", decode_tuning_fields(r.builtin)},
          {"staged", decode_tuning_fields(r.staged)},
          {"chosen", decode_tuning_fields(r.chosen)},
          {"head_to_head", compared},
          {"builtin_ms", r.builtin_ms},
          {"staged_ms", r.staged_ms},
          {"all_same_bits", r.all_same_bits}};
}

void print_distances(const char* unit, const std::vector<DistanceCandidate>& candidates, std::size_t threads) {
  if (threads > 1) {
    std::printf("%13s %12s %12s %12s %9s\n", unit, "1 thread", (std::to_string(threads) + " threads").c_str(), "sum",
                "vs first");
    for (const DistanceCandidate& p : candidates)
      std::printf("%13zu %9.4f ms %9.4f ms %9.4f ms %9.3f%s\n", p.distance, p.one_ms, p.many_ms, p.ms,
                  p.ms / candidates.front().ms, p.same_bits ? "" : "  DIFFERENT BITS: never chosen");
    return;
  }
  std::printf("%13s %12s %9s\n", unit, "ms", "vs first");
  for (const DistanceCandidate& p : candidates)
    std::printf("%13zu %9.4f ms %9.3f%s\n", p.distance, p.ms, p.ms / candidates.front().ms,
                p.same_bits ? "" : "  DIFFERENT BITS: never chosen");
}

void print_crossover(const char* title, const char* unit, const std::vector<CrossoverPoint>& points,
                     std::size_t threads) {
  std::printf("\n%s\n%8s %14s %12s %12s %9s\n", title, "n", unit, "1 thread", (std::to_string(threads) + " threads").c_str(),
              "speed-up");
  for (const CrossoverPoint& p : points)
    std::printf("%8zu %14.0f %9.4f ms %9.4f ms %8.2fx\n", p.n, p.work, p.one_ms, p.many_ms, p.one_ms / p.many_ms);
}

// One line of the head-to-head: the change, its base, both times and what became of it.
void print_head_to_head(const HeadToHead& h, const DecodeTuneResult& r, double margin) {
  const std::string base = h.base_setting + " " + std::to_string(h.base_value);
  const std::string both = h.base_setting.empty() ? "" : " (both with " + base + ")";
  const std::string fate = h.kept               ? "kept"
                           : !r.all_same_bits   ? "the built-in stays (some settings changed the bits)"
                           : pick_faster({h.builtin_ms, h.staged_ms}, 0, margin) == 0
                               ? "the built-in stays (not faster by the margin)"
                               : "the built-in stays (faster only with " + base + ", which was not kept)";
  std::printf("  %s %zu instead of %zu%s: %.4f ms against %.4f ms (%.3fx as fast): %s\n", h.setting.c_str(), h.staged,
              h.builtin, both.c_str(), h.staged_ms, h.builtin_ms, h.builtin_ms / h.staged_ms, fate.c_str());
}

void print_decode_tune_table(const DecodeTuneConfig& c, const DecodeTuneResult& r) {
  std::printf("Tuning the decode path and small prefill on %s, %zu thread(s), H = %zu, d = %zu;\n"
              "each time is ms per call, the best of %zu samples. A distance's sample is one call after\n"
              "reading as many other bytes as the float32 cache, so that a cache larger than the CPU's last\n"
              "level comes from memory, as in a model (the other layers come between); a crossover's repeats\n"
              "back-to-back calls, as a generation loop makes them.\n\n",
              machine_json()["cpu"].get<std::string>().c_str(), r.threads, c.heads, c.head_dim, c.rounds);
  const double mib = 2.0 * 4 * double(c.heads * c.kv * c.head_dim) / (1 << 20);
  std::printf("Prefetch distance (one query row against %zu keys, %.1f MiB of float32 K and V):\n", c.kv, mib);
  print_distances("blocks ahead", r.prefetch, r.threads);
  const std::string with = " with " + std::to_string(r.staged.prefetch_blocks) + " block(s) ahead, the pick above";
  std::printf("\nA bfloat16 cache's rows asked into L1 ahead (the same cache in bfloat16, %.1f MiB),%s:\n", mib / 2,
              with.c_str());
  print_distances("keys ahead", r.bf16_near, r.threads);
  std::printf("\nThe float32 cache's rows asked into L2 ahead, a step of 16 keys at a time,%s:\n", with.c_str());
  print_distances("keys ahead", r.f32_near, r.threads);
  if (r.threads > 1) {
    print_crossover("Decode, one query row: 1 thread against all, by cache length", "(key,row) pairs",
                    r.decode_ladder, r.threads);
    print_crossover("Prefill, n x n: 1 thread against all, by sequence length", "multiply-adds", r.prefill_ladder,
                    r.threads);
  } else {
    std::printf("\nOne thread: no crossover to measure.\n");
  }
  std::printf("\nThe stages chose: %s.\n", decode_tuning_text(r.staged).c_str());
  if (r.staged == r.builtin) std::printf("That is the built-in: kept.\n");
  else if (r.compared.empty()) std::printf("It runs as the built-in on every shape timed: the built-in is kept.\n");
  else {
    std::printf("Each change against the built-in (a near distance: with the prefetch picked above), on the shapes\n"
                "where it runs differently, in %zu more rounds:\n",
                c.rounds);
    for (const HeadToHead& h : r.compared) print_head_to_head(h, r, c.margin);
    std::printf("Chosen: %s.\n", decode_tuning_text(r.chosen).c_str());
  }
  std::printf("%s\n", r.all_same_bits ? "Every setting gave the built-in's output and lse, bit for bit."
                                      : "Some settings changed the bits: a bug, please report it.");
}

// The stderr progress line, when stderr is a terminal.
std::function<void(std::size_t, std::size_t)> progress_line(const char* what) {
  if (!isatty(STDERR_FILENO)) return nullptr;
  return [what](std::size_t done, std::size_t total) {
    std::fprintf(stderr, "\rtune: %s %3.0f%%", what, 100.0 * double(done) / double(total));
    if (done == total) std::fprintf(stderr, "\r%*s\r", 40, "");
    std::fflush(stderr);
  };
}

void run_tune(TuneOptions o) {
  if (o.reset) {
    reset_tuning(o.json);
    return;
  }
  const bool flash = o.only != "decode", decode = o.only != "flash";
  o.decode.heads = o.config.heads, o.decode.head_dim = o.config.head_dim, o.decode.threads = o.config.threads;
  o.decode.rounds = o.config.rounds, o.decode.margin = o.config.margin;
  if (flash) check_tune_budgets(o.config);
  if (decode) check_decode_tune_budgets(o.decode);
  if (!o.no_save) tuning_file_for_writing();  // nowhere to save: say so before measuring

  o.config.progress = progress_line("blockings");
  o.decode.progress = progress_line("decode");
  std::optional<TuneResult> r;
  std::optional<DecodeTuneResult> d;
  if (flash) r = tune_flash(o.config);
  if (decode) d = tune_decode(o.decode);
  bool all_same = true;
  if (r)
    for (const TuneCandidate& t : r->candidates) all_same = all_same && t.same_bits;
  if (!o.no_save) save_flash_tuning(o.config, r ? &*r : nullptr, o.decode, d ? &*d : nullptr);
  const auto path = tuning_file_path();
  const std::optional<std::string> saved_to = o.no_save || !path ? std::nullopt : std::optional<std::string>(*path);
  if (o.json) {
    Json out = r ? tune_json(o.config, *r, all_same) : Json{{"machine", machine_json()}};
    if (d) out["decode"] = decode_tune_json(o.decode, *d);
    out["saved_to"] = saved_to ? Json(*saved_to) : Json(nullptr);
    std::cout << out.dump(2) << "\n";
    return;
  }
  if (r) print_tune_table(o.config, *r, all_same);
  if (r && d) std::printf("\n");
  if (d) print_decode_tune_table(o.decode, *d);
  if (saved_to)
    std::printf("Saved to %s: later commands on this machine run it (attn-cli tune --reset forgets it).\n",
                saved_to->c_str());
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
  cmd->add_option("--only", o->only, "what to measure: all, flash (the blockings) or decode (the decode path's "
                  "prefetch distances and the thread crossovers); the saved file keeps the other part")
      ->capture_default_str()->check(CLI::IsMember({"all", "flash", "decode"}));
  cmd->add_option("--decode-kv", o->decode.kv, "cache length the decode prefetch stages time")
      ->capture_default_str()->check(CLI::Range(256, 1 << 22));
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

Then the decode path (a few query rows against a long KV cache) and small prefill: how many
128-key blocks ahead decode prefetches K and V (timed against a --decode-kv cache), how many
keys ahead a bfloat16 cache's rows are asked into L1 (the same cache in bfloat16) and a
float32 cache's into L2 (the --decode-kv cache again), each distance on one thread and on all
(scored by the sum), each of its samples one call after reading as many other bytes as the
float32 cache (from memory, as in a model, where the cache is larger than the CPU's last
level); and from what work size a second thread pays for waking it, measured as a crossover:
each size of a ladder runs on one thread and on all, in alternating rounds, and all threads
are used from the smallest size where they win by the margin there and at every larger size.
Each setting these stages changed must then beat the built-in by the margin, alone, on the
shapes where that change runs differently. None of it changes a number either: decode cuts
its cache into chunks by its shape alone, never by its threads or tuning (the run compares
every output with the built-in's, byte for byte).

Examples:
  attn-cli tune
  attn-cli tune --threads 1 --n 1024 --no-save
  attn-cli tune --n 1024 --rounds 3 --json
  attn-cli tune --only decode --decode-kv 4096
  attn-cli tune --reset)");
  cmd->callback([o] { run_tune(*o); });
}

}  // namespace attn::cli
