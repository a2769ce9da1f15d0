#include "attn/render/terminal_heatmap.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "attn/render/text_table.hpp"

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

std::string render_terminal_heatmap(const TerminalHeatmap& h, ColorMode mode) {
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

}  // namespace attn
