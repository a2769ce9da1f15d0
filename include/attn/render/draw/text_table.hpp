#pragma once
// Plain-text tables for the terminal, aligned by display width (a CJK character takes two
// columns, a combining mark none), so 我喜欢深度学习 lines up as well as English does.
#include <string>
#include <string_view>
#include <vector>

#include "attn/engine/core/tensor.hpp"

namespace attn {

// Terminal columns the UTF-8 text occupies (East Asian Wide/Fullwidth = 2, marks = 0), as
// pad_to_width shows it (control characters written out).
std::size_t display_width(std::string_view utf8);

// Pads (or truncates with "…") text to exactly `width` display columns, with what would drive
// a terminal (ESC, a bidi override) written out first (printable_text.hpp).
std::string pad_to_width(std::string_view utf8, std::size_t width, bool right_align = false);

// The sentence in double quotes for a picture's title, cut at a word with "…" past max_columns
// display columns: a 48-token sentence must not become a four-line bold title (the terminal
// output and JSON have it whole). Every picture that quotes its sentence uses this one.
std::string title_quote(const std::string& sentence, std::size_t max_columns = 60);

// Prose for the terminal broken at spaces into lines of at most `width` display columns (a
// word longer than that stands alone), every line after the first starting with `indent`: a
// 400-character rule must not run off a terminal. Keeps existing line breaks.
std::string wrap_words(std::string_view text, std::size_t width, std::string_view indent = "");

// A labelled matrix, one row per query: rows down the side, columns across the top.
std::string matrix_table(const std::vector<std::string>& row_labels,
                         const std::vector<std::string>& col_labels, const Tensor2& values,
                         int decimals = 3);

}  // namespace attn
