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
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "attn/engine/text/subword_tokenizer.hpp"

namespace attn {

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

class Gpt2Tokenizer : public SubwordTokenizer {
 public:
  // InputError when a symbol holds a character that no byte maps to, a byte has no
  // single-character symbol, or a merge names an id outside the vocabulary.
  explicit Gpt2Tokenizer(Gpt2BpeTables tables);

  // Text -> ids: GPT-2's pre-tokenizer, then merge_bytes on each piece. InputError on invalid
  // UTF-8, or on a pre-token longer than kMaxPretokenBytes (merging costs the square of its
  // length).
  std::vector<TokenId> encode(std::string_view utf8) const override;
  // The byte-pair encoding of one pre-token's bytes (any pre-tokenizer's: tokenizer.json's
  // pipeline uses it too). InputError past kMaxPretokenBytes.
  std::vector<TokenId> merge_bytes(std::string_view bytes) const;
  // The token that stands for exactly these bytes, if there is one.
  std::optional<TokenId> token_of_bytes(std::string_view bytes) const;

  std::string decode(const std::vector<TokenId>& ids) const override;
  std::string token_text(TokenId id) const override;
  // Each byte of an ill-formed UTF-8 sequence written as \xf0, so the four byte tokens of one
  // emoji read apart, and control characters written out (printable_text.hpp; whitespace kept
  // for visible_token_labels).
  std::string token_label(TokenId id) const override;
  bool has_token(TokenId id) const override { return id >= 0 && std::size_t(id) < symbols_.size(); }
  std::size_t vocab_size() const override { return symbols_.size(); }
  const std::string& symbol(TokenId id) const;

  static constexpr std::size_t kMaxPretokenBytes = 4096;

 private:
  std::vector<TokenId> merge_pretoken(std::string_view bytes) const;
  void check_id(TokenId id) const;

  std::vector<std::string> symbols_;  // id -> byte-level string
  std::vector<std::string> bytes_;    // id -> the bytes it stands for
  std::array<TokenId, 256> byte_ids_{};
  std::vector<BpeMerge> merges_;
  std::unordered_map<std::uint64_t, std::size_t> rank_of_pair_;  // (left, right) -> rank
  std::unordered_map<std::string, TokenId> id_of_bytes_;
};

}  // namespace attn
