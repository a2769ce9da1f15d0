// The demo's checks, positions and experiments as terminal text (demo_view.hpp's demo_text):
// each section in a few lines, or with --verbose its whole table.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "attn/io/number_format.hpp"
#include "attn/render/draw/text_table.hpp"
#include "attn/render/views/flash_tiles_picture.hpp"
#include "demo_text_parts.hpp"

namespace attn {
namespace {

// One row of the flash check's table: the run's kernel and tiles, then its differences.
void print_flash_run(const TextOut& out, const std::string& name, const DemoFlashRun& run) {
  const bool f32 = run.options.precision == FlashPrecision::float32;
  out.os << "  " << pad_to_width(name, 14) << pad_to_width(f32 ? "float32" : "float64", 10)
         << pad_to_width(run.tiling.isa, 9)
         << pad_to_width(std::to_string(run.tiling.block_q) + " x " + std::to_string(run.tiling.block_k), 10)
         << pad_to_width(sci(run.plain.output) + " / " + sci(run.plain.lse), 20)
         << sci(run.causal.output) + " / " + sci(run.causal.lse) << "\n";
}

// The tile grid as letters, one per tile: F computed in full, D diagonal (index-tested),
// . skipped -- the same grid the picture draws.
void print_tile_grid(const TextOut& out, const std::string& name, const std::vector<FlashTile>& tiles) {
  const TileCounts n = count_tiles(tiles);
  out.os << "    " << pad_to_width(name, 11);
  for (std::size_t k = 0; k < tiles.size(); ++k) {
    if (k > 0 && tiles[k].i0 != tiles[k - 1].i0) out.os << " |";
    const FlashTile::Kind kind = tiles[k].kind;
    out.os << ' ' << (kind == FlashTile::Kind::full ? 'F' : kind == FlashTile::Kind::diagonal ? 'D' : '.');
  }
  out.os << "   " << n.skipped << " of " << count_of(n.total(), "tile") << " skipped, " << n.diagonal
         << " index-tested, " << n.full << " computed in full\n";
}

// The efficient-attention family in a line: each method's output error against exact.
void print_short_approximations(const TextOut& out, const ApproximationsLesson& a) {
  std::string line = "  efficient attention, output error vs exact (approximations.png):";
  const char* sep = " ";
  for (const ApproximationRun& run : a.runs) {
    if (run.family == "exact") continue;
    const bool masked = run.family == "window" || run.family == "sparse";
    line += sep + (masked ? run.method : run.family) + " " + format_g(run.output_error, 2);
    sep = " · ";
  }
  out.os << out.wrapped(line, "    ");
}

}  // namespace

void print_demo_checks(const TextOut& out, const DemoResult& r) {
  const DemoFlashCheck& f = r.flash;
  out.os << "\nFlashAttention check: " << (r.model ? "the induction head's" : "the single head's")
         << " Q, K, V tile by tile (online softmax), against\n"
         << "the naive sdpa on the same inputs. max |flash - naive| of the outputs / of the lse:\n"
         << "                precision isa      tiles     non-causal          causal\n";
  print_flash_run(out, "fast kernel", f.fast);
  print_flash_run(out, "teaching run", f.teaching);
  // The tile shape as the picture names it: clamped to the sentence (one token is 1 query x 1 key).
  const std::size_t L = r.tokens.size();
  out.os << "  Teaching tiles: asked for " << f.requested_block_q << " x " << f.requested_block_k << ", got "
         << tile_shape_text(f.teaching.tiling.block_q, f.teaching.tiling.block_k, L, L)
         << " (a key tile is whole micro-kernel panels).\n"
         << "  Tiles row by row (F computed in full, D diagonal: index-tested, . skipped: never read):\n";
  print_tile_grid(out, "non-causal", f.tiles);
  print_tile_grid(out, "causal", f.causal_tiles);

  const SplitKvLesson& s = r.split_kv;
  out.os << "\nSplit-KV check (Flash-Decoding): the last query against its " << count_of(s.keys, "key") << " in "
         << count_of(s.chunks.size(), "chunk") << ", each chunk's (m, l, o) merged with the\n"
         << "  rescale exp(m_i - m) (tile_math.hpp's row_merge): max |merged - one-pass softmax V| = "
         << sci(s.max_abs_diff) << "\n";

  const DemoDecodeCheck& d = r.decode;
  out.os << "\nDecode check: " << (r.model ? "the model's layer 0 (" : "the ") << r.config.heads
         << (r.model ? " heads)" : "-head run") << ", causal"
         << (r.rope ? ", RoPE " + rope_style_name(r.rope->style) : std::string()) << ", through a KV cache:\n  "
         << count_of(d.prefill, "token") << " as the prompt, then " << d.steps - (d.prefill > 0 ? 1 : 0)
         << " one at a time (cache ends at " << count_of(d.kv_cache_len, "token") << ").\n"
         << "  max |cached - one-shot causal run|: output " << sci(d.output) << ", weights " << sci(d.weights) << "\n";
  if (r.rope) {
    char change[32];
    std::snprintf(change, sizeof change, "%.3f", r.rope->max_change);
    out.os << "\nRoPE (" << rope_style_name(r.rope->style) << ", base 10000): q and k rotated to their "
           << "positions; the causal weights changed by up to " << change << ".\n";
  }
}

// Permutation equivariance, computed: repeated words and the reversed sentence under each kind
// of position information.
void print_demo_positions(const TextOut& out, const DemoResult& r) {
  const double kSameRow = 1e-6;  // float32 rounding of weights <= 1: equal as far as float32 can tell
  if (r.positions.empty()) return;
  const std::vector<RepeatedWord>& words = r.positions.front().repeated;
  out.os << "\nPositions: without them attention cannot see order (it is permutation-equivariant).\n"
         << "Single head, non-causal, the same seeded x and projections each time";
  if (words.empty()) {
    out.os << "; no word repeats in this sentence (try \"the cat saw the dog\"), so only the reversal is shown";
  } else {
    const RepeatedWord& w = words.front();
    out.os << "; '" << w.token << "' [" << w.first << "] and [" << w.second << "] compared";
  }
  out.os << ":\n";
  for (const PositionRun& run : r.positions) {
    out.os << "  " << pad_to_width(position_kind_name(run.kind), 11);
    if (!run.repeated.empty()) {
      const double d = run.repeated.front().max_row_diff;
      out.os << (d <= kSameRow ? "identical rows (max difference " + sci(d) + ")"
                               : "rows differ by up to " + format_g(d, 3))
             << "; ";
    }
    const double rev = run.reversal_diff;
    out.os << "sentence reversed: "
           << (rev <= kSameRow ? "the matrix reversed (max difference " + sci(rev) + ")"
                               : "not the matrix reversed (max difference " + format_g(rev, 3) + ")")
           << "\n";
  }
  if (r.config.positions == PositionKind::sinusoidal) {
    out.os << "  The pictures use sinusoidal positions (x + PE).\n";
  } else if (r.rope) {
    out.os
        << "  RoPE is in the multi-head run and attention_causal_rope; the single-head pictures have no positions.\n";
  } else {
    out.os << "  The pictures have no positions (--positions sinusoidal or rope adds them).\n";
  }
}

// The variance and complexity experiments at the demo's size, in a few lines; the pictures show them whole.
void print_demo_experiments(const TextOut& out, const DemoResult& r) {
  const VarianceResult& v = r.variance;
  std::size_t inside = 0;
  for (const VarianceRow& row : v.rows) inside += row.within_band;
  out.os << "\nWhy divide by sqrt(d_k): q, k ~ N(0,1), " << v.rows.front().samples << " pairs per d_k (seed "
         << v.config.seed << ")\n  d_k         ";
  for (const VarianceRow& row : v.rows) out.os << pad_to_width(std::to_string(row.d_k), 8, true);
  out.os << "\n  Var(q.k)    ";
  for (const VarianceRow& row : v.rows) out.os << pad_to_width(format_g(row.var_unscaled, 4), 8, true);
  out.os << "\n  scaled      ";
  for (const VarianceRow& row : v.rows) out.os << pad_to_width(format_fixed(row.var_scaled, 3), 8, true);
  out.os << "\n  " << inside << " of " << v.rows.size()
         << " d_k within 3 standard errors of the theory (d_k unscaled, 1 scaled).\n";

  const ComplexityReport& c = r.complexity;
  out.os << "\nFLOPs of one attention layer at d_model = " << c.config.d_model << ", " << c.config.heads
         << " heads (FLOPs = 2 x multiply-adds):\n"
         << "  n       projections  QK^T + PV    softmax      total\n";
  for (const ComplexityRow& row : c.rows) {
    const AttentionFlops& f = row.flops;
    out.os << "  " << pad_to_width(std::to_string(row.n) + (row.n == r.tokens.size() ? "*" : ""), 8)
           << pad_to_width(format_si(static_cast<double>(f.qkv_proj + f.out_proj)), 13)
           << pad_to_width(format_si(static_cast<double>(f.scores + f.weighted_sum)), 13)
           << pad_to_width(format_si(static_cast<double>(f.softmax)), 13) << format_si(static_cast<double>(f.total))
           << "\n";
  }
  out.os << "  * this sentence. The n^2 matmuls overtake the projections at n* = "
         << format_fixed(std::round(c.crossover.matmuls), 0) << " tokens.\n";
}

// Each check in one line; --verbose prints their tables.
void print_demo_short_checks(const TextOut& out, const DemoResult& r) {
  if (!r.positions.empty() && !r.positions.front().repeated.empty()) {
    const RepeatedWord& w = r.positions.front().repeated.front();
    const double d = w.max_row_diff;
    out.os << "\n"
           << out.wrapped("Positions: without them '" + w.token + "' [" + std::to_string(w.first) + "] and [" +
                              std::to_string(w.second) + "] get identical rows (max difference " + sci(d) +
                              "): attention alone cannot see order; --positions sinusoidal or rope adds it.",
                          "");
  }
  const DemoFlashCheck& f = r.flash;
  const double flash =
      std::max({f.fast.plain.output, f.fast.causal.output, f.teaching.plain.output, f.teaching.causal.output});
  out.os << "\n"
         << out.wrapped("Checks: FlashAttention tile by tile = naive: max |diff| " + sci(flash) +
                            " · split-KV merge = one pass: " + sci(r.split_kv.max_abs_diff) +
                            " · KV-cache decode = one-shot run: " + sci(std::max(r.decode.output, r.decode.weights)),
                        "    ");
  print_short_approximations(out, r.approximations);
  const VarianceResult& v = r.variance;
  std::size_t inside = 0;
  for (const VarianceRow& row : v.rows) inside += row.within_band;
  const VarianceRow &lo = v.rows.front(), &hi = v.rows.back();
  out.os << out.wrapped("  why 1/sqrt(d_k): Var(q.k) = " + format_g(lo.var_unscaled, 3) + " at d_k " +
                            std::to_string(lo.d_k) + ", " + format_g(hi.var_unscaled, 4) + " at " +
                            std::to_string(hi.d_k) + "; scaled, " + format_fixed(lo.var_scaled, 2) + " and " +
                            format_fixed(hi.var_scaled, 2) + " (" + std::to_string(inside) + " of " +
                            std::to_string(v.rows.size()) + " d_k within 3 standard errors of theory)",
                        "    ");
}

}  // namespace attn
