#include <doctest/doctest.h>

#include "attn/engine/core/error.hpp"
#include "attn/engine/text/tokenize.hpp"

using namespace attn;

TEST_CASE("tokenize: words, whitespace dropped, punctuation kept") {
  const auto t = token_texts(tokenize("  The cat sat on the mat.\n"));
  CHECK(t == std::vector<std::string>{"The", "cat", "sat", "on", "the", "mat", "."});
  const auto c = token_texts(tokenize("Hello, world!"));
  CHECK(c == std::vector<std::string>{"Hello", ",", "world", "!"});
}

TEST_CASE("tokenize: control and format characters alone separate, as whitespace does") {
  // ESC, NUL, a right-to-left override, a zero-width space, a byte-order mark: nothing to read,
  // and nothing a terminal should be handed as a token.
  const auto t = token_texts(tokenize(std::string("\xEF\xBB\xBF" "cat \x1b sat \u202e on\u200b \0 mat", 28)));
  CHECK(t == std::vector<std::string>{"cat", "sat", "on", "mat"});
  // An emoji joined by ZWJ (also a format character) stays one token.
  CHECK(token_texts(tokenize("👩\u200d💻 codes")) == std::vector<std::string>{"👩\u200d💻", "codes"});
}

TEST_CASE("tokenize: byte offsets point into the sentence") {
  const std::string s = "我 喜欢 cats";
  for (const Token& t : tokenize(s)) CHECK(s.substr(t.byte_offset, t.text.size()) == t.text);
}

TEST_CASE("tokenize: Chinese is segmented into words by ICU's dictionary") {
  const auto t = token_texts(tokenize("我喜欢深度学习"));
  CHECK(t == std::vector<std::string>{"我", "喜欢", "深度", "学习"});
}

TEST_CASE("tokenize: invalid UTF-8 is an input error") {
  CHECK_THROWS_WITH_AS(tokenize("abc\xff"), doctest::Contains("invalid UTF-8"), InputError);
  CHECK_THROWS_AS(tokenize("\xc3"), InputError);               // truncated sequence
  CHECK_THROWS_AS(tokenize("\xed\xa0\x80"), InputError);       // encoded surrogate
  CHECK_THROWS_AS(tokenize("\xc0\xaf"), InputError);           // overlong '/'
}

TEST_CASE("tokenize: limits and empty input") {
  CHECK_THROWS_WITH_AS(tokenize("a b c d", 3), doctest::Contains("--max-tokens = 3"), InputError);
  CHECK(tokenize("a b c", 3).size() == 3);
  CHECK_THROWS_AS(tokenize("   "), InputError);
  CHECK_THROWS_AS(tokenize(""), InputError);
  // A pasted blob without spaces: refused at once, not laid out in tables and pictures.
  CHECK(tokenize(std::string(kMaxTokenChars, 'a')).size() == 1);
  CHECK_THROWS_WITH_AS(tokenize("ok " + std::string(kMaxTokenChars + 1, 'a')),
                       doctest::Contains("a token of 201 characters at byte 3"), InputError);
  // Characters, not bytes: 200 letters é (400 bytes of UTF-8) are within the limit.
  std::string han;
  for (std::size_t i = 0; i < kMaxTokenChars; ++i) han += "\u00e9";
  CHECK(tokenize(han).size() == 1);
}

TEST_CASE("embed_tokens: deterministic in (seed, text): a repeated word gets the same vector") {
  const auto tokens = tokenize("the cat saw the dog");
  const Tensor2 e = embed_tokens(tokens, 16, 42);
  CHECK(xt::view(e, 0, xt::all()) == xt::view(e, 3, xt::all()));
  CHECK(xt::view(e, 0, xt::all()) != xt::view(e, 1, xt::all()));
  CHECK(embed_tokens(tokens, 16, 42) == e);
  CHECK(embed_tokens(tokens, 16, 43) != e);
  // N(0, 1) entries: mean near 0, variance near 1 over many draws.
  const Tensor2 big = embed_tokens(tokenize("one two three four five six seven eight"), 512, 1);
  CHECK(std::abs(xt::mean(big)()) < 0.05);
  CHECK(xt::variance(big)() == doctest::Approx(1.0).epsilon(0.06));
}
