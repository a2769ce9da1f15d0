// attn-cli explain: the five steps of attention on a small sentence, every matrix labelled.
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>

#include "attn/engine/error.hpp"
#include "attn/engine/tokenize.hpp"
#include "attn/io/file_io.hpp"
#include "attn/lessons/explain.hpp"
#include "attn/render/explain_pictures.hpp"
#include "attn/render/text_table.hpp"
#include "attn/lessons/number_format.hpp"
#include "commands.hpp"
#include "experiment_output.hpp"

namespace attn::cli {
namespace {

struct ExplainOptions {
  ExplainConfig config;
  std::optional<std::string> sentence;  // absent = the default; "" is an error, not the default
  std::string input, mask = "causal";
  OutputOptions output;
  PlotOptions plots;
};

// A sentence of kDefaultMaxTokens words of kMaxTokenChars characters is far below 1 MiB.
std::string read_sentence_file(const std::string& path) {
  std::string text = read_input(path, std::size_t{1} << 20);
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  return text;
}

std::string explain_text(const ExplainResult& r) {
  const std::size_t D = r.config.d_model;
  std::vector<std::string> dims;
  for (std::size_t c = 0; c < D; ++c) dims.push_back("d" + std::to_string(c));
  const auto& t = r.tokens;
  std::string out = "Sentence: \"" + r.config.sentence + "\"  ->  " + count_of(t.size(), "token") +
                    "; one head, d = " + std::to_string(D) + " (seeded, untrained: the steps, not meaning).\n\n";
  out += "Q = x W_q^T  [L, d]\n" + matrix_table(t, dims, r.q) + "\n";
  out += "K = x W_k^T  [L, d]\n" + matrix_table(t, dims, r.k) + "\n";
  out += "V = x W_v^T  [L, d]\n" + matrix_table(t, dims, r.v) + "\n";
  out += "Step 1. scores = Q K^T  [L, L]  (rows: query, columns: key)\n" + matrix_table(t, t, r.scores) + "\n";
  out += "Step 2. scaled = scores / sqrt(" + std::to_string(D) + ") = scores x " + format_g(r.scale, 6) +
         "\n" + matrix_table(t, t, r.scaled) + "\n";
  Tensor2 mask = xt::cast<float>(r.allowed);
  out += std::string("Step 3. masked: ") + (r.config.causal ? "causal mask" : "no mask") +
         " (1 = may attend), blocked scores become -inf\n" + matrix_table(t, t, mask, 0) + "\n" +
         matrix_table(t, t, r.masked) + "\n";
  std::vector<std::string> cols = t;
  cols.push_back("row sum");
  Tensor2 with_sums = xt::concatenate(xt::xtuple(r.weights, xt::view(r.row_sums, xt::all(), xt::newaxis())), 1);
  out += "Step 4. weights = softmax of each row (exp(-inf) = 0: blocked keys get exactly 0)\n" +
         matrix_table(t, cols, with_sums) + "\n";
  out += "Step 5. output = weights V  [L, d]\n" + matrix_table(t, dims, r.output) + "\n";
  out += "Check: attn::sdpa on the same Q, K, V in one call gives the same output: max |difference| = " +
         format_g(r.max_abs_diff, 3) + " (float32 rounding between the steps).\n";
  return out;
}

void run_explain(ExplainOptions opts) {
  if (opts.sentence && !opts.input.empty()) throw InputError("give a SENTENCE or --input FILE, not both");
  if (!opts.input.empty()) opts.config.sentence = read_sentence_file(opts.input);
  if (opts.sentence) opts.config.sentence = *opts.sentence;
  opts.config.causal = opts.mask == "causal";
  PreparedPlots plots = prepare_plots(opts.plots);
  const ExplainResult r = explain_attention(opts.config);
  emit(opts.output, explain_json(r), [&](TableFormat) { return explain_text(r); });
  if (opts.plots.dir.empty()) return;
  std::vector<NamedFigure> figures;
  for (int step = 1; step <= 5; ++step) figures.push_back({kExplainSteps[step - 1], explain_step_figure(r, step)});
  write_plots(plots, opts.output, figures);
}

}  // namespace

void setup_explain(CLI::App& app) {
  auto opts = std::make_shared<ExplainOptions>();
  CLI::App* cmd = app.add_subcommand(
      "explain", "The five steps of attention (scores, scale, mask, softmax, weighted sum), each printed");
  cmd->add_option("sentence", opts->sentence, "the sentence (default \"" + opts->config.sentence + "\")");
  cmd->add_option("-i,--input", opts->input, "read the sentence from a text file (- = stdin)");
  cmd->add_option("--d-model", opts->config.d_model, "width of Q, K, V (one head)")
      ->capture_default_str()->check(CLI::Range(1, 64));
  cmd->add_option("--mask", opts->mask, "causal or none")->capture_default_str()
      ->check(CLI::IsMember({"causal", "none"}));
  cmd->add_option("--seed", opts->config.seed, "seed for embeddings and projections")->capture_default_str();
  cmd->add_option("--max-tokens", opts->config.max_tokens, "refuse longer sentences")
      ->capture_default_str()->check(CLI::Range(1, 64));
  add_output_options(cmd, opts->output, {"text", "json"});
  add_plot_options(cmd, opts->plots);
  cmd->footer(R"(Pictures written into --plots DIR, one heatmap per step, tokens on both axes:
explain-1-scores (Q K^T) and explain-2-scaled (/ sqrt(d)) on a red-blue map centred on 0,
explain-3-masked (blocked cells hatched, from the mask itself), explain-4-weights (softmax,
row sums in the subtitle), explain-5-output (weights V, one row per query).

Examples:
  attn-cli explain
  attn-cli explain "The cat sat on the mat" --mask none --d-model 3
  echo "Thinking strictly is hard" | attn-cli explain --input - --format json
  attn-cli explain --plots explain-plots --image-format both
)");
  cmd->callback([opts] { run_explain(*opts); });
}

}  // namespace attn::cli
