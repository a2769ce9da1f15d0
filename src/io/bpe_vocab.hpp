#pragma once
// Private to io: the vocabulary and merge list of a byte-level BPE tokenizer, as GPT-2's
// vocab.json / merges.txt and a tokenizer.json's "model" both write them.
#include <string>
#include <unordered_map>
#include <vector>

#include "attn/engine/text/gpt2_bpe.hpp"
#include "attn/io/json_io.hpp"

namespace attn::detail {

using SymbolIds = std::unordered_map<std::string, TokenId>;

// {"token": id, ...} with the ids 0..N-1, each once -> symbols[id]; `ids` gets token -> id.
// InputErrors start with `where` (a file, or "tokenizer.json: model.vocab").
std::vector<std::string> bpe_vocab_symbols(const Json& vocab, const std::string& where, SymbolIds& ids);

// One merge "left right": both tokens and their concatenation must be in the vocabulary
// (`vocab_name` says which file holds it, for the error).
BpeMerge bpe_merge(const SymbolIds& ids, const std::string& left, const std::string& right,
                   const std::string& where, const char* vocab_name);

// The merges in rank order, a repeated pair being an InputError: "<where>: the merge "<text>"
// repeats <label of the first>" (labels: "line 3", "merge 3").
class BpeMergeList {
 public:
  void add(const BpeMerge& m, const std::string& where, const std::string& label, const std::string& text);
  std::vector<BpeMerge> merges;

 private:
  std::unordered_map<std::uint64_t, std::string> first_;  // (left, right) -> where it was first
};

}  // namespace attn::detail
