#pragma once
// GPT-2's byte-level BPE tokenizer (Radford et al. 2019, "Language Models are Unsupervised
// Multitask Learners", section 2.2): text is cut into pre-tokens by a regular expression, each
// pre-token's UTF-8 bytes become one symbol per byte, and learned merges join adjacent symbols
// in the order they were learned (byte-pair encoding, Sennrich et al. 2016, "Neural Machine
// Translation of Rare Words with Subword Units", ACL). Every byte has a symbol, so any text
// encodes; nothing is ever "unknown".
//
// Files are read by the io layer (attn/io/gpt2_tokenizer_file.hpp); this is the algorithm.
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace attn {

using TokenId = std::int32_t;

// GPT-2's byte -> character table: bytes that are printable characters (33-126, 161-172,
// 174-255) stand for themselves; the other 68 bytes (controls, space, 127-160, 173) become
// U+0100, U+0101, ... in byte order, so that every symbol of vocab.json is printable text
// (the space byte is U+0120 'Ġ', newline U+010A 'Ċ').
std::array<char32_t, 256> gpt2_byte_to_unicode();

// GPT-2's pre-tokenizer: the contractions 's 't 're 've 'm 'll 'd, then " ?\p{L}+",
// " ?\p{N}+", " ?[^\s\p{L}\p{N}]+", "\s+(?!\S)", "\s+" (ICU's regular expressions, \s being
// Unicode's White_Space property as in OpenAI's encoder.py). The pieces, in UTF-8, concatenate
// to the text. Invalid UTF-8 is an InputError.
std::vector<std::string> gpt2_pretokenize(std::string_view utf8);

// One merge rule: the adjacent symbols left, right become result (ids of the vocabulary).
struct BpeMerge {
  TokenId left, right, result;
};

// A vocabulary: symbols[id] is the token's byte-level string (UTF-8 of its characters, e.g.
// "Ġthe"); merges in rank order (the first was learned first and is applied first).
struct Gpt2BpeTables {
  std::vector<std::string> symbols;
  std::vector<BpeMerge> merges;
};

class Gpt2Tokenizer {
 public:
  // InputError when a symbol holds a character that no byte maps to, a byte has no
  // single-character symbol, or a merge names an id outside the vocabulary.
  explicit Gpt2Tokenizer(Gpt2BpeTables tables);

  // Text -> ids. InputError on invalid UTF-8, or on a pre-token longer than
  // kMaxPretokenBytes (merging costs the square of its length).
  std::vector<TokenId> encode(std::string_view utf8) const;

  // Ids -> the bytes they stand for (not always valid UTF-8: a character may be split
  // between tokens). InputError for an id outside the vocabulary.
  std::string decode(const std::vector<TokenId>& ids) const;
  // decode() as readable text: each ill-formed UTF-8 sequence replaced by U+FFFD (JSON and
  // terminals want valid UTF-8; a generated text may end inside a character).
  std::string decode_text(const std::vector<TokenId>& ids) const;

  // One token as readable text: its bytes, each ill-formed UTF-8 sequence replaced by U+FFFD.
  std::string token_text(TokenId id) const;
  // One token as a picture or terminal shows it: its bytes, each byte of an ill-formed UTF-8
  // sequence written as \xf0, so the four byte tokens of one emoji read apart, and control
  // characters written out (printable_text.hpp; whitespace kept for visible_token_labels).
  std::string token_label(TokenId id) const;
  // token_text / token_label, or "<id N>" for an id past the vocabulary (a model may have
  // more embedding rows than its tokenizer has tokens).
  std::string text_or_id(TokenId id) const;
  std::string label_or_id(TokenId id) const;
  const std::string& symbol(TokenId id) const;
  std::size_t vocab_size() const { return symbols_.size(); }

  static constexpr std::size_t kMaxPretokenBytes = 4096;

 private:
  std::vector<TokenId> merge_pretoken(std::string_view bytes) const;
  void check_id(TokenId id) const;

  std::vector<std::string> symbols_;  // id -> byte-level string
  std::vector<std::string> bytes_;    // id -> the bytes it stands for
  std::array<TokenId, 256> byte_ids_{};
  std::vector<BpeMerge> merges_;
  std::unordered_map<std::uint64_t, std::size_t> rank_of_pair_;  // (left, right) -> rank
};

}  // namespace attn
