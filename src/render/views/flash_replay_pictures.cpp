#include "attn/render/views/flash_replay_pictures.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "attn/io/number_format.hpp"
#include "attn/render/draw/colormap.hpp"
#include "attn/render/views/flash_tiles_picture.hpp"
#include "draw/figure_parts.hpp"

namespace attn {
namespace {

using render::Cell;
using render::MatrixPanel;

const Rgb kInk = rgb_from_hex(0x1a1a1a);
const Rgb kMuted = rgb_from_hex(0x555555);
const Rgb kCurrent = rgb_from_hex(0xd9730d);
const Rgb kDone = rgb_from_hex(0xc6dbef);
const Rgb kDoneDiagonal = rgb_from_hex(0xfde0c5);
// A skipped tile is not a masked score: the kernel never even reads it. Solid grey, unlike the
// light hatching of a score that a diagonal tile computed and then set to −∞ (whose mean
// colour is a light grey: the two must not be confused).
const Rgb kSkipped = rgb_from_hex(0x9a9a9a);
const Rgb kWhite = rgb_from_hex(0xffffff);

// What one cell of a frame shows.
enum class CellKind { unreached, current, done_full, done_diagonal, masked, skipped };

// The frame's key to its cell colours, under the table: the kinds this frame shows, in order.
struct ReplayLegendEntry {
  enum class Swatch { fill, hatch, ramp } swatch;
  Rgb fill;
  std::string text;
};

std::vector<ReplayLegendEntry> replay_legend(const std::vector<bool>& shown) {
  using S = ReplayLegendEntry::Swatch;
  auto has = [&](CellKind k) { return shown[std::size_t(k)]; };
  std::vector<ReplayLegendEntry> e;
  if (has(CellKind::current)) e.push_back({S::ramp, {}, "this step's tile: P = exp(s \u2212 m), white 0 to dark blue 1"});
  if (has(CellKind::done_full)) e.push_back({S::fill, kDone, "read in full at an earlier step"});
  if (has(CellKind::done_diagonal)) e.push_back({S::fill, kDoneDiagonal, "diagonal tile, done at an earlier step"});
  if (has(CellKind::masked)) e.push_back({S::hatch, {}, "masked: a key after its query, \u2212\u221e before the softmax"});
  if (has(CellKind::skipped)) e.push_back({S::fill, kSkipped, "skipped tile: every key after every query, never read"});
  if (has(CellKind::unreached)) e.push_back({S::fill, kWhite, "not reached yet"});
  return e;
}

std::string g4(double x) {
  if (!std::isfinite(x)) return x < 0 ? "\u2212\u221e" : "\u221e";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%#.4g", x);  // '#': 3.000 and 2.910 beside 3.105, not 3 and 2.91
  std::string s = buf;
  if (!s.empty() && s[0] == '-') s = "\u2212" + s.substr(1);
  return s;
}

// "query 3" or "queries 2–3" (one / many name the index).
std::string range_text(std::size_t a, std::size_t b, const char* one, const char* many) {
  return b - a == 1 ? std::string(one) + " " + std::to_string(a)
                    : std::string(many) + " " + std::to_string(a) + "\u2013" + std::to_string(b - 1);
}

// The per-row table of one step: each row's values as text, and the partial output.
struct RowLine {
  std::vector<std::string> cells;
  std::vector<double> strip;
};

Rgb diverging(double t) {
  t = std::clamp(t, -1.0, 1.0);
  const Rgb end = t < 0 ? rgb_from_hex(0x2171b5) : kCurrent;
  const double f = std::fabs(t);
  return {1 + (end.r - 1) * f, 1 + (end.g - 1) * f, 1 + (end.b - 1) * f};
}

// Which step last touched each score, and with what: for the tile colours.
std::vector<int> score_owners(const FlashReplay& r) {
  const std::size_t L = r.tokens.size();
  std::vector<int> owner(L * L, -1);
  for (std::size_t k = 0; k < r.steps.size(); ++k) {
    const FlashTileStep& t = r.steps[k];
    for (std::size_t i = t.i0; i < t.i0 + t.rows; ++i)
      for (std::size_t j = t.j0; j < t.j0 + t.cols && j < L; ++j) owner[i * L + j] = int(k);
  }
  return owner;
}

// The score matrix at this step, each cell coloured by its CellKind; `shown` gets the kinds it has.
MatrixPanel replay_panel(const FlashReplay& r, std::size_t step, const Colormap& blues, std::vector<bool>& shown) {
  const std::size_t L = r.tokens.size();
  const bool final = step >= r.steps.size();
  const std::vector<int> owner = score_owners(r);
  MatrixPanel panel;
  panel.rows = panel.cols = L;
  panel.row_labels = panel.col_labels = r.tokens;
  panel.row_title = "Query";
  panel.col_title = "Key";
  panel.cell = render::cell_size_for(L, L, 300, 6, 34);
  // The panel is drawn after this function returns: it keeps its own copies, and the replay
  // by address (the caller's, alive while the figure is drawn).
  const FlashReplay* replay = &r;
  auto kind_of = [replay, owner, L, step, final](std::size_t i, std::size_t j) {
    const int k = owner[i * L + j];
    if (k < 0 || (!final && std::size_t(k) > step)) return CellKind::unreached;
    const FlashTileStep& t = replay->steps[std::size_t(k)];
    if (t.skipped) return CellKind::skipped;                               // never read
    if (j - t.j0 >= t.visible[i - t.i0]) return CellKind::masked;          // computed, then set to −∞
    if (!final && std::size_t(k) == step) return CellKind::current;
    return t.diagonal ? CellKind::done_diagonal : CellKind::done_full;
  };
  shown.assign(6, false);
  for (std::size_t i = 0; i < L; ++i)
    for (std::size_t j = 0; j < L; ++j) shown[std::size_t(kind_of(i, j))] = true;
  panel.cell_at = [replay, owner, blues, L, kind_of](std::size_t i, std::size_t j) -> Cell {
    switch (kind_of(i, j)) {
      case CellKind::unreached: return {kWhite};
      case CellKind::skipped: return {kSkipped};
      case CellKind::masked: return {kWhite, true};
      case CellKind::done_full: return {kDone};
      case CellKind::done_diagonal: return {kDoneDiagonal};
      case CellKind::current: break;
    }
    const FlashTileStep& t = replay->steps[std::size_t(owner[i * L + j])];
    const std::size_t cell = (i - t.i0) * t.cols + (j - t.j0);
    Cell c{blues.at(t.p[cell])};
    c.value = t.p[cell];
    return c;
  };
  return panel;
}

// The table of the current block's rows (or, at the end, every row's final output).
struct StepTable {
  std::vector<std::string> head;
  std::vector<RowLine> lines;
};

StepTable step_table(const FlashReplay& r, const FlashTileStep* s) {
  StepTable t;
  auto tok = [&](std::size_t i) { return r.tokens[i] + " [" + std::to_string(i) + "]"; };
  if (s) {
    t.head = {"query", "keys seen", "m before", "m after", "\u2113 before", "\u2113 after", "rescale", "partial O"};
    for (std::size_t row = 0; row < s->rows; ++row) {
      t.lines.push_back({{tok(s->i0 + row), std::to_string(s->visible[row]), g4(s->m_before[row] * 1.0),
                          g4(s->m_after[row]), g4(s->l_before[row]), g4(s->l_after[row]), g4(s->rescale[row])},
                         std::vector<double>(s->output.begin() + long(row * s->dv),
                                             s->output.begin() + long((row + 1) * s->dv))});
    }
  } else {
    t.head = {"query", "lse = m + log \u2113", "output O = O / \u2113"};
    for (std::size_t i = 0; i < r.tokens.size(); ++i) {
      std::vector<double> o(r.output.shape(1));
      for (std::size_t c = 0; c < o.size(); ++c) o[c] = r.output(i, c);
      t.lines.push_back({{tok(i), g4(r.lse[i])}, o});
    }
  }
  return t;
}

// The title and the subtitle's first line: the step's tile and how it was read, or the end.
std::pair<std::string, std::string> replay_titles(const FlashReplay& r, const FlashTileStep* s, std::size_t step) {
  const std::size_t L = r.tokens.size();
  if (!s) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "max |flash \u2212 naive| = %.2g on the outputs, %.2g on the log-sum-exp",
                  r.max_diff_output, r.max_diff_lse);
    return {"FlashAttention replay: the end, O = O / \u2113", buf};
  }
  std::string title = "FlashAttention replay, step " + std::to_string(step + 1) + " of " + std::to_string(r.steps.size()) +
                      ": " + range_text(s->i0, s->i0 + s->rows, "query", "queries") + " \u00d7 " +
                      range_text(s->j0, std::min(s->j0 + s->cols, L), "key", "keys");
  std::string subtitle = s->skipped    ? "skipped by causality: every key lies after every query of the block; never read"
                         : s->diagonal ? "on the diagonal: each row computes only the keys it may see; cells: P = exp(s \u2212 m)"
                                       : "read in full; cells: P = exp(s \u2212 m), m the row's new running max";
  return {title, subtitle};
}

