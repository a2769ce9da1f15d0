#pragma once
// The byte-level BPE pipeline of Hugging Face's `tokenizers` library, as the tokenizer.json of
// Llama 3, Qwen2, SmolLM and GPT-2 describe it (https://huggingface.co/docs/tokenizers/pipeline):
//
//   1. added tokens ("<|begin_of_text|>", "<|im_start|>") are cut out of the text first,
//      leftmost-longest, and become their own ids;
//   2. the normalizer rewrites the rest (Qwen2: Unicode NFC);
//   3. the pre-tokenizer cuts it into pieces, step by step: Split (a regular expression whose
//      matches and the text between them are pieces: Llama 3's "\p{N}{1,3}" keeps at most three
//      digits together), Digits (each digit its own piece: SmolLM), ByteLevel (GPT-2's regex,
//      then each byte becomes one of GPT-2's 256 byte characters);
//   4. the BPE model merges each piece (gpt2_bpe.hpp); with `ignore_merges` (Llama 3) a piece
//      that is itself in the vocabulary is taken whole;
//   5. the post-processor adds its template's tokens (Llama 3's BOS).
//
// Files are read by the io layer (attn/io/hf_tokenizer_file.hpp); this is the algorithm.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "attn/engine/text/gpt2_bpe.hpp"
#include "attn/engine/text/subword_tokenizer.hpp"

namespace attn {

struct HfAddedToken {
  TokenId id = 0;
  std::string content;   // matched exactly in the text
  bool lstrip = false;   // the match also takes the whitespace before it
  bool rstrip = false;   // ... and after it
  bool special = false;  // a control token (BOS, EOS, chat roles), not text
};

enum class HfNormalization { none, nfc, nfd, nfkc, nfkd };

struct HfPreTokenStep {
  enum class Kind { split, digits, byte_level } kind = Kind::byte_level;
  // split: an ICU regular expression (translated from tokenizers' Oniguruma syntax by
  // hf_regex_to_icu); matches and the text between them are pieces ("Isolated").
  std::string pattern;
  bool individual_digits = false;  // digits: each digit alone, else each run of digits
  bool add_prefix_space = false;   // byte_level: a space before each piece not starting with one
  bool use_regex = true;           // byte_level: cut with GPT-2's pattern first
};

struct HfTokenizerSpec {
  Gpt2BpeTables bpe;  // model.vocab (ids 0..N-1) and model.merges, byte-level strings
  bool ignore_merges = false;
  HfNormalization normalization = HfNormalization::none;
  std::vector<HfPreTokenStep> pre_tokenizer;
  std::vector<HfAddedToken> added;
  std::vector<TokenId> prefix, suffix;  // the post-processor's template around the text's ids
};

// tokenizers' regular expressions are Oniguruma's, whose \s and \S mean Unicode White_Space;
// ICU's \s leaves out U+000B and U+0085. Returns the pattern with every unescaped \s, \S
// written as \p{White_Space}, \P{White_Space}; everything else is the same in both.
std::string hf_regex_to_icu(std::string_view oniguruma);

class HfTokenizer : public SubwordTokenizer {
 public:
  // InputError for a vocabulary gpt2_bpe.hpp refuses, a Split pattern ICU cannot compile, an
  // added token that is empty or whose id is negative or given twice with different text.
  explicit HfTokenizer(HfTokenizerSpec spec);
  ~HfTokenizer() override;
  HfTokenizer(HfTokenizer&&) noexcept;

  std::vector<TokenId> encode(std::string_view utf8) const override;
  // Without the post-processor's template (no BOS): the ids of the text alone.
  std::vector<TokenId> encode_text(std::string_view utf8) const;
  // The pieces the normalizer and pre-tokenizer cut a text without added tokens into, in UTF-8
  // (before the byte-level mapping): what the BPE model is given, one piece at a time.
  std::vector<std::string> pre_tokenize(std::string_view utf8) const;

  std::string decode(const std::vector<TokenId>& ids) const override;
  std::string token_text(TokenId id) const override;
  std::string token_label(TokenId id) const override;
  bool has_token(TokenId id) const override;
  std::size_t vocab_size() const override { return vocab_size_; }
  // The added token with this id, or null.
  const HfAddedToken* added_token(TokenId id) const;

 private:
  struct Compiled;
  void encode_piece(std::string_view piece, std::vector<TokenId>& ids) const;
  void encode_between_added(std::string_view text, std::vector<TokenId>& ids) const;

  Gpt2Tokenizer bpe_;
  HfTokenizerSpec spec_;  // bpe moved out
  std::unique_ptr<Compiled> compiled_;  // ICU patterns of the Split steps
  std::size_t vocab_size_ = 0;
};

}  // namespace attn
