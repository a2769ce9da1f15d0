// attn-cli roofline: this machine's two ceilings (sgemm, a streaming read) measured, and the
// engine's prefill and decode placed under them.
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <memory>

#include "attn/lessons/measure/memory_policy.hpp"
#include "attn/io/number_format.hpp"
#include "attn/lessons/measure/roofline.hpp"
#include "attn/render/views/roofline_picture.hpp"
#include "budget.hpp"
#include "commands.hpp"
#include "experiment_output.hpp"
#include "machine_facts.hpp"

namespace attn::cli {
namespace {

struct RooflineOptions {
  RooflineConfig config;
  OutputOptions output;
  PlotOptions plots;
};

// The flash kernel and sgemm run far above the budget's conservative 2 GFLOP/s on any SIMD
// CPU; 20 is what the slowest path (the baseline micro-kernels) still reaches.
constexpr double kRooflineFlopsPerSecond = 20e9;

std::string roofline_text(const RooflineResult& r, TableFormat format) {
  Table t{{"point", "FLOP", "bytes", "FLOP/byte", "ms (min)", "GFLOP/s", "roof", "of roof", "wall"}, {}};
  for (const RooflinePoint& p : r.points) {
    t.rows.push_back({p.kind + " " + p.label, format_si(p.flops), format_bytes(p.bytes), format_g(p.intensity, 4),
                      format_g(p.min_ms, 3), format_g(p.gflops, 3), format_g(p.roof_gflops, 3),
                      format_fixed(100 * p.gflops / p.roof_gflops, 0) + " %", p.memory_bound ? "memory" : "compute"});
  }
  if (format == TableFormat::csv) return render_table(t, format);
  const RooflineConfig& c = r.config;
  std::string out = "Roofline of this machine, " + count_of(c.threads, "thread") + ": float32 attention" +
                    (c.bf16 ? " (and bfloat16 products, marked bf16)" : "") + ", H = " +
                    std::to_string(c.heads) + ", d = " + std::to_string(c.head_dim) + ".\n" +
                    "  compute roof: OpenBLAS sgemm " + std::to_string(c.sgemm_n) + "^3 = " +
                    format_g(r.peak_gflops, 4) + " GFLOP/s\n" + "  memory roof:  a streaming read of " +
                    format_bytes(double(r.bandwidth_bytes)) + " = " + format_g(r.bandwidth_gbps, 4) + " GB/s\n" +
                    "  ridge point:  " + format_g(r.ridge, 3) +
                    " FLOP/byte; a kernel doing fewer FLOPs per byte it moves waits on memory.\n\n";
  out += render_table(t, format);
  out += "\n" + roofline_caption(r) + "\n";
  return out;
}

void run_roofline_command(RooflineOptions opts) {
  check_roofline_config(opts.config);
  require_time(roofline_flops(opts.config) / kRooflineFlopsPerSecond, "roofline with these --n",
               "lower the largest --n or --repeat");
  PreparedPlots plots = prepare_plots(opts.plots);
  if (const auto warning = blas_fallback_warning()) std::cerr << "warning: " << *warning << "\n";
  if (isatty(STDERR_FILENO)) {
    opts.config.progress = [](const std::string& what) {
      std::fprintf(stderr, "\rroofline: measuring %-28s", what.c_str());
      std::fflush(stderr);
    };
  }
  const RooflineResult r = run_roofline(opts.config);
  if (opts.config.progress) std::fprintf(stderr, "\r%*s\r", 50, "");
  Json j = roofline_json(r);
  j["machine"] = machine_json();
  emit(opts.output, j, [&](TableFormat f) { return roofline_text(r, f); });
  write_plots(plots, opts.output, {{"roofline", roofline_figure(r)}});
}

}  // namespace

void setup_roofline(CLI::App& app) {
  auto opts = std::make_shared<RooflineOptions>();
  CLI::App* cmd = app.add_subcommand(
      "roofline", "Measure this machine's compute and memory roofs and place prefill and decode under them");
  RooflineConfig& c = opts->config;
  cmd->add_option("--n", c.prefill_ns, "prefill lengths (n queries x n keys; comma-separated)")
      ->delimiter(',')->capture_default_str();
  cmd->add_option("--kv", c.kv_lens, "decode KV cache lengths (1 query x L keys; comma-separated)")
      ->delimiter(',')->capture_default_str();
  cmd->add_option("--heads", c.heads, "query heads")->capture_default_str()->check(CLI::Range(1, 256));
  cmd->add_option("--head-dim", c.head_dim, "head dim d")->capture_default_str()->check(CLI::Range(1, 1024));
  cmd->add_option("--gqa-kv-heads", c.gqa_kv_heads, "KV heads of the GQA decode points (= --heads: MHA only)")
      ->capture_default_str()->check(CLI::Range(1, 256));
  cmd->add_option("--threads", c.threads, "threads")->capture_default_str()->check(CLI::Range(1, 256));
  cmd->add_flag("--bf16", c.bf16, "also each prefill length with bfloat16 products (bench --dtype bf16), against "
                "the same roofs");
  cmd->add_option("--repeat", c.repeat, "timed runs per point (the best is kept)")
      ->capture_default_str()->check(CLI::Range(1, 100));
  add_time_flag(cmd);
  add_output_options(cmd, opts->output, {"text", "json", "markdown", "csv"});
  add_plot_options(cmd, opts->plots);
  cmd->footer(R"(Both roofs are measured in the same run: OpenBLAS's sgemm (the compute peak) and a plain
streaming read of the largest KV cache (the memory bandwidth). Each point is the engine's
float32 flash kernel: prefill does 4 H n^2 d FLOPs on 4 H n d floats (intensity n/4 FLOP per
byte), decode 4 H L d FLOPs on the 2 Hkv L d floats of K and V (0.5 FLOP/byte for MHA, times
H/Hkv for GQA). --bf16 adds each prefill length with bfloat16 products (the same FLOPs and
float32 bytes; AVX512-BF16 does two multiply-adds per 32-bit lane, so it may pass the float32
sgemm roof, and the caption says so). Picture written into --plots DIR: roofline (log-log, the ridge point marked,
each point labelled with its GFLOP/s). JSON: every number, the rules, and the machine.

Examples:
  attn-cli roofline
  attn-cli roofline --n 256,1024 --kv 1024,16384 --threads 2 --format json
  attn-cli roofline --n 512 --kv 4096 --repeat 1 --plots roofline-plots
  attn-cli roofline --n 256 --kv 1024 --repeat 1 --bf16
)");
  cmd->callback([opts] {
    reuse_freed_memory();  // its points are bench runs (cmd_bench.cpp)
    run_roofline_command(*opts);
  });
}

}  // namespace attn::cli
