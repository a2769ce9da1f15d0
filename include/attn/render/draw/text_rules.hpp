#pragma once
// How a picture's text is written before pango lays it out: the typographic minus of every
// number, and where a wrapped line may not break (an expression, a number and its unit, a
// formula). Canvas applies them to everything it draws (canvas.hpp).
#include <string>

namespace attn {

// Every number's minus sign as the typographic minus U+2212, as matplotlib writes it (an ASCII
// "-" is a hyphen: shorter and higher). A "-" counts as a minus when a digit, "." or "∞"
// follows it and it starts the text or follows a space, one of ( [ { = , : ; / × ± or an
// exponent's e after a digit (1e-05). Hyphens in words, ranges such as 0-3 and options
// such as --heads are left alone. Canvas::text applies it to everything it draws.
std::string typographic_minus(const std::string& text);

// Where a wrapped line may not break: the space before an operator standing between spaces
// (= ≈ ≠ ≤ ≥ < > → ← / × + − - ± ∝; as in TeX, a line may end after an operator, not before
// it), spaces inside square brackets ([L, H, d_h]) and short parentheses ((i, j)), the space
// between a number and its unit (6.56 k, 16 MiB, 3 ms), and after a slash between two words
// (dH/dT) or an opening bar (|flash − naive|), and after a sum sign (Σ exp(s)). No-break spaces
// and word joiners do it; the clause separator "·" stays breakable. Canvas::text applies it to
// wrapped text, and keeps the last line from being a widow: a last line under 12 characters
// ("1", "j ≤ i)") takes words from the line above.
std::string keep_expressions_whole(const std::string& text);

// A formula that must be read in one piece ("exp(s − c) / Σ exp(s − c)", "max |A − P| = 0.1"):
// every space becomes a no-break space, and a word joiner follows every bar and every slash
// inside a word (pango breaks after them), so wrapping never splits it across lines.
std::string unbreakable(const std::string& text);

}  // namespace attn
