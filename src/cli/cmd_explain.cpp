// attn-cli explain: the steps of attention on a small sentence, every matrix labelled, and on request
// the online softmax, the softmax Jacobian and the symmetry lesson.
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>

#include "attn/engine/core/error.hpp"
#include "attn/engine/text/printable_text.hpp"
#include "attn/engine/text/tokenize.hpp"
#include "attn/io/file_io.hpp"
#include "attn/lessons/concepts/explain.hpp"
#include "attn/render/views/explain_pictures.hpp"
#include "attn/render/report/report_table.hpp"
#include "attn/render/views/split_kv_picture.hpp"
#include "attn/render/draw/text_table.hpp"
#include "attn/io/number_format.hpp"
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

std::string vector_text(const std::vector<double>& v) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + format_fixed(v[i], 4);
  return s + "]";
}

std::string online_text(const ExplainResult& r) {
  const OnlineTrace& o = *r.online;
  const std::string q = "'" + r.tokens[o.row] + "'";
  std::string out = "Online softmax on row " + std::to_string(o.row) + " (" + q +
                    "), one key at a time, as FlashAttention does a tile at a time:\n"
                    "  m = max so far, l = sum of exp(s - m) so far, o = sum of exp(s - m) v so far.\n"
                    "  A new key with score s: m' = max(m, s); l and o are multiplied by exp(m - m') (the rescale),\n"
                    "  then l += exp(s - m'), o += exp(s - m') v. The whole row is never held at once.\n";
  Table table{{"key", "score s", "m", "rescale", "l", "o"}, {}};
  auto& rows = table.rows;
  for (const OnlineStep& s : o.steps) {
    if (s.masked) {
      rows.push_back({std::to_string(s.key) + " '" + r.tokens[s.key] + "'", "-inf (masked)", "", "", "", "skipped"});
      continue;
    }
    const bool first = s.l == std::exp(0.0) && s.rescale == 0;  // the first visible key: nothing to rescale yet
    rows.push_back({std::to_string(s.key) + " '" + r.tokens[s.key] + "'", format_fixed(s.score, 4),
                    format_fixed(s.m, 4), first ? "-" : format_fixed(s.rescale, 4), format_fixed(s.l, 4),
                    vector_text(s.o)});
  }
  out += render_table(table, TableFormat::text);
  out += "At the end: weights exp(s - m) / l = " + vector_text(o.weights) + "\n" +
         "            output o / l = " + vector_text(o.output) + "\n" +
         "Against step 5's softmax row: max |difference| = " + format_g(o.max_weight_diff, 3) +
         "; against step 6's output row: " + format_g(o.max_output_diff, 3) + " (float32 rounding of the steps).\n";
  return out;
}

std::string jacobian_text(const ExplainResult& r) {
  const JacobianLesson& J = *r.jacobian;
  std::vector<std::string> p_labels, s_labels;
  for (const std::string& tok : r.tokens) {
    p_labels.push_back("p(" + tok + ")");
    s_labels.push_back("s(" + tok + ")");
  }
  std::string out = "Softmax Jacobian of row " + std::to_string(J.row) + " ('" + r.tokens[J.row] +
                    "'): d p_j / d s_k = p_j (1[j = k] - p_k), i.e. diag(p) - p p^T\n" +
                    matrix_table(p_labels, s_labels, J.jacobian, 4) + "\n";
  out += "Checked by central differences in float64: max |difference| = " + format_g(J.max_fd_diff, 3) +
         ". Every row sums to 0 (max |sum| " + format_g(J.max_row_sum, 3) +
         "): adding one number to all scores changes no weight. Symmetric: max |J - J^T| = " +
         format_g(J.max_asymmetry, 3) + ". " + jacobian_masked_text(r) + "\n";
  out += "Cross-entropy -log p_y with target y = " + std::to_string(J.target) + " ('" + r.tokens[J.target] +
         "'): its gradient with respect to the scores is p - onehot(y) = " + vector_text(J.grad_ce) +
         "\n(checked by central differences: max |difference| = " + format_g(J.max_ce_fd_diff, 3) +
         "). The Jacobian's product collapses to this: no L x L matrix is needed in training.\n";
  return out;
}

