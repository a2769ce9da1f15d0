#pragma once
// Byte-level BPE vocabularies small enough to merge by hand (test_gpt2_bpe.cpp,
// test_hf_tokenizer.cpp).
#include <doctest/doctest.h>

#include <algorithm>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "attn/engine/text/gpt2_bpe.hpp"

namespace attn::test {

// UTF-8 of one code point below U+10000 (test-side, independent of ICU).
inline std::string utf8(char32_t c) {
  std::string s;
  if (c < 0x80) {
    s += char(c);
  } else if (c < 0x800) {
    s += char(0xC0 | (c >> 6));
    s += char(0x80 | (c & 0x3F));
  } else {
    s += char(0xE0 | (c >> 12));
    s += char(0x80 | ((c >> 6) & 0x3F));
    s += char(0x80 | (c & 0x3F));
  }
  return s;
}

// The 256 byte symbols (id = byte) plus one token per merge, each merge given as symbols.
struct TinyVocab {
  Gpt2BpeTables tables;
  TinyVocab(std::initializer_list<std::pair<std::string, std::string>> merges) {
    for (char32_t c : gpt2_byte_to_unicode()) tables.symbols.push_back(utf8(c));
    for (const auto& [left, right] : merges) {
      tables.symbols.push_back(left + right);
      tables.merges.push_back({id(left), id(right), id(left + right)});
    }
  }
  TokenId id(const std::string& symbol) const {
    const auto it = std::find(tables.symbols.begin(), tables.symbols.end(), symbol);
    REQUIRE(it != tables.symbols.end());
    return TokenId(it - tables.symbols.begin());
  }
  std::vector<TokenId> ids(std::initializer_list<std::string> symbols) const {
    std::vector<TokenId> out;
    for (const std::string& s : symbols) out.push_back(id(s));
    return out;
  }
};

}  // namespace attn::test
