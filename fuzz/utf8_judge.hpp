#pragma once
// A UTF-8 decoder of the fuzz targets' own (RFC 3629's well-formed sequences): the independent
// judge of "valid UTF-8" for the tokenizers, which use ICU.
#include <optional>
#include <string_view>
#include <vector>

namespace attn::fuzz {

// Code points of well-formed UTF-8 (RFC 3629 section 4), or nothing.
inline std::optional<std::vector<char32_t>> decode_utf8(std::string_view s) {
  std::vector<char32_t> out;
  for (std::size_t i = 0; i < s.size();) {
    const unsigned char b = s[i];
    const int extra = b < 0x80 ? 0 : (b & 0xe0) == 0xc0 ? 1 : (b & 0xf0) == 0xe0 ? 2 : (b & 0xf8) == 0xf0 ? 3 : -1;
    if (extra < 0 || i + extra >= s.size()) return std::nullopt;  // unknown lead byte, truncated
    char32_t c = extra == 0 ? b : b & (0x3f >> extra);
    for (int k = 1; k <= extra; ++k) {
      const unsigned char t = s[i + k];
      if ((t & 0xc0) != 0x80) return std::nullopt;
      c = (c << 6) | (t & 0x3f);
    }
    static constexpr char32_t kSmallest[] = {0, 0x80, 0x800, 0x10000};
    if (c < kSmallest[extra] || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff)) return std::nullopt;
    out.push_back(c);
    i += extra + 1;
  }
  return out;
}

}  // namespace attn::fuzz
