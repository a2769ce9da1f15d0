// attn-cli bench: time naive vs flash attention on seeded random inputs.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>

#include "attn/lessons/measure/bench.hpp"
#include "attn/lessons/measure/bench_decode.hpp"
#include "attn/lessons/measure/bench_forward.hpp"
#include "attn/lessons/measure/bench_train.hpp"
#include "attn/engine/attention/cuda.hpp"
#include "attn/engine/core/error.hpp"
#include "attn/engine/attention/flash.hpp"
#include "attn/io/json_io.hpp"
#include "attn/lessons/measure/memory_policy.hpp"
#include "budget.hpp"
#include "commands.hpp"
#include "common.hpp"
#include "machine_facts.hpp"
#include "tuning_file.hpp"

namespace attn::cli {
namespace {

constexpr std::size_t kSgemmRepeat = 3;  // sgemm_rate's timed runs after its first

struct BenchOptions {
  std::vector<std::string> backends{"naive", "flash"};
  std::vector<std::size_t> n{512, 1024};
  std::vector<std::size_t> threads{1};
  std::size_t heads = 8, head_dim = 64, repeat = 3, block_q = 0, block_k = 0, sgemm_n = 0;
  bool causal = false, json = false, no_check = false, backward = false, parts = false;
  // --mode decode: q query rows against a KV cache of each length in kv.
  std::string mode = "prefill", kv_dtype = "f32", dtype = "f32";
  std::vector<std::size_t> kv{1024, 16384};
  std::size_t queries = 1, kv_heads = 0;  // 0: as many as --heads
  std::size_t steps = 100;                 // --mode train
  std::string model;                       // --mode forward: a model folder
  bool backend_given = false;
};

// The GPU a cuda run used, as the driver names it.
std::string cuda_device_name() {
  std::string name;
  return cuda_usable(&name) ? name : std::string();
}

FlashOptions bf16_options() {
  FlashOptions fo;
  fo.precision = FlashPrecision::bfloat16;
  return fo;
}

// The tiles the flags ask the flash kernel for (flash_tiling, FlashTileParts).
FlashOptions tile_options(const BenchOptions& o) {
  FlashOptions fo;
  fo.block_q = o.block_q, fo.block_k = o.block_k;
  return fo;
}

// The naive kernel holds H x n x n float64 scores and weights.
double naive_bytes(std::size_t n, std::size_t heads) { return double(heads) * double(n) * double(n) * 16.0; }

// The naive check (the error column) is skipped, null, where it would not fit the budget.
bool naive_fits(const BenchOptions& o, std::size_t n) { return fits_memory(naive_bytes(n, o.heads)); }

// One pass at length n, halved when causal (the tiles above the diagonal are skipped).
double attention_flops(const BenchOptions& o, std::size_t n) {
  const double f = attention_work(double(o.heads), double(n), double(n), double(o.head_dim));
  return o.causal ? f / 2 : f;
}

BenchConfig bench_config(const BenchOptions& o, const std::string& backend, std::size_t n, std::size_t threads) {
  BenchConfig c;
  c.backend = backend;
  c.n = n;
  c.heads = o.heads;
  c.head_dim = o.head_dim;
  c.causal = o.causal;
  c.threads = threads;
  c.repeat = o.repeat;
  c.block_q = o.block_q;
  c.block_k = o.block_k;
  c.check = !o.no_check && naive_fits(o, n);
  c.backward = o.backward;
  c.dtype = o.dtype;
  // Runs beside the yardstick, on the CPU except flash in bf16 (timed beside float32 flash).
  if (backend != "cuda" && o.dtype == "f32") c.sgemm_n = o.sgemm_n;
  c.parts = o.parts && backend == "flash";
  return c;
}

// Every run the flags ask for, checked against the memory and time budgets before the first.
void check_budgets(const BenchOptions& o) {
  double seconds = 0;
  const double sgemm_flops = 2.0 * std::pow(double(o.sgemm_n), 3), sgemm_bytes = 3.0 * 4 * double(o.sgemm_n) * double(o.sgemm_n);
  for (std::size_t t : o.threads) {
    // sgemm_rate: one untimed run and 3 timed ones of 2 N^3.
    seconds += 4 * sgemm_flops / (kFlopsPerSecond * 5 * double(t));
    for (std::size_t n : o.n) {
      const double inputs = 4.0 * double(o.heads) * double(n) * double(o.head_dim) * 4 * 3;  // q, k, v, o; f32 + f64
      // The operands live beside the inputs where a run is timed beside the yardstick.
      const bool beside = std::any_of(o.backends.begin(), o.backends.end(),
                                      [&](const std::string& b) { return bench_config(o, b, n, t).sgemm_n > 0; });
      require_memory(inputs + (beside ? sgemm_bytes : 0.0),
                     "bench --n " + std::to_string(n) + ": the inputs" + (beside ? " and the sgemm operands" : ""),
                     beside ? "lower --n, --heads, --head-dim or --sgemm" : "lower --n, --heads or --head-dim");
      const double pass = attention_flops(o, n) * (o.backward ? 3.5 : 1.0);
      for (const std::string& backend : o.backends) {
        const bool dense = backend == "naive" || backend == "blas";
        if (dense) {
          require_memory(naive_bytes(n, o.heads), "bench --n " + std::to_string(n) + " with the " + backend +
                         " backend: the scores [" + std::to_string(o.heads) + ", n, n]", "try --backend flash");
        }
        // The tiled kernels run on `t` threads at about 5x the naive rate per thread; a GPU at
        // well over 1000x.
        const double rate = dense ? kFlopsPerSecond : backend == "cuda" ? kFlopsPerSecond * 1000
                                                                        : kFlopsPerSecond * 5 * double(t);
        // flash in bf16 is timed beside flash in float32, and checked against a plain bf16 run too.
        const double runs = backend == "flash" && o.dtype == "bf16" ? 2.0 : 1.0;
        seconds += runs * double(o.repeat + 1) * pass / rate;
        if (bench_config(o, backend, n, t).sgemm_n)  // repeat more runs, each beside an sgemm, and its warm-up
          seconds += double(o.repeat) * pass / rate + double(o.repeat + 1) * sgemm_flops / (kFlopsPerSecond * 5 * double(t));
        if (!o.no_check && naive_fits(o, n)) seconds += runs * attention_flops(o, n) / kFlopsPerSecond;
        if (bench_config(o, backend, n, t).parts) {  // its rounds of one tile, on one thread
          const FlashTiling tile = flash_tiling(n, n, tile_options(o));
          seconds += double(BenchConfig{}.parts_rounds) *
                     attention_work(1, double(tile.block_q), double(std::min(tile.block_k, n)), double(o.head_dim)) /
                     (kFlopsPerSecond * 5);
        }
      }
    }
  }
  require_time(seconds, "bench with these --n, --heads, --head-dim, --repeat" + std::string(o.sgemm_n ? " and --sgemm" : ""),
               "lower them");
}

// sgemm's rate on each thread count of --threads (0 where --sgemm is not given), each also in `sgemm`.
std::vector<double> measure_sgemm(const BenchOptions& o, bool progress, Json& sgemm) {
  std::vector<double> sgemm_by_threads;
  for (std::size_t t : o.threads) {
    double g = 0;
    if (o.sgemm_n) {
      if (progress) std::cerr << "measuring sgemm " << o.sgemm_n << "^3 on " << t << " thread(s)...\r" << std::flush;
      const SgemmRate rate = sgemm_rate(o.sgemm_n, t, kSgemmRepeat);
      g = rate.gflops;
      sgemm.push_back({{"n", o.sgemm_n}, {"threads", t}, {"gflops", g}});
      if (t == 1) sgemm.back()["gflops_thread_cpu"] = rate.gflops_thread_cpu;
    }
    sgemm_by_threads.push_back(g);
  }
  return sgemm_by_threads;
}

// One run (of config c) as the JSON's "runs" hold it; sgemm_gflops is sgemm's rate on its thread count.
Json run_json(const BenchOptions& o, const BenchConfig& c, const BenchRun& r, double sgemm_gflops) {
  const std::string& backend = c.backend;
  const std::size_t n = c.n;
  Json err = r.max_abs_err_vs_naive ? Json(*r.max_abs_err_vs_naive) : Json(nullptr);
  Json run = {{"backend", backend}, {"n", n}, {"heads", o.heads}, {"head_dim", o.head_dim},
              {"causal", o.causal}, {"threads", c.threads}, {"median_ms", r.median_ms},
              {"min_ms", r.min_ms}, {"flops", r.flops}, {"gflops", r.gflops},
              {"peak_rss_bytes", r.peak_rss_bytes},
              {"baseline_rss_bytes", r.baseline_rss_bytes},
              {"max_abs_err_vs_naive", err}};
  // Best against best: sgemm's rate is from its fastest run, so this is the fastest run's
  // rate too (the median's would put one run's noise on one side of the ratio only).
  if (o.sgemm_n) run["fraction_of_sgemm"] = r.flops / (r.min_ms * 1e6) / sgemm_gflops;
  if (r.side_by_side_fraction_of_sgemm) {  // each run against the sgemm timed right after it
    run["run_ms_by_round"] = r.run_ms;
    run["sgemm_ms_by_round"] = r.sgemm_ms;
    run["side_by_side_fraction_of_sgemm"] = *r.side_by_side_fraction_of_sgemm;
  }
  if (c.threads == 1) run["min_thread_cpu_ms"] = r.min_thread_cpu_ms;
  if (r.f32_median_ms) {  // flash in bf16: the speed-up over float32 and the rule's two errors
    run["dtype"] = "bf16";
    run["f32_median_ms"] = *r.f32_median_ms;
    run["speedup_vs_f32"] = *r.f32_median_ms / r.median_ms;
    if (c.threads == 1) run["f32_min_thread_cpu_ms"] = r.f32_min_thread_cpu_ms;
    run["bf16_reference_err_vs_naive"] = r.bf16_reference_err ? Json(*r.bf16_reference_err) : Json(nullptr);
  }
  if (backend == "cuda") {
    run["dtype"] = o.dtype;
    run["includes_host_device_copies"] = false;
    run["device"] = cuda_device_name();
  }
  if (o.backward) run["pass"] = "backward";
  if (backend == "flash" && !o.backward) {  // what this run's tiled loop ran (flash_tiling)
    FlashOptions fo = tile_options(o);
    if (r.f32_median_ms) fo.precision = FlashPrecision::bfloat16;
    const FlashTiling t = flash_tiling(n, n, fo);
    run["tiles"] = {{"block_q", t.block_q}, {"block_k", t.block_k}, {"qk_kernel", t.qk_kernel},
                    {"pv_kernel", t.pv_kernel}};
    if (r.f32_median_ms) run["tiles"]["isa"] = t.isa;
  }
  if (r.parts) {
    const FlashPartsTiming& p = *r.parts;
    run["parts"] = {{"tile_rows", p.rows}, {"tile_keys", p.keys}, {"rounds", p.rounds}, {"qk_ms", p.qk_ms},
                    {"softmax_ms", p.softmax_ms}, {"pv_ms", p.pv_ms}, {"qk_gflops", p.qk_gflops},
                    {"pv_gflops", p.pv_gflops}, {"predicted_ms", p.predicted_ms},
                    {"softmax_share", p.softmax_share},
                    {"softmax_cost_in_multiply_adds", p.softmax_cost_in_multiply_adds}};
    if (o.sgemm_n) run["parts"]["predicted_fraction_of_sgemm"] = r.flops / (p.predicted_ms * 1e6) / sgemm_gflops;
  }
  return run;
}

void print_bench_json(const BenchOptions& o, const Json& runs, const Json& sgemm) {
  const char* convention = o.backward ? "2.5 x 4*H*n*n*d, halved when causal (FlashAttention's rule for the backward pass)"
                                      : "4*H*n*n*d, halved when causal (FlashAttention's benchmark rule)";
  Json out = {{"flops_convention", convention},
              {"timing", std::string("one untimed warm-up run, then --repeat timed runs; cuda: CUDA events around "
                                     "each launch, inputs already on the device; gflops from the median run") +
                             (o.sgemm_n ? "; sgemm from the fastest of " + std::to_string(kSgemmRepeat + 1) +
                                              " runs, and fraction_of_sgemm = flops / min_ms against it; on the CPU (not "
                                              "flash in bf16), after the timed runs, --repeat more, each followed by one "
                                              "sgemm (run_ms_by_round, sgemm_ms_by_round), and "
                                              "side_by_side_fraction_of_sgemm = the median of their rates over their "
                                              "sgemm's (the lower middle for an even count)"
                                        : std::string())},
              {"isa", flash_isa()},
              {"machine", machine_json()},
              {"runs", runs}};
  if (o.sgemm_n) out["sgemm"] = sgemm;
  std::cout << out.dump(2) << "\n";
}

// What the table's numbers count, the machine, and sgemm's rates.
void print_bench_preamble(const BenchOptions& o, const std::vector<double>& sgemm_by_threads) {
  if (o.backward) {
    std::printf("attention backward (dQ, dK, dV; float64), H=%zu, d=%zu, %s\n", o.heads, o.head_dim,
                o.causal ? "causal" : "not causal");
    std::printf("GFLOP/s counts 2.5 x 4*H*n^2*d (halved when causal), FlashAttention's rule for the backward.\n");
  } else {
    std::printf("attention forward, H=%zu, d=%zu, %s, flash kernel ISA: %s\n", o.heads, o.head_dim,
                o.causal ? "causal" : "not causal", flash_isa().c_str());
    std::printf("GFLOP/s counts 4*H*n^2*d (halved when causal), FlashAttention's benchmark rule.\n");
  }
  const Json machine = machine_json();
  std::printf("CPU: %s; BLAS core %s (attn-cli doctor tells more)\n", machine["cpu"].get<std::string>().c_str(),
              machine["blas"]["core"].get<std::string>().c_str());
  // The float32 prefill's blockings and where they came from; --block-q and --block-k choose the
  // tiles themselves (runs[].tiles in the JSON says what ran), and bfloat16 has blockings of its own.
  const bool tuned_tiles = o.dtype == "f32" && !o.block_q && !o.block_k;
  if (!o.backward && tuned_tiles && std::find(o.backends.begin(), o.backends.end(), "flash") != o.backends.end())
    std::printf("flash tune: %s\n", flash_tuning_line(machine["flash_tuning"]).c_str());
  for (std::size_t ti = 0; ti < o.threads.size(); ++ti)
    if (o.sgemm_n)
      std::printf("OpenBLAS sgemm %zu^3 on %zu thread(s): %.1f GFLOP/s\n", o.sgemm_n, o.threads[ti],
                  sgemm_by_threads[ti]);
  if (o.sgemm_n)
    std::printf("(x sgemm: the fastest run's GFLOP/s over sgemm's fastest of %zu runs; beside: after the timed runs,\n"
                " --repeat more, each followed by one sgemm on the same threads: the median of their GFLOP/s over\n"
                " that sgemm's)\n",
                kSgemmRepeat + 1);
}

// Under the table, each flash/bf16 run against float32 flash timed beside it, and its error
// beside the plain bf16 computation's (FlashAttention's rule: at most 2x).
void print_bf16_notes(const std::vector<BenchRun>& results) {
  for (const BenchRun& r : results) {
    if (!r.f32_median_ms) continue;
    std::printf("\nflash/bf16 n=%zu threads=%zu (%s): %.2fx the speed of flash in float32 (median %.2f ms, timed "
                "alternating in this run)\n",
                r.config.n, r.config.threads, flash_tiling(r.config.n, r.config.n, bf16_options()).isa.c_str(),
                *r.f32_median_ms / r.median_ms, *r.f32_median_ms);
    if (r.max_abs_err_vs_naive && r.bf16_reference_err)
      std::printf("  max |err| vs float64 %.2e; plain bf16 (inputs and P rounded, the rest float64) %.2e: %.2fx "
                  "(FlashAttention's rule allows 2x)\n",
                  *r.max_abs_err_vs_naive, *r.bf16_reference_err, *r.max_abs_err_vs_naive / *r.bf16_reference_err);
  }
}

// Under the table, with --parts: where one tile's time goes, and what those times predict for
// the run (and, with --sgemm, the ceiling they put on its fraction of sgemm).
void print_parts_notes(const BenchOptions& o, const std::vector<BenchRun>& results, const Json& runs) {
  for (std::size_t i = 0; i < results.size(); ++i) {
    if (!results[i].parts) continue;
    const BenchRun& r = results[i];
    const FlashPartsTiming& p = *r.parts;
    std::printf("\nflash n=%zu threads=%zu, one %zu x %zu tile's parts alone (medians of %zu rounds, one thread):\n",
                r.config.n, r.config.threads, p.rows, p.keys, p.rounds);
    std::printf("  Q K^T %.3g ms (%.1f GFLOP/s), softmax %.3g ms (%.1f %% of the tile), P V %.3g ms (%.1f GFLOP/s)\n",
                p.qk_ms, p.qk_gflops, p.softmax_ms, 100 * p.softmax_share, p.pv_ms, p.pv_gflops);
    std::printf("  one score's softmax (max, exp2, sum) takes as long as %.1f of the products' multiply-adds; a score "
                "has %zu of them\n",
                p.softmax_cost_in_multiply_adds, 2 * r.config.head_dim);
    std::printf("  every score of the run at the tile's cost: %.4g ms on %zu thread(s)", p.predicted_ms,
                r.config.threads);
    if (o.sgemm_n)
      std::printf(", %.2f of sgemm", runs[i]["parts"]["predicted_fraction_of_sgemm"].get<double>());
    std::printf("; the fastest run took %.2fx that\n", r.min_ms / p.predicted_ms);
  }
}

void print_bench_table(const BenchOptions& o, const std::vector<BenchRun>& results, const Json& runs,
                       const std::vector<double>& sgemm_by_threads) {
  print_bench_preamble(o, sgemm_by_threads);
  std::printf("(peak MiB: the process's peak during the runs; +MiB: above its size with the inputs)\n");
  std::printf("\n%-9s %6s %7s %11s %9s %8s %7s %10s %8s %12s\n", "backend", "n", "threads", "median ms", "GFLOP/s",
              o.sgemm_n ? "x sgemm" : "", o.sgemm_n ? "beside" : "", "peak MiB", "+MiB", "max |err|");
  for (std::size_t i = 0; i < results.size(); ++i) {
    const BenchRun& r = results[i];
    char frac[16] = "", beside[16] = "", err[24] = "-";
    if (o.sgemm_n) std::snprintf(frac, sizeof frac, "%.2f", runs[i]["fraction_of_sgemm"].get<double>());
    if (r.side_by_side_fraction_of_sgemm) std::snprintf(beside, sizeof beside, "%.2f", *r.side_by_side_fraction_of_sgemm);
    if (r.max_abs_err_vs_naive) std::snprintf(err, sizeof err, "%.2e", *r.max_abs_err_vs_naive);
    const std::string label = r.config.dtype != "f32" ? r.config.backend + "/" + r.config.dtype : r.config.backend;
    std::printf("%-9s %6zu %7zu %11.2f %9.1f %8s %7s %10.1f %8.1f %12s\n", label.c_str(), r.config.n,
                r.config.threads, r.median_ms, r.gflops, frac, beside, double(r.peak_rss_bytes) / (1 << 20),
                (double(r.peak_rss_bytes) - double(r.baseline_rss_bytes)) / (1 << 20), err);
  }
  print_bf16_notes(results);
  print_parts_notes(o, results, runs);
}

void run_bench_command(const BenchOptions& o) {
  check_budgets(o);
  const bool progress = isatty(STDERR_FILENO);
  Json runs = Json::array(), sgemm = Json::array();
  std::vector<BenchRun> results;
  const std::vector<double> sgemm_by_threads = measure_sgemm(o, progress, sgemm);
  for (std::size_t ti = 0; ti < o.threads.size(); ++ti)
    for (std::size_t n : o.n)
      for (const std::string& backend : o.backends) {
        const BenchConfig c = bench_config(o, backend, n, o.threads[ti]);
        if (progress) std::cerr << "running " << backend << " n=" << n << " threads=" << c.threads << "...      \r" << std::flush;
        const BenchRun r = run_bench(c);
        results.push_back(r);
        runs.push_back(run_json(o, c, r, sgemm_by_threads[ti]));
      }
  if (progress) std::cerr << std::string(60, ' ') << "\r" << std::flush;
  // After the runs, so a refused option is still one line; before the figures it qualifies.
  if (const auto warning = blas_fallback_warning()) warn(*warning);
  if (o.json) print_bench_json(o, runs, sgemm);
  else print_bench_table(o, results, runs, sgemm_by_threads);
}

void run_decode_command(const BenchOptions& o) {
  if (o.kv_dtype != "f32" && o.kv_dtype != "bf16") throw InputError("--kv-dtype: expected f32 or bf16, got " + o.kv_dtype);
  double seconds = 0;
  const double kv_heads = double(o.kv_heads ? o.kv_heads : o.heads);
  for (std::size_t kv : o.kv) {
    // K and V (float32, and float64 copies for the naive check) and the naive check's scores.
    const double cache = 2 * kv_heads * double(kv) * double(o.head_dim) * 12;
    require_memory(cache + double(o.heads) * double(o.queries) * double(kv) * 16,
                   "bench --mode decode --kv " + std::to_string(kv), "lower --kv, --heads or --head-dim");
    // Each repeat: the decode run, the streaming read and the tiled run; then the naive check.
    const double pass = attention_work(double(o.heads), double(o.queries), double(kv), double(o.head_dim));
    seconds += double(o.threads.size()) * (3 * double(o.repeat + 1) + 1) * pass / kFlopsPerSecond;
  }
  require_time(seconds, "bench --mode decode with these --kv, --heads, --queries and --repeat", "lower them");
  const bool progress = isatty(STDERR_FILENO);
  std::vector<DecodeBenchRun> results;
  Json runs = Json::array();
  for (std::size_t t : o.threads)
    for (std::size_t kv : o.kv)
      for (const std::string& backend : o.backend_given ? o.backends : std::vector<std::string>{"flash"}) {
        DecodeBenchConfig c;
        c.backend = backend;
        c.kv_dtype = o.kv_dtype;
        c.kv_len = kv;
        c.queries = o.queries;
        c.heads = o.heads;
        c.kv_heads = o.kv_heads ? o.kv_heads : o.heads;
        c.head_dim = o.head_dim;
        c.threads = t;
        c.repeat = o.repeat;
        c.check = !o.no_check;
        if (progress) std::cerr << "decoding against " << kv << " cached keys on " << t << " thread(s)...   \r" << std::flush;
        const DecodeBenchRun r = run_decode_bench(c);
        results.push_back(r);
        runs.push_back({{"mode", "decode"}, {"backend", backend}, {"queries", c.queries}, {"kv_len", kv},
                        {"heads", c.heads}, {"kv_heads", c.kv_heads}, {"head_dim", c.head_dim},
                        {"kv_dtype", o.kv_dtype}, {"threads", t}, {"median_ms", r.median_ms}, {"min_ms", r.min_ms},
                        {"kv_bytes", r.kv_bytes}, {"kv_gbps", r.kv_gbps}, {"stream_gbps", r.stream_gbps},
                        {"fraction_of_stream", r.kv_gbps / r.stream_gbps},
                        {"run_ms_by_round", r.run_ms_by_round}, {"stream_ms_by_round", r.stream_ms_by_round},
                        {"side_by_side_fraction_of_stream", r.side_by_side_fraction_of_stream},
                        {"tiled_min_ms", r.tiled_min_ms},
                        {"peak_rss_bytes", r.peak_rss_bytes}, {"kv_huge_page_bytes", r.kv_huge_page_bytes},
                        {"max_abs_err_vs_naive", r.max_abs_err_vs_naive ? Json(*r.max_abs_err_vs_naive) : Json(nullptr)}});
        if (r.kernel_err_on_bf16_kv) runs.back()["kernel_err_on_bf16_kv"] = *r.kernel_err_on_bf16_kv;
      }
  if (progress) std::cerr << std::string(60, ' ') << "\r" << std::flush;
  if (o.json) {
    std::cout << Json{{"mode", "decode"},
                      {"timing", "interleaved with the streaming read (run_ms_by_round, stream_ms_by_round); one "
                                 "untimed warm-up each; kv_gbps from min_ms; side_by_side_fraction_of_stream = the "
                                 "median (the lower middle for an even count) of each read's time over the run's "
                                 "just before it"},
                      {"isa", flash_isa()}, {"machine", machine_json()}, {"runs", runs}}.dump(2) << "\n";
    return;
  }
  std::printf("decode: %zu query row(s) x %zu heads (%zu KV heads), d=%zu, KV cache %s, arithmetic float32, flash "
              "kernel ISA: %s\n",
              o.queries, o.heads, o.kv_heads ? o.kv_heads : o.heads, o.head_dim,
              o.kv_dtype == "bf16" ? "bfloat16" : "float32", flash_isa().c_str());
  if (o.kv_dtype == "bf16")
    std::printf("max |err| is against float64 on the float32 K and V: the cache's rounding and the kernel's together\n");
  std::printf("decode tuning: %s\n", decode_tuning_line(machine_json()["flash_tuning"]).c_str());
  std::printf("KV GB/s = bytes of K and V / min time; stream = a plain read of the same bytes, same process (its\n"
              "best); ratio = the two; beside = the median, over the repeats, of each read against the decode run\n"
              "just before it (the same moment of the machine); 2M pages = the share of K and V Linux backed with\n"
              "2 MiB pages (fewer page walks)\n\n");
  std::printf("%-7s %8s %7s %10s %9s %9s %9s %7s %7s %8s %9s %10s\n", "backend", "kv_len", "threads", "min ms",
              "KV MiB", "KV GB/s", "stream", "ratio", "beside", "2M pages", "tiled ms", "max |err|");
  for (const DecodeBenchRun& r : results) {
    char err[24] = "-";
    if (r.max_abs_err_vs_naive) std::snprintf(err, sizeof err, "%.2e", *r.max_abs_err_vs_naive);
    std::printf("%-7s %8zu %7zu %10.3f %9.1f %9.1f %9.1f %7.2f %7.2f %7.0f%% %9.3f %10s\n", r.config.backend.c_str(),
                r.config.kv_len, r.config.threads, r.min_ms, double(r.kv_bytes) / (1 << 20), r.kv_gbps, r.stream_gbps,
                r.kv_gbps / r.stream_gbps, r.side_by_side_fraction_of_stream,
                100.0 * double(r.kv_huge_page_bytes) / double(r.kv_bytes), r.tiled_min_ms, err);
  }
}

// --mode train: Adam steps of the default `attn-cli train` model per thread count.
void run_train_command(const BenchOptions& o) {
  TrainBenchConfig c;
  c.repeat = o.repeat;
  c.train.steps = o.steps;
  if (o.backend_given) {
    if (o.backends.size() != 1 || (o.backends[0] != "flash" && o.backends[0] != "naive"))
      throw InputError("--backend: --mode train times one of flash or naive");
    c.train.backend = o.backends[0] == "naive" ? Backend::naive : Backend::flash;
  }
  // A training step runs at a few tens of GFLOP/s (50 measured on one Zen 5 core); the estimate
  // takes 20, slow enough to refuse only runs that are truly long.
  constexpr double kTrainFlopsPerSecond = 2e10;
  const double flops = train_step_flops(c.train.config, c.train.batch);
  require_time(double(o.threads.size()) * double(o.repeat) * double(o.steps) * flops / kTrainFlopsPerSecond,
               "bench --mode train with these --steps, --repeat and --threads", "lower them");
  const bool progress = isatty(STDERR_FILENO);
  Json runs = Json::array();
  std::vector<TrainBenchRun> results;
  for (std::size_t t : o.threads) {
    c.train.threads = t;
    if (progress) std::cerr << "training " << o.steps << " steps on " << t << " thread(s)...   \r" << std::flush;
    const TrainBenchRun r = run_train_bench(c);
    results.push_back(r);
    const ToyConfig& m = r.config.train.config;
    runs.push_back({{"mode", "train"}, {"backend", r.config.train.backend == Backend::naive ? "naive" : "flash"},
                    {"threads", t}, {"steps", o.steps}, {"batch", r.config.train.batch},
                    {"model", {{"vocab", m.vocab}, {"d_model", m.d_model}, {"heads", m.heads}, {"layers", m.layers},
                               {"context", m.context}}},
                    {"median_ms_per_step", r.median_ms_per_step}, {"min_ms_per_step", r.min_ms_per_step},
                    {"steps_per_s", r.steps_per_s}, {"flops_per_step", r.flops_per_step}, {"gflops", r.gflops}});
  }
  if (progress) std::cerr << std::string(60, ' ') << "\r" << std::flush;
  if (o.json) {
    std::cout << Json{{"mode", "train"},
                      {"timing", "forward + backward + Adam per step, inside run_training; held-out scoring not counted"},
                      {"flops_convention", "3 x the forward's matmuls + 3.5 x its attention (4 B H L^2 d per layer, "
                                           "halved: causal); FLOPs = 2 x multiply-adds"},
                      {"isa", flash_isa()}, {"machine", machine_json()}, {"runs", runs}}.dump(2) << "\n";
    return;
  }
  const ToyConfig& m = c.train.config;
  std::printf("train: the default model (%zu layers x %zu heads, d_model %zu, vocab %zu, context %zu), batch %zu,\n"
              "Adam; %zu steps per run, best of %zu; flash kernel ISA: %s\n\n",
              m.layers, m.heads, m.d_model, m.vocab, m.context, c.train.batch, o.steps, o.repeat, flash_isa().c_str());
  std::printf("%-7s %7s %12s %12s %11s %9s\n", "backend", "threads", "min ms/step", "median ms", "steps/s", "GFLOP/s");
  for (const TrainBenchRun& r : results)
    std::printf("%-7s %7zu %12.2f %12.2f %11.1f %9.1f\n", r.config.train.backend == Backend::naive ? "naive" : "flash",
                r.config.train.threads, r.min_ms_per_step, r.median_ms_per_step, r.steps_per_s, r.gflops);
}

// --mode forward: every point checked, then the time and memory it will take.
void check_forward_budgets(const BenchOptions& o, const ForwardBench& bench) {
  double seconds = 0, bytes = 0;  // at the tiled kernels' estimated rate (5x naive a thread)
  const double sgemm_flops = o.sgemm_n ? 2.0 * std::pow(double(o.sgemm_n), 3) : 0.0;
  for (std::size_t n : o.n) {
    bench.check_tokens(n);
    bytes = std::max(bytes, bench.pass_bytes(n));
    for (std::size_t t : o.threads)
      seconds += double(o.repeat + 1) * (bench.pass_flops(n) + sgemm_flops) / (kFlopsPerSecond * 5 * double(t));
  }
  require_memory(bytes + 3.0 * 4 * double(o.sgemm_n) * double(o.sgemm_n),
                 "bench --mode forward: a pass's outputs and the sgemm operands", "lower --n or --sgemm");
  require_time(seconds, "bench --mode forward with these --n, --repeat, --threads and --sgemm", "lower them");
}

Json forward_run_json(const ForwardBenchRun& r) {
  Json run{{"mode", "forward"}, {"tokens", r.config.tokens}, {"threads", r.config.threads}, {"flops", r.flops},
           {"first_pass_ms", r.first_ms}, {"first_pass_minor_faults", r.first_minor_faults},
           {"minor_faults_per_pass", r.timed_minor_faults}, {"median_ms", r.median_ms}, {"min_ms", r.min_ms},
           {"gflops", r.gflops}, {"pass_ms_by_round", r.pass_ms}};
  if (r.sgemm_gflops) {
    run["sgemm_ms_by_round"] = r.sgemm_ms;
    run["sgemm"] = {{"n", r.config.sgemm_n}, {"median_ms", *r.sgemm_median_ms}, {"gflops", *r.sgemm_gflops}};
    run["fraction_of_sgemm"] = *r.fraction_of_sgemm;
    run["first_pass_fraction_of_sgemm"] = *r.first_fraction_of_sgemm;
  }
  return run;
}

void print_forward_table(const BenchOptions& o, const ForwardBench& bench, const std::vector<ForwardBenchRun>& results) {
  std::printf("forward: %s, %zu layers, width %zu, vocab %zu; at each point a first pass on fresh memory (its\n"
              "page faults), then %zu rounds of one pass%s. pass/sgemm: the median of each round's\n"
              "pass rate over its sgemm's; first/sgemm: the first pass's rate over sgemm's median\n\n",
              bench.family().c_str(), bench.layers(), bench.width(), bench.vocab(), o.repeat,
              o.sgemm_n ? (" and one sgemm " + std::to_string(o.sgemm_n) + "^3").c_str() : "");
  std::printf("%6s %7s | %9s %11s %11s | %8s %9s %9s | %9s %10s\n", "tokens", "threads", "first ms", "page faults",
              "first/sgemm", "min ms", "median ms", "GFLOP/s", "sgemm", "pass/sgemm");
  for (const ForwardBenchRun& r : results) {
    std::printf("%6zu %7zu | %9.1f %11ld ", r.config.tokens, r.config.threads, r.first_ms, r.first_minor_faults);
    if (r.sgemm_gflops) std::printf("%11.2f", *r.first_fraction_of_sgemm);
    else std::printf("%11s", "-");
    std::printf(" | %8.1f %9.1f %9.1f | ", r.min_ms, r.median_ms, r.gflops);
    if (r.sgemm_gflops) std::printf("%9.1f %10.2f\n", *r.sgemm_gflops, *r.fraction_of_sgemm);
    else std::printf("%9s %10s\n", "-", "-");
  }
}

// --mode forward: a model folder's forward pass at each --n tokens and thread count, each round
// one pass and one sgemm side by side (bench_forward.hpp).
void run_forward_command(BenchOptions o) {
  if (o.model.empty()) throw InputError("--mode forward: expected --model DIR (a GPT-2 or Llama-family folder)");
  const ForwardBench bench(o.model);
  if (o.n.empty()) o.n = {std::min<std::size_t>(64, bench.positions())};  // no --n given
  check_forward_budgets(o, bench);
  const bool progress = isatty(STDERR_FILENO);
  std::vector<ForwardBenchRun> results;
  Json runs = Json::array();
  for (std::size_t n : o.n)
    for (std::size_t t : o.threads) {
      if (progress) std::cerr << "timing " << n << " tokens on " << t << " thread(s)...   \r" << std::flush;
      results.push_back(bench.run({n, t, o.repeat, o.sgemm_n}));
      runs.push_back(forward_run_json(results.back()));
    }
  if (progress) std::cerr << std::string(60, ' ') << "\r" << std::flush;
  if (!o.json) return print_forward_table(o, bench, results);
  const Json model{{"family", bench.family()}, {"layers", bench.layers()}, {"heads", bench.heads()},
                   {"width", bench.width()}, {"vocab", bench.vocab()}};
  std::cout << Json{{"mode", "forward"}, {"model", model},
                    {"timing", "a first pass on fresh memory, then rounds of one pass and one sgemm side by side; the "
                               "pass as forward times it, outputs included"},
                    {"flops_convention", "the count forward prints: the matmuls, 2 x multiply-adds, and causal "
                                         "attention (GPT-2: 2 n^2 D a layer; Llama family: 4 H d a visible pair)"},
                    {"isa", flash_isa()}, {"machine", machine_json()}, {"runs", runs}}.dump(2) << "\n";
}

// The parsed flags, checked where they depend on each other, to the command of their --mode.
void run_bench_mode(BenchOptions& o, const CLI::App& cmd) {
  o.backend_given = cmd.count("--backend") > 0;
  if (!o.backend_given && o.dtype == "bf16") o.backends = {"flash"};  // the CPU's one bf16 kernel
  reuse_freed_memory();  // every run after the warm-up on pages already touched
  if (!o.model.empty() && o.mode != "forward") throw InputError("--model: only with --mode forward");
  if (o.parts && (o.mode != "prefill" || o.causal || o.backward || o.dtype != "f32" ||
                  std::find(o.backends.begin(), o.backends.end(), "flash") == o.backends.end()))
    throw InputError("--parts: times the tiles of float32 flash's forward pass without a causal mask; use it with "
                     "--backend flash, --dtype f32 and --mode prefill (the defaults), without --causal or --backward");
  if (o.mode == "forward") {
    if (!cmd.count("--n")) o.n.clear();  // 64, or the model's positions if fewer (run_forward_command)
    if (!cmd.count("--sgemm")) o.sgemm_n = 2048;
    return run_forward_command(o);
  }
  if (o.mode == "decode") run_decode_command(o);
  else if (o.mode == "train") run_train_command(o);
  else run_bench_command(o);
}

}  // namespace

void setup_bench(CLI::App& app) {
  auto o = std::make_shared<BenchOptions>();
  CLI::App* cmd = app.add_subcommand("bench", "Time naive vs flash attention on seeded random inputs");
  cmd->add_option("--backend", o->backends,
                  "backends to time: naive (float64 oracle), flash, blas (float32 matmul-softmax-matmul), cuda")
      ->delimiter(',')->capture_default_str();
  cmd->add_option("--n", o->n, "sequence lengths (comma-separated)")->delimiter(',')->capture_default_str()
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--heads", o->heads, "heads H")->capture_default_str()->check(CLI::Range(1, 1024));
  cmd->add_option("--head-dim", o->head_dim, "head dim d")->capture_default_str()->check(CLI::Range(1, 4096));
  cmd->add_flag("--causal", o->causal, "causal attention (skips the tiles above the diagonal)");
  cmd->add_option("--threads", o->threads, "thread counts (comma-separated)")->delimiter(',')
      ->capture_default_str()->check(CLI::Range(1, 1024));
  cmd->add_option("--repeat", o->repeat, "timed runs per point (median and min reported)")
      ->capture_default_str()->check(CLI::Range(1, 1000));
  cmd->add_option("--block-q", o->block_q, "flash query tile (0 = default)")->check(CLI::Range(0, 65536));
  cmd->add_option("--block-k", o->block_k, "flash key tile (0 = default)")->check(CLI::Range(0, 65536));
  cmd->add_option("--sgemm", o->sgemm_n,
                  "also time OpenBLAS sgemm N^3 as the yardstick: its best of 4 runs first, then --repeat more runs "
                  "each followed by one sgemm (0 = off)")
      ->check(CLI::Range(0, 16384));
  cmd->add_flag("--no-check", o->no_check, "skip the naive run used for the error column");
  cmd->add_flag("--parts", o->parts,
                "flash: also time one tile's three parts alone (Q K^T, the softmax between, P V) and what they "
                "predict for the run");
  cmd->add_flag("--backward", o->backward,
                "time the backward pass (dQ, dK, dV from a forward run before the clock; naive or flash, float64)");
  cmd->add_flag("--json", o->json, "print JSON (docs/contracts.md) instead of a table");
  add_memory_flag(cmd);
  add_time_flag(cmd);
  cmd->add_option("--mode", o->mode,
                  "prefill (n queries, n keys), decode (--queries rows against a --kv cache), train (Adam steps "
                  "of the default `attn-cli train` model) or forward (a --model folder's forward pass on --n tokens)")
      ->check(CLI::IsMember({"prefill", "decode", "train", "forward"}))->capture_default_str();
  cmd->add_option("--model", o->model, "forward: a GPT-2 or Llama-family folder (--n defaults to 64, --sgemm to 2048)");
  cmd->add_option("--steps", o->steps, "train: Adam steps per timed run")->capture_default_str()
      ->check(CLI::Range(1, 100000));
  cmd->add_option("--kv", o->kv, "decode: KV cache lengths (comma-separated)")->delimiter(',')
      ->capture_default_str()->check(CLI::Range(1, 1 << 24));
  cmd->add_option("--queries", o->queries, "decode: query rows per head")->capture_default_str()
      ->check(CLI::Range(1, 4096));
  cmd->add_option("--kv-heads", o->kv_heads, "decode: key/value heads (GQA/MQA; default: --heads)")
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--dtype", o->dtype,
                  "prefill: what the kernel computes in: f32; bf16 for flash (AVX512_BF16 where the CPU has it, "
                  "float32 accumulation and softmax; timed beside f32 flash, errors beside a plain bf16 run); "
                  "f16/bf16 on the cuda tensor cores")
      ->check(CLI::IsMember({"f32", "f16", "bf16"}))->capture_default_str();
  cmd->add_option("--kv-dtype", o->kv_dtype, "decode: KV cache element type: f32, or bf16 (half the bytes; arithmetic stays float32)")->capture_default_str();
  cmd->footer(R"(Decode is one query row against a long KV cache: memory-bound, so it is timed beside a plain
streaming read of the same K and V bytes in the same process (the machine's ceiling).

With an NVIDIA GPU, --backend cuda times the CUDA kernel with CUDA events around each launch
(inputs already on the device); --dtype f16 or bf16 picks the tensor-core kernel.

Examples:
  attn-cli bench --n 256 --heads 2 --repeat 1
  attn-cli bench --backend flash --n 512 --causal --threads 1,2 --json
  attn-cli bench --backward --n 256 --heads 2 --repeat 1
  attn-cli bench --backend flash --dtype bf16 --n 256 --heads 2 --repeat 1
  attn-cli bench --backend flash --n 1024 --parts --sgemm 1024 --repeat 2
  attn-cli bench --mode decode --kv 1024,4096 --heads 8 --repeat 3
  attn-cli bench --mode decode --kv 16384 --heads 8 --kv-heads 1 --threads 1,2 --json
  attn-cli bench --mode train --steps 20 --repeat 1
  attn-cli bench --mode forward --model data/gpt2_tiny --n 16 --threads 1,2 --sgemm 256
)");
  cmd->callback([o, cmd] { run_bench_mode(*o, *cmd); });
}

}  // namespace attn::cli
