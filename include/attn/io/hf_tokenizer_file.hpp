#pragma once
// A Hugging Face tokenizer.json (the `tokenizers` library's serialization, which Llama 3,
// Qwen2, SmolLM and GPT-2 folders ship) read into the byte-level BPE pipeline of
// attn/engine/text/hf_tokenizer.hpp, and the choice between it and GPT-2's vocab.json +
// merges.txt for a model folder.
#include <memory>
#include <string>

#include "attn/engine/text/hf_tokenizer.hpp"

namespace attn {

// DIR/tokenizer.json. What it may hold: model BPE (vocab, merges as "a b" strings or [a, b]
// pairs, ignore_merges); normalizer null, NFC, NFD, NFKC, NFKD or a Sequence of one of them;
// pre_tokenizer ByteLevel, Split (Regex or String pattern, behavior Isolated, not inverted),
// Digits, or a Sequence of them, with a ByteLevel step somewhere; added_tokens; post_processor
// null, ByteLevel, TemplateProcessing, RobertaProcessing, BertProcessing or a Sequence of them.
// Anything else -- another model type (WordPiece, Unigram), SentencePiece-style BPE with
// byte_fallback (Llama 2, Mistral 7B v0.1), a normalizer or pre-tokenizer not listed -- is an
// InputError naming the file, the field and what was found; so is a missing or malformed file.
HfTokenizer read_hf_tokenizer(const std::string& dir);

// The folder's tokenizer: tokenizer.json when it has one (a GPT-2 folder's describes the same
// pipeline as its vocab.json and merges.txt), else vocab.json + merges.txt. InputError when it
// has neither, naming a SentencePiece tokenizer.model if that is what it has.
std::unique_ptr<SubwordTokenizer> read_folder_tokenizer(const std::string& dir);

// Whether DIR has tokenizer.json, vocab.json or merges.txt: a folder of weights alone runs
// with token ids only.
bool has_tokenizer_files(const std::string& dir);

}  // namespace attn
