#pragma once
// GPT-2's tokenizer from a Hugging Face model folder (a snapshot in ~/.cache/huggingface/hub/
// or a folder written by save_pretrained): DIR/vocab.json maps each byte-level token string to
// its id, DIR/merges.txt lists the merges in the order they were learned, one "left right"
// per line after an optional "#version" line.
#include <string>

#include "attn/engine/text/gpt2_bpe.hpp"

namespace attn {

// Limits far above GPT-2's (50,257 tokens, 50,000 merges in 456 kB); vocab.json is held to
// read_json's kMaxJsonBytes.
inline constexpr std::size_t kMaxMergesBytes = std::size_t{64} << 20;
inline constexpr std::size_t kMaxVocabTokens = 4'000'000;

// Everything wrong with the files is an InputError naming the file and the problem: a missing
// file, malformed JSON, ids that are not 0..N-1 each once, a merge line that is not two
// tokens, a merge whose tokens or result are not in vocab.json, a repeated merge, a byte
// without a token.
Gpt2Tokenizer read_gpt2_tokenizer(const std::string& dir);

// Whether DIR has vocab.json or merges.txt (one of them there but not the other, or broken, is
// read_gpt2_tokenizer's error to report): a folder of weights alone runs with token ids only.
bool has_gpt2_tokenizer_files(const std::string& dir);

}  // namespace attn
