#include "attn/render/report/report_table.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>

#include "attn/render/draw/text_table.hpp"

namespace attn {
namespace {

std::string csv_cell(const std::string& cell) {
  if (cell.find_first_of(",\"\n") == std::string::npos) return cell;
  std::string quoted = "\"";
  for (char c : cell) {
    if (c == '"') quoted += '"';  // RFC 4180: a quote inside a quoted cell is doubled
    quoted += c;
  }
  return quoted + "\"";
}

std::string join_row(const std::vector<std::string>& cells, const std::vector<std::size_t>& widths,
                     const std::string& sep) {
  std::string line;
  for (std::size_t c = 0; c < cells.size(); ++c) {
    if (c) line += sep;
    line += pad_to_width(cells[c], widths[c], /*right_align=*/c > 0);
  }
  while (!line.empty() && line.back() == ' ') line.pop_back();
  return line + "\n";
}

}  // namespace

std::string render_table(const Table& table, TableFormat format) {
  std::string out;
  if (format == TableFormat::csv) {
    auto line = [&](const std::vector<std::string>& cells) {
      for (std::size_t c = 0; c < cells.size(); ++c) {
        if (c) out += ',';
        out += csv_cell(cells[c]);
      }
      out += "\n";
    };
    line(table.header);
    for (const auto& row : table.rows) line(row);
    return out;
  }
  std::vector<std::size_t> widths(table.header.size(), 0);
  auto measure = [&](const std::vector<std::string>& cells) {
    for (std::size_t c = 0; c < cells.size() && c < widths.size(); ++c)
      widths[c] = std::max(widths[c], display_width(cells[c]));
  };
  measure(table.header);
  for (const auto& row : table.rows) measure(row);
  if (format == TableFormat::markdown) {
    for (std::size_t& w : widths) w = std::max<std::size_t>(w, 3);  // "---" at the least
    auto line = [&](const std::vector<std::string>& cells) {
      out += "|";
      for (std::size_t c = 0; c < cells.size(); ++c) {
        out += ' ';
        out += pad_to_width(cells[c], widths[c], c > 0);
        out += " |";
      }
      out += "\n";
    };
    line(table.header);
    out += "|";
    for (std::size_t c = 0; c < widths.size(); ++c) {  // first column left-aligned, numbers right
      out += c ? " " : " :";
      out.append(widths[c] - 1, '-');
      out += c ? ": |" : " |";
    }
    out += "\n";
    for (const auto& row : table.rows) line(row);
    return out;
  }
  out += join_row(table.header, widths, "  ");
  std::size_t total = 0;
  for (std::size_t w : widths) total += w;
  out += std::string(total + 2 * (widths.empty() ? 0 : widths.size() - 1), '-') + "\n";
  for (const auto& row : table.rows) out += join_row(row, widths, "  ");
  return out;
}

}  // namespace attn
