#include "attn/engine/text/gpt2_bpe.hpp"

#include <unicode/regex.h>
#include <unicode/unistr.h>

#include <cstdio>
#include <memory>

#include "attn/engine/core/error.hpp"
#include "attn/engine/text/printable_text.hpp"
#include "icu_text.hpp"

namespace attn {
namespace {

// The characters GPT-2 leaves as they are: '!'..'~', '¡'..'¬', '®'..'ÿ' (encoder.py's
// bytes_to_unicode). Space, controls, DEL..NBSP and the soft hyphen are not among them.
bool stands_for_itself(char32_t byte) {
  return (byte >= U'!' && byte <= U'~') || (byte >= U'¡' && byte <= U'¬') || (byte >= U'®' && byte <= U'ÿ');
}

constexpr char32_t kFirstMoved = 256;  // where the 68 other bytes go, in byte order
constexpr std::size_t kByteAlphabetEnd = kFirstMoved + 68;

// char -> byte for every character of the table, -1 elsewhere.
std::array<int, kByteAlphabetEnd> unicode_to_byte() {
  std::array<int, kByteAlphabetEnd> inverse;
  inverse.fill(-1);
  const std::array<char32_t, 256> forward = gpt2_byte_to_unicode();
  for (int b = 0; b < 256; ++b) inverse[forward[b]] = b;
  return inverse;
}

// GPT-2's pattern (encoder.py), with \s written as Unicode's White_Space property: ICU's own
// \s leaves out U+000B and U+0085, which Python's regex module counts as whitespace.
const icu::RegexPattern& gpt2_pattern() {
  static const std::unique_ptr<icu::RegexPattern> pattern = [] {
    const icu::UnicodeString text(
        u"'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\p{White_Space}\\p{L}\\p{N}]+"
        u"|\\p{White_Space}+(?!\\P{White_Space})|\\p{White_Space}+");
    UParseError where;
    UErrorCode status = U_ZERO_ERROR;
    std::unique_ptr<icu::RegexPattern> p(icu::RegexPattern::compile(text, 0, where, status));
    if (U_FAILURE(status)) throw RuntimeError("ICU regex unavailable: " + std::string(u_errorName(status)));
    return p;
  }();
  return *pattern;
}

std::uint64_t pair_key(TokenId left, TokenId right) {
  return (std::uint64_t(std::uint32_t(left)) << 32) | std::uint32_t(right);
}

}  // namespace

std::array<char32_t, 256> gpt2_byte_to_unicode() {
  std::array<char32_t, 256> table{};
  char32_t next = kFirstMoved;
  for (char32_t b = 0; b < 256; ++b) table[b] = stands_for_itself(b) ? b : next++;
  return table;
}

std::vector<std::string> gpt2_pretokenize(std::string_view utf8) {
  const icu::UnicodeString text = decode_utf8_strictly(utf8);
  UErrorCode status = U_ZERO_ERROR;
  std::unique_ptr<icu::RegexMatcher> matcher(gpt2_pattern().matcher(text, status));
  std::vector<std::string> pieces;
  // Every character matches one of the alternatives, so the matches tile the text.
  while (U_SUCCESS(status) && matcher->find(status)) {
    const int32_t start = matcher->start(status), end = matcher->end(status);
    std::string piece;
    text.tempSubStringBetween(start, end).toUTF8String(piece);
    pieces.push_back(std::move(piece));
  }
  if (U_FAILURE(status)) throw RuntimeError("ICU regex failed: " + std::string(u_errorName(status)));
  return pieces;
}

Gpt2Tokenizer::Gpt2Tokenizer(Gpt2BpeTables tables)
    : symbols_(std::move(tables.symbols)), merges_(std::move(tables.merges)) {
  const std::array<int, kByteAlphabetEnd> to_byte = unicode_to_byte();
  byte_ids_.fill(-1);
  bytes_.reserve(symbols_.size());
  for (std::size_t id = 0; id < symbols_.size(); ++id) {
    const std::string& symbol = symbols_[id];
    if (symbol.empty()) throw InputError("token id " + std::to_string(id) + " is an empty string");
    const icu::UnicodeString chars = icu::UnicodeString::fromUTF8(symbol);
    std::string bytes;
    for (int32_t i = 0; i < chars.length(); i = chars.moveIndex32(i, 1)) {
      const UChar32 c = chars.char32At(i);
      if (c < 0 || std::size_t(c) >= kByteAlphabetEnd || to_byte[c] < 0) {
        char hex[16];
        std::snprintf(hex, sizeof hex, "U+%04X", unsigned(c));
        throw InputError("token \"" + symbol + "\" (id " + std::to_string(id) + ") holds " + hex +
                         ", which is not one of GPT-2's 256 byte characters");
      }
      bytes.push_back(char(to_byte[c]));
    }
    if (bytes.size() == 1) byte_ids_[static_cast<unsigned char>(bytes[0])] = TokenId(id);
    id_of_bytes_.try_emplace(bytes, TokenId(id));
    bytes_.push_back(std::move(bytes));
  }
  const std::array<char32_t, 256> forward = gpt2_byte_to_unicode();
  for (int b = 0; b < 256; ++b) {
    if (byte_ids_[b] < 0) {
      std::string symbol;
      icu::UnicodeString(UChar32(forward[b])).toUTF8String(symbol);
      char hex[8];
      std::snprintf(hex, sizeof hex, "0x%02X", unsigned(b));
      throw InputError(std::string("no token for byte ") + hex + " (\"" + symbol +
                       "\"): a byte-level vocabulary has all 256");
    }
  }
  for (std::size_t rank = 0; rank < merges_.size(); ++rank) {
    const BpeMerge& m = merges_[rank];
    for (TokenId id : {m.left, m.right, m.result}) {
      if (id < 0 || std::size_t(id) >= symbols_.size())
        throw InputError("merge " + std::to_string(rank) + " names id " + std::to_string(id) +
                         ", outside the vocabulary");
    }
    rank_of_pair_.try_emplace(pair_key(m.left, m.right), rank);  // a repeated pair keeps its first rank
  }
}

// Byte-pair encoding of one pre-token (Sennrich et al. 2016, Algorithm 1 run as a tokenizer):
// start from one symbol per byte; while some adjacent pair has a merge, take the pair learned
// first (lowest rank) and join every occurrence of it, left to right.
std::vector<TokenId> Gpt2Tokenizer::merge_pretoken(std::string_view bytes) const {
  std::vector<TokenId> word, joined;
  for (unsigned char b : bytes) word.push_back(byte_ids_[b]);
  while (word.size() > 1) {
    std::size_t best = merges_.size();
    for (std::size_t i = 0; i + 1 < word.size(); ++i) {
      const auto it = rank_of_pair_.find(pair_key(word[i], word[i + 1]));
      if (it != rank_of_pair_.end() && it->second < best) best = it->second;
    }
    if (best == merges_.size()) break;
    const BpeMerge& m = merges_[best];
    joined.clear();
    for (std::size_t i = 0; i < word.size();) {
      if (i + 1 < word.size() && word[i] == m.left && word[i + 1] == m.right) {
        joined.push_back(m.result);
        i += 2;
      } else {
        joined.push_back(word[i++]);
      }
    }
    word.swap(joined);
  }
  return word;
}

std::vector<TokenId> Gpt2Tokenizer::encode(std::string_view utf8) const {
  std::vector<TokenId> ids;
  std::unordered_map<std::string, std::vector<TokenId>> seen;  // a repeated word is merged once
  std::size_t byte_offset = 0;
  for (const std::string& piece : gpt2_pretokenize(utf8)) {
    if (piece.size() > kMaxPretokenBytes) {
      throw InputError("sentence: a run of " + std::to_string(piece.size()) + " bytes without a break at byte " +
                       std::to_string(byte_offset) + " (at most " + std::to_string(kMaxPretokenBytes) +
                       "); split it with spaces");
    }
    auto [it, fresh] = seen.try_emplace(piece);
    if (fresh) it->second = merge_pretoken(piece);
    ids.insert(ids.end(), it->second.begin(), it->second.end());
    byte_offset += piece.size();
  }
  return ids;
}

std::vector<TokenId> Gpt2Tokenizer::merge_bytes(std::string_view bytes) const {
  if (bytes.size() > kMaxPretokenBytes)
    throw InputError("sentence: a run of " + std::to_string(bytes.size()) + " bytes without a break (at most " +
                     std::to_string(kMaxPretokenBytes) + "); split it with spaces");
  return merge_pretoken(bytes);
}

std::optional<TokenId> Gpt2Tokenizer::token_of_bytes(std::string_view bytes) const {
  const auto it = id_of_bytes_.find(std::string(bytes));
  if (it == id_of_bytes_.end()) return std::nullopt;
  return it->second;
}

void Gpt2Tokenizer::check_id(TokenId id) const {
  if (id < 0 || std::size_t(id) >= symbols_.size())
    throw InputError("token id " + std::to_string(id) + " is outside the vocabulary (0.." +
                     std::to_string(symbols_.size() - 1) + ")");
}

std::string Gpt2Tokenizer::decode(const std::vector<TokenId>& ids) const {
  std::string bytes;
  for (TokenId id : ids) {
    check_id(id);
    bytes += bytes_[id];
  }
  return bytes;
}

std::string Gpt2Tokenizer::token_text(TokenId id) const {
  check_id(id);
  return utf8_with_replacement(bytes_[id]);
}

std::string Gpt2Tokenizer::token_label(TokenId id) const {
  check_id(id);
  return printable_text(bytes_[id], Whitespace::keep);  // whitespace: visible_token_labels shows it
}

const std::string& Gpt2Tokenizer::symbol(TokenId id) const {
  check_id(id);
  return symbols_[id];
}

}  // namespace attn
