#pragma once
// UTF-8 <-> ICU's UTF-16 strings, shared by the two tokenizers (private to the engine).
#include <string>
#include <string_view>

#include <unicode/unistr.h>

namespace attn {

// Strict UTF-8 -> UTF-16: any ill-formed sequence (overlongs, surrogates, truncation) and a
// text of more than INT32_MAX / 2 bytes are an InputError about the sentence.
icu::UnicodeString decode_utf8_strictly(std::string_view utf8);

// Bytes -> valid UTF-8: each ill-formed sequence becomes U+FFFD (as Python's
// bytes.decode("utf-8", errors="replace") does), valid text is returned unchanged.
std::string utf8_with_replacement(std::string_view bytes);

}  // namespace attn
