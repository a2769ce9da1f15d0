#pragma once
// Text that came from a user or a file, made safe to show on a terminal.
#include <string>
#include <string_view>

namespace attn {

enum class Whitespace { escape, keep };

// `text` with everything a terminal would act on written out instead, so a sentence, a token
// or a file name can never drive the terminal that shows it:
//   - control characters: C0 and DEL as \x1b (newline, tab and carriage return as \n, \t, \r,
//     or kept as they are with Whitespace::keep), C1 (U+0080-U+009F; U+009B starts a control
//     sequence as ESC [ does) as \u009b;
//   - the bidirectional overrides and isolates (U+202A-U+202E, U+2066-U+2069), which reorder
//     what the terminal shows ("Trojan Source", CVE-2021-42574), as \u202e;
//   - each byte of an ill-formed UTF-8 sequence as \xc3 (as Python's repr of bytes does), so a
//     token holding half a character still shows which half.
// Everything else, backslashes and UTF-8 text (我喜欢, emoji) included, is returned unchanged.
std::string printable_text(std::string_view text, Whitespace whitespace = Whitespace::escape);

}  // namespace attn
