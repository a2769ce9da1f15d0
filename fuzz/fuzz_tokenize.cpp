// Fuzz target: the ICU word tokenizer (include/attn/engine/text/tokenize.hpp) on arbitrary bytes.
// Checked against what the header promises, with a UTF-8 decoder of our own (RFC 3629's
// well-formed sequences) as the independent judge of "valid":
//   - invalid UTF-8 is refused (an InputError); valid UTF-8 with only whitespace, control or format
//     characters is refused; any other valid sentence gives tokens;
//   - each token is the sentence's own bytes at its byte_offset, in order, without overlap,
//     and what lies between tokens is whitespace (or control and format characters) only;
//   - max_tokens is honoured (one fewer than the count is refused);
//   - the same text gives the same embedding row, and every entry is finite.
#include <unicode/uchar.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "attn/engine/core/error.hpp"
#include "attn/engine/text/tokenize.hpp"
#include "fuzz_support.hpp"
#include "utf8_judge.hpp"

namespace attn::fuzz {
namespace {

// Whitespace and control characters end a word; format characters (a soft hyphen, a ZWJ) stay
// inside one (UAX #29's WB4), and only a piece of nothing else is dropped.
bool breaks_words(char32_t c) { return u_isUWhiteSpace(UChar32(c)) || u_charType(UChar32(c)) == U_CONTROL_CHAR; }

bool is_blank(char32_t c) { return breaks_words(c) || u_charType(UChar32(c)) == U_FORMAT_CHAR; }

bool all_blank(std::string_view s) {
  const auto cps = decode_utf8(s);
  if (!cps) return false;
  for (const char32_t c : *cps)
    if (!is_blank(c)) return false;
  return true;
}

void check_refused(std::string_view text, const char* why) {
  try {
    tokenize(text, std::numeric_limits<std::size_t>::max());
  } catch (const InputError&) {
    return;
  }
  finding(std::string("accepted a sentence that ") + why);
}

// The longest run of code points between word breaks: a token lies inside one run.
std::size_t longest_word_run(std::string_view s) {
  std::size_t best = 0, run = 0;
  const std::optional<std::vector<char32_t>> cps = decode_utf8(s);  // named: a range-for over *decode_utf8(s) dangles
  for (const char32_t c : *cps) best = std::max(best, run = breaks_words(c) ? 0 : run + 1);
  return best;
}

// The tokens, or nothing when tokenize refused a token longer than kMaxTokenChars (a refusal
// this text must earn: some run of non-blank characters is that long).
std::optional<std::vector<Token>> tokens_of(std::string_view text) {
  try {
    return tokenize(text, std::numeric_limits<std::size_t>::max());
  } catch (const InputError& e) {
    const bool too_long = std::string_view(e.what()).find("(at most " + std::to_string(kMaxTokenChars)) !=
                          std::string_view::npos;
    if (too_long && longest_word_run(text) > kMaxTokenChars) return std::nullopt;
    finding(std::string("refused valid UTF-8 with a word in it: ") + e.what());
  }
}

void check_tokens(std::string_view text, const std::vector<Token>& tokens) {
  std::size_t covered = 0;  // bytes up to the end of the previous token
  for (const Token& t : tokens) {
    check(!t.text.empty() && t.byte_offset >= covered && t.byte_offset + t.text.size() <= text.size(),
          "token out of order or out of the sentence: \"" + t.text + "\"");
    check(text.substr(t.byte_offset, t.text.size()) == t.text, "token is not the sentence's bytes");
    check(!all_blank(t.text), "a token of whitespace only");
    check(all_blank(text.substr(covered, t.byte_offset - covered)), "non-blank bytes dropped before \"" + t.text + "\"");
    covered = t.byte_offset + t.text.size();
  }
  check(all_blank(text.substr(covered)), "non-blank bytes dropped at the end");
}

void check_embeddings(const std::vector<Token>& tokens) {
  const Tensor2 e = embed_tokens(tokens, 3, 7);
  for (std::size_t i = 0; i < tokens.size(); ++i)
    for (std::size_t c = 0; c < 3; ++c) {
      check(std::isfinite(e(i, c)), "embedding not finite");
      check(e(i, c) == e(0, c) || tokens[i].text != tokens[0].text, "same token, different embedding");
    }
}

}  // namespace
}  // namespace attn::fuzz

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace attn::fuzz;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  if (!decode_utf8(text)) return check_refused(text, "is invalid UTF-8"), 0;
  if (all_blank(text)) return check_refused(text, "has only whitespace"), 0;
  const std::optional<std::vector<attn::Token>> refused_or_tokens = tokens_of(text);
  if (!refused_or_tokens) return 0;
  const std::vector<attn::Token>& tokens = *refused_or_tokens;
  check_tokens(text, tokens);
  if (tokens.size() > 1) {
    try {
      attn::tokenize(text, tokens.size() - 1);
      finding("max_tokens = count - 1 was not refused");
    } catch (const attn::InputError&) {
    }
  }
  check_embeddings(tokens);
  return 0;
}
