// attn-cli linear-attention: linear attention computed in parallel and as an RNN, its constant
// state against a growing KV cache, and its weights beside softmax's.
#include <memory>

#include "attn/lessons/concepts/linear_rnn.hpp"
#include "attn/io/number_format.hpp"
#include "attn/render/views/linear_rnn_picture.hpp"
#include "commands.hpp"
#include "experiment_output.hpp"

namespace attn::cli {
namespace {

struct LinearAttentionOptions {
  LinearRnnConfig config;
  OutputOptions output;
  PlotOptions plots;
  bool json = false;
};

Table matrix_table(const std::vector<std::string>& tokens, const MatrixF64& m) {
  Table t{{"query \\ key"}, {}};
  for (const std::string& s : tokens) t.header.push_back(s);
  for (std::size_t i = 0; i < m.shape(0); ++i) {
    std::vector<std::string> row{tokens[i]};
    for (std::size_t j = 0; j < m.shape(1); ++j) row.push_back(format_fixed(m(i, j), 3));
    t.rows.push_back(row);
  }
  return t;
}

std::string linear_attention_text(const LinearRnnResult& r, TableFormat format) {
  const std::size_t d = r.config.d;
  Table memory{{"t", "KV cache (softmax)", "state S, z (linear)"}, {}};
  for (const MemoryAtStep& m : r.memory)
    memory.rows.push_back({std::to_string(m.t), format_bytes(m.kv_cache_bytes), format_bytes(m.state_bytes)});
  if (format == TableFormat::csv) return render_table(memory, format);
  const MatrixF64 difference = r.linear_weights - r.softmax_weights;
  std::string out =
      "Linear attention (Katharopoulos et al. 2020): weight of key j = phi(q_i).phi(k_j), phi(x) = elu(x) + 1, "
      "normalised per row; causal.\n" + std::to_string(r.tokens.size()) + " tokens, one head, d = dv = " +
      std::to_string(d) + ", seed " + std::to_string(r.config.seed) + ".\n\n"
      "Parallel form: out = A V with A = phi(Q) phi(K)^T masked and normalised.\n"
      "Recurrent form: S_t = S_{t-1} + phi(k_t) v_t^T, z_t = z_{t-1} + phi(k_t), out_t = S_t^T phi(q_t) / "
      "z_t.phi(q_t).\n  max |recurrent - parallel| = " + format_g(r.max_abs_recurrent_vs_parallel, 3) +
      " (float64; agree to round-off: " + (r.max_abs_recurrent_vs_parallel <= 1e-12 ? "yes" : "NO") + ")\n\n";
  out += "What one decoding step carries (" + std::to_string(r.config.value_bytes) +
         " bytes a number): the KV cache holds t (d + dv) numbers, the state d dv + d whatever t.\n";
  out += render_table(memory, format);
  out += "The KV cache is larger than the state from t = " + std::to_string(r.crossover_t) + " on.\n\n";
  out += "Linear attention's weights A:\n" + render_table(matrix_table(r.tokens, r.linear_weights), format);
  out += "\nSoftmax's weights softmax(Q K^T / sqrt(d)) on the same Q, K:\n" +
         render_table(matrix_table(r.tokens, r.softmax_weights), format);
  out += "\nA - softmax:\n" + render_table(matrix_table(r.tokens, difference), format);
  out += "\nmax |A - softmax| = " + format_g(r.max_abs_weight_difference, 3) + "; max |output difference| = " +
         format_g(r.max_abs_output_difference, 3) +
         ". phi(q).phi(k) grows like a polynomial of the scores where exp grows exponentially: linear attention's "
         "rows are flatter, it cannot put all its weight on one key.\n";
  return out;
}

void run_linear_attention_command(LinearAttentionOptions opts) {
  if (opts.json) opts.output.format = "json";
  PreparedPlots plots = prepare_plots(opts.plots);
  const LinearRnnResult r = run_linear_rnn(opts.config);
  emit(opts.output, linear_rnn_json(r), [&](TableFormat f) { return linear_attention_text(r, f); });
  if (plots.folder)
    write_plots(plots, opts.output,
                {{"linear_attention", linear_attention_figure(r)},
                 {"linear_attention_memory", linear_attention_memory_figure(r)}});
}

}  // namespace

void setup_linear_attention(CLI::App& app) {
  auto opts = std::make_shared<LinearAttentionOptions>();
  CLI::App* cmd = app.add_subcommand(
      "linear-attention", "Linear attention is an RNN: parallel = recurrent, constant state (Katharopoulos et al. 2020)");
  cmd->add_option("sentence", opts->config.sentence, "the sentence")->capture_default_str();
  cmd->add_option("--d", opts->config.d, "head dim d = dv")->capture_default_str();
  cmd->add_option("--seed", opts->config.seed, "seed of the embeddings (and of the projections: seed + 1)")
      ->capture_default_str();
  cmd->add_option("--max-tokens", opts->config.max_tokens, "refuse longer sentences (the matrices are printed)")
      ->capture_default_str()->check(CLI::Range(std::size_t{1}, std::size_t{1024}));
  cmd->add_option("--value-bytes", opts->config.value_bytes, "bytes a stored number takes in the memory table")
      ->capture_default_str()->check(CLI::Range(std::size_t{1}, std::size_t{16}));
  add_output_options(cmd, opts->output, {"text", "json", "markdown", "csv"});
  cmd->add_flag("--json", opts->json, "print the JSON (the same as --format json)");
  add_plot_options(cmd, opts->plots);
  cmd->footer(R"(phi(x) = elu(x) + 1. Causal. The parallel form builds the [L, L] matrix
A_ij = phi(q_i).phi(k_j) / sum_{j'<=i} phi(q_i).phi(k_j'); the recurrent form keeps only
S_t = sum_{j<=t} phi(k_j) v_j^T [d, dv] and z_t = sum_{j<=t} phi(k_j) [d]. The two must agree
to float64 round-off (<= 1e-12). --format csv prints the memory table.

Pictures written into --plots DIR: linear_attention (softmax's weights P beside linear
attention's A, and A - P on a red-blue scale) and linear_attention_memory (bytes a decoding
step carries against t, log-log: the KV cache against the state S, z, the crossover marked).

Examples:
  attn-cli linear-attention
  attn-cli linear-attention "我喜欢深度学习" --d 4
  attn-cli linear-attention "The cat sat on the mat" --json
  attn-cli linear-attention "The cat sat on the mat" --plots linear-plots
)");
  cmd->callback([opts] { run_linear_attention_command(*opts); });
}

}  // namespace attn::cli
