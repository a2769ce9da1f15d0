#include "figure_parts.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "attn/engine/core/error.hpp"
#include "attn/io/number_format.hpp"
#include "attn/render/draw/text_table.hpp"

namespace attn::render {
namespace {

const Rgb kInk = rgb_from_hex(0x1a1a1a);
const Rgb kAxisInk = rgb_from_hex(0x404040);
const Rgb kFrame = rgb_from_hex(0x8c8c8c);
constexpr double kMaxLabelWidth = 130;  // longer tokens are cut with "…"
constexpr double kLabelGap = 5;

// A cell's number: io's format_fixed, and the infinities a scores matrix holds where a mask hid
// the key (the printouts' shared format refuses them).
std::string cell_number(double v, int decimals) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  return format_fixed(v, decimals);
}

TextStyle label_style(double size) { return {size, false, kInk, kMaxLabelWidth}; }
TextStyle axis_style(double size) { return {size, false, kAxisInk, 0}; }

std::size_t max_stack(const PanelLayout& l) {
  return static_cast<std::size_t>(std::max(1.0, std::floor(kMaxLabelWidth / l.stack_line_h)));
}

}  // namespace

bool stack_column_labels(const std::vector<std::string>& labels) {
  // A wide (CJK) character turned on its side reads as a picture, not as a word.
  return std::any_of(labels.begin(), labels.end(), [](const std::string& s) {
    return display_width(s) > static_cast<std::size_t>(std::count_if(s.begin(), s.end(), [](char c) {
             return (c & 0xc0) != 0x80;  // code points
           }));
  });
}

std::vector<std::string> stacked_characters(const std::string& label, std::size_t max_chars) {
  std::vector<std::string> chars;
  for (std::size_t i = 0; i < label.size();) {
    std::size_t n = 1;
    while (i + n < label.size() && (static_cast<unsigned char>(label[i + n]) & 0xc0) == 0x80) ++n;
    const std::string ch = label.substr(i, n);
    if (!chars.empty() && display_width(ch) == 0) chars.back() += ch;
    else chars.push_back(ch);
    i += n;
  }
  if (chars.size() > max_chars && max_chars > 0) {
    chars.resize(max_chars);
    chars.back() = "⋮";
  }
  return chars;
}

void draw_stacked_label(Canvas& c, const std::vector<std::string>& chars, double cx, double bottom_y,
                        const TextStyle& style, double line_h) {
  for (std::size_t k = 0; k < chars.size(); ++k) {
    c.text(chars[k], cx, bottom_y - line_h * static_cast<double>(chars.size() - 1 - k), style, 0.5, 1);
  }
}

std::vector<double> nice_ticks(double lo, double hi, double target, double min_step) {
  const double raw = std::max((hi - lo) / target, min_step);
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  double step = 10 * magnitude;
  for (double m : {1.0, 2.0, 2.5, 5.0}) {
    if (m * magnitude >= raw * (1 - 1e-9)) {
      step = m * magnitude;
      break;
    }
  }
  std::vector<double> ticks;
  for (double k = std::ceil(lo / step - 1e-9); k * step <= hi + 1e-9 * step; k += 1) {
    ticks.push_back(k * step);
  }
  return ticks;
}

std::string tick_label(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", std::fabs(v) < 1e-12 ? 0.0 : std::fabs(v));
  // A typographic minus (U+2212), as matplotlib writes it: "-" is a hyphen, too short and high.
  std::string label = v < 0 && std::fabs(v) >= 1e-12 ? "−" : "";
  label += buf;
  return label;
}

void check_labels(const std::vector<std::string>& labels, std::size_t n, const std::string& field) {
  if (!labels.empty() && labels.size() != n) {
    throw InputError(field + ": expected " + std::to_string(n) + " labels, one per position, got " +
                     std::to_string(labels.size()));
  }
}

std::string label_thinning_note(std::size_t step, std::size_t tokens, const std::string& noun) {
  if (step <= 1) return "";
  const char* suffix = step % 10 == 1 && step % 100 != 11   ? "st"
                       : step % 10 == 2 && step % 100 != 12 ? "nd"
                       : step % 10 == 3 && step % 100 != 13 ? "rd"
                                                            : "th";
  return "every " + std::to_string(step) + suffix + " " + noun + " labelled (0, " + std::to_string(step) + ", " +
         std::to_string(2 * step) + ", ...) of " + std::to_string(tokens);
}

