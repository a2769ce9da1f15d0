// attn-cli demo: a sentence through self-attention, printed and written to a folder.
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>

#include "attn/lessons/demo/demo.hpp"
#include "attn/render/views/demo_pictures.hpp"
#include "attn/render/views/flash_tiles_picture.hpp"
#include "attn/engine/core/error.hpp"
#include "attn/engine/text/printable_text.hpp"
#include "attn/io/gpt2_model_file.hpp"
#include "attn/io/gpt2_tokenizer_file.hpp"
#include "attn/io/shipped_model.hpp"
#include "attn/io/toy_model_file.hpp"
#include "attn/io/number_format.hpp"
#include "attn/render/report/report_html.hpp"
#include "attn/render/report/report_table.hpp"
#include "attn/render/draw/terminal_heatmap.hpp"
#include "attn/render/draw/text_table.hpp"
#include "budget.hpp"
#include "commands.hpp"
#include "model_flag.hpp"
#include "image_flags.hpp"

namespace attn::cli {
namespace {

struct DemoOptions {
  DemoConfig config;
  std::string out = "attn-out";
  ImageFlags image;
  bool no_color = false;
  std::string rope;  // "", "half" or "interleaved"
  std::string positions = "none";  // none, sinusoidal or rope (= --rope half)
  std::string model;  // a trained model folder; "" = seeded projections
  bool random_only = false;  // no shipped trained model beside the seeded projections
  bool verbose = false;      // every table and check in full, not the short summary
  bool sentence_given = false, shape_given = false, positions_given = false;
};

// Prose lines are wrapped to the terminal, at most this wide.
constexpr std::size_t kProseColumns = 100;
std::string wrapped(const std::string& text, const std::string& indent = "  ") {
  return wrap_words(text, std::min(terminal_columns(STDOUT_FILENO), kProseColumns), indent) + "\n";
}

// "1.2e-07"; an exact 0 as "0" (bit-identical after rounding to float32).
std::string sci(double v) {
  if (v == 0) return "0";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1e", v);
  return buf;
}

// One row of the flash check's table: the run's kernel and tiles, then its differences.
void print_flash_run(const std::string& name, const DemoFlashRun& run) {
  const bool f32 = run.options.precision == FlashPrecision::float32;
  std::cout << "  " << pad_to_width(name, 14) << pad_to_width(f32 ? "float32" : "float64", 10)
            << pad_to_width(run.tiling.isa, 9)
            << pad_to_width(std::to_string(run.tiling.block_q) + " x " + std::to_string(run.tiling.block_k), 10)
            << pad_to_width(sci(run.plain.output) + " / " + sci(run.plain.lse), 20)
            << sci(run.causal.output) + " / " + sci(run.causal.lse) << "\n";
}

// The tile grid as letters, one per tile: F computed in full, D diagonal (index-tested),
// . skipped -- the same grid the picture draws.
void print_tile_grid(const std::string& name, const std::vector<FlashTile>& tiles) {
  const TileCounts n = count_tiles(tiles);
  std::cout << "    " << pad_to_width(name, 11);
  for (std::size_t k = 0; k < tiles.size(); ++k) {
    if (k > 0 && tiles[k].i0 != tiles[k - 1].i0) std::cout << " |";
    const FlashTile::Kind kind = tiles[k].kind;
    std::cout << ' ' << (kind == FlashTile::Kind::full ? 'F' : kind == FlashTile::Kind::diagonal ? 'D' : '.');
  }
  std::cout << "   " << n.skipped << " of " << count_of(n.total(), "tile") << " skipped, " << n.diagonal
            << " index-tested, " << n.full << " computed in full\n";
}

void print_checks(const DemoResult& r) {
  const DemoFlashCheck& f = r.flash;
  std::cout << "\nFlashAttention check: " << (r.model ? "the induction head's" : "the single head's")
            << " Q, K, V tile by tile (online softmax), against\n"
            << "the naive sdpa on the same inputs. max |flash - naive| of the outputs / of the lse:\n"
            << "                precision isa      tiles     non-causal          causal\n";
  print_flash_run("fast kernel", f.fast);
  print_flash_run("teaching run", f.teaching);
  // The tile shape as the picture names it: clamped to the sentence (one token is 1 query x 1 key).
  const std::size_t L = r.tokens.size();
  std::cout << "  Teaching tiles: asked for " << f.requested_block_q << " x " << f.requested_block_k << ", got "
            << tile_shape_text(f.teaching.tiling.block_q, f.teaching.tiling.block_k, L, L)
            << " (a key tile is whole micro-kernel panels).\n"
            << "  Tiles row by row (F computed in full, D diagonal: index-tested, . skipped: never read):\n";
  print_tile_grid("non-causal", f.tiles);
  print_tile_grid("causal", f.causal_tiles);

  const SplitKvLesson& s = r.split_kv;
  std::cout << "\nSplit-KV check (Flash-Decoding): the last query against its " << count_of(s.keys, "key") << " in "
            << count_of(s.chunks.size(), "chunk") << ", each chunk's (m, l, o) merged with the\n"
            << "  rescale exp(m_i - m) (tile_math.hpp's row_merge): max |merged - one-pass softmax V| = "
            << sci(s.max_abs_diff) << "\n";

  const DemoDecodeCheck& d = r.decode;
  std::cout << "\nDecode check: " << (r.model ? "the model's layer 0 (" : "the ") << r.config.heads
            << (r.model ? " heads)" : "-head run") << ", causal"
            << (r.rope ? ", RoPE " + rope_style_name(r.rope->style) : std::string()) << ", through a KV cache:\n  "
            << count_of(d.prefill, "token") << " as the prompt, then " << d.steps - (d.prefill > 0 ? 1 : 0)
            << " one at a time (cache ends at " << count_of(d.kv_cache_len, "token") << ").\n"
            << "  max |cached - one-shot causal run|: output " << sci(d.output) << ", weights " << sci(d.weights)
            << "\n";
  if (r.rope) {
    char change[32];
    std::snprintf(change, sizeof change, "%.3f", r.rope->max_change);
    std::cout << "\nRoPE (" << rope_style_name(r.rope->style) << ", base 10000): q and k rotated to their "
              << "positions; the causal weights changed by up to " << change << ".\n";
  }
}

// Permutation equivariance, computed: repeated words and the reversed sentence under each kind
// of position information.
void print_positions(const DemoResult& r) {
  const double kSameRow = 1e-6;  // float32 rounding of weights <= 1: equal as far as float32 can tell
  if (r.positions.empty()) return;
  const std::vector<RepeatedWord>& words = r.positions.front().repeated;
  std::cout << "\nPositions: without them attention cannot see order (it is permutation-equivariant).\n"
            << "Single head, non-causal, the same seeded x and projections each time";
  if (words.empty()) {
    std::cout << "; no word repeats in this sentence (try \"the cat saw the dog\"), so only the reversal is shown";
  } else {
    const RepeatedWord& w = words.front();
    std::cout << "; '" << w.token << "' [" << w.first << "] and [" << w.second << "] compared";
  }
  std::cout << ":\n";
  for (const PositionRun& run : r.positions) {
    std::cout << "  " << pad_to_width(position_kind_name(run.kind), 11);
    if (!run.repeated.empty()) {
      const double d = run.repeated.front().max_row_diff;
      std::cout << (d <= kSameRow ? "identical rows (max difference " + sci(d) + ")"
                                  : "rows differ by up to " + format_g(d, 3))
                << "; ";
    }
    const double rev = run.reversal_diff;
    std::cout << "sentence reversed: "
              << (rev <= kSameRow ? "the matrix reversed (max difference " + sci(rev) + ")"
                                  : "not the matrix reversed (max difference " + format_g(rev, 3) + ")")
              << "\n";
  }
  if (r.config.positions == PositionKind::sinusoidal) {
    std::cout << "  The pictures use sinusoidal positions (x + PE).\n";
  } else if (r.rope) {
    std::cout << "  RoPE is in the multi-head run and attention_causal_rope; the single-head pictures have no positions.\n";
  } else {
    std::cout << "  The pictures have no positions (--positions sinusoidal or rope adds them).\n";
  }
}

// The variance and complexity experiments at the demo's size, in a few lines; the pictures show them whole.
void print_experiments(const DemoResult& r) {
  const VarianceResult& v = r.variance;
  std::size_t inside = 0;
  for (const VarianceRow& row : v.rows) inside += row.within_band;
  std::cout << "\nWhy divide by sqrt(d_k): q, k ~ N(0,1), " << v.rows.front().samples << " pairs per d_k (seed "
            << v.config.seed << ")\n  d_k         ";
  for (const VarianceRow& row : v.rows) std::cout << pad_to_width(std::to_string(row.d_k), 8, true);
  std::cout << "\n  Var(q.k)    ";
  for (const VarianceRow& row : v.rows) std::cout << pad_to_width(format_g(row.var_unscaled, 4), 8, true);
  std::cout << "\n  scaled      ";
  for (const VarianceRow& row : v.rows) std::cout << pad_to_width(format_fixed(row.var_scaled, 3), 8, true);
  std::cout << "\n  " << inside << " of " << v.rows.size()
            << " d_k within 3 standard errors of the theory (d_k unscaled, 1 scaled).\n";

  const ComplexityReport& c = r.complexity;
  std::cout << "\nFLOPs of one attention layer at d_model = " << c.config.d_model << ", " << c.config.heads
            << " heads (FLOPs = 2 x multiply-adds):\n"
            << "  n       projections  QK^T + PV    softmax      total\n";
  for (const ComplexityRow& row : c.rows) {
    const AttentionFlops& f = row.flops;
    std::cout << "  " << pad_to_width(std::to_string(row.n) + (row.n == r.tokens.size() ? "*" : ""), 8)
              << pad_to_width(format_si(static_cast<double>(f.qkv_proj + f.out_proj)), 13)
              << pad_to_width(format_si(static_cast<double>(f.scores + f.weighted_sum)), 13)
              << pad_to_width(format_si(static_cast<double>(f.softmax)), 13) << format_si(static_cast<double>(f.total))
              << "\n";
  }
  std::cout << "  * this sentence. The n^2 matmuls overtake the projections at n* = "
            << format_fixed(std::round(c.crossover.matmuls), 0) << " tokens.\n";
}

// With --model: every head's scores on the sentence, then which head the heatmap shows.
void print_model_heads(const DemoResult& r, const char* scale) {
  const DemoModel& m = *r.model;
  const bool gpt2 = m.architecture == "gpt2";
  std::cout << (gpt2 ? "GPT-2 model " : "Model ") << m.path << ": " << m.config.layers << " layers x "
            << m.config.heads
            << (gpt2 ? " heads, width " + std::to_string(m.config.d_model) + ", GPT-2's own BPE tokens.\n"
                     : std::string(" heads, trained (each distinct word is the next token id).\n"))
            << (m.repeated ? wrapped("Shown the sentence twice: no token of it appears twice, so an induction head "
                                     "would have no earlier copy to look back at.", "")
                           : "")
            << wrapped("Every head's scores on these tokens (previous-token: weight on the token before; induction: "
                       "weight on the token after the query token's earlier copy, " + induction_scope(m.summary) +
                       "). Kind, as heads.png titles each head: " + kHeadKindRule + ".", "");
  std::cout << "  layer  head  previous-token  induction  kind\n";
  auto cell = [](const std::optional<double>& x) { return x ? format_fixed(*x, 3) : std::string("-"); };
  for (const HeadScores& s : m.summary.heads) {
    const bool ind = s.layer == m.induction_head.layer && s.head == m.induction_head.head;
    const bool prev = s.layer == m.prev_token_head.layer && s.head == m.prev_token_head.head;
    std::cout << "  " << pad_to_width(std::to_string(s.layer), 5, true) << pad_to_width(std::to_string(s.head), 6, true)
              << pad_to_width(cell(s.previous_token), 16, true) << pad_to_width(cell(s.induction), 11, true) << "  "
              << pad_to_width(s.kind, 14)
              << (ind    ? (s.kind == "induction" ? "   <- the induction head (the heatmap below)"
                                                  : "   <- the best induction candidate (the heatmap below)")
                  : prev ? (s.kind == "previous-token" ? "   <- the previous-token head"
                                                       : "   <- the best previous-token candidate")
                         : "")
              << "\n";
  }
  std::cout << "\n";
  const HeadScores& ind = m.induction_head;
  std::cout << "Layer " << ind.layer << ", head " << ind.head << " (head dim " << m.config.d_model / m.config.heads
            << ", scale = " << scale << "), causal.\n"
            << "Rows: query (attending). Columns: key (attended to). Each row sums to 1.\n\n";
}

// The sentence and its tokens, each with its position: a repeated word ("the" [0] and "the"
// [4]) is two different keys.
void print_tokens(const DemoResult& r) {
  std::string line = "Sentence: \"" + printable_text(r.config.sentence) + "\" -> " + count_of(r.tokens.size(), "token") + ":";
  for (std::size_t i = 0; i < r.tokens.size(); ++i) line += " [" + std::to_string(i) + "] " + r.tokens[i];
  std::cout << wrapped(line) << "\n";
}

// Top-k keys per query: every query with --verbose, else the first 8 (the pictures and
// manifest.json have every row).
void print_top(const DemoResult& r, bool verbose) {
  const std::size_t L = r.tokens.size(), shown = verbose ? L : std::min<std::size_t>(L, 8);
  auto at = [&](std::size_t i) { return "'" + r.tokens[i] + "' [" + std::to_string(i) + "]"; };
  std::cout << "Top-" << r.config.top_k << " keys per query:\n";
  std::size_t label_w = 0;
  for (std::size_t i = 0; i < shown; ++i) label_w = std::max(label_w, display_width(at(i)));
  for (std::size_t i = 0; i < shown; ++i) {
    std::cout << "  " << pad_to_width(at(i), label_w) << " ->";
    for (std::size_t j : r.top[i]) std::cout << "  " << at(j) << " " << format_fixed(r.weights(i, j), 3);
    std::cout << "\n";
  }
  if (shown < L) std::cout << "  (" << L - shown << " more queries: --verbose, or manifest.json)\n";
}

// The trained model beside the seeded run: its previous-token and induction heads on the
// sentence, and the cells that make the induction score (outlined in trained_heads.png).
void print_trained(const DemoResult& r) {
  if (r.model || !r.config.trained) return;
  if (!r.trained) {
    std::cout << "\n" << wrapped("Trained heads not shown: " + r.trained_skipped + ".", "");
    return;
  }
  const DemoModel& m = *r.trained;
  if (m.labels.size() < 2) {
    std::cout << "\nTrained heads: one token attends only to itself; give two words or more to see them.\n";
    return;
  }
  const HeadScores &prev = m.prev_token_head, &ind = m.induction_head;
  auto name = [](const HeadScores& h) { return "L" + std::to_string(h.layer) + "H" + std::to_string(h.head); };
  auto score = [](const std::optional<double>& x, const std::optional<KindBar>& bar) {
    return x ? format_fixed(*x, 2) + (bar ? " (bar " + format_fixed(bar->bar, 2) + ")" : std::string()) : std::string("-");
  };
  std::cout << "\n"
            << wrapped("Trained (`" + std::string(kShippedModelCommand) + "`, " + std::to_string(m.config.layers) +
                           "x" + std::to_string(m.config.heads) + " heads) on " +
                           (m.repeated ? "the sentence twice, as no word repeats:" : "the sentence:"),
                       "");
  std::cout << "  " << name(prev) << " " << prev.kind << ", score "
            << score(prev.previous_token, m.summary.previous_token_bar) << ": each word looks at the word before\n";
  std::cout << "  " << name(ind) << " " << ind.kind << ", score " << score(ind.induction, m.summary.induction_bar)
            << ": a repeated word looks at the word after its earlier copy";
  const std::vector<InductionCell>& cells = m.summary.induction_cells;
  if (cells.empty()) {
    std::cout << " (no word appears twice here)\n";
    return;
  }
  std::string list;
  const Tensor3& a = m.attention[ind.layer];
  for (std::size_t k = 0; k < cells.size() && k < 6; ++k)
    list += (k ? " · " : "") + m.labels[cells[k].query] + " [" + std::to_string(cells[k].query) + "] -> " +
            m.labels[cells[k].key] + " " + format_fixed(a(ind.head, cells[k].query, cells[k].key), 2);
  if (cells.size() > 6) list += " · " + std::to_string(cells.size() - 6) + " more";
  std::cout << ":\n" << wrapped("  " + list + " (outlined in trained_heads.png)", "    ");
}

// The efficient-attention family in a line: each method's output error against exact.
void print_short_approximations(const ApproximationsLesson& a) {
  std::string line = "  efficient attention, output error vs exact (approximations.png):";
  const char* sep = " ";
  for (const ApproximationRun& run : a.runs) {
    if (run.family == "exact") continue;
    const bool masked = run.family == "window" || run.family == "sparse";
    line += sep + (masked ? run.method : run.family) + " " + format_g(run.output_error, 2);
    sep = " · ";
  }
  std::cout << wrapped(line, "    ");
}

// Each check in one line; --verbose prints their tables.
void print_short_checks(const DemoResult& r) {
  if (!r.positions.empty() && !r.positions.front().repeated.empty()) {
    const RepeatedWord& w = r.positions.front().repeated.front();
    const double d = w.max_row_diff;
    std::cout << "\n"
              << wrapped("Positions: without them '" + w.token + "' [" + std::to_string(w.first) + "] and [" +
                             std::to_string(w.second) + "] get identical rows (max difference " + sci(d) +
                             "): attention alone cannot see order; --positions sinusoidal or rope adds it.",
                         "");
  }
  const DemoFlashCheck& f = r.flash;
  const double flash = std::max({f.fast.plain.output, f.fast.causal.output, f.teaching.plain.output, f.teaching.causal.output});
  std::cout << "\n"
            << wrapped("Checks: FlashAttention tile by tile = naive: max |diff| " + sci(flash) + " · split-KV merge = one pass: " +
                           sci(r.split_kv.max_abs_diff) + " · KV-cache decode = one-shot run: " +
                           sci(std::max(r.decode.output, r.decode.weights)),
                       "    ");
  print_short_approximations(r.approximations);
  const VarianceResult& v = r.variance;
  std::size_t inside = 0;
  for (const VarianceRow& row : v.rows) inside += row.within_band;
  const VarianceRow &lo = v.rows.front(), &hi = v.rows.back();
  std::cout << wrapped("  why 1/sqrt(d_k): Var(q.k) = " + format_g(lo.var_unscaled, 3) + " at d_k " +
                           std::to_string(lo.d_k) + ", " + format_g(hi.var_unscaled, 4) + " at " + std::to_string(hi.d_k) +
                           "; scaled, " + format_fixed(lo.var_scaled, 2) + " and " + format_fixed(hi.var_scaled, 2) + " (" +
                           std::to_string(inside) + " of " + std::to_string(v.rows.size()) +
                           " d_k within 3 standard errors of theory)",
                       "    ");
}

// The run the flags ask for: positions, RoPE, and the model (given, shipped or none).
DemoConfig demo_config(const DemoOptions& opts) {
  DemoConfig config = opts.config;
  if (!opts.rope.empty()) config.rope = parse_rope_style(opts.rope, "--rope");
  config.positions = parse_position_kind(opts.positions, "--positions");
  if (!opts.model.empty() && config.positions != PositionKind::none) {
    throw InputError("--positions: a trained model has its own learned positions; leave out --positions with --model");
  }
  if (config.positions == PositionKind::rope) {
    // RoPE is the existing --rope path: q and k rotated in the multi-head run, and a causal RoPE picture.
    config.positions = PositionKind::none;
    if (!config.rope) config.rope = RopeStyle::Half;
  } else if (config.positions == PositionKind::none && config.rope && opts.positions_given) {
    throw InputError("--positions none contradicts --rope " + opts.rope);
  }
  if (!opts.model.empty()) {
    if (opts.shape_given) throw InputError("--model: the model has its own --d-model and --heads; leave them out");
    if (is_gpt2_folder(opts.model)) {
      config.gpt2 = std::make_shared<const Gpt2Model>(read_gpt2_model(opts.model));
      config.gpt2_tokenizer = std::make_shared<const Gpt2Tokenizer>(read_gpt2_tokenizer(opts.model));
    } else {
      config.model = std::make_shared<const ToyModel>(read_toy_model(opts.model));
    }
    config.model_path = opts.model;
    if (!opts.sentence_given) config.sentence = kDemoModelSentence;
  }
  if (opts.model.empty() && !opts.random_only) {
    config.trained = std::make_shared<const ToyModel>(shipped_toy_model());
    config.trained_name = kShippedModelName;
  }
  if (!opts.model.empty() && opts.random_only) throw InputError("--random-only: leave it out with --model");
  return config;
}

// Everything the demo prints before the files: tokens, weights, checks.
void print_demo_results(const DemoResult& r, const DemoOptions& opts) {
  print_tokens(r);
  char scale[64];
  std::snprintf(scale, sizeof scale, "%.6g", r.scale);
  if (r.model) print_model_heads(r, scale);
  else {
    std::cout << wrapped("Untrained (seeded random projections, d_model " + std::to_string(r.config.d_model) +
                             ", scale " + scale + "). Rows query, columns key; rows sum to 1.",
                         "");
  }
  const ColorMode color = terminal_color_mode(::isatty(STDOUT_FILENO), opts.no_color);
  TerminalHeatmap table{r.tokens, r.tokens, r.weights, r.model ? &r.causal_allowed : nullptr, opts.image.colormap,
                        color_scale_for({r.weights.data(), r.weights.size()}, std::nullopt)};
  table.max_width = terminal_columns(STDOUT_FILENO);
  table.cut_to_fit = !opts.verbose;  // --verbose: every key, in blocks
  table.max_rows = opts.verbose ? 0 : 16;
  std::cout << render_terminal_heatmap(table, color);
  print_top(r, opts.verbose);
  if (opts.verbose) {
    print_trained(r);
    print_positions(r);
    print_checks(r);
    std::cout << "\n" << approximations_text(r.approximations);
    print_experiments(r);
  } else {
    print_trained(r);
    print_short_checks(r);
  }
}

// The pictures, manifest.json and report.html into the staging folder; `ms` gets the pictures' time.
std::vector<Artifact> write_demo_folder(const DemoResult& r, OutputFolder& folder, const DemoPictureOptions& pictures,
                                        double& ms) {
  // Timings go to the terminal only: the files must be byte-identical from run to run.
  const auto start = std::chrono::steady_clock::now();
  std::vector<Artifact> artifacts = write_demo_pictures(r, folder.staging(), pictures);
  ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  artifacts.push_back({"report.html", "report",
                       "one offline page: heatmaps with hover, heads, temperature, masks, lines view, flash replay"});
  const std::string manifest = (std::filesystem::path(folder.staging()) / "manifest.json").string();
  // Indented for a reader opening it in an editor, unless that makes it huge: indentation puts
  // every number of a long sentence's weights on its own line.
  const Json m = demo_manifest(r, artifacts);
  const std::string compact = m.dump();
  write_file_atomically(manifest, (compact.size() < (1u << 20) ? m.dump(2) : compact) + "\n");
  // The report reads the staged folder as `attn-cli report` reads a finished one.
  write_file_atomically((std::filesystem::path(folder.staging()) / "report.html").string(),
                        report_html(read_report_folder(folder.staging())));
  return artifacts;
}

void print_written(const DemoOptions& opts, const std::vector<Artifact>& artifacts, double ms) {
  if (opts.verbose) {
    std::cout << "\nWrote into " << printable_text(opts.out) << "/ (" << artifacts.size() - 1 << " pictures in "
              << std::lround(ms) << " ms):\n";
    std::size_t path_w = 0;
    for (const Artifact& a : artifacts) path_w = std::max(path_w, display_width(a.path));
    for (const Artifact& a : artifacts)
      std::cout << "  " << pad_to_width(a.path, path_w) << "  " << pad_to_width(a.kind, 10) << "  " << printable_text(a.title) << "\n";
    std::cout << "  " << pad_to_width("manifest.json", path_w) << "  every number above, and the list of files\n";
  } else {
    const std::string out = printable_text(opts.out);
    std::cout << "\n"
              << wrapped("Wrote " + std::to_string(artifacts.size() - 1) + " pictures, report.html and manifest.json into " +
                             out + "/ in " + std::to_string(std::lround(ms)) + " ms: open " + out +
                             "/report.html. --verbose prints every table, check and file.",
                         "");
  }
}

void run_demo_command(const DemoOptions& opts) {
  check_colormap(opts.image.colormap);
  const DemoConfig config = demo_config(opts);
  require_demo_budgets(demo_size(config));
  const DemoPictureOptions pictures{image_options(opts.image), opts.image.colormap};
  OutputFolder folder = prepare_picture_dir(opts.out);
  const DemoResult r = run_demo(config);
  print_demo_results(r, opts);
  double ms = 0;
  const std::vector<Artifact> artifacts = write_demo_folder(r, folder, pictures, ms);
  folder.commit();
  print_written(opts, artifacts, ms);
}

}  // namespace

void setup_demo(CLI::App& app) {
  auto opts = std::make_shared<DemoOptions>();
  CLI::App* cmd = app.add_subcommand(
      "demo", "Run a sentence through attention and write its heatmaps, mask and heads as pictures");
  cmd->add_option("sentence", opts->config.sentence, "the sentence (UTF-8)")->capture_default_str();
  cmd->add_option("-o,--out", opts->out, "folder for manifest.json and the pictures")
      ->capture_default_str();
  cmd->add_option("--seed", opts->config.seed, "seed for embeddings and projections")
      ->capture_default_str();
  cmd->add_option("--d-model", opts->config.d_model, "embedding width")
      ->capture_default_str()->check(CLI::Range(1, 4096));
  cmd->add_option("--top-k", opts->config.top_k, "attended tokens listed per query")
      ->capture_default_str()->check(CLI::Range(1, 1000000));
  cmd->add_option("--max-tokens", opts->config.max_tokens, "refuse sentences with more tokens")
      ->capture_default_str()->check(CLI::Range(1, 1000000));
  add_memory_flag(cmd);
  add_time_flag(cmd);
  cmd->add_option("--heads", opts->config.heads, "heads of the multi-head run (must divide --d-model)")
      ->capture_default_str()->check(CLI::Range(1, 64));
  add_image_flags(cmd, opts->image, /*with_colormap=*/true);
  cmd->add_option("--rope", opts->rope,
                  "RoPE style for the multi-head run and the RoPE heatmap: half or interleaved (default: none)");
  cmd->add_option("--positions", opts->positions,
                  "what the runs know of word order: none (attention alone cannot see it: two copies of a "
                  "word get identical rows), sinusoidal (x + PE) or rope (= --rope half)")
      ->capture_default_str();
  add_model_option(cmd, opts->model,
                  "a model folder from attn-cli train, or a GPT-2 folder (config.json, model.safetensors, vocab.json, "
                  "merges.txt): its heads instead of seeded projections "
                  "(default sentence then: \"" + std::string(kDemoModelSentence) + "\")");
  cmd->add_flag("--no-color", opts->no_color, "plain numbers in the terminal (also: NO_COLOR=1)");
  cmd->add_flag("--random-only", opts->random_only,
                "only the seeded random projections: leave out the trained model's heads shown beside them");
  cmd->add_flag("-v,--verbose", opts->verbose,
                "every table and check in full (positions, flash tiles, split-KV, decode, variance, FLOPs) and every file");
  cmd->footer(R"(Beside the seeded random projections, the demo shows the heads of a toy model that attn-cli
carries inside it, trained by `attn-cli train --no-timing`: a previous-token head and an induction
head on your sentence (twice when no word of it repeats). --random-only leaves them out.

Examples:
  attn-cli demo
  attn-cli demo --verbose
  attn-cli demo "the cat sat on the mat" --random-only
  attn-cli demo "The cat sat on the mat" --out cat-demo
  attn-cli demo "我喜欢深度学习" --seed 7
  attn-cli demo "The cat sat on" --heads 2 --format both --colormap viridis --out cat-svg
  attn-cli demo "The cat sat on the mat" --rope half --out cat-rope
  attn-cli demo "the cat saw the dog" --positions sinusoidal --out dog-pe
  attn-cli train --steps 20 --out train-quick
  attn-cli demo --model train-quick/model --out cat-trained
(A 20-step model has no heads yet; `attn-cli train` with its defaults grows them in seconds.)
  attn-cli demo --model data/gpt2_tiny --out gpt2-demo
(A real GPT-2 is given the same way, e.g. --model ~/.cache/huggingface/hub/models--gpt2/snapshots/<hash>.
With a GPT-2 folder the sentence is GPT-2's own tokens; heads.png is every layer x head, each
titled with the kind its scores give: manifest.json's results.model.head_summary states the rule.)
)");
  cmd->callback([opts, cmd] {
    opts->sentence_given = cmd->count("sentence") > 0;
    opts->shape_given = cmd->count("--heads") + cmd->count("--d-model") > 0;
    opts->positions_given = cmd->count("--positions") > 0;
    run_demo_command(*opts);
  });
}

}  // namespace attn::cli
