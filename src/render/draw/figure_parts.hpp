#pragma once
// The parts every attn-cli picture is assembled from (private to src/render/):
//   - a matrix panel: a grid of cells with row labels down the left under a row axis title,
//     column labels across the top (rotated when they do not fit a cell; Chinese, Japanese or
//     Korean ones stacked upright instead, one character under the other, never on their side)
//     under a column axis title, and values written in the cells when they fit;
//   - a colorbar with ticks and a label;
//   - the "masked" legend entry, so hatching is never read as a weight of 0.
// Layout first (measure text, decide sizes), then draw at a position: a figure's size must be
// known before its surface exists.
#include <functional>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "attn/render/draw/canvas.hpp"
#include "attn/render/draw/colormap.hpp"

namespace attn::render {

struct Cell {
  Rgb fill;
  bool hatched = false;          // masked: drawn with Canvas::hatch_rect, no value
  std::optional<double> value;   // written with 3 or 2 decimals when it fits the cell
  std::string text;              // written instead of value when set ("1", "−∞", ...)
};

struct MatrixPanel {
  std::size_t rows = 0, cols = 0;
  std::vector<std::string> row_labels, col_labels;  // may be empty: no labels
  std::string title, row_title, col_title;
  double cell = 40;    // cell edge, points (the width when cell_h is set)
  double cell_h = 0;   // row height, points; 0 = square cells. Long, narrow matrices (48 tokens
                       // x 4 dimensions) keep their values legible without a picture 5000 px tall.
  double label_size = 11;
  double title_size = 12;
  std::function<Cell(std::size_t i, std::size_t j)> cell_at;
};

struct PanelLayout {
  double width = 0, height = 0;   // the whole panel, points
  double grid_x = 0, grid_y = 0;  // top-left of the cells, relative to the panel
  double label_size = 11;         // shrunk for small cells
  std::size_t label_step = 1;     // draw every label_step-th label when cells are tiny
  bool rotate_col_labels = false;
  bool stack_col_labels = false;  // CJK labels too wide for a cell: upright, a character per line
  double stack_line_h = 0;        // the height of one stacked character
  int decimals = 3;               // for Cell::value; -1 = values do not fit, not written
  bool short_text_fits = true;    // Cell::text of up to two characters ("1", "−∞")
  double value_size = 10;
};

PanelLayout layout_panel(Canvas& measure, const MatrixPanel& panel);

// Column labels too wide for their cells stand on end; Chinese, Japanese or Korean ones never
// lie on their side. When any label of an axis has such a (wide) character, every label of it
// is stacked upright instead, one character under another, as vertical CJK text is written.
bool stack_column_labels(const std::vector<std::string>& labels);
// A label's characters for its stack (zero-width marks kept on theirs); past max_chars the last
// one shown is a vertical ellipsis.
std::vector<std::string> stacked_characters(const std::string& label, std::size_t max_chars);
// Draws them centred on cx, each line_h tall, the last one's bottom at bottom_y.
void draw_stacked_label(Canvas& canvas, const std::vector<std::string>& characters, double cx, double bottom_y,
                        const TextStyle& style, double line_h);

// The panel's row height: cell_h when set, else cell.
double row_height(const MatrixPanel& panel);

// Where the panel's cells land when its top-left corner is at (x, y).
CellGrid panel_grid(const MatrixPanel& panel, const PanelLayout& layout, double x, double y);

void draw_panel(Canvas& canvas, const MatrixPanel& panel, const PanelLayout& layout, double x,
                double y);

// Tiny cells get every step-th token label only; a picture must say so, never drop labels
// silently: "every 4th token labelled (0, 4, 8, ...) of 48", or "" for step 1.
std::string label_thinning_note(std::size_t step, std::size_t tokens, const std::string& noun = "token");
// text + " · " + note, or whichever of them is not empty.
std::string with_note(const std::string& text, const std::string& note);

// InputError unless labels is empty (no labels given) or has one label per position.
void check_labels(const std::vector<std::string>& labels, std::size_t n, const std::string& field);

// Cell edge (points) so that a rows x cols grid is about `target` points on its longer side,
// kept within [min_cell, max_cell].
double cell_size_for(std::size_t rows, std::size_t cols, double target, double min_cell,
                     double max_cell);

// Ticks at 1, 2, 2.5 or 5 times a power of ten, about `target` of them over [lo, hi], spaced
// at least min_step apart (1 for an axis of counts: no tick at 2.5 tokens).
std::vector<double> nice_ticks(double lo, double hi, double target = 5, double min_step = 0);
// "%.4g" with a typographic minus; "0" for tiny rounding residue such as 1e-17.
std::string tick_label(double v);

// A vertical colorbar of height h whose ramp starts at (x, y); ticks and label to its right.
// log: ticks at 1, 2 and 5 times powers of ten, placed on a log scale (0 < vmin).
double colorbar_width(Canvas& measure, double vmin, double vmax, const std::string& label, bool log = false);
// The bar's height beside a grid h points tall: at least 120 points, and at least its rotated
// label's length, which is centred on the bar and would otherwise run past a short picture.
double colorbar_height(Canvas& measure, double h, const std::string& label);
void draw_colorbar(Canvas& canvas, const Colormap& cmap, double vmin, double vmax, double x,
                   double y, double h, const std::string& label, bool log = false);

// "▨ masked: −∞ before softmax, not a weight of 0" — a swatch and its explanation.
TextSize masked_legend_size(Canvas& measure);
void draw_masked_legend(Canvas& canvas, double x, double y);

// Title (bold) and optional subtitle, centred on cx from y down, each wrapped into lines of at
// most wrap_width points (a long sentence must not stretch the figure).
struct TitleBlock {
  std::string title, subtitle;
  double wrap_width = 480;
};
TextSize title_block_size(Canvas& measure, const TitleBlock& block);  // height includes a gap below
void draw_title_block(Canvas& canvas, const TitleBlock& block, double cx, double y);

// The frame the multi-panel figures share: a title block centred on top, then the body
// (panels, colorbars, legends), each part centred in the content width. The title wraps at the
// widest of `widths` (at least 480 points); the content is as wide as the widest of those, the
// title, and min_content_w. Sizes first: the caller positions its parts with centred_x() and
// body_y(), sets the figure to width() and draws the title with draw_title().
struct FigureFrame {
  TitleBlock titles;
  double margin = 16;
  double title_h = 0;    // the title block's height, the gap below it included
  double content_w = 0;  // between the margins

  double width() const { return content_w + 2 * margin; }
  double body_y() const { return margin + title_h; }
  double centred_x(double w) const { return margin + (content_w - w) / 2; }
  void draw_title(Canvas& canvas) const { draw_title_block(canvas, titles, width() / 2, margin); }
};
FigureFrame frame_figure(Canvas& measure, std::string title, std::string subtitle,
                         std::initializer_list<double> widths, double min_content_w = 0,
                         double margin = 16);

}  // namespace attn::render