const TextStyle kHeadStyle{10, true, kInk}, kRowStyle{10, false, kInk}, kNoteStyle{9, false, kMuted},
    kLegendStyle{9.5, false, kInk};
constexpr double kStripCell = 3, kRowH = 16, kPad = 10, kLegendLine = 16, kSwatch = 12;

// The table beside the panel: its columns, the notes under it and the legend under those.
struct SideTable {
  StepTable table;
  std::vector<double> col_w;
  std::vector<std::string> notes;
  std::vector<ReplayLegendEntry> legend;
  double width = 0, height = 0, notes_h = 0;
};

std::vector<std::string> table_notes(bool final) {
  return final ? std::vector<std::string>{"Each row divides its partial output by its running sum \u2113 (Algorithm 1, line 13);",
                                          "lse = m + log \u2113. The [L, L] score matrix never existed."}
               : std::vector<std::string>{
                     "m: running max of the row's scaled scores; \u2113: running sum of exp(s \u2212 m); rescale = exp(m_before \u2212 m_after)",
                     "(0 at a row's first key: exp(\u2212\u221e) on an empty sum). partial O: the unnormalised output",
                     "(blue negative, orange positive, each row to its own largest |value|)"};
}

SideTable layout_side_table(Canvas& m, StepTable table, bool final, const std::vector<bool>& shown) {
  SideTable t;
  t.table = std::move(table);
  const std::vector<std::string>& head = t.table.head;
  t.col_w.assign(head.size(), 0);
  for (std::size_t c = 0; c < head.size(); ++c) t.col_w[c] = m.measure(head[c], kHeadStyle).width;
  for (const RowLine& line : t.table.lines)
    for (std::size_t c = 0; c < line.cells.size(); ++c) t.col_w[c] = std::max(t.col_w[c], m.measure(line.cells[c], kRowStyle).width);
  const std::size_t dv = t.table.lines.empty() ? 0 : t.table.lines.front().strip.size();
  t.col_w.back() = std::max(t.col_w.back(), kStripCell * double(dv));
  t.notes = table_notes(final);
  t.legend = replay_legend(shown);
  double notes_w = 0;
  for (double w : t.col_w) t.width += w + kPad;
  for (const std::string& n : t.notes) notes_w = std::max(notes_w, m.measure(n, kNoteStyle).width);
  for (const ReplayLegendEntry& e : t.legend)
    notes_w = std::max(notes_w, kSwatch + 6 + m.measure(e.text, kLegendStyle).width);
  t.width = std::max(t.width, notes_w);
  t.notes_h = 14 * double(t.notes.size());
  t.height = kRowH * double(t.table.lines.size() + 1) + t.notes_h + 20 + 8 + kLegendLine * double(t.legend.size());
  return t;
}

