#include "icu_text.hpp"

#include <unicode/utf8.h>
#include <unicode/ustring.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>

#include "attn/engine/core/error.hpp"
#include "attn/engine/text/printable_text.hpp"

namespace attn {

// u_strFromUTF8 without a substitution character fails on any ill-formed sequence, which is
// what we want to report.
icu::UnicodeString decode_utf8_strictly(std::string_view utf8) {
  if (utf8.size() > static_cast<std::size_t>(INT32_MAX / 2)) {
    throw InputError("sentence: too long (" + std::to_string(utf8.size()) + " bytes)");
  }
  UErrorCode status = U_ZERO_ERROR;
  int32_t length16 = 0;
  u_strFromUTF8(nullptr, 0, &length16, utf8.data(), static_cast<int32_t>(utf8.size()), &status);
  if (status != U_BUFFER_OVERFLOW_ERROR && U_FAILURE(status)) {
    throw InputError("sentence: invalid UTF-8 (" + std::string(u_errorName(status)) + ")");
  }
  icu::UnicodeString text;
  status = U_ZERO_ERROR;
  UChar* buffer = text.getBuffer(length16);
  u_strFromUTF8(buffer, length16, nullptr, utf8.data(), static_cast<int32_t>(utf8.size()),
                &status);
  text.releaseBuffer(length16);
  if (U_FAILURE(status)) {
    throw InputError("sentence: invalid UTF-8 (" + std::string(u_errorName(status)) + ")");
  }
  return text;
}

std::string utf8_with_replacement(std::string_view bytes) {
  // fromUTF8 substitutes U+FFFD for every ill-formed sequence; a token is a few bytes long.
  std::string out;
  icu::UnicodeString::fromUTF8(icu::StringPiece(bytes.data(), static_cast<int32_t>(bytes.size())))
      .toUTF8String(out);
  return out;
}

std::string printable_text(std::string_view text, Whitespace whitespace) {
  std::string out;
  out.reserve(text.size());
  const auto* s = reinterpret_cast<const uint8_t*>(text.data());
  const auto length = static_cast<int32_t>(std::min<std::size_t>(text.size(), INT32_MAX));
  int32_t i = 0;
  char hex[16];
  while (i < length) {
    const int32_t start = i;
    UChar32 c = 0;
    U8_NEXT(s, i, length, c);  // c < 0: an ill-formed sequence, i past its maximal subpart
    if (c < 0) {
      for (int32_t k = start; k < i; ++k) {
        std::snprintf(hex, sizeof hex, "\\x%02x", unsigned(s[k]));
        out += hex;
      }
    } else if ((c == '\n' || c == '\t' || c == '\r') && whitespace == Whitespace::keep) {
      out += char(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c < 0x20 || c == 0x7f) {
      std::snprintf(hex, sizeof hex, "\\x%02x", unsigned(c));
      out += hex;
    } else if ((c >= 0x80 && c <= 0x9f) || (c >= 0x202a && c <= 0x202e) || (c >= 0x2066 && c <= 0x2069)) {
      std::snprintf(hex, sizeof hex, "\\u%04x", unsigned(c));
      out += hex;
    } else {
      out.append(text.substr(static_cast<std::size_t>(start), static_cast<std::size_t>(i - start)));
    }
  }
  return out;
}

}  // namespace attn