std::string with_note(const std::string& text, const std::string& note) {
  if (note.empty()) return text;
  return text.empty() ? note : text + " · " + note;
}

double cell_size_for(std::size_t rows, std::size_t cols, double target, double min_cell,
                     double max_cell) {
  const double n = static_cast<double>(std::max<std::size_t>({rows, cols, 1}));
  return std::clamp(target / n, min_cell, max_cell);
}

double row_height(const MatrixPanel& p) { return p.cell_h > 0 ? p.cell_h : p.cell; }

PanelLayout layout_panel(Canvas& m, const MatrixPanel& p) {
  PanelLayout l;
  const double rh = row_height(p), smaller = std::min(p.cell, rh);
  l.label_size = std::min(p.label_size, smaller * 0.8);
  if (l.label_size < 6) {  // tiny cells: fewer, still readable labels
    l.label_size = 6;
    l.label_step = static_cast<std::size_t>(std::ceil(7.5 / smaller));
  }
  double row_label_w = 0, col_label_w = 0;
  for (const auto& s : p.row_labels) row_label_w = std::max(row_label_w, m.measure(s, label_style(l.label_size)).width);
  for (const auto& s : p.col_labels) col_label_w = std::max(col_label_w, m.measure(s, label_style(l.label_size)).width);
  const double label_h = m.measure("Ag", label_style(l.label_size)).height;
  l.rotate_col_labels = col_label_w > p.cell - 3;
  double stack_h = 0;
  if (l.rotate_col_labels && stack_column_labels(p.col_labels)) {
    l.rotate_col_labels = false;
    l.stack_col_labels = true;
    l.stack_line_h = m.measure("我", label_style(l.label_size)).height;
    for (const auto& s : p.col_labels)
      stack_h = std::max(stack_h, l.stack_line_h * static_cast<double>(stacked_characters(s, max_stack(l)).size()));
  }

  // Values in cells: 3 decimals if they fit, else 2, else none (the JSON has every number).
  l.value_size = std::clamp(smaller * 0.27, 7.0, 12.0);
  l.decimals = -1;
  if (p.rows * p.cols <= 4096) {
    for (int d : {3, 2}) {
      const TextSize s = m.measure(cell_number(-0.5, d), {l.value_size});  // widest: a sign and d digits
      if (s.width <= p.cell - 4 && s.height <= rh - 2) {
        l.decimals = d;
        break;
      }
    }
  }

  const TextSize short_text = m.measure("−∞", {l.value_size});
  l.short_text_fits = short_text.width <= p.cell - 4 && short_text.height <= rh - 2;

  const double grid_w = p.cell * static_cast<double>(p.cols);
  const double title_h = p.title.empty() ? 0 : m.measure(p.title, {p.title_size, true}).height + 4;
  const double col_title_h = p.col_title.empty() ? 0 : m.measure(p.col_title, axis_style(p.label_size)).height + 2;
  const double col_labels_h = p.col_labels.empty() ? 0
                              : (l.stack_col_labels ? stack_h : l.rotate_col_labels ? col_label_w : label_h) + kLabelGap;
  const double row_title_w = p.row_title.empty() ? 0 : m.measure(p.row_title, axis_style(p.label_size)).height + 4;
  const double row_labels_w = p.row_labels.empty() ? 0 : row_label_w + kLabelGap + 2;
  l.grid_x = row_title_w + row_labels_w;
  l.grid_y = title_h + col_title_h + col_labels_h;

  // Titles are centred over the grid; widen the panel (on either side) when they are wider.
  double left = 0, right = l.grid_x + grid_w;
  for (double w : {p.title.empty() ? 0.0 : m.measure(p.title, {p.title_size, true}).width,
                   p.col_title.empty() ? 0.0 : m.measure(p.col_title, axis_style(p.label_size)).width}) {
    left = std::min(left, l.grid_x + grid_w / 2 - w / 2);
    right = std::max(right, l.grid_x + grid_w / 2 + w / 2);
  }
  l.grid_x -= left;
  l.width = right - left;
  // The row title is drawn rotated, centred on the grid: a grid shorter than the title (a mask
  // of 2 queries) gets room above and below so that the title is never clipped.
  const double grid_h = rh * static_cast<double>(p.rows);
  const double row_title_len = p.row_title.empty() ? 0 : m.measure(p.row_title, axis_style(p.label_size)).width;
  const double overhang = std::max(0.0, (row_title_len - grid_h) / 2);
  // Above the grid the title must end before the rotated row title begins (a one-row mask).
  l.grid_y = std::max(l.grid_y, title_h + overhang);
  l.height = l.grid_y + grid_h + overhang;
  return l;
}

