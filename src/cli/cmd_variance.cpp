// attn-cli variance: Var(q.k) = d_k and what dividing by sqrt(d_k) does to softmax, measured.
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <memory>

#include "attn/render/views/experiment_pictures.hpp"
#include "attn/lessons/concepts/variance.hpp"
#include "budget.hpp"
#include "commands.hpp"
#include "experiment_output.hpp"

namespace attn::cli {
namespace {

struct VarianceOptions {
  VarianceConfig config;
  OutputOptions output;
  PlotOptions plots;
};

std::string variance_text(const VarianceResult& r, TableFormat format) {
  Table stats{{"d_k", "mean q.k", "var q.k", "theory +-3se", "mean q.k/sqrt(d_k)", "var scaled",
               "theory +-3se", "in band"}, {}};
  Table soft{{"d_k", "max p unscaled", "max p scaled", "H unscaled", "H scaled", "||J||F unscaled",
              "||J||F scaled"}, {}};
  for (const VarianceRow& x : r.rows) {
    stats.rows.push_back({std::to_string(x.d_k), format_g(x.mean_unscaled, 3), format_g(x.var_unscaled, 5),
                          format_g(x.var_unscaled_theory) + " +- " + format_g(kBandSigmas * x.var_unscaled_se, 3),
                          format_g(x.mean_scaled, 3), format_fixed(x.var_scaled, 4),
                          "1 +- " + format_fixed(kBandSigmas * x.var_scaled_se, 4), x.within_band ? "yes" : "NO"});
    soft.rows.push_back({std::to_string(x.d_k), format_fixed(x.max_weight_unscaled, 3),
                         format_fixed(x.max_weight_scaled, 3), format_fixed(x.entropy_unscaled, 3),
                         format_fixed(x.entropy_scaled, 3), format_g(x.jacobian_unscaled, 3),
                         format_g(x.jacobian_scaled, 3)});
  }
  if (format == TableFormat::csv) return render_table(stats, format) + "\n" + render_table(soft, format);
  const VarianceRow& first = r.rows.front();
  std::string out = "q, k have i.i.d. N(0,1) entries; " + std::to_string(first.samples) +
                    " independent pairs per d_k (seed " + std::to_string(r.config.seed) + ").\n"
                    "Theory: E[q.k] = 0, Var(q.k) = d_k, Var(q.k/sqrt(d_k)) = 1. The band is theory +- 3 "
                    "standard errors of the sample variance, se^2 ~ (2 d_k^2 + 6 d_k)/S (see --help).\n\n";
  out += render_table(stats, format);
  out += "\nWhat the variance does to softmax: one query against " + std::to_string(first.keys) +
         " keys, averaged over " + std::to_string(first.softmax_rows) +
         " rows. H = entropy in nats; ||J||F = Frobenius norm of the softmax Jacobian diag(p) - p p^T.\n"
         "A uniform row has max p = " + format_g(1.0 / static_cast<double>(first.keys), 3) + ", H = " +
         format_fixed(r.entropy_uniform, 3) + ", ||J||F = " + format_g(r.jacobian_uniform, 3) +
         "; a one-hot row has 1, 0, 0.\n\n";
  out += render_table(soft, format);
  out += "\nAs d_k grows, the unscaled scores spread like sqrt(d_k): softmax saturates toward one key and "
         "its Jacobian, the only path of the gradient, shrinks toward 0. Scaled rows look alike for every d_k.\n";
  if (const auto rise = jacobian_rise(r)) out += jacobian_rise_sentence(*rise) + "\n";
  return out;
}

void run_variance_command(VarianceOptions opts) {
  check_variance_config(opts.config);
  require_time(variance_draws(opts.config) / kRandomDrawsPerSecond, "variance with these --dk and --samples",
               "lower --samples or the largest --dk");
  PreparedPlots plots = prepare_plots(opts.plots);
  // A progress line on stderr, only for a long sweep and only when a person is watching.
  double work = 0;
  for (std::size_t d : opts.config.d_ks) work += static_cast<double>(d) * static_cast<double>(opts.config.samples);
  if (work > 5e6 && isatty(STDERR_FILENO)) {
    opts.config.progress = [](std::size_t done, std::size_t total) {
      std::fprintf(stderr, "\rvariance: %3.0f%% of the sweep", 100.0 * static_cast<double>(done) / static_cast<double>(total));
      if (done == total) std::fprintf(stderr, "\r%*s\r", 30, "");
      std::fflush(stderr);
    };
  }
  const VarianceResult r = run_variance(opts.config);
  emit(opts.output, variance_json(r), [&](TableFormat f) { return variance_text(r, f); });
  write_plots(plots, opts.output,
              {{"variance", variance_figure(r)}, {"saturation", saturation_figure(r)}});
}

}  // namespace

void setup_variance(CLI::App& app) {
  auto opts = std::make_shared<VarianceOptions>();
  CLI::App* cmd = app.add_subcommand(
      "variance", "Measure Var(q.k) = d_k, the 1/sqrt(d_k) scale, and softmax saturation");
  cmd->add_option("--dk", opts->config.d_ks, "key/query widths to sweep (comma-separated)")
      ->delimiter(',')->capture_default_str();
  cmd->add_option("--samples", opts->config.samples, "independent (q, k) pairs per d_k")
      ->capture_default_str()->check(CLI::Range(std::size_t{2}, std::size_t{100000000}));
  cmd->add_option("--keys", opts->config.keys, "keys per softmax row (rows = samples / keys)")
      ->capture_default_str()->check(CLI::Range(std::size_t{2}, std::size_t{100000}));
  cmd->add_option("--seed", opts->config.seed, "seed of the generator")->capture_default_str();
  add_time_flag(cmd);
  add_output_options(cmd, opts->output, {"text", "json", "markdown", "csv"});
  add_plot_options(cmd, opts->plots);
  cmd->footer(R"(Pictures written into --plots DIR: variance (Var(q.k) vs d_k on log2-log2 axes beside the
theory d_k and its +-3 se band; the scaled variance beside 1), saturation (max weight, entropy
and softmax Jacobian norm vs d_k, unscaled vs scaled).

Sampling error: Var(q.k) = d_k and E[(q.k)^4] = 3 d_k^2 + 6 d_k, so the sample variance of
S pairs has standard error sqrt((2 d_k^2 + 6 d_k)/S) (exactly: mu4/S - sigma^4 (S-3)/(S(S-1))).

Examples:
  attn-cli variance --dk 8,64,512 --samples 2000
  attn-cli variance --dk 64 --samples 1000 --format json --out variance.json
  attn-cli variance --dk 8,32,128,512 --samples 2000 --plots variance-plots --image-format both
)");
  cmd->callback([opts] { run_variance_command(*opts); });
}

}  // namespace attn::cli
