// Fuzz target: GPT-2's byte-level BPE (include/attn/engine/text/gpt2_bpe.hpp) on arbitrary bytes,
// with a vocabulary of the 256 bytes and a few merges (spaces, "the", emoji's first bytes).
// Checked against what the header promises, with our own UTF-8 decoder as the judge:
//   - invalid UTF-8 is refused (an InputError) by the pre-tokenizer and the encoder;
//   - the pre-tokens of valid text are non-empty and concatenate to the text;
//   - encoding never loses a byte: every id is in the vocabulary and the ids decode to the
//     text, unless a pre-token is longer than kMaxPretokenBytes, the one refusal allowed;
//   - each token's text is valid UTF-8 (U+FFFD for a split character).
#include <unicode/unistr.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "attn/engine/core/error.hpp"
#include "attn/engine/text/gpt2_bpe.hpp"
#include "fuzz_support.hpp"
#include "utf8_judge.hpp"

namespace attn::fuzz {
namespace {

// The byte-level symbol that stands for these bytes.
std::string symbol_of(std::string_view bytes) {
  static const std::array<char32_t, 256> table = gpt2_byte_to_unicode();
  icu::UnicodeString chars;
  for (const unsigned char b : bytes) chars.append(UChar32(table[b]));
  std::string symbol;
  chars.toUTF8String(symbol);
  return symbol;
}

const Gpt2Tokenizer& tokenizer() {
  static const Gpt2Tokenizer t = [] {
    Gpt2BpeTables tables;
    for (int b = 0; b < 256; ++b) tables.symbols.push_back(symbol_of(std::string(1, char(b))));
    const std::pair<const char*, const char*> merges[] = {
        {" ", "t"}, {"h", "e"}, {" t", "he"}, {"a", "a"}, {"aa", "aa"}, {"'", "t"},
        {" ", " "}, {"  ", "  "}, {"\xF0", "\x9F"}, {"\n", "\n"}};
    for (const auto& [left, right] : merges) {
      const auto id_of = [&](const std::string& bytes) {
        const std::string s = symbol_of(bytes);
        for (std::size_t i = 0; i < tables.symbols.size(); ++i)
          if (tables.symbols[i] == s) return TokenId(i);
        finding("harness: no symbol for a merge part");
      };
      const TokenId l = id_of(left), r = id_of(right);
      tables.symbols.push_back(symbol_of(std::string(left) + right));
      tables.merges.push_back({l, r, TokenId(tables.symbols.size() - 1)});
    }
    return Gpt2Tokenizer(tables);
  }();
  return t;
}

template <class F>
void check_refused(F&& run, const char* what) {
  try {
    run();
  } catch (const InputError&) {
    return;
  }
  finding(std::string(what) + " accepted invalid UTF-8");
}

void check_pretokens(std::string_view text, const std::vector<std::string>& pieces) {
  std::string joined;
  for (const std::string& p : pieces) {
    check(!p.empty(), "an empty pre-token");
    joined += p;
  }
  check(joined == text, "the pre-tokens do not put the text back together");
}

}  // namespace
}  // namespace attn::fuzz

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace attn;
  using namespace attn::fuzz;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const Gpt2Tokenizer& t = tokenizer();
  if (!decode_utf8(text)) {
    check_refused([&] { gpt2_pretokenize(text); }, "gpt2_pretokenize");
    check_refused([&] { t.encode(text); }, "encode");
    return 0;
  }
  const std::vector<std::string> pieces = gpt2_pretokenize(text);
  check_pretokens(text, pieces);
  std::size_t longest = 0;
  for (const std::string& p : pieces) longest = std::max(longest, p.size());
  std::vector<TokenId> ids;
  try {
    ids = t.encode(text);
  } catch (const InputError& e) {
    check(longest > Gpt2Tokenizer::kMaxPretokenBytes, std::string("refused valid UTF-8: ") + e.what());
    return 0;
  }
  check(longest <= Gpt2Tokenizer::kMaxPretokenBytes, "accepted a pre-token past the limit");
  for (const TokenId id : ids) {
    check(id >= 0 && std::size_t(id) < t.vocab_size(), "an id outside the vocabulary");
    check(decode_utf8(t.token_text(id)).has_value(), "a token's text is not valid UTF-8");
  }
  check(t.decode(ids) == text, "the ids do not decode to the text");
  return 0;
}