// Every tile's edges, and the current one's in orange.
void draw_tile_edges(Canvas& c, const FlashReplay& r, const FlashTileStep* s, const CellGrid& g) {
  const std::size_t L = r.tokens.size();
  for (std::size_t k = 0; k < r.steps.size(); ++k) {
    const FlashTileStep& t = r.steps[k];
    const double cols = double(std::min(t.cols, L - t.j0));
    c.stroke_rect(g.cell_x(t.j0), g.cell_y(t.i0), cols * g.cell_w, double(t.rows) * g.cell_h, kMuted, 0.8);
  }
  if (s) {
    const double cols = double(std::min(s->cols, L - s->j0));
    c.stroke_rect(g.cell_x(s->j0), g.cell_y(s->i0), cols * g.cell_w, double(s->rows) * g.cell_h, kCurrent, 3);
  }
}

// The legend's entries from y down at x0.
void draw_replay_legend(Canvas& c, const std::vector<ReplayLegendEntry>& legend, const Colormap& blues, double x0, double y) {
  for (const ReplayLegendEntry& e : legend) {
    const double sy = y + (kLegendLine - kSwatch) / 2;
    switch (e.swatch) {
      case ReplayLegendEntry::Swatch::hatch: c.hatch_rect(x0, sy, kSwatch, kSwatch); break;
      case ReplayLegendEntry::Swatch::ramp:
        for (int k = 0; k < 4; ++k) c.fill_rect(x0 + kSwatch / 4 * k, sy, kSwatch / 4, kSwatch, blues.at((k + 0.5) / 4));
        break;
      case ReplayLegendEntry::Swatch::fill: c.fill_rect(x0, sy, kSwatch, kSwatch, e.fill); break;
    }
    c.stroke_rect(x0, sy, kSwatch, kSwatch, kMuted, 0.6);
    c.text(e.text, x0 + kSwatch + 6, y + kLegendLine / 2, kLegendStyle, 0, 0.5);
    y += kLegendLine;
  }
}

