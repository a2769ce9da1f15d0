#pragma once
// A table of already-formatted cells, rendered the three ways the experiment subcommands
// offer: aligned text for the terminal (by display width, so 我喜欢 lines up like English),
// GitHub markdown for notes and slides, and CSV (RFC 4180 quoting) for spreadsheets.
// Also the few number formats those tables share, so every subcommand prints alike.
#include <string>
#include <string_view>
#include <vector>

namespace attn {

enum class TableFormat { text, markdown, csv };

struct Table {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;  // each as wide as header
};

// Text: columns separated by two spaces, the first column left-aligned, the others right-aligned
// (they hold numbers), a dashed rule under the header.
std::string render_table(const Table& table, TableFormat format);

// "4.29" / "1.2e-08": printf %.*g with `significant` digits; never "nan" (non-finite values are
// a bug upstream and throw std::logic_error here, so one cannot slip into a printout).
std::string format_g(double x, int significant = 4);

// "3.142": printf %.*f.
std::string format_fixed(double x, int decimals);

// 137438953472 -> "137 G" (decimal SI prefixes k, M, G, T, P; 3 significant digits).
std::string format_si(double x);

// 1073741824 -> "1 GiB" (binary prefixes, 3 significant digits): memory sizes.
std::string format_bytes(double bytes);

}  // namespace attn
