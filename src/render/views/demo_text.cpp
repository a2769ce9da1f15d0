// `attn-cli demo`'s terminal text (demo_view.hpp): the tokens, the single head's heatmap and
// top-k, the model's or the trained model's heads, then each check in a line (demo_checks_text.cpp),
// and after the folder is written, what it holds.
#include "attn/render/views/demo_view.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "attn/engine/text/printable_text.hpp"
#include "attn/io/number_format.hpp"
#include "attn/io/shipped_model.hpp"
#include "attn/render/draw/terminal_heatmap.hpp"
#include "attn/render/draw/text_table.hpp"
#include "attn/render/views/model_pictures.hpp"
#include "demo_text_parts.hpp"

namespace attn {
namespace {

// With --model: every head's scores on the sentence, then which head the heatmap shows.
void print_model_heads(const TextOut& out, const DemoResult& r, const char* scale) {
  const DemoModel& m = *r.model;
  const bool gpt2 = m.architecture == "gpt2", folder = m.architecture != "toy";
  out.os << (gpt2 ? std::string("GPT-2 model ") : folder ? m.architecture + " model " : std::string("Model ")) << m.path
         << ": " << m.config.layers << " layers x " << m.config.heads
         << (gpt2     ? " heads, width " + std::to_string(m.config.d_model) + ", GPT-2's own BPE tokens.\n"
             : folder ? " query heads, width " + std::to_string(m.config.d_model) + ", its tokenizer.json's tokens.\n"
                      : std::string(" heads, trained (each distinct word is the next token id).\n"))
         << (m.repeated ? out.wrapped("Shown the sentence twice: no token of it appears twice, so an induction head "
                                      "would have no earlier copy to look back at.",
                                      "")
                        : "")
         << out.wrapped(
                "Every head's scores on these tokens (previous-token: weight on the token before; induction: "
                "weight on the token after the query token's earlier copy, " +
                    induction_scope(m.summary) + "). Kind, as heads.png titles each head: " + kHeadKindRule + ".",
                "");
  out.os << "  layer  head  previous-token  induction  kind\n";
  auto cell = [](const std::optional<double>& x) { return x ? format_fixed(*x, 3) : std::string("-"); };
  for (const HeadScores& s : m.summary.heads) {
    const bool ind = s.layer == m.induction_head.layer && s.head == m.induction_head.head;
    const bool prev = s.layer == m.prev_token_head.layer && s.head == m.prev_token_head.head;
    out.os << "  " << pad_to_width(std::to_string(s.layer), 5, true) << pad_to_width(std::to_string(s.head), 6, true)
           << pad_to_width(cell(s.previous_token), 16, true) << pad_to_width(cell(s.induction), 11, true) << "  "
           << pad_to_width(s.kind, 14)
           << (ind    ? (s.kind == "induction" ? "   <- the induction head (the heatmap below)"
                                               : "   <- the best induction candidate (the heatmap below)")
               : prev ? (s.kind == "previous-token" ? "   <- the previous-token head"
                                                    : "   <- the best previous-token candidate")
                      : "")
           << "\n";
  }
  out.os << "\n";
  const HeadScores& ind = m.induction_head;
  out.os << "Layer " << ind.layer << ", head " << ind.head << " (head dim " << m.config.d_model / m.config.heads
         << ", scale = " << scale << "), causal.\n"
         << "Rows: query (attending). Columns: key (attended to). Each row sums to 1.\n\n";
}

// The sentence and its tokens, each with its position: a repeated word ("the" [0] and "the"
// [4]) is two different keys.
void print_tokens(const TextOut& out, const DemoResult& r) {
  std::string line =
      "Sentence: \"" + printable_text(r.config.sentence) + "\" -> " + count_of(r.tokens.size(), "token") + ":";
  for (std::size_t i = 0; i < r.tokens.size(); ++i) line += " [" + std::to_string(i) + "] " + r.tokens[i];
  out.os << out.wrapped(line) << "\n";
}

// Top-k keys per query: every query with --verbose, else the first 8 (the pictures and
// manifest.json have every row).
void print_top(const TextOut& out, const DemoResult& r, bool verbose) {
  const std::size_t L = r.tokens.size(), shown = verbose ? L : std::min<std::size_t>(L, 8);
  auto at = [&](std::size_t i) { return "'" + r.tokens[i] + "' [" + std::to_string(i) + "]"; };
  out.os << "Top-" << r.config.top_k << " keys per query:\n";
  std::size_t label_w = 0;
  for (std::size_t i = 0; i < shown; ++i) label_w = std::max(label_w, display_width(at(i)));
  for (std::size_t i = 0; i < shown; ++i) {
    out.os << "  " << pad_to_width(at(i), label_w) << " ->";
    for (std::size_t j : r.top[i]) out.os << "  " << at(j) << " " << format_fixed(r.weights(i, j), 3);
    out.os << "\n";
  }
  if (shown < L) out.os << "  (" << L - shown << " more queries: --verbose, or manifest.json)\n";
}

// The trained model beside the seeded run: its previous-token and induction heads on the
// sentence, and the cells that make the induction score (outlined in trained_heads.png).
void print_trained(const TextOut& out, const DemoResult& r) {
  if (r.model || !r.config.trained) return;
  if (!r.trained) {
    out.os << "\n" << out.wrapped("Trained heads not shown: " + r.trained_skipped + ".", "");
    return;
  }
  const DemoModel& m = *r.trained;
  if (m.labels.size() < 2) {
    out.os << "\nTrained heads: one token attends only to itself; give two words or more to see them.\n";
    return;
  }
  const HeadScores &prev = m.prev_token_head, &ind = m.induction_head;
  auto name = [](const HeadScores& h) { return "L" + std::to_string(h.layer) + "H" + std::to_string(h.head); };
  auto score = [](const std::optional<double>& x, const std::optional<KindBar>& bar) {
    return x ? format_fixed(*x, 2) + (bar ? " (bar " + format_fixed(bar->bar, 2) + ")" : std::string())
             : std::string("-");
  };
  out.os << "\n"
         << out.wrapped("Trained (`" + std::string(kShippedModelCommand) + "`, " + std::to_string(m.config.layers) +
                            "x" + std::to_string(m.config.heads) + " heads) on " +
                            (m.repeated ? "the sentence twice, as no word repeats:" : "the sentence:"),
                        "");
  out.os << "  " << name(prev) << " " << prev.kind << ", score "
         << score(prev.previous_token, m.summary.previous_token_bar) << ": each word looks at the word before\n";
  out.os << "  " << name(ind) << " " << ind.kind << ", score " << score(ind.induction, m.summary.induction_bar)
         << ": a repeated word looks at the word after its earlier copy";
  const std::vector<InductionCell>& cells = m.summary.induction_cells;
  if (cells.empty()) {
    out.os << " (no word appears twice here)\n";
    return;
  }
  std::string list;
  const Tensor3& a = m.attention[ind.layer];
  for (std::size_t k = 0; k < cells.size() && k < 6; ++k)
    list += (k ? " · " : "") + m.labels[cells[k].query] + " [" + std::to_string(cells[k].query) + "] -> " +
            m.labels[cells[k].key] + " " + format_fixed(a(ind.head, cells[k].query, cells[k].key), 2);
  if (cells.size() > 6) list += " · " + std::to_string(cells.size() - 6) + " more";
  out.os << ":\n" << out.wrapped("  " + list + " (outlined in trained_heads.png)", "    ");
}

}  // namespace

// Everything the demo prints before the files: tokens, weights, checks.
std::string demo_text(const DemoResult& r, const DemoTextOptions& opts) {
  std::ostringstream os;
  const TextOut out{os, terminal_columns(STDOUT_FILENO)};
  print_tokens(out, r);
  char scale[64];
  std::snprintf(scale, sizeof scale, "%.6g", r.scale);
  if (r.model)
    print_model_heads(out, r, scale);
  else {
    out.os << out.wrapped("Untrained (seeded random projections, d_model " + std::to_string(r.config.d_model) +
                              ", scale " + scale + "). Rows query, columns key; rows sum to 1.",
                          "");
  }
  const ColorMode color = terminal_color_mode(::isatty(STDOUT_FILENO), opts.no_color);
  const std::vector<std::string> labels = visible_token_labels(r.tokens);  // a space token reads ␣, not blank
  TerminalHeatmap table{labels,        labels,
                        r.weights,     r.model ? &r.causal_allowed : nullptr,
                        opts.colormap, color_scale_for({r.weights.data(), r.weights.size()}, std::nullopt)};
  table.max_width = out.columns;
  table.cut_to_fit = !opts.verbose;  // --verbose: every key, in blocks
  table.max_rows = opts.verbose ? 0 : 16;
  out.os << render_terminal_heatmap(table, color);
  print_top(out, r, opts.verbose);
  if (opts.verbose) {
    print_trained(out, r);
    print_demo_positions(out, r);
    print_demo_checks(out, r);
    out.os << "\n" << approximations_text(r.approximations);
    print_demo_experiments(out, r);
  } else {
    print_trained(out, r);
    print_demo_short_checks(out, r);
  }
  return os.str();
}

std::string demo_written_text(const std::string& folder, const std::vector<Artifact>& artifacts, double ms,
                              const DemoTextOptions& opts) {
  std::ostringstream os;
  const TextOut out{os, terminal_columns(STDOUT_FILENO)};
  if (opts.verbose) {
    out.os << "\nWrote into " << printable_text(folder) << "/ (" << artifacts.size() - 1 << " pictures in "
           << std::lround(ms) << " ms):\n";
    std::size_t path_w = 0;
    for (const Artifact& a : artifacts) path_w = std::max(path_w, display_width(a.path));
    for (const Artifact& a : artifacts)
      out.os << "  " << pad_to_width(a.path, path_w) << "  " << pad_to_width(a.kind, 10) << "  "
             << printable_text(a.title) << "\n";
    out.os << "  " << pad_to_width("manifest.json", path_w) << "  every number above, and the list of files\n";
  } else {
    const std::string shown = printable_text(folder);
    out.os << "\n"
           << out.wrapped("Wrote " + std::to_string(artifacts.size() - 1) +
                              " pictures, report.html and manifest.json into " + shown + "/ in " +
                              std::to_string(std::lround(ms)) + " ms: open " + shown +
                              "/report.html. --verbose prints every table, check and file.",
                          "");
  }
  return os.str();
}

}  // namespace attn
