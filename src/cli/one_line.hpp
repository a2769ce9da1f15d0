#pragma once
// Error and warning text that stays one line on any terminal.
#include <string>
#include <string_view>

namespace attn::cli {

// `text` with every control character escaped, C style: newline -> \n, tab -> \t, ESC -> \x1b,
// backslash kept as is. Messages echo what the user typed (a backend name, a JSON key), and a
// newline there would split the contract's one "error:" line, an ESC would drive the terminal.
// Bytes >= 0x80 pass through: UTF-8 text (我喜欢) stays readable.
std::string one_line(std::string_view text);

}  // namespace attn::cli
