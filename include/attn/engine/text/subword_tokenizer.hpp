#pragma once
// What every learned (subword) tokenizer offers the commands that show a model's tokens:
// GPT-2's vocab.json + merges.txt (gpt2_bpe.hpp) and a Hugging Face tokenizer.json
// (hf_tokenizer.hpp) behind one face, so `tokenize`, `forward` and `generate` need not know
// which file a folder holds.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace attn {

using TokenId = std::int32_t;

class SubwordTokenizer {
 public:
  virtual ~SubwordTokenizer() = default;

  // Text -> ids, as the tokenizer's own library would give them with its defaults (for a
  // tokenizer.json: special tokens split out and its post-processor's BOS/EOS added).
  // InputError on invalid UTF-8 or a run of text too long to merge.
  virtual std::vector<TokenId> encode(std::string_view utf8) const = 0;

  // Ids -> the bytes they stand for (not always valid UTF-8: a character may be split between
  // tokens). InputError for an id that is no token.
  virtual std::string decode(const std::vector<TokenId>& ids) const = 0;
  // decode() as readable text: each ill-formed UTF-8 sequence replaced by U+FFFD.
  std::string decode_text(const std::vector<TokenId>& ids) const;

  // One token as readable text (ill-formed UTF-8 replaced by U+FFFD), and as a picture or a
  // terminal shows it (each byte of an ill-formed sequence written as \xf0, controls written
  // out, whitespace kept). InputError for an id that is no token.
  virtual std::string token_text(TokenId id) const = 0;
  virtual std::string token_label(TokenId id) const = 0;
  // Whether id names a token (a model may have more embedding rows than its tokenizer has
  // tokens, and a tokenizer.json may leave ids unused).
  virtual bool has_token(TokenId id) const = 0;
  // One past the largest id.
  virtual std::size_t vocab_size() const = 0;

  // token_text / token_label, or "<id N>" for an id that is no token.
  std::string text_or_id(TokenId id) const;
  std::string label_or_id(TokenId id) const;
};

}  // namespace attn
