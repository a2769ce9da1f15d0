#include "attn/io/gpt2_tokenizer_file.hpp"

#include <filesystem>
#include <unordered_map>

#include "attn/engine/core/error.hpp"
#include "attn/io/file_io.hpp"
#include "attn/io/json_io.hpp"
#include "bpe_vocab.hpp"

namespace attn {
namespace {

using detail::SymbolIds;

std::string existing_file(const std::string& dir, const char* name) {
  const std::string path = model_file(dir, name);
  std::error_code ec;  // a link loop is no folder either
  if (!std::filesystem::is_directory(dir, ec)) throw InputError(dir + ": no such folder");
  if (!std::filesystem::is_regular_file(path, ec)) {
    if (std::filesystem::is_regular_file(std::filesystem::path(dir) / "tokenizer.json", ec))
      throw InputError(path + ": missing; demo and report read a GPT-2 folder's vocab.json and merges.txt "
                       "(tokenize, forward and generate read its tokenizer.json)");
    throw InputError(path + ": missing (a GPT-2 tokenizer folder has vocab.json and merges.txt)");
  }
  return path;
}

// merges.txt: an optional "#version: ..." first line, then "left right" per line, in rank order.
std::vector<BpeMerge> read_merges(const std::string& path, const SymbolIds& ids) {
  const std::string text = read_input(path, kMaxMergesBytes);
  detail::BpeMergeList list;
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
    list.add(detail::bpe_merge(ids, line.substr(0, space), line.substr(space + 1), where, "vocab.json"), where,
             "line " + std::to_string(line_no), line);
  }
  return std::move(list.merges);
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
  tables.symbols = detail::bpe_vocab_symbols(read_json(vocab_path), vocab_path, ids);
  tables.merges = read_merges(merges_path, ids);
  try {
    return Gpt2Tokenizer(std::move(tables));
  } catch (const InputError& e) {
    // What the tables can still get wrong is about the tokens themselves: vocab.json's.
    throw InputError(vocab_path + ": " + e.what());
  }
}

}  // namespace attn
