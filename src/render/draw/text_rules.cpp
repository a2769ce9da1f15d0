#include "attn/render/draw/text_rules.hpp"

#include <cstring>

namespace attn {

std::string typographic_minus(const std::string& text) {
  auto digit = [](char c) { return c >= '0' && c <= '9'; };
  auto starts = [&](std::size_t at, const char* s) { return text.compare(at, std::strlen(s), s) == 0; };
  std::string out;
  out.reserve(text.size() + 8);
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c != '-') {
      out += c;
      continue;
    }
    const bool number_follows = i + 1 < text.size() && (digit(text[i + 1]) || text[i + 1] == '.' || starts(i + 1, "∞"));
    bool sign_place = i == 0;
    if (!sign_place) {
      const char b = text[i - 1];
      sign_place = std::strchr(" ([{=,:;/", b) != nullptr || (b == 'e' && i >= 2 && digit(text[i - 2])) ||
                   (i >= 2 && (text.compare(i - 2, 2, "×") == 0 || text.compare(i - 2, 2, "±") == 0));
    }
    out += number_follows && sign_place ? "−" : "-";
  }
  return out;
}

std::string keep_expressions_whole(const std::string& text) {
  static const char* const kOperators[] = {"=", "≈", "≠", "≤", "≥", "<", ">", "→", "←", "/", "×", "+", "−", "-", "±", "∝"};
  static const char* const kUnits[] = {"KiB", "MiB", "GiB", "TiB", "ms", "µs", "ns", "k", "M", "G", "T", "P", "B", "s", "%"};
  const char* const nbsp = "\u00a0";
  const char* const joiner = "\u2060";  // WORD JOINER: no break here, nothing drawn
  auto digit = [](char c) { return c >= '0' && c <= '9'; };
  auto letter = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c & 0x80); };
  std::string out;
  out.reserve(text.size() + 16);
  std::size_t i = 0;
  int bracket_depth = 0;  // a shape such as [L, H, d_h] is one expression too
  std::size_t paren_close = std::string::npos;  // the end of a short "(i, j)" being copied
  while (i < text.size()) {
    const char c = text[i];
    if (c == '[') ++bracket_depth;
    if (c == ']' && bracket_depth > 0) --bracket_depth;
    if (c == '(') {
      const std::size_t close = text.find_first_of("()", i + 1);
      if (close != std::string::npos && text[close] == ')' && close - i <= 10) paren_close = close;
    }
    if (c == ' ' && ((bracket_depth > 0 && text.find(']', i) != std::string::npos) ||
                     (paren_close != std::string::npos && i < paren_close))) {
      out += nbsp;
      ++i;
      continue;
    }
    if (i == paren_close) paren_close = std::string::npos;
    if (c == ' ') {
      bool joined = false;
      for (const char* op : kOperators) {  // an operator stays with its left operand
        const std::size_t n = std::strlen(op);
        if (text.compare(i + 1, n, op) == 0 && i + 1 + n < text.size() && text[i + 1 + n] == ' ') {
          out += nbsp;
          out += op;
          i += n + 1;  // the space after it stays: a line may end after an operator, as in TeX
          joined = true;
          break;
        }
      }
      if (!joined && ((i >= 2 && text.compare(i - 2, 2, "Σ") == 0) || (i >= 3 && text.compare(i - 3, 3, "∑") == 0))) {
        out += nbsp;  // a sum sign stays with what it sums: "Σ exp(s)"
        ++i;
        continue;
      }
      if (!joined && i > 0 && digit(text[i - 1])) {
        for (const char* unit : kUnits) {  // a number stays with its unit: "6.56 k", "16 MiB"
          const std::size_t n = std::strlen(unit);
          if (text.compare(i + 1, n, unit) == 0 && (i + 1 + n == text.size() || !letter(text[i + 1 + n]))) {
            out += nbsp;
            ++i;
            joined = true;
            break;
          }
        }
      }
      if (joined) continue;
    }
    out += c;
    ++i;
    const bool starts_group = i == 1 || text[i - 2] == ' ' || text[i - 2] == '(';
    if (i < text.size() && text[i] != ' ' &&
        ((c == '/' && i >= 2 && text[i - 2] != ' ') || (c == '|' && starts_group)))
      out += joiner;  // "dH/dT" and "|flash" break neither after the slash nor after the bar
  }
  return out;
}

std::string unbreakable(const std::string& text) {
  std::string out;
  out.reserve(text.size() + 8);
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == ' ') out += "\u00a0";
    else out += c;
    // A line may break after a bar (even before a no-break space: "|x| = 1") or after a slash
    // inside a word ("a/b"): a word joiner stops it.
    if (i + 1 < text.size() && (c == '|' || (c == '/' && text[i + 1] != ' '))) out += "\u2060";
  }
  return out;
}

}  // namespace attn
