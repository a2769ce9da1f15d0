#pragma once
// Sentence -> tokens with ICU's word BreakIterator (Unicode UAX #29 word boundaries, plus
// ICU's dictionary segmentation for scripts written without spaces: 我喜欢深度学习 ->
// 我 / 喜欢 / 深度 / 学习). Whitespace is dropped, and so are pieces of only control or format
// characters (ESC, a bidi override, a zero-width space); punctuation is kept as tokens of its own.
//
// There is no learned vocabulary: each token's embedding is drawn from a generator seeded by
// (seed, token text), so the same word always gets the same vector.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "attn/engine/core/tensor.hpp"

namespace attn {

struct Token {
  std::string text;          // UTF-8
  std::size_t byte_offset;   // where it starts in the sentence
};

inline constexpr std::size_t kDefaultMaxTokens = 512;
// Every token labels a row of a table and an axis of a picture; a longer "word" (a pasted
// blob without spaces) is refused rather than laid out for seconds.
inline constexpr std::size_t kMaxTokenChars = 200;

// Throws InputError on invalid UTF-8, an empty sentence, more than max_tokens tokens, or a
// token of more than kMaxTokenChars characters.
std::vector<Token> tokenize(std::string_view utf8, std::size_t max_tokens = kDefaultMaxTokens);

// Embeddings [L, dim] with N(0, 1) entries, deterministic in (seed, token text).
Tensor2 embed_tokens(const std::vector<Token>& tokens, std::size_t dim, std::uint64_t seed);

std::vector<std::string> token_texts(const std::vector<Token>& tokens);

}  // namespace attn
