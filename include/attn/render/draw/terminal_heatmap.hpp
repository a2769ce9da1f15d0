#pragma once
// The attention matrix as coloured cells in a terminal: each cell's background is the
// colormap's colour for its weight (24-bit colour when the terminal says it has it, else the
// xterm 256-colour palette), its value is written on top in a contrasting colour, masked cells
// are grey dots, and labels are aligned by display width (CJK tokens take two columns).
// Without colour (piped output, NO_COLOR, --no-color, TERM=dumb) it is the plain number table.
#include <string>
#include <vector>

#include "attn/render/draw/colormap.hpp"
#include "attn/render/draw/heatmap.hpp"
#include "attn/engine/core/tensor.hpp"

namespace attn {

enum class ColorMode { none, ansi256, truecolor };

// none when the stream is not a terminal, no_color_flag is set, NO_COLOR is set and not empty
// (no-color.org) or TERM is "dumb"; truecolor when COLORTERM is "truecolor" or "24bit";
// ansi256 otherwise.
ColorMode terminal_color_mode(bool is_terminal, bool no_color_flag);

// The xterm-256 palette index nearest to c (6x6x6 cube or grey ramp).
int ansi256_index(const Rgb& c);

struct TerminalHeatmap {
  std::vector<std::string> row_labels, col_labels;
  Tensor2 weights;       // [Lq, Lk]
  const Mask2* allowed = nullptr;  // [Lq, Lk] or null; false = masked
  std::string colormap = "Blues";
  ColorScale scale;
  // Terminal columns the table may take (0: no limit). A wider table is cut into blocks of
  // keys, one under the other ("keys 0-11 of 38"), as pandas and NumPy print wide arrays: a
  // 38-token matrix is readable in 100 columns instead of wrapping at 400.
  std::size_t max_width = 0;
  // Instead of blocks: the keys that fit max_width and at most max_rows query rows (0: all),
  // then one line saying how many keys and rows were left out -- a summary for a learner's
  // first look, where 48 tokens in blocks would be hundreds of lines.
  bool cut_to_fit = false;
  std::size_t max_rows = 0;
};

// The columns of the terminal on `fd` (ioctl), else $COLUMNS, else `fallback`.
std::size_t terminal_columns(int fd, std::size_t fallback = 120);

// The table, one line per query row, ending with a legend line when coloured.
std::string render_terminal_heatmap(const TerminalHeatmap& h, ColorMode mode);

}  // namespace attn