std::string symmetry_text(const SymmetryLesson& y) {
  return "Why W_q and W_k: without them the scores are x x^T / sqrt(d), a symmetric matrix: max |S - S^T| = " +
         format_g(y.scores_no_projection, 3) + (y.scores_no_projection == 0 ? " (exactly 0)" : "") + ",\nso token a would match b exactly as much as b " +
         "matches a. With the projections, Q K^T / sqrt(d): max |S - S^T| = " + format_g(y.scores_with_projection, 3) +
         ".\nThe weights are not symmetric even without projections, since each row is normalized on its own: "
         "max |P - P^T| = " + format_g(y.weights_no_projection, 3) + " (no mask).\n";
}

std::string multihead_text(const ExplainResult& r) {
  const MultiHeadByHand& m = *r.multihead;
  const auto& t = r.tokens;
  const std::string H = std::to_string(m.heads), d = std::to_string(m.head_dim), D = std::to_string(r.config.d_model);
  auto dims = [](std::size_t first, std::size_t n) {
    std::vector<std::string> v;
    for (std::size_t c = first; c < first + n; ++c) v.push_back("d" + std::to_string(c));
    return v;
  };
  std::string out = "Multi-head attention by hand: " + H + " heads of d_h = " + D + " / " + H + " = " + d +
                    " on the same x, with their own seeded W_q, W_k, W_v, W_o [" + D + ", " + D + "].\n";
  out += "1. project  Q, K, V = x W^T: [L, " + D + "] x [" + D + ", " + D + "] -> [L, " + D + "], all heads at once\n";
  out += "2. split    head h takes columns h*" + d + " .. h*" + d + " + " + std::to_string(m.head_dim - 1) +
         ": [L, " + D + "] -> [L, " + H + ", " + d + "] -> [" + H + ", L, " + d + "] (a reshape and a transpose, no arithmetic)\n";
  out += "3. attend   per head A_h = softmax(Q_h K_h^T / sqrt(" + d + ")) [L, L], O_h = A_h V_h [L, " + d + "]\n";
  for (std::size_t h = 0; h < m.heads; ++h) {
    out += "\n   head " + std::to_string(h) + ": A_" + std::to_string(h) + " [L, L]\n" + matrix_table(t, t, m.weights[h]) +
           "   O_" + std::to_string(h) + " = A_" + std::to_string(h) + " V_" + std::to_string(h) + " [L, " + d + "]\n" +
           matrix_table(t, dims(h * m.head_dim, m.head_dim), m.head_out[h]);
  }
  out += "\n4. concat   O = [O_0 | ... | O_" + std::to_string(m.heads - 1) + "]: " + H + " x [L, " + d + "] -> [L, " + D + "]\n" +
         matrix_table(t, dims(0, r.config.d_model), m.concat);
  out += "5. output   y = O W_o^T: [L, " + D + "] x [" + D + ", " + D + "] -> [L, " + D + "] (W_o mixes the heads)\n" +
         matrix_table(t, dims(0, r.config.d_model), m.output);
  out += "Check: attn::mha on the same x and weights: max |difference| = " + format_g(m.max_diff_vs_mha, 3) +
         ".\nFused QKV: one matrix W_qkv = [W_q; W_k; W_v] [" + std::to_string(3 * r.config.d_model) + ", " + D +
         "], one product x W_qkv^T [L, " + std::to_string(3 * r.config.d_model) +
         "] split in three, is the same computation: max |fused - separate| = " + format_g(m.max_diff_fused, 3) + ".\n";
  return out;
}

std::string key_range(std::size_t first, std::size_t end) {
  return end - first == 1 ? std::to_string(first) : std::to_string(first) + "-" + std::to_string(end - 1);
}

