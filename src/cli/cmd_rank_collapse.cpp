// attn-cli rank-collapse: pure attention loses rank doubly exponentially with depth; skips stop it.
#include <cmath>
#include <memory>

#include "attn/io/file_io.hpp"
#include "attn/io/number_format.hpp"
#include "attn/lessons/concepts/rank_collapse.hpp"
#include "attn/render/views/rank_collapse_picture.hpp"
#include "budget.hpp"
#include "commands.hpp"
#include "experiment_output.hpp"

namespace attn::cli {
namespace {

struct RankCollapseOptions {
  RankCollapseConfig config;
  OutputOptions output;
  PlotOptions plots;
  std::string case_out;  // --save-case FILE: the random stacks' inputs and weights
  bool json = false;
};

std::string fit_sentence(const SettingResidual& s) {
  const CollapseFit& f = s.fit;
  if (f.points < 2) return "too few layers above round-off to fit (" + std::to_string(f.points) + ")";
  return "layers " + std::to_string(f.first) + ".." + std::to_string(f.last) + ": exponential fit ln r = " +
         format_g(f.alpha, 3) + " + " + format_g(f.beta, 3) + " l (rms error " + format_g(f.rms_exponential, 2) +
         " in ln r); doubly exponential fit -ln r = e^(" + format_g(f.gamma, 3) + " + " + format_g(f.delta, 3) +
         " l), so -ln r grows x" + format_g(f.growth, 3) + " per layer (rms error " + format_g(f.rms_doubly, 2) +
         "); each layer's ln(r_l+1 / r_l) is at least x" + format_g(f.min_acceleration, 3) + " the one before";
}

std::string rank_collapse_text(const RankCollapseResult& r, TableFormat format) {
  Table t{{"layer", "attention only", "skip", "mlp", "skip + mlp"}, {}};
  if (r.model) t.header.push_back("model");
  for (std::size_t l = 0; l < r.settings[0].r.size(); ++l) {
    std::vector<std::string> row{std::to_string(l)};
    for (const SettingResidual& s : r.settings) row.push_back(format_g(s.r[l], 3));
    if (r.model) row.push_back(l < r.model->stream.r.size() ? format_g(r.model->stream.r[l], 3) : "");
    t.rows.push_back(row);
  }
  if (r.model)  // the model may have more layers than --layers
    for (std::size_t l = r.settings[0].r.size(); l < r.model->stream.r.size(); ++l)
      t.rows.push_back({std::to_string(l), "", "", "", "", format_g(r.model->stream.r[l], 3)});
  if (format == TableFormat::csv) return render_table(t, format);

  const RankCollapseConfig& c = r.config;
  std::string out =
      "r_l = ||X_l - 1 xbar^T||_F / ||X_l||_F after layer l (0 = every token's row is the same: rank one), float64.\n"
      "Random stack: " + std::to_string(c.layers) + " layers, n = " + std::to_string(c.tokens) + " tokens, D = " +
      std::to_string(c.d_model) + ", " + std::to_string(c.heads) + " heads, MLP hidden " +
      std::to_string(c.mlp_ratio * c.d_model) + ", weights N(0, 1/fan_in), seed " + std::to_string(c.seed) +
      "; the same weights in every setting.\n";
  if (r.model)
    out += "model: " + r.model->dir + " (" + std::to_string(r.model->layers) + " layers, D = " +
           std::to_string(r.model->d_model) + ", causal, x += MHA(x)) on " + std::to_string(r.model->tokens) +
           " random tokens.\n";
  out += "\n" + render_table(t, format) + "\n";
  const SettingResidual& a = r.settings[0];
  const SettingResidual& skip = r.settings[1];
  out += "Pure attention, " + fit_sentence(a) + ".\n";
  out += "  Doubly exponential (>= 3 layers, growth > 1.5, every layer's fall > 1.5x the last; exponential: 1x): " +
         std::string(r.pure_attention_doubly_exponential ? "yes" : "NO") +
         ". Dong et al.'s bound has growth 3: r_L <= C^((3^L-1)/2) r_0^(3^L).\n";
  if (a.layer_at_floor)
    out += "  It reaches float64 round-off (r <= " + format_g(kRoundoffFloor, 2) + ") at layer " +
           std::to_string(*a.layer_at_floor) + ".\n";
  out += "With skips, the smallest r is " + format_g(skip.smallest, 3) + " (r_L / r_0 = " +
         format_g(skip.r.back() / skip.r.front(), 3) + ", x" + format_g(skip.factor_per_layer, 3) +
         " per layer on average).\n  Skips keep the rank (every r_l >= " + format_g(kSkipFloor, 2) + "): " + (r.skip_keeps_rank ? "yes" : "NO") + ".\n";
  out += "With an MLP only, the smallest r is " + format_g(r.settings[2].smallest, 3) + "; with both, " +
         format_g(r.settings[3].smallest, 3) + ".\n";
  if (r.model)
    out += "Trained model's residual stream: smallest r " + format_g(r.model->stream.smallest, 3) + ", r_L = " +
           format_g(r.model->stream.r.back(), 3) + ".\n";
  return out;
}

void run_rank_collapse_command(RankCollapseOptions opts) {
  if (opts.json) opts.output.format = "json";
  check_rank_collapse_config(opts.config);
  require_memory(rank_collapse_bytes(opts.config), "rank-collapse's weights and scores",
                 "lower --layers, --tokens or --d-model");
  require_time(rank_collapse_flops(opts.config) / kFlopsPerSecond, "rank-collapse with these sizes",
               "lower --layers, --tokens or --d-model");
  PreparedPlots plots = prepare_plots(opts.plots);
  const RankCollapseResult r = run_rank_collapse(opts.config);
  if (!opts.case_out.empty()) write_file_atomically(opts.case_out, rank_collapse_case_json(opts.config).dump() + "\n");
  emit(opts.output, rank_collapse_json(r), [&](TableFormat f) { return rank_collapse_text(r, f); });
  write_plots(plots, opts.output, {{"rank_collapse", rank_collapse_figure(r)}});
}

}  // namespace

void setup_rank_collapse(CLI::App& app) {
  auto opts = std::make_shared<RankCollapseOptions>();
  CLI::App* cmd = app.add_subcommand(
      "rank-collapse", "Pure attention loses rank doubly exponentially with depth; skips stop it (Dong et al. 2021)");
  cmd->add_option("--layers", opts->config.layers, "layers L of the random stack")->capture_default_str();
  cmd->add_option("--tokens", opts->config.tokens, "tokens n (rows of X); with --model, capped at its context")
      ->capture_default_str();
  cmd->add_option("--d-model", opts->config.d_model, "model width D")->capture_default_str();
  cmd->add_option("--heads", opts->config.heads, "attention heads H (D % H == 0)")->capture_default_str();
  cmd->add_option("--mlp-ratio", opts->config.mlp_ratio, "MLP hidden width = ratio * D")->capture_default_str();
  cmd->add_option("--seed", opts->config.seed, "seed of X_0, the weights and the model's tokens")->capture_default_str();
  cmd->add_option("--model", opts->config.model_dir,
                  "a toy model folder (attn-cli train writes DIR/model): r_l on its own residual stream");
  cmd->add_option("--save-case", opts->case_out,
                  "also write X_0 and every layer's weights as JSON (scripts/check_rank_collapse.py reads it)");
  add_time_flag(cmd);
  add_memory_flag(cmd);
  add_output_options(cmd, opts->output, {"text", "json", "markdown", "csv"});
  cmd->add_flag("--json", opts->json, "print the JSON (docs/contracts.md's contract; the same as --format json)");
  add_plot_options(cmd, opts->plots);
  cmd->footer(R"(Four settings on the same seeded weights: attention only X <- SA(X); skip X <- X + SA(X);
mlp X <- MLP(SA(X)); skip_mlp X <- X + SA(X), X <- X + MLP(X). SA is multi-head softmax
self-attention (not causal, scale 1/sqrt(D/H)), MLP(X) = relu(X W1^T) W2^T, no LayerNorm.
r_l = ||X_l - 1 xbar^T||_F / ||X_l||_F, xbar = column means; 0 means every token is the same.
The fit: over layers with 1e-12 < r_l < 1, ln(-ln r_l) = gamma + delta l (doubly exponential,
-ln r multiplied by b = e^delta per layer; Dong et al.'s bound has b = 3) against
ln r_l = alpha + beta l (exponential).

Pictures written into --plots DIR: rank_collapse (r_l against l, log scale, one panel per
setting and one for --model, with the fit and float64's round-off floor).

Examples:
  attn-cli rank-collapse
  attn-cli rank-collapse --layers 8 --tokens 16 --json
  attn-cli rank-collapse --plots rank-plots
  attn-cli train --steps 100 --out toy
  attn-cli rank-collapse --model toy/model --json
)");
  cmd->callback([opts] { run_rank_collapse_command(*opts); });
}

}  // namespace attn::cli