CellGrid panel_grid(const MatrixPanel& p, const PanelLayout& l, double x, double y) {
  return {x + l.grid_x, y + l.grid_y, p.cell, row_height(p), p.rows, p.cols};
}

void draw_panel(Canvas& c, const MatrixPanel& p, const PanelLayout& l, double x, double y) {
  const CellGrid g = panel_grid(p, l, x, y);
  const double rh = row_height(p);
  const double grid_w = p.cell * static_cast<double>(p.cols);
  const double grid_h = rh * static_cast<double>(p.rows);

  for (std::size_t i = 0; i < p.rows; ++i) {
    for (std::size_t j = 0; j < p.cols; ++j) {
      const Cell cell = p.cell_at(i, j);
      const double cx = g.cell_x(j), cy = g.cell_y(i);
      if (cell.hatched) {
        c.hatch_rect(cx, cy, p.cell, rh);
      } else {
        c.fill_rect(cx, cy, p.cell, rh, cell.fill);
      }
      std::string text = l.short_text_fits ? cell.text : "";
      if (cell.text.empty() && cell.value && l.decimals >= 0) text = cell_number(*cell.value, l.decimals);
      if (!text.empty()) {
        const Rgb ink = cell.hatched ? kInk : readable_text_on(cell.fill);
        c.text(text, cx + p.cell / 2, cy + rh / 2, {l.value_size, false, ink}, 0.5, 0.5);
      }
    }
  }
  // Thin white separators keep neighbouring cells of similar colour apart; on tiny cells they
  // would wash the colours out, so long sequences go without.
  if (std::min(p.cell, rh) >= 5) {
    const double sep = std::clamp(std::min(p.cell, rh) * 0.05, 0.4, 1.5);
    for (std::size_t k = 1; k < p.cols; ++k) c.fill_rect(g.cell_x(k) - sep / 2, g.y, sep, grid_h, {1, 1, 1});
    for (std::size_t k = 1; k < p.rows; ++k) c.fill_rect(g.x, g.cell_y(k) - sep / 2, grid_w, sep, {1, 1, 1});
  }
  c.stroke_rect(g.x, g.y, grid_w, grid_h, kFrame, 0.6);

  const TextStyle labels = label_style(l.label_size);
  for (std::size_t i = 0; i < p.row_labels.size() && i < p.rows; i += l.label_step) {
    c.text(p.row_labels[i], g.x - kLabelGap, g.cell_y(i) + rh / 2, labels, 1, 0.5);
  }
  for (std::size_t j = 0; j < p.col_labels.size() && j < p.cols; j += l.label_step) {
    const double cx = g.cell_x(j) + p.cell / 2;
    // One orientation for the whole axis (layout_panel decides it): a row of upward labels
    // with a few upright ones among them reads as two axes.
    if (l.stack_col_labels) {  // upright characters, the last one just above the grid
      draw_stacked_label(c, stacked_characters(p.col_labels[j], max_stack(l)), cx, g.y - kLabelGap, labels, l.stack_line_h);
    } else if (l.rotate_col_labels) {
      c.text(p.col_labels[j], cx, g.y - kLabelGap, labels, 0, 0.5, 90);  // reads upwards
    } else {
      c.text(p.col_labels[j], cx, g.y - kLabelGap, labels, 0.5, 1);
    }
  }
  if (!p.row_title.empty()) {
    c.text(p.row_title, x + 1, g.y + grid_h / 2, axis_style(p.label_size), 0.5, 0, 90);
  }
  const double title_h = p.title.empty() ? 0 : c.measure(p.title, {p.title_size, true}).height + 4;
  if (!p.col_title.empty()) c.text(p.col_title, g.x + grid_w / 2, y + title_h, axis_style(p.label_size), 0.5, 0);
  if (!p.title.empty()) c.text(p.title, g.x + grid_w / 2, y, {p.title_size, true, kInk}, 0.5, 0);
}