std::string split_kv_text(const ExplainResult& r) {
  const SplitKvLesson& s = *r.split_kv;
  const std::size_t row = r.config.row.value_or(r.tokens.size() - 1), C = s.chunks.size();
  std::string out = "Split-KV (Flash-Decoding) on row " + std::to_string(row) + " ('" + r.tokens[row] + "'): its " +
                    count_of(s.keys, "key") + " cut into " + count_of(C, "chunk") +
                    ", each reduced on its own (as one thread would), then merged exactly:\n"
                    "  chunk i: m_i = max of its scores, l_i = sum exp(s - m_i), o_i = sum exp(s - m_i) v  (not divided yet)\n"
                    "  merge:   m = max m_i; each chunk is rescaled to it by exp(m_i - m):\n"
                    "           l = sum exp(m_i - m) l_i, o = sum exp(m_i - m) o_i, output = o / l\n";
  Table table{{"chunk", "keys", "visible", "m_i", "l_i", "exp(m_i - m)", "o_i"}, {}};
  std::vector<std::size_t> empty;
  for (std::size_t c = 0; c < C; ++c) {
    const SplitKvChunk& k = s.chunks[c];
    if (k.visible == 0) empty.push_back(c);
    table.rows.push_back({std::to_string(c), key_range(k.first, k.end), std::to_string(k.visible),
                          k.visible ? format_fixed(k.m, 4) : "-inf", k.visible ? format_fixed(k.l, 4) : "0",
                          k.visible ? format_fixed(k.factor, 4) : "0", k.visible ? vector_text(k.o) : "0"});
  }
  out += render_table(table, TableFormat::text);
  for (std::size_t c : empty) {
    out += "Chunk " + std::to_string(c) + " has no key this row may see (" +
           (r.config.causal ? "causal mask" : "mask") + "): m_" + std::to_string(c) + " = -inf, l_" +
           std::to_string(c) + " = 0, o_" + std::to_string(c) +
           " = 0, and its factor is 0, never exp(-inf - (-inf)) = NaN.\n";
  }
  bool same = true;
  for (std::size_t x = 0; x < s.merged.size(); ++x) same = same && format_fixed(s.merged[x], 4) == format_fixed(s.one_pass[x], 4);
  out += "Merged:   m = " + format_fixed(s.m, 4) + ", l = " + format_fixed(s.l, 4) + ", output o / l = " +
         vector_text(s.merged) + "\n" + "One pass: softmax(q K^T / sqrt(" + std::to_string(r.config.d_model) +
         ")) V             = " + vector_text(s.one_pass) + "  (attn::sdpa, the naive kernel)\n" +
         "max |merged - one pass| = " + format_g(s.max_abs_diff, 3) +
         (same ? ": the same to the 4 decimals printed" : ": they differ at the 4 decimals printed") +
         " (float32 rounding; the merge is exact in real numbers).\n";
  return out;
}

std::string explain_text(const ExplainResult& r) {
  const std::size_t D = r.config.d_model;
  std::vector<std::string> dims;
  for (std::size_t c = 0; c < D; ++c) dims.push_back("d" + std::to_string(c));
  const auto& t = r.tokens;
  std::string out = "Sentence: \"" + printable_text(r.config.sentence) + "\"  ->  " + count_of(t.size(), "token") +
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
  std::vector<std::string> max_cols = t;
  max_cols.push_back("row max");
  Tensor2 with_max = xt::concatenate(xt::xtuple(r.shifted, xt::view(r.row_max, xt::all(), xt::newaxis())), 1);
  out += "Step 4. shifted = masked - the row's max: every exp is then in (0, 1], so none overflows\n"
         "        (float32's exp overflows above 88.7), and the softmax is the same: exp(s - c) / sum exp(s - c) = exp(s) / sum exp(s)\n" +
         matrix_table(t, max_cols, with_max) + "\n";
  std::vector<std::string> cols = t;
  cols.push_back("row sum");
  Tensor2 with_sums = xt::concatenate(xt::xtuple(r.weights, xt::view(r.row_sums, xt::all(), xt::newaxis())), 1);
  out += "Step 5. weights = softmax of each row (exp(-inf) = 0: blocked keys get exactly 0)\n" +
         matrix_table(t, cols, with_sums) + "\n";
  out += "Step 6. output = weights V  [L, d]\n" + matrix_table(t, dims, r.output) + "\n";
  out += "Check: attn::sdpa on the same Q, K, V in one call gives the same output: max |difference| = " +
         format_g(r.max_abs_diff, 3) + " (float32 rounding between the steps).\n";
  if (r.online) out += "\n" + online_text(r);
  if (r.jacobian) out += "\n" + jacobian_text(r);
  if (r.symmetry) out += "\n" + symmetry_text(*r.symmetry);
  if (r.multihead) out += "\n" + multihead_text(r);
  if (r.split_kv) out += "\n" + split_kv_text(r);
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
  for (int step = 1; step <= 6; ++step) figures.push_back({kExplainSteps[step - 1], explain_step_figure(r, step)});
  if (r.jacobian) figures.push_back({"explain-jacobian", explain_jacobian_figure(r)});
  if (r.multihead) figures.push_back({"explain-multihead", multihead_figure(r)});
  if (r.split_kv) {
    const std::size_t row = r.config.row.value_or(r.tokens.size() - 1);
    figures.push_back({"explain-split-kv", split_kv_figure(*r.split_kv, r.tokens, "'" + r.tokens[row] + "' [" + std::to_string(row) + "]")});
  }
  write_plots(plots, opts.output, figures);
}

}  // namespace

