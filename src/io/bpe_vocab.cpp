#include "bpe_vocab.hpp"

#include "attn/engine/core/error.hpp"
#include "attn/io/gpt2_tokenizer_file.hpp"

namespace attn::detail {

std::vector<std::string> bpe_vocab_symbols(const Json& vocab, const std::string& where, SymbolIds& ids) {
  if (!vocab.is_object()) throw InputError(where + ": expected a JSON object {\"token\": id, ...}");
  if (vocab.empty() || vocab.size() > kMaxVocabTokens)
    throw InputError(where + ": " + std::to_string(vocab.size()) + " tokens (expected 1.." +
                     std::to_string(kMaxVocabTokens) + ")");
  std::vector<std::string> symbols(vocab.size());
  ids.reserve(vocab.size());
  for (const auto& [symbol, id] : vocab.items()) {
    if (symbol.empty()) throw InputError(where + ": an empty token \"\" (id " + id.dump() + ")");
    if (!id.is_number_integer() || id.get<std::int64_t>() < 0 || id.get<std::int64_t>() >= std::int64_t(vocab.size()))
      throw InputError(where + ": the id of \"" + symbol + "\" is " + id.dump() + ", expected an integer in 0.." +
                       std::to_string(vocab.size() - 1) + " (the ids number the tokens from 0)");
    std::string& slot = symbols[id.get<std::size_t>()];
    if (!slot.empty())
      throw InputError(where + ": id " + id.dump() + " is given to both \"" + slot + "\" and \"" + symbol + "\"");
    slot = symbol;
    ids.emplace(symbol, id.get<TokenId>());
  }
  return symbols;
}

namespace {

TokenId id_in_vocab(const SymbolIds& ids, const std::string& symbol, const std::string& where, const char* what,
                    const char* vocab_name) {
  const auto it = ids.find(symbol);
  if (it == ids.end()) throw InputError(where + ": " + what + " \"" + symbol + "\" is not in " + vocab_name);
  return it->second;
}

}  // namespace

BpeMerge bpe_merge(const SymbolIds& ids, const std::string& left, const std::string& right, const std::string& where,
                   const char* vocab_name) {
  return {id_in_vocab(ids, left, where, "token", vocab_name), id_in_vocab(ids, right, where, "token", vocab_name),
          id_in_vocab(ids, left + right, where, "the merged token", vocab_name)};
}

void BpeMergeList::add(const BpeMerge& m, const std::string& where, const std::string& label, const std::string& text) {
  const std::uint64_t pair = (std::uint64_t(std::uint32_t(m.left)) << 32) | std::uint32_t(m.right);
  if (const auto [it, fresh] = first_.try_emplace(pair, label); !fresh)
    throw InputError(where + ": the merge \"" + text + "\" repeats " + it->second);
  merges.push_back(m);
}

}  // namespace attn::detail
