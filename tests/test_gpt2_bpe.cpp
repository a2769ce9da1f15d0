// GPT-2's byte-level BPE (engine/gpt2_bpe.hpp) on vocabularies small enough to merge by hand.
#include <doctest/doctest.h>

#include <algorithm>
#include <set>

#include "attn/engine/core/error.hpp"
#include "attn/engine/text/gpt2_bpe.hpp"
#include "bpe_support.hpp"
#include "engine/text/icu_text.hpp"

using namespace attn;

using attn::test::TinyVocab;
using attn::test::utf8;

TEST_CASE("gpt2 byte map: 256 distinct characters, printable bytes stand for themselves") {
  const std::array<char32_t, 256> table = gpt2_byte_to_unicode();
  CHECK(std::set<char32_t>(table.begin(), table.end()).size() == 256);
  for (int b = '!'; b <= '~'; ++b) CHECK(table[b] == char32_t(b));
  for (int b = 0xA1; b <= 0xAC; ++b) CHECK(table[b] == char32_t(b));
  for (int b = 0xAE; b <= 0xFF; ++b) CHECK(table[b] == char32_t(b));
  // The other 68 bytes, in byte order, from U+0100: 0..32 are U+0100..U+0120 (space = 'Ġ'),
  // 127..160 are U+0121..U+0142, and the soft hyphen 173 is the last, U+0143 'Ń'.
  CHECK(table[0] == 0x100);
  CHECK(table['\n'] == 0x10A);  // 'Ċ', GPT-2's newline
  CHECK(table[' '] == 0x120);   // 'Ġ', GPT-2's space
  CHECK(table[0x7F] == 0x121);
  CHECK(table[0xA0] == 0x142);
  CHECK(table[0xAD] == 0x143);
  CHECK(*std::max_element(table.begin(), table.end()) == 0x143);
}

TEST_CASE("gpt2 pre-tokenizer: contractions, letters, numbers, other, whitespace runs") {
  using V = std::vector<std::string>;
  CHECK(gpt2_pretokenize(" don't") == V{" don", "'t"});
  CHECK(gpt2_pretokenize("I'll 'S") == V{"I", "'ll", " '", "S"});  // 'S: not a contraction
  CHECK(gpt2_pretokenize("2024 3.14") == V{"2024", " 3", ".", "14"});
  // \s+(?!\S): a run of spaces leaves its last space to the word after it.
  CHECK(gpt2_pretokenize("  x") == V{" ", " x"});
  CHECK(gpt2_pretokenize("x   y") == V{"x", "  ", " y"});
  CHECK(gpt2_pretokenize("x  ") == V{"x", "  "});
  CHECK(gpt2_pretokenize("a\n\nb") == V{"a", "\n", "\n", "b"});
  CHECK(gpt2_pretokenize("a\tb") == V{"a", "\t", "b"});
  CHECK(gpt2_pretokenize("我喜欢 café!") == V{"我喜欢", " café", "!"});
  CHECK(gpt2_pretokenize("").empty());
  CHECK_THROWS_WITH_AS(gpt2_pretokenize("ab\xff"), doctest::Contains("invalid UTF-8"), InputError);
}

TEST_CASE("gpt2 bpe: merges apply in rank order, not left to right") {
  // "b c" was learned before "a b": "abc" -> a + bc, and no merge joins a with bc. Merging the
  // first mergeable pair from the left would give ab + c -> abc instead.
  const TinyVocab v({{"b", "c"}, {"a", "b"}, {"ab", "c"}});
  const Gpt2Tokenizer t(v.tables);
  CHECK(t.encode("abc") == v.ids({"a", "bc"}));
  CHECK(t.encode("abd") == v.ids({"ab", "d"}));
  CHECK(t.encode("ab c") == v.ids({"ab", utf8(0x120), "c"}));  // " c": Ġ and c, no merge
}

TEST_CASE("gpt2 bpe: every occurrence of the chosen pair is joined, left to right") {
  const TinyVocab v({{"a", "a"}, {"aa", "aa"}});
  const Gpt2Tokenizer t(v.tables);
  CHECK(t.encode("aaa") == v.ids({"aa", "a"}));
  CHECK(t.encode("aaaa") == v.ids({"aaaa"}));
  CHECK(t.encode("aaaaa") == v.ids({"aaaa", "a"}));
}

TEST_CASE("gpt2 bpe: decoding gives back the bytes, a split character reads as U+FFFD") {
  const TinyVocab v({{"c", "a"}, {"ca", "f"}});
  const Gpt2Tokenizer t(v.tables);
  for (const std::string text : {"café 😀", "  tabs\tand\nnewlines  ", "👨‍👩‍👧", ""}) {
    CAPTURE(text);
    CHECK(t.decode(t.encode(text)) == text);
  }
  const std::vector<TokenId> emoji = t.encode("😀");
  REQUIRE(emoji.size() == 4);  // one token per byte: no merges for it
  CHECK(t.token_text(emoji[0]) == "\xEF\xBF\xBD");
  CHECK(t.token_text(v.id("caf")) == "caf");
  // Labels keep the bytes apart: \xf0 \x9f \x98 \x80, where every text reads U+FFFD.
  const char* bytes[] = {"\\xf0", "\\x9f", "\\x98", "\\x80"};
  for (std::size_t i = 0; i < 4; ++i) CHECK(t.token_label(emoji[i]) == bytes[i]);
  CHECK(t.token_label(v.id("caf")) == "caf");
  CHECK(t.label_or_id(TokenId(v.tables.symbols.size())) == "<id " + std::to_string(v.tables.symbols.size()) + ">");
  CHECK(t.symbol(v.id(utf8(0x120))) == "Ġ");
  CHECK_THROWS_WITH_AS(t.decode({0, TokenId(v.tables.symbols.size())}), doctest::Contains("outside"), InputError);
}

TEST_CASE("gpt2 bpe: a vocabulary that cannot spell every byte is refused") {
  TinyVocab missing({});
  missing.tables.symbols[65] = "AA";
  CHECK_THROWS_WITH_AS(Gpt2Tokenizer(missing.tables), doctest::Contains("no token for byte 0x41"), InputError);
  TinyVocab spaced({});
  spaced.tables.symbols.push_back("a b");  // a raw space is not a byte-level character
  CHECK_THROWS_WITH_AS(Gpt2Tokenizer(spaced.tables), doctest::Contains("holds U+0020"), InputError);
  TinyVocab bad_merge({{"a", "b"}});
  bad_merge.tables.merges[0].result = 100000;
  CHECK_THROWS_WITH_AS(Gpt2Tokenizer(bad_merge.tables), doctest::Contains("outside the vocabulary"), InputError);
}

TEST_CASE("gpt2 bpe: a pre-token past the limit is refused, not merged for minutes") {
  const TinyVocab v({{"a", "a"}});
  const Gpt2Tokenizer t(v.tables);
  CHECK(t.encode(std::string(Gpt2Tokenizer::kMaxPretokenBytes, 'a')).size() == Gpt2Tokenizer::kMaxPretokenBytes / 2);
  CHECK_THROWS_WITH_AS(t.encode("x " + std::string(Gpt2Tokenizer::kMaxPretokenBytes + 1, 'a')),
                       doctest::Contains("without a break at byte 1"), InputError);
}