void setup_explain(CLI::App& app) {
  auto opts = std::make_shared<ExplainOptions>();
  CLI::App* cmd = app.add_subcommand(
      "explain", "The steps of attention (scores, scale, mask, subtract the max, softmax, weighted sum), each printed");
  cmd->add_option("sentence", opts->sentence, "the sentence (default \"" + opts->config.sentence + "\")");
  cmd->add_option("-i,--input", opts->input, "read the sentence from a text file (- = stdin)");
  cmd->add_option("--d-model", opts->config.d_model, "width of Q, K, V (one head)")
      ->capture_default_str()->check(CLI::Range(1, 64));
  cmd->add_option("--mask", opts->mask, "causal or none")->capture_default_str()
      ->check(CLI::IsMember({"causal", "none"}));
  cmd->add_option("--seed", opts->config.seed, "seed for embeddings and projections")->capture_default_str();
  cmd->add_option("--max-tokens", opts->config.max_tokens, "refuse longer sentences")
      ->capture_default_str()->check(CLI::Range(1, 64));
  cmd->add_flag("--online", opts->config.online,
                "the online softmax (running max m, running sum l, rescaling) on one row, key by key");
  cmd->add_flag("--jacobian", opts->config.jacobian,
                "the softmax Jacobian diag(p) - p p^T of one row, and cross-entropy's gradient p - y");
  cmd->add_flag("--symmetry", opts->config.symmetry,
                "why the projections matter: x x^T is symmetric, Q K^T is not (computed)");
  cmd->add_option("--heads", opts->config.heads,
                  "multi-head attention by hand with H heads (at most 16: every head is printed and drawn): "
                  "split, per-head attention, concat, W_o, every shape")
      ->capture_default_str()->check(CLI::Range(1, 16));
  cmd->add_option("--split-kv", opts->config.split_kv,
                  "Flash-Decoding's split-KV merge on one row: its keys cut into C chunks (1 to the token count), "
                  "each chunk's (m_i, l_i, o_i), the rescale exp(m_i - m), merged against the one-pass softmax V");
  cmd->add_option("--row", opts->config.row, "the query row of --online, --jacobian and --split-kv (default: the last)");
  cmd->add_option("--target", opts->config.target, "the cross-entropy target key of --jacobian (default: the row itself)");
  add_output_options(cmd, opts->output, {"text", "json"});
  add_plot_options(cmd, opts->plots);
  cmd->footer(R"(Pictures written into --plots DIR, one per step, tokens on both axes:
explain-1-scores (Q K^T), explain-2-scaled (/ sqrt(d)), explain-3-masked (blocked cells
hatched, from the mask itself) and explain-4-shifted (minus each row's max) on ONE red-blue
scale centred on 0; explain-5-weights (softmax on [0, 1], row sums in the subtitle);
explain-6-output (V beside weights V, one scale); explain-jacobian with --jacobian;
explain-multihead with --heads H (x, Q K V split into heads, each head's weights and output,
the concatenation and W_o, a shape on every arrow); explain-split-kv with --split-kv C (the
row's keys cut into C chunks, each chunk's m_i, l_i and o_i, the rescale factors exp(m_i - m),
the merged row beside the one-pass row). The chunks are as equal as the key count allows
(sizes differ by at most one); with the causal mask and an early --row, the chunks after the
row hold no visible key: m = -inf, l = 0, o = 0, and the merge gives them the factor 0, never NaN.

Examples:
  attn-cli explain
  attn-cli explain "The cat sat on the mat" --online --row 3
  attn-cli explain --jacobian --target 1 --symmetry
  attn-cli explain "The cat sat on the mat" --heads 2 --plots explain-heads
  attn-cli explain "The cat sat on the mat" --split-kv 3 --plots explain-split
  attn-cli explain "The cat sat on the mat" --split-kv 3 --row 1 --format json
  attn-cli explain "The cat sat on the mat" --mask none --d-model 3
  echo "Thinking strictly is hard" | attn-cli explain --input - --format json
  attn-cli explain --plots explain-plots --image-format both
)");
  cmd->callback([opts] { run_explain(*opts); });
}

}  // namespace attn::cli
