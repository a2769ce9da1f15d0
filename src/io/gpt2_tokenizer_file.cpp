#include "attn/io/gpt2_tokenizer_file.hpp"

#include <filesystem>
#include <unordered_map>

#include "attn/engine/core/error.hpp"
#include "attn/io/file_io.hpp"
#include "attn/io/json_io.hpp"

namespace attn {
namespace {

using SymbolIds = std::unordered_map<std::string, TokenId>;

std::string existing_file(const std::string& dir, const char* name) {
  const std::string path = model_file(dir, name);
  std::error_code ec;  // a link loop is no folder either
  if (!std::filesystem::is_directory(dir, ec)) throw InputError(dir + ": no such folder");
  if (!std::filesystem::is_regular_file(path, ec)) {
    if (std::filesystem::is_regular_file(std::filesystem::path(dir) / "tokenizer.json", ec))
      throw InputError(path + ": missing; the folder's tokenizer.json (Hugging Face's tokenizers format) is not read "
                       "yet: give token ids instead (forward --tokens, generate --prompt-ids)");
    throw InputError(path + ": missing (a GPT-2 tokenizer folder has vocab.json and merges.txt)");
  }
  return path;
}

// vocab.json: {"token": id, ...} with the ids 0..N-1, each once.
std::vector<std::string> read_vocab(const std::string& path, SymbolIds& ids) {
  const Json vocab = read_json(path);
  if (!vocab.is_object()) throw InputError(path + ": expected a JSON object {\"token\": id, ...}");
  if (vocab.empty() || vocab.size() > kMaxVocabTokens)
    throw InputError(path + ": " + std::to_string(vocab.size()) + " tokens (expected 1.." +
                     std::to_string(kMaxVocabTokens) + ")");
  std::vector<std::string> symbols(vocab.size());
  ids.reserve(vocab.size());
  for (const auto& [symbol, id] : vocab.items()) {
    if (symbol.empty()) throw InputError(path + ": an empty token \"\" (id " + id.dump() + ")");
    if (!id.is_number_integer() || id.get<std::int64_t>() < 0 || id.get<std::int64_t>() >= std::int64_t(vocab.size()))
      throw InputError(path + ": the id of \"" + symbol + "\" is " + id.dump() + ", expected an integer in 0.." +
                       std::to_string(vocab.size() - 1) + " (the ids number the tokens from 0)");
    std::string& slot = symbols[id.get<std::size_t>()];
    if (!slot.empty())
      throw InputError(path + ": id " + id.dump() + " is given to both \"" + slot + "\" and \"" + symbol + "\"");
    slot = symbol;
    ids.emplace(symbol, id.get<TokenId>());
  }
  return symbols;
}

TokenId id_in_vocab(const SymbolIds& ids, const std::string& symbol, const std::string& where, const char* what) {
  const auto it = ids.find(symbol);
  if (it == ids.end()) throw InputError(where + ": " + what + " \"" + symbol + "\" is not in vocab.json");
  return it->second;
}

// merges.txt: an optional "#version: ..." first line, then "left right" per line, in rank order.
std::vector<BpeMerge> read_merges(const std::string& path, const SymbolIds& ids) {
  const std::string text = read_input(path, kMaxMergesBytes);
  std::vector<BpeMerge> merges;
  std::unordered_map<std::uint64_t, std::size_t> first_line;  // (left, right) -> its line
  std::size_t line_no = 0;
  for (std::size_t at = 0; at < text.size();) {
    const std::size_t end = std::min(text.find('\n', at), text.size());
    std::string line = text.substr(at, end - at);
    at = end + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line_no == 1 && line.rfind("#version", 0) == 0) continue;
    const std::string where = path + ": line " + std::to_string(line_no);
    const std::size_t space = line.find(' ');
    if (space == std::string::npos || space == 0 || space + 1 == line.size() ||
        line.find_first_of(" \t", space + 1) != std::string::npos)
      throw InputError(where + ": expected two tokens separated by one space, got \"" + line + "\"");
    const std::string left = line.substr(0, space), right = line.substr(space + 1);
    const BpeMerge m{id_in_vocab(ids, left, where, "token"), id_in_vocab(ids, right, where, "token"),
                     id_in_vocab(ids, left + right, where, "the merged token")};
    const std::uint64_t pair = (std::uint64_t(std::uint32_t(m.left)) << 32) | std::uint32_t(m.right);
    if (const auto [it, fresh] = first_line.try_emplace(pair, line_no); !fresh)
      throw InputError(where + ": the merge \"" + line + "\" repeats line " + std::to_string(it->second));
    merges.push_back(m);
  }
  return merges;
}

}  // namespace

bool has_gpt2_tokenizer_files(const std::string& dir) {
  std::error_code ec;
  return std::filesystem::exists(std::filesystem::symlink_status(dir + "/vocab.json", ec)) ||
         std::filesystem::exists(std::filesystem::symlink_status(dir + "/merges.txt", ec));
}

Gpt2Tokenizer read_gpt2_tokenizer(const std::string& dir) {
  const std::string vocab_path = existing_file(dir, "vocab.json");
  const std::string merges_path = existing_file(dir, "merges.txt");
  SymbolIds ids;
  Gpt2BpeTables tables;
  tables.symbols = read_vocab(vocab_path, ids);
  tables.merges = read_merges(merges_path, ids);
  try {
    return Gpt2Tokenizer(std::move(tables));
  } catch (const InputError& e) {
    // What the tables can still get wrong is about the tokens themselves: vocab.json's.
    throw InputError(vocab_path + ": " + e.what());
  }
}

}  // namespace attn
