#include "attn/engine/text/tokenize.hpp"

#include <unicode/brkiter.h>
#include <unicode/uchar.h>
#include <unicode/unistr.h>

#include <memory>

#include "attn/engine/core/error.hpp"
#include "attn/engine/core/random.hpp"
#include "icu_text.hpp"

namespace attn {
namespace {

// A piece of only whitespace, control characters (ESC, NUL) and format characters (the
// bidirectional overrides, a zero-width space, a byte-order mark) separates tokens and is none:
// nothing a reader sees, and nothing a terminal should be handed as a token.
bool is_separator(const icu::UnicodeString& s) {
  for (int32_t i = 0; i < s.length();) {
    const UChar32 c = s.char32At(i);
    const auto type = u_charType(c);
    if (!u_isUWhiteSpace(c) && type != U_CONTROL_CHAR && type != U_FORMAT_CHAR) return false;
    i += U16_LENGTH(c);
  }
  return true;
}

}  // namespace

std::vector<Token> tokenize(std::string_view utf8, std::size_t max_tokens) {
  const icu::UnicodeString text = decode_utf8_strictly(utf8);

  UErrorCode status = U_ZERO_ERROR;
  std::unique_ptr<icu::BreakIterator> words(
      icu::BreakIterator::createWordInstance(icu::Locale::getRoot(), status));
  if (U_FAILURE(status)) {
    throw RuntimeError("ICU word break iterator unavailable: " + std::string(u_errorName(status)));
  }
  words->setText(text);

  std::vector<Token> tokens;
  std::size_t byte_offset = 0;
  int32_t start = words->first();
  for (int32_t end = words->next(); end != icu::BreakIterator::DONE;
       start = end, end = words->next()) {
    const icu::UnicodeString piece = text.tempSubStringBetween(start, end);
    std::string piece8;
    piece.toUTF8String(piece8);
    if (!is_separator(piece)) {
      if (tokens.size() == max_tokens) {
        throw InputError("sentence: more than --max-tokens = " + std::to_string(max_tokens) +
                         " tokens; shorten it or raise --max-tokens");
      }
      if (static_cast<std::size_t>(piece.countChar32()) > kMaxTokenChars) {
        throw InputError("sentence: a token of " + std::to_string(piece.countChar32()) + " characters at byte " +
                         std::to_string(byte_offset) + " (at most " + std::to_string(kMaxTokenChars) +
                         "); split it with spaces");
      }
      tokens.push_back({piece8, byte_offset});
    }
    byte_offset += piece8.size();
  }
  if (tokens.empty()) throw InputError("sentence: no tokens (empty or only whitespace)");
  return tokens;
}

Tensor2 embed_tokens(const std::vector<Token>& tokens, std::size_t dim, std::uint64_t seed) {
  Tensor2 e = Tensor2::from_shape({tokens.size(), dim});
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    Rng rng(hash_with_seed(tokens[i].text, seed));
    for (std::size_t c = 0; c < dim; ++c) e(i, c) = static_cast<float>(rng.normal());
  }
  return e;
}

std::vector<std::string> token_texts(const std::vector<Token>& tokens) {
  std::vector<std::string> texts;
  texts.reserve(tokens.size());
  for (const Token& t : tokens) texts.push_back(t.text);
  return texts;
}

}  // namespace attn
