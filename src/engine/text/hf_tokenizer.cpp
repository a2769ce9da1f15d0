#include "attn/engine/text/hf_tokenizer.hpp"

#include <unicode/normalizer2.h>
#include <unicode/regex.h>
#include <unicode/uchar.h>
#include <unicode/utf8.h>

#include <algorithm>
#include <array>
#include <unordered_map>

#include "attn/engine/core/error.hpp"
#include "attn/engine/text/printable_text.hpp"
#include "icu_text.hpp"

namespace attn {

struct HfTokenizer::Compiled {
  std::vector<std::unique_ptr<icu::RegexPattern>> patterns;  // one per pre-tokenizer step, null but for Split
  const icu::Normalizer2* normalizer = nullptr;
  std::unordered_map<TokenId, std::size_t> added_by_id;      // id -> index in spec_.added
  std::array<std::vector<std::size_t>, 256> added_by_first_byte;  // longest first
};

namespace {

std::unique_ptr<icu::RegexPattern> compile_split(const std::string& pattern) {
  UParseError where;
  UErrorCode status = U_ZERO_ERROR;
  std::unique_ptr<icu::RegexPattern> p(
      icu::RegexPattern::compile(icu::UnicodeString::fromUTF8(pattern), 0, where, status));
  if (U_FAILURE(status))
    throw InputError("pre-tokenizer Split pattern \"" + pattern + "\": not a regular expression ICU accepts (" +
                     u_errorName(status) + " at offset " + std::to_string(where.offset) + ")");
  return p;
}

const icu::Normalizer2* normalizer_for(HfNormalization form) {
  UErrorCode status = U_ZERO_ERROR;
  const icu::Normalizer2* n = nullptr;
  switch (form) {
    case HfNormalization::none: return nullptr;
    case HfNormalization::nfc: n = icu::Normalizer2::getNFCInstance(status); break;
    case HfNormalization::nfd: n = icu::Normalizer2::getNFDInstance(status); break;
    case HfNormalization::nfkc: n = icu::Normalizer2::getNFKCInstance(status); break;
    case HfNormalization::nfkd: n = icu::Normalizer2::getNFKDInstance(status); break;
  }
  if (U_FAILURE(status) || !n) throw RuntimeError("ICU normalizer unavailable: " + std::string(u_errorName(status)));
  return n;
}

std::string to_utf8(const icu::UnicodeString& text) {
  std::string out;
  text.toUTF8String(out);
  return out;
}

constexpr int32_t kRegexSteps = 1000;

// Each match of `pattern` and each stretch of text between matches, in order (tokenizers'
// SplitDelimiterBehavior::Isolated); empty pieces are dropped.
void split_isolated(const icu::RegexPattern& pattern, const std::string& piece, std::vector<std::string>& out) {
  const icu::UnicodeString text = icu::UnicodeString::fromUTF8(piece);
  UErrorCode status = U_ZERO_ERROR;
  std::unique_ptr<icu::RegexMatcher> matcher(pattern.matcher(text, status));
  // A pattern from a file may backtrack without end on some text: ICU stops it after about
  // kRegexSteps of its steps (milliseconds, roughly) instead of letting it hang.
  if (U_SUCCESS(status)) matcher->setTimeLimit(kRegexSteps, status);
  int32_t done = 0;
  while (U_SUCCESS(status) && matcher->find(status)) {
    const int32_t start = matcher->start(status), end = matcher->end(status);
    if (start > done) out.push_back(to_utf8(text.tempSubStringBetween(done, start)));
    if (end > start) out.push_back(to_utf8(text.tempSubStringBetween(start, end)));
    done = end;
  }
  if (status == U_REGEX_TIME_OUT || status == U_REGEX_STACK_OVERFLOW)
    throw InputError("pre-tokenizer Split pattern: gave up on this text (" + std::string(u_errorName(status)) +
                     "): the pattern backtracks without end");
  if (U_FAILURE(status)) throw RuntimeError("ICU regex failed: " + std::string(u_errorName(status)));
  if (done < text.length()) out.push_back(to_utf8(text.tempSubString(done)));
}

// tokenizers' Digits pre-tokenizer: numeric characters (Rust's char::is_numeric, Unicode's N
// categories) apart from the rest, each alone or as runs.
void split_digits(const std::string& piece, bool individual, std::vector<std::string>& out) {
  std::size_t run_start = 0;
  bool run_numeric = false;
  for (int32_t i = 0; i < int32_t(piece.size());) {
    const int32_t at = i;
    UChar32 c;
    U8_NEXT(piece.data(), i, int32_t(piece.size()), c);
    const bool numeric = (U_GET_GC_MASK(c) & U_GC_N_MASK) != 0;
    if (at > int32_t(run_start) && (numeric != run_numeric || (numeric && individual))) {
      out.push_back(piece.substr(run_start, at - run_start));
      run_start = at;
    }
    run_numeric = numeric;
  }
  if (run_start < piece.size()) out.push_back(piece.substr(run_start));
}

// Where the whitespace run that ends at `end` (exclusive) starts, not before `floor`.
std::size_t white_space_before(std::string_view text, std::size_t end, std::size_t floor) {
  while (end > floor) {
    int32_t i = int32_t(end);
    UChar32 c;
    U8_PREV(text.data(), int32_t(floor), i, c);
    if (c < 0 || !u_isUWhiteSpace(c)) break;
    end = std::size_t(i);
  }
  return end;
}

// Where the whitespace run that starts at `at` ends.
std::size_t white_space_after(std::string_view text, std::size_t at) {
  while (at < text.size()) {
    int32_t i = int32_t(at);
    UChar32 c;
    U8_NEXT(text.data(), i, int32_t(text.size()), c);
    if (c < 0 || !u_isUWhiteSpace(c)) break;
    at = std::size_t(i);
  }
  return at;
}

}  // namespace

std::string hf_regex_to_icu(std::string_view oniguruma) {
  std::string out;
  for (std::size_t i = 0; i < oniguruma.size(); ++i) {
    if (oniguruma[i] != '\\' || i + 1 == oniguruma.size()) {
      out.push_back(oniguruma[i]);
      continue;
    }
    const char escaped = oniguruma[++i];
    if (escaped == 's') out += "\\p{White_Space}";
    else if (escaped == 'S') out += "\\P{White_Space}";
    else out += {'\\', escaped};
  }
  return out;
}

HfTokenizer::HfTokenizer(HfTokenizerSpec spec)
    : bpe_(std::move(spec.bpe)), spec_(std::move(spec)), compiled_(std::make_unique<Compiled>()) {
  for (const HfPreTokenStep& step : spec_.pre_tokenizer)
    compiled_->patterns.push_back(step.kind == HfPreTokenStep::Kind::split ? compile_split(step.pattern) : nullptr);
  compiled_->normalizer = normalizer_for(spec_.normalization);
  vocab_size_ = bpe_.vocab_size();
  for (std::size_t i = 0; i < spec_.added.size(); ++i) {
    const HfAddedToken& t = spec_.added[i];
    if (t.content.empty()) throw InputError("added token id " + std::to_string(t.id) + " is an empty string");
    if (t.id < 0) throw InputError("added token \"" + t.content + "\" has the negative id " + std::to_string(t.id));
    decode_utf8_strictly(t.content);  // its text is shown as a label: valid UTF-8 only
    const auto [it, fresh] = compiled_->added_by_id.try_emplace(t.id, i);
    if (!fresh && spec_.added[it->second].content != t.content)
      throw InputError("added token id " + std::to_string(t.id) + " is given to both \"" +
                       spec_.added[it->second].content + "\" and \"" + t.content + "\"");
    if (fresh) compiled_->added_by_first_byte[static_cast<unsigned char>(t.content[0])].push_back(i);
    vocab_size_ = std::max(vocab_size_, std::size_t(t.id) + 1);
  }
  for (auto& candidates : compiled_->added_by_first_byte)
    std::stable_sort(candidates.begin(), candidates.end(), [this](std::size_t a, std::size_t b) {
      return spec_.added[a].content.size() > spec_.added[b].content.size();
    });
  for (const std::vector<TokenId>* part : {&spec_.prefix, &spec_.suffix})
    for (TokenId id : *part)
      if (!has_token(id))
        throw InputError("post-processor token id " + std::to_string(id) + " is not in the vocabulary");
}

HfTokenizer::~HfTokenizer() = default;
HfTokenizer::HfTokenizer(HfTokenizer&&) noexcept = default;

std::vector<std::string> HfTokenizer::pre_tokenize(std::string_view utf8) const {
  icu::UnicodeString text = decode_utf8_strictly(utf8);
  if (compiled_->normalizer) {
    UErrorCode status = U_ZERO_ERROR;
    text = compiled_->normalizer->normalize(text, status);
    if (U_FAILURE(status)) throw RuntimeError("ICU normalization failed: " + std::string(u_errorName(status)));
  }
  std::vector<std::string> pieces, next;
  if (!text.isEmpty()) pieces.push_back(to_utf8(text));
  for (std::size_t s = 0; s < spec_.pre_tokenizer.size(); ++s) {
    const HfPreTokenStep& step = spec_.pre_tokenizer[s];
    next.clear();
    for (std::string& piece : pieces) {
      switch (step.kind) {
        case HfPreTokenStep::Kind::split: split_isolated(*compiled_->patterns[s], piece, next); break;
        case HfPreTokenStep::Kind::digits: split_digits(piece, step.individual_digits, next); break;
        case HfPreTokenStep::Kind::byte_level:
          if (step.add_prefix_space && piece[0] != ' ') piece.insert(piece.begin(), ' ');
          if (!step.use_regex) {
            next.push_back(std::move(piece));
          } else {
            for (std::string& p : gpt2_pretokenize(piece)) next.push_back(std::move(p));
          }
          break;
      }
    }
    pieces.swap(next);
  }
  return pieces;
}

void HfTokenizer::encode_piece(std::string_view piece, std::vector<TokenId>& ids) const {
  if (spec_.ignore_merges) {
    if (const std::optional<TokenId> whole = bpe_.token_of_bytes(piece)) {
      ids.push_back(*whole);
      return;
    }
  }
  const std::vector<TokenId> merged = bpe_.merge_bytes(piece);
  ids.insert(ids.end(), merged.begin(), merged.end());
}

void HfTokenizer::encode_between_added(std::string_view text, std::vector<TokenId>& ids) const {
  if (text.empty()) return;
  for (const std::string& piece : pre_tokenize(text)) encode_piece(piece, ids);
}

// Added tokens first, leftmost-longest (tokenizers' AddedVocabulary); the text between them
// goes through the normalizer, the pre-tokenizer and the model.
std::vector<TokenId> HfTokenizer::encode_text(std::string_view utf8) const {
  decode_utf8_strictly(utf8);  // an InputError on invalid UTF-8, before any piece is cut
  std::vector<TokenId> ids;
  std::size_t pending = 0;  // start of the text not yet encoded
  for (std::size_t at = 0; at < utf8.size(); ++at) {
    const HfAddedToken* match = nullptr;
    for (std::size_t i : compiled_->added_by_first_byte[static_cast<unsigned char>(utf8[at])]) {
      if (utf8.substr(at, spec_.added[i].content.size()) == spec_.added[i].content) {
        match = &spec_.added[i];
        break;
      }
    }
    if (!match) continue;
    const std::size_t left = match->lstrip ? white_space_before(utf8, at, pending) : at;
    const std::size_t right = at + match->content.size();
    encode_between_added(utf8.substr(pending, left - pending), ids);
    ids.push_back(match->id);
    pending = match->rstrip ? white_space_after(utf8, right) : right;
    at = pending - 1;
  }
  encode_between_added(utf8.substr(pending), ids);
  return ids;
}

std::vector<TokenId> HfTokenizer::encode(std::string_view utf8) const {
  std::vector<TokenId> ids = spec_.prefix;
  const std::vector<TokenId> text = encode_text(utf8);
  ids.insert(ids.end(), text.begin(), text.end());
  ids.insert(ids.end(), spec_.suffix.begin(), spec_.suffix.end());
  return ids;
}

const HfAddedToken* HfTokenizer::added_token(TokenId id) const {
  const auto it = compiled_->added_by_id.find(id);
  return it == compiled_->added_by_id.end() ? nullptr : &spec_.added[it->second];
}

bool HfTokenizer::has_token(TokenId id) const { return added_token(id) || bpe_.has_token(id); }

std::string HfTokenizer::decode(const std::vector<TokenId>& ids) const {
  std::string bytes;
  for (TokenId id : ids) {
    if (const HfAddedToken* added = added_token(id)) {
      bytes += added->content;
    } else if (bpe_.has_token(id)) {
      bytes += bpe_.decode({id});
    } else {
      throw InputError("token id " + std::to_string(id) + " is not in the tokenizer's vocabulary");
    }
  }
  return bytes;
}

std::string HfTokenizer::token_text(TokenId id) const {
  if (const HfAddedToken* added = added_token(id)) return added->content;
  if (!bpe_.has_token(id)) throw InputError("token id " + std::to_string(id) + " is not in the tokenizer's vocabulary");
  return bpe_.token_text(id);
}

std::string HfTokenizer::token_label(TokenId id) const {
  if (const HfAddedToken* added = added_token(id)) return printable_text(added->content, Whitespace::keep);
  if (!bpe_.has_token(id)) throw InputError("token id " + std::to_string(id) + " is not in the tokenizer's vocabulary");
  return bpe_.token_label(id);
}

}  // namespace attn