// The side table from (x0, y): head, rows with their output strips, notes, legend.
void draw_side_table(Canvas& c, const SideTable& t, const Colormap& blues, double x0, double y) {
  double x = x0;
  for (std::size_t k = 0; k < t.table.head.size(); ++k) {
    c.text(t.table.head[k], x, y, kHeadStyle);
    x += t.col_w[k] + kPad;
  }
  y += kRowH + 2;
  for (const RowLine& line : t.table.lines) {
    x = x0;
    for (std::size_t k = 0; k < line.cells.size(); ++k) {
      c.text(line.cells[k], x, y, kRowStyle);
      x += t.col_w[k] + kPad;
    }
    double vmax = 0;
    for (double v : line.strip) vmax = std::max(vmax, std::fabs(v));
    for (std::size_t k = 0; k < line.strip.size(); ++k)
      c.fill_rect(x + kStripCell * double(k), y, kStripCell, 11, diverging(vmax > 0 ? line.strip[k] / vmax : 0));
    y += kRowH;
  }
  for (std::size_t k = 0; k < t.notes.size(); ++k) c.text(t.notes[k], x0, y + 8 + 14 * double(k), kNoteStyle);
  y += 8 + t.notes_h + 10;
  draw_replay_legend(c, t.legend, blues, x0, y);
}

}  // namespace

std::string flash_replay_frame_name(std::size_t step, std::size_t frames) {
  const std::size_t digits = std::max<std::size_t>(3, std::to_string(frames).size());
  std::string n = std::to_string(step + 1);
  return "frame_" + std::string(digits - std::min(digits, n.size()), '0') + n;
}

Figure flash_replay_frame(const FlashReplay& r, std::size_t step) {
  const std::size_t L = r.tokens.size();
  const bool final = step >= r.steps.size();
  const FlashTileStep* s = final ? nullptr : &r.steps[step];
  const Colormap blues = Colormap::by_name("Blues");
  std::vector<bool> shown;
  const MatrixPanel panel = replay_panel(r, step, blues, shown);
  const auto titles = replay_titles(r, s, step);
  const std::string title = titles.first;
  std::string subtitle = titles.second;
  Canvas m = Canvas::measuring();
  const render::PanelLayout layout = render::layout_panel(m, panel);
  subtitle += "\n" + std::string(r.causal ? "causal, " : "") + "tiles of " +
              tile_shape_text(r.block_q, r.block_k, L, L) + ", float64, " + r.isa + " micro-kernels; " +
              count_of(r.read(), "tile") + " read, " + std::to_string(r.skipped()) + " skipped" +
              (layout.label_step > 1 ? " · " + render::label_thinning_note(layout.label_step, L) : "");
  const SideTable table = layout_side_table(m, step_table(r, s), final, shown);

  render::FigureFrame frame = render::frame_figure(m, title, subtitle, {layout.width + 30 + table.width});
  Figure fig;
  fig.title = title;
  fig.subtitle = subtitle;
  fig.width = frame.width();
  fig.height = frame.body_y() + std::max(layout.height, table.height) + frame.margin;
  const double px = frame.centred_x(layout.width + 30 + table.width), py = frame.body_y();
  fig.grids.push_back(render::panel_grid(panel, layout, px, py));
  const double width = fig.width, height = fig.height;
  fig.draw = [=, &r](Canvas& c) {
    c.fill_rect(0, 0, width, height, rgb_from_hex(0xffffff));
    frame.draw_title(c);
    render::draw_panel(c, panel, layout, px, py);
    draw_tile_edges(c, r, s, render::panel_grid(panel, layout, px, py));
    draw_side_table(c, table, blues, px + layout.width + 30, py + 8);
  };
  return fig;
}

}  // namespace attn
