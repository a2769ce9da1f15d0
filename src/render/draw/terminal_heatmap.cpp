#include "attn/render/draw/terminal_heatmap.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include <sys/ioctl.h>
#include <unistd.h>

#include "attn/render/draw/text_table.hpp"

namespace attn {
namespace {

std::string getenv_or_empty(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

int channel(double v) { return static_cast<int>(std::lround(std::clamp(v, 0.0, 1.0) * 255)); }

// SGR colour for foreground (38) or background (48).
std::string sgr(const Rgb& c, ColorMode mode, bool background) {
  const char* which = background ? "48" : "38";
  char buf[40];
  if (mode == ColorMode::truecolor) {
    std::snprintf(buf, sizeof buf, "\x1b[%s;2;%d;%d;%dm", which, channel(c.r), channel(c.g), channel(c.b));
  } else {
    std::snprintf(buf, sizeof buf, "\x1b[%s;5;%dm", which, ansi256_index(c));
  }
  return buf;
}

constexpr std::string_view kReset = "\x1b[0m";

}  // namespace

ColorMode terminal_color_mode(bool is_terminal, bool no_color_flag) {
  if (!is_terminal || no_color_flag || !getenv_or_empty("NO_COLOR").empty() ||
      getenv_or_empty("TERM") == "dumb") {
    return ColorMode::none;
  }
  const std::string colorterm = getenv_or_empty("COLORTERM");
  return colorterm == "truecolor" || colorterm == "24bit" ? ColorMode::truecolor : ColorMode::ansi256;
}

int ansi256_index(const Rgb& c) {
  // The cube's six levels are 0, 95, 135, 175, 215, 255; the grey ramp is 8, 18, ..., 238.
  static constexpr int kLevels[6] = {0, 95, 135, 175, 215, 255};
  const int rgb[3] = {channel(c.r), channel(c.g), channel(c.b)};
  int cube[3];
  for (int k = 0; k < 3; ++k) {
    cube[k] = static_cast<int>(std::min_element(std::begin(kLevels), std::end(kLevels),
                                                [&](int a, int b) { return std::abs(a - rgb[k]) < std::abs(b - rgb[k]); }) -
                               std::begin(kLevels));
  }
  auto dist2 = [&](int r, int g, int b) {
    return (r - rgb[0]) * (r - rgb[0]) + (g - rgb[1]) * (g - rgb[1]) + (b - rgb[2]) * (b - rgb[2]);
  };
  const int grey_step = std::clamp((rgb[0] + rgb[1] + rgb[2]) / 3 - 3, 0, 239) / 10;  // 0..23
  const int grey = 8 + 10 * std::min(grey_step, 23);
  const int cube_d = dist2(kLevels[cube[0]], kLevels[cube[1]], kLevels[cube[2]]);
  if (dist2(grey, grey, grey) < cube_d) return 232 + std::min(grey_step, 23);
  return 16 + 36 * cube[0] + 6 * cube[1] + cube[2];
}

std::size_t terminal_columns(int fd, std::size_t fallback) {
  winsize ws{};
  if (::isatty(fd) && ::ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
  const std::string env = getenv_or_empty("COLUMNS");
  if (!env.empty() && env.size() < 6 && env.find_first_not_of("0123456789") == std::string::npos) {
    const std::size_t n = std::stoul(env);
    if (n >= 20) return n;
  }
  return fallback;
}

namespace {

// The keys [j0, j1) of the table: labels, weights and mask cut to those columns.
TerminalHeatmap key_block(const TerminalHeatmap& h, std::size_t j0, std::size_t j1, Mask2& mask_store) {
  TerminalHeatmap b = h;
  b.col_labels.assign(h.col_labels.begin() + std::ptrdiff_t(std::min(j0, h.col_labels.size())),
                      h.col_labels.begin() + std::ptrdiff_t(std::min(j1, h.col_labels.size())));
  b.weights = xt::view(h.weights, xt::all(), xt::range(j0, j1));
  if (h.allowed) {
    mask_store = xt::view(*h.allowed, xt::all(), xt::range(j0, j1));
    b.allowed = &mask_store;
  }
  b.max_width = 0;
  return b;
}

std::string render_block(const TerminalHeatmap& h, ColorMode mode, bool legend);

// The widest line's display width, escape sequences left out.
std::size_t block_width(const TerminalHeatmap& h, ColorMode mode) {
  std::string text = render_block(h, mode, false), plain;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\x1b') {
      while (i < text.size() && text[i] != 'm') ++i;
      continue;
    }
    plain += text[i];
  }
  std::size_t widest = 0, start = 0;
  while (start < plain.size()) {
    const std::size_t end = std::min(plain.find('\n', start), plain.size());
    widest = std::max(widest, display_width(std::string_view(plain).substr(start, end - start)));
    start = end + 1;
  }
  return widest;
}

}  // namespace

namespace {

// The first `rows` query rows and `keys` keys, and a line saying what was cut.
std::string render_cut(const TerminalHeatmap& h, ColorMode mode) {
  const std::size_t Lq = h.weights.shape(0), Lk = h.weights.shape(1);
  Mask2 store;
  std::size_t keys = 1;  // at least one key, however narrow the terminal
  while (keys < Lk && (h.max_width == 0 || block_width(key_block(h, 0, keys + 1, store), mode) <= h.max_width)) ++keys;
  const std::size_t rows = h.max_rows ? std::min(h.max_rows, Lq) : Lq;
  TerminalHeatmap cut = key_block(h, 0, keys, store);
  Mask2 rows_store;
  cut.weights = xt::view(Tensor2(cut.weights), xt::range(0, rows), xt::all());
  cut.row_labels.resize(std::min(rows, cut.row_labels.size()));
  if (cut.allowed) {
    rows_store = xt::view(*cut.allowed, xt::range(0, rows), xt::all());
    cut.allowed = &rows_store;
  }
  std::string out = render_block(cut, mode, true);
  if (keys == Lk && rows == Lq) return out;
  std::string left;
  if (keys < Lk) left += "keys " + std::to_string(keys) + "-" + std::to_string(Lk - 1);
  if (rows < Lq) left += (left.empty() ? "" : " and ") + std::string("queries ") + std::to_string(rows) + "-" + std::to_string(Lq - 1);
  return out + "(" + left + " not shown, to fit " + std::to_string(h.max_width) + " columns)\n";
}

}  // namespace

std::string render_terminal_heatmap(const TerminalHeatmap& h, ColorMode mode) {
  if (h.cut_to_fit) return render_cut(h, mode);
  const std::size_t Lk = h.weights.shape(1);
  if (h.max_width == 0 || Lk <= 1 || block_width(h, mode) <= h.max_width) return render_block(h, mode, true);
  std::string out;
  Mask2 store;
  for (std::size_t j0 = 0; j0 < Lk;) {
    std::size_t j1 = j0 + 1;  // at least one key per block, however narrow the terminal
    while (j1 < Lk && block_width(key_block(h, j0, j1 + 1, store), mode) <= h.max_width) ++j1;
    out += (j0 ? "\n" : "") + std::string("keys ") + std::to_string(j0) + "-" + std::to_string(j1 - 1) + " of " +
           std::to_string(Lk) + ":\n";
    out += render_block(key_block(h, j0, j1, store), mode, j1 == Lk);
    j0 = j1;
  }
  return out;
}

namespace {

std::string render_block(const TerminalHeatmap& h, ColorMode mode, bool legend) {
  if (mode == ColorMode::none) return matrix_table(h.row_labels, h.col_labels, h.weights);
  const Colormap cmap = Colormap::by_name(h.colormap);
  std::size_t label_w = 0;
  for (const auto& l : h.row_labels) label_w = std::max(label_w, display_width(l));
  label_w = std::min<std::size_t>(label_w, 12);
  std::size_t cell_w = 6;  // " 0.312"
  for (const auto& l : h.col_labels) cell_w = std::max(cell_w, std::min<std::size_t>(display_width(l) + 1, 10));

  std::string out = pad_to_width("", label_w);
  for (const auto& l : h.col_labels) out += " " + pad_to_width(l, cell_w, true);
  out += "\n";
  const Rgb masked_bg = rgb_from_hex(0xdcdcdc), masked_fg = rgb_from_hex(0x8a8a8a);
  char value[32];
  for (std::size_t i = 0; i < h.weights.shape(0); ++i) {
    out += pad_to_width(i < h.row_labels.size() ? h.row_labels[i] : "", label_w);
    for (std::size_t j = 0; j < h.weights.shape(1); ++j) {
      out += " ";
      if (h.allowed && !(*h.allowed)(i, j)) {
        out += sgr(masked_bg, mode, true) + sgr(masked_fg, mode, false) + pad_to_width(std::string((cell_w - 1) / 2, ' ') + "·", cell_w);
      } else {
        const Rgb bg = cmap.at(h.scale.position(h.weights(i, j)));
        std::snprintf(value, sizeof value, "%.3f", static_cast<double>(h.weights(i, j)));
        out += sgr(bg, mode, true) + sgr(readable_text_on(bg), mode, false) + pad_to_width(value, cell_w, true);
      }
      out += kReset;
    }
    out += "\n";
  }
  if (!legend) return out;
  // Legend: the ramp from the scale's bottom to its top, and the masked look.
  char lo[32], hi[32];
  std::snprintf(lo, sizeof lo, "%.3g", h.scale.vmin);
  std::snprintf(hi, sizeof hi, "%.3g", h.scale.vmax);
  out += pad_to_width("", label_w) + " " + lo + " ";
  for (int k = 0; k < 8; ++k) out += sgr(cmap.at(k / 7.0), mode, true) + "  " + std::string(kReset);
  out += std::string(" ") + hi + " (" + cmap.name() + ")";
  if (h.allowed && std::find(h.allowed->begin(), h.allowed->end(), false) != h.allowed->end()) {
    out += "   " + sgr(masked_bg, mode, true) + sgr(masked_fg, mode, false) + " · " + std::string(kReset) +
           " masked (−∞ before softmax)";
  }
  return out + "\n";
}

}  // namespace

}  // namespace attn
