#include "attn/render/draw/text_table.hpp"

#include <unicode/uchar.h>
#include <unicode/utf8.h>

#include <algorithm>
#include <cstdio>

#include "attn/engine/text/printable_text.hpp"

namespace attn {
namespace {

std::size_t codepoint_width(UChar32 c) {
  const auto cat = u_charType(c);
  if (cat == U_NON_SPACING_MARK || cat == U_ENCLOSING_MARK || cat == U_FORMAT_CHAR) return 0;
  const auto eaw = u_getIntPropertyValue(c, UCHAR_EAST_ASIAN_WIDTH);
  return (eaw == U_EA_WIDE || eaw == U_EA_FULLWIDTH) ? 2 : 1;
}

}  // namespace

std::size_t display_width(std::string_view raw) {
  const std::string s = printable_text(raw);  // the width of what pad_to_width shows
  std::size_t width = 0;
  int32_t i = 0;
  const auto n = static_cast<int32_t>(s.size());
  while (i < n) {
    UChar32 c;
    U8_NEXT(s.data(), i, n, c);
    width += c < 0 ? 1 : codepoint_width(c);
  }
  return width;
}

std::string pad_to_width(std::string_view raw, std::size_t width, bool right_align) {
  // Every label a terminal table shows passes here: what would drive the terminal is written out.
  const std::string s = printable_text(raw);
  std::string text = s;
  if (display_width(text) > width) {
    // Cut whole code points until the text and an ellipsis fit.
    std::string cut;
    std::size_t used = 0;
    int32_t i = 0;
    const auto n = static_cast<int32_t>(s.size());
    while (i < n) {
      const int32_t start = i;
      UChar32 c;
      U8_NEXT(s.data(), i, n, c);
      const std::size_t w = c < 0 ? 1 : codepoint_width(c);
      if (used + w + 1 > width) break;
      cut.append(s.substr(start, i - start));
      used += w;
    }
    text = cut + "…";
  }
  const std::string pad(width - std::min(width, display_width(text)), ' ');
  return right_align ? pad + text : text + pad;
}

std::string title_quote(const std::string& sentence, std::size_t max_columns) {
  if (display_width(sentence) <= max_columns) return "\"" + sentence + "\"";
  std::string cut = pad_to_width(sentence, max_columns);  // cut to fit, ending with "…"
  const std::string ellipsis = "…";
  if (cut.size() >= ellipsis.size() && cut.compare(cut.size() - ellipsis.size(), ellipsis.size(), ellipsis) == 0)
    cut.resize(cut.size() - ellipsis.size());
  const std::size_t space = cut.rfind(' ');
  if (space != std::string::npos && space > cut.size() / 2) cut.resize(space);  // end on a whole word
  return "\"" + cut + ellipsis + "\"";
}

namespace {

// One paragraph's words in lines of at most `width` columns (the first line starts at `first`
// columns, the others after `indent`), greedily; then, if the last line would hold one short
// word alone (a widow, "1." under a sentence), the word before it moves down to keep it company.
std::vector<std::vector<std::string_view>> word_lines(const std::vector<std::string_view>& words, std::size_t width,
                                                      std::size_t first, std::size_t indent) {
  std::vector<std::vector<std::string_view>> lines(1);
  std::size_t column = first;
  for (std::string_view w : words) {
    const std::size_t dw = display_width(w);
    if (!lines.back().empty() && column + 1 + dw > width) {
      lines.emplace_back();
      column = indent;
    }
    column += (lines.back().empty() ? 0 : 1) + dw;
    lines.back().push_back(w);
  }
  constexpr std::size_t kWidow = 8;
  const auto fits_together = [&] {  // the word moved down and the widow on one line
    return indent + display_width(lines[lines.size() - 2].back()) + 1 + display_width(lines.back().front()) <= width;
  };
  if (lines.size() >= 2 && lines.back().size() == 1 && display_width(lines.back().front()) < kWidow &&
      lines[lines.size() - 2].size() >= 3 && fits_together()) {
    std::vector<std::string_view>& before = lines[lines.size() - 2];
    lines.back().insert(lines.back().begin(), before.back());
    before.pop_back();
  }
  return lines;
}

}  // namespace

std::string wrap_words(std::string_view text, std::size_t width, std::string_view indent) {
  std::string out;
  std::size_t start = 0;
  while (start <= text.size()) {  // paragraph by paragraph: the text's own line breaks stay
    const std::size_t end = std::min(text.find('\n', start), text.size());
    const std::string_view paragraph = text.substr(start, end - start);
    // The paragraph's own indent stays on its first line.
    const std::size_t lead = std::min(paragraph.find_first_not_of(' '), paragraph.size());
    std::vector<std::string_view> words;
    for (std::size_t b = lead; b < paragraph.size();) {
      const std::size_t e = std::min(paragraph.find(' ', b), paragraph.size());
      if (e > b) words.push_back(paragraph.substr(b, e - b));
      b = e + 1;
    }
    out += paragraph.substr(0, lead);
    const auto lines = word_lines(words, width, lead, display_width(indent));
    for (std::size_t k = 0; k < lines.size(); ++k) {
      if (k) out += "\n" + std::string(indent);
      for (std::size_t w = 0; w < lines[k].size(); ++w) out += (w ? " " : "") + std::string(lines[k][w]);
    }
    if (end < text.size()) out += "\n";
    start = end + 1;
  }
  return out;
}

std::string matrix_table(const std::vector<std::string>& row_labels,
                         const std::vector<std::string>& col_labels, const Tensor2& values,
                         int decimals) {
  std::size_t label_w = 0;
  for (const auto& l : row_labels) label_w = std::max(label_w, display_width(l));
  label_w = std::min<std::size_t>(label_w, 16);
  std::size_t cell_w = static_cast<std::size_t>(decimals) + 3;
  for (const auto& l : col_labels) cell_w = std::max(cell_w, std::min<std::size_t>(display_width(l), 10));

  std::string out = pad_to_width("", label_w);
  for (const auto& l : col_labels) out += " " + pad_to_width(l, cell_w, true);
  out += "\n";
  char buf[64];
  for (std::size_t i = 0; i < values.shape(0); ++i) {
    out += pad_to_width(i < row_labels.size() ? row_labels[i] : "", label_w);
    for (std::size_t j = 0; j < values.shape(1); ++j) {
      std::snprintf(buf, sizeof buf, "%.*f", decimals, static_cast<double>(values(i, j)));
      out += " " + pad_to_width(buf, cell_w, true);
    }
    out += "\n";
  }
  return out;
}

}  // namespace attn
