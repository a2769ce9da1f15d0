#pragma once
// A table of already-formatted cells, rendered the three ways the experiment subcommands
// offer: aligned text for the terminal (by display width, so 我喜欢 lines up like English),
// GitHub markdown for notes and slides, and CSV (RFC 4180 quoting) for spreadsheets.
#include <string>
#include <string_view>
#include <vector>

#include "attn/io/number_format.hpp"

namespace attn {

enum class TableFormat { text, markdown, csv };

struct Table {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;  // each as wide as header
};

// Text: columns separated by two spaces, the first column left-aligned, the others right-aligned
// (they hold numbers), a dashed rule under the header.
std::string render_table(const Table& table, TableFormat format);

}  // namespace attn
