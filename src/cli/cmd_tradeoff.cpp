// attn-cli tradeoff: the efficient-attention family timed, its memory and error measured, on this machine.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <memory>

#include "attn/io/number_format.hpp"
#include "attn/lessons/measure/tradeoff.hpp"
#include "attn/render/views/tradeoff_picture.hpp"
#include "budget.hpp"
#include "commands.hpp"
#include "experiment_output.hpp"

namespace attn::cli {
namespace {

struct TradeoffOptions {
  TradeoffConfig config;
  OutputOptions output;
  PlotOptions plots;
  bool json = false;
};

// At the largest n on one kind of inputs: the approximation closest to exact, and its time
// against exact flash's.
std::string closest_sentence(const TradeoffResult& r, const std::string& kind) {
  const std::size_t n = *std::max_element(r.config.ns.begin(), r.config.ns.end());
  const TradeoffRun *flash = nullptr, *closest = nullptr;
  for (const TradeoffRun& x : r.runs) {
    if (x.n != n || x.inputs != kind) continue;
    if (x.family == "flash") flash = &x;
    else if (!closest || x.error < closest->error) closest = &x;
  }
  return "At n = " + std::to_string(n) + " on " + kind + " inputs, the closest approximation is " + closest->method +
         " (error " + format_g(closest->error, 2) + ", " + format_g(closest->ms, 3) + " ms); exact flash takes " +
         format_g(flash->ms, 3) + " ms.\n";
}

std::string tradeoff_text(const TradeoffResult& r, TableFormat format) {
  Table t{{"inputs", "n", "method", "ms", "GFLOP", "GFLOP/s", "peak memory", "error vs exact"}, {}};
  for (const TradeoffRun& x : r.runs)
    t.rows.push_back({x.inputs, std::to_string(x.n), x.method, format_g(x.ms, 3), format_g(x.flops / 1e9, 3),
                      format_g(x.flops / (x.ms * 1e6), 3), format_bytes(x.peak_bytes), format_g(x.error, 2)});
  if (format == TableFormat::csv) return render_table(t, format);
  const TradeoffConfig& c = r.config;
  std::string out = "One head, d = " + std::to_string(c.head_dim) + " (toy inputs: the model's " +
                    std::to_string(config_for(c, "toy").head_dim) + "), seed " + std::to_string(c.seed) +
                    ". Inputs: random = Q, K, V ~ N(0, 1) (attention spread over every key); local = K a random "
                    "walk, Q = 2 K + noise (attention peaked on the nearest keys); toy = the trained toy model's "
                    "induction head on windows of its task laid end to end (attention found by content). Median of " +
                    std::to_string(c.repeat) +
                    " timed calls. Error: ||O - O_exact||_F / ||O_exact||_F against exact attention with the same "
                    "mask (causal; linformer cannot be, so bidirectional). flash is float32 on every thread, the "
                    "kernel methods float64 on one: constants the big-O hides.\n\n" +
                    render_table(t, format) + "\n";
  if (!r.fits.empty()) {
    out += "Time grows as n^p, fitted over n = ";
    for (std::size_t i = 0; i < c.ns.size(); ++i) out += (i ? ", " : "") + std::to_string(c.ns[i]);
    out += ":\n";
    for (const TradeoffFit& f : r.fits) out += "  " + f.method + ": p = " + format_fixed(f.exponent, 2) + "\n";
  }
  for (const std::string& kind : c.inputs) out += closest_sentence(r, kind);
  return out;
}

void run_tradeoff_command(TradeoffOptions opts) {
  if (opts.json) opts.output.format = "json";
  check_tradeoff_config(opts.config);
  require_memory(tradeoff_bytes(opts.config), "the largest run (a mask's bitmap is n^2 bytes, twice)",
                 "lower --n or --features");
  require_time(tradeoff_seconds(opts.config), "tradeoff with these sizes", "lower --n or --repeat");
  PreparedPlots plots = prepare_plots(opts.plots);
  if (isatty(STDERR_FILENO)) {  // a line redrawn in place, cleared at the end
    opts.config.progress = [](std::size_t done, std::size_t total) {
      std::fprintf(stderr, "\rtradeoff: %zu of %zu runs measured", done, total);
      if (done == total) std::fprintf(stderr, "\r%*s\r", 40, "");
      std::fflush(stderr);
    };
  }
  const TradeoffResult r = run_tradeoff(opts.config);
  emit(opts.output, tradeoff_json(r), [&](TableFormat f) { return tradeoff_text(r, f); });
  write_plots(plots, opts.output, {{"tradeoff", tradeoff_figure(r)}});
}

}  // namespace

void setup_tradeoff(CLI::App& app) {
  auto opts = std::make_shared<TradeoffOptions>();
  CLI::App* cmd = app.add_subcommand(
      "tradeoff", "Efficient attention measured here: time, memory and error of window, sparse, linear, Performer, Linformer");
  cmd->add_option("--n", opts->config.ns, "sequence lengths, e.g. 256,1024,4096,16384")->delimiter(',')->capture_default_str();
  cmd->add_option("--head-dim", opts->config.head_dim, "head width d")->capture_default_str();
  cmd->add_option("--window", opts->config.window, "keys of the causal sliding window")->capture_default_str();
  cmd->add_option("--stride", opts->config.stride, "stride of the strided sparse pattern")->capture_default_str();
  cmd->add_option("--features", opts->config.features, "Performer's random features m, one run each")
      ->delimiter(',')->capture_default_str();
  cmd->add_option("--rank", opts->config.rank, "Linformer's projected rows k")->capture_default_str();
  cmd->add_option("--repeat", opts->config.repeat, "timed calls per method (the median is kept)")->capture_default_str();
  cmd->add_option("--threads", opts->config.threads, "flash's threads (0 = all)")->capture_default_str();
  cmd->add_option("--inputs", opts->config.inputs, "random (no structure), local (attention peaked nearby), toy (the trained toy model's induction head), "
                  "comma-separated")
      ->delimiter(',')->capture_default_str();
  cmd->add_option("--seed", opts->config.seed, "seed of Q, K, V and the methods' random draws")->capture_default_str();
  add_time_flag(cmd);
  add_memory_flag(cmd);
  add_output_options(cmd, opts->output, {"text", "json", "markdown", "csv"});
  cmd->add_flag("--json", opts->json, "print the JSON (the same as --format json)");
  add_plot_options(cmd, opts->plots);
  cmd->footer(R"(Methods, one head each: flash (exact softmax, float32), a causal sliding window and Child et
al.'s strided pattern (flash with a mask), linear attention (elu + 1), Performer (FAVOR+, one run
per --features), Linformer (K, V projected to --rank rows; bidirectional). Every error is against
exact attention (the float64 flash kernel) on the same Q, K, V with the same mask. Peak memory
is the process's resident peak during the method's first call, above its size before.

Pictures written into --plots DIR: tradeoff (time against error at the largest n, one panel per
kind of inputs, disc area = peak memory; time against n on log-log axes with each method's
fitted exponent).

Inputs: random = Q, K, V ~ N(0, 1); local = K a random walk, Q = 2 K + noise; toy = the q, k, v
of the induction head of the toy model attn-cli carries (head dim 16), on windows of 32 held-out
tokens of its task laid end to end, each window its own forward pass.

Examples:
  attn-cli tradeoff --n 256,1024 --inputs local
  attn-cli tradeoff --n 256 --inputs toy --features 16 --repeat 1
  attn-cli tradeoff --n 256,1024 --repeat 1 --plots tradeoff-plots
  attn-cli tradeoff --n 512 --features 16,256 --json
(n = 16384 is past the default time budget: add --max-seconds 900.)
)");
  cmd->callback([opts] { run_tradeoff_command(*opts); });
}

}  // namespace attn::cli
