#include "attn/report_table.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>

#include "attn/text_table.hpp"

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

void require_finite(double x) {
  if (!std::isfinite(x)) throw std::logic_error("a non-finite number reached a printout");
}

std::string scaled(double x, double base, const char* const* prefixes, std::size_t count,
                   const std::string& space) {
  require_finite(x);
  std::size_t p = 0;
  double v = x;
  while (std::fabs(v) >= base && p + 1 < count) {
    v /= base;
    ++p;
  }
  std::string out = format_g(v, 3);
  if (*prefixes[p]) out += space + prefixes[p];
  return out;
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

std::string format_g(double x, int significant) {
  require_finite(x);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*g", significant, x);
  return buf;
}

std::string format_fixed(double x, int decimals) {
  require_finite(x);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, x);
  return buf;
}

std::string format_si(double x) {
  static const char* const kPrefixes[] = {"", "k", "M", "G", "T", "P", "E"};
  return scaled(x, 1000.0, kPrefixes, 7, " ");
}

std::string format_bytes(double bytes) {
  static const char* const kPrefixes[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  return scaled(bytes, 1024.0, kPrefixes, 6, " ");
}

}  // namespace attn