namespace {

std::vector<double> log_ticks(double vmin, double vmax) {
  std::vector<double> all, decades;
  for (int k = int(std::floor(std::log10(vmin))); k <= int(std::ceil(std::log10(vmax))); ++k) {
    for (double m : {1.0, 2.0, 5.0}) {
      const double t = m * std::pow(10.0, k);
      if (t < vmin * (1 - 1e-9) || t > vmax * (1 + 1e-9)) continue;
      all.push_back(t);
      if (m == 1.0) decades.push_back(t);
    }
  }
  return all.size() <= 7 ? all : decades;
}

std::vector<double> colorbar_ticks(double vmin, double vmax, bool log) {
  return log ? log_ticks(vmin, vmax) : nice_ticks(vmin, vmax);
}

}  // namespace

double colorbar_height(Canvas& m, double h, const std::string& label) {
  return std::max({h, 120.0, m.measure(label, axis_style(10)).width + 8});
}

double colorbar_width(Canvas& m, double vmin, double vmax, const std::string& label, bool log) {
  double tick_w = 0;
  for (double t : colorbar_ticks(vmin, vmax, log)) tick_w = std::max(tick_w, m.measure(tick_label(t), {9}).width);
  return 12 + 5 + tick_w + 6 + m.measure(label, axis_style(10)).height;
}

void draw_colorbar(Canvas& c, const Colormap& cmap, double vmin, double vmax, double x, double y,
                   double h, const std::string& label, bool log) {
  const double bar_w = 12;
  c.vertical_gradient(x, y, bar_w, h, cmap);
  c.stroke_rect(x, y, bar_w, h, kFrame, 0.6);
  double tick_w = 0;
  for (double t : colorbar_ticks(vmin, vmax, log)) {
    const double at = log ? std::log(t / vmin) / std::log(vmax / vmin) : (t - vmin) / (vmax - vmin);
    const double ty = y + h - at * h;
    c.fill_rect(x + bar_w, ty - 0.3, 3, 0.6, kFrame);
    c.text(tick_label(t), x + bar_w + 5, ty, {9, false, kInk}, 0, 0.5);
    tick_w = std::max(tick_w, c.measure(tick_label(t), {9}).width);
  }
  c.text(label, x + bar_w + 5 + tick_w + 6, y + h / 2, axis_style(10), 0.5, 0, 90);
}

namespace {
const char* kMaskedLegend = "masked: score set to −∞ before softmax (not a weight of 0)";
}

TextSize masked_legend_size(Canvas& m) {
  const TextSize t = m.measure(kMaskedLegend, axis_style(10));
  return {12 + 6 + t.width, std::max(12.0, t.height)};
}

void draw_masked_legend(Canvas& c, double x, double y) {
  const TextSize size = masked_legend_size(c);
  c.hatch_rect(x, y + size.height / 2 - 6, 12, 12);
  c.stroke_rect(x, y + size.height / 2 - 6, 12, 12, kFrame, 0.6);
  c.text(kMaskedLegend, x + 18, y + size.height / 2, axis_style(10), 0, 0.5);
}

namespace {
TextStyle title_style(double wrap) { return {14, true, kInk, wrap, true}; }
TextStyle subtitle_style(double wrap) { return {10.5, false, kAxisInk, wrap, true}; }
}  // namespace

TextSize title_block_size(Canvas& m, const TitleBlock& b) {
  const TextSize t = m.measure(b.title, title_style(b.wrap_width));
  TextSize size{t.width, t.height + 10};
  if (!b.subtitle.empty()) {
    const TextSize s = m.measure(b.subtitle, subtitle_style(b.wrap_width));
    size = {std::max(size.width, s.width), size.height + 2 + s.height};
  }
  return size;
}

void draw_title_block(Canvas& c, const TitleBlock& b, double cx, double y) {
  c.text(b.title, cx, y, title_style(b.wrap_width), 0.5, 0);
  if (!b.subtitle.empty()) {
    c.text(b.subtitle, cx, y + c.measure(b.title, title_style(b.wrap_width)).height + 2,
           subtitle_style(b.wrap_width), 0.5, 0);
  }
}

FigureFrame frame_figure(Canvas& measure, std::string title, std::string subtitle,
                         std::initializer_list<double> widths, double min_content_w, double margin) {
  FigureFrame f;
  f.margin = margin;
  const double widest = std::max(widths);
  f.titles = {std::move(title), std::move(subtitle), std::max(widest, 480.0)};
  const TextSize t = title_block_size(measure, f.titles);
  f.title_h = t.height;
  f.content_w = std::max({widest, t.width, min_content_w});
  return f;
}

}  // namespace attn::render
