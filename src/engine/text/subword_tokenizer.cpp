#include "attn/engine/text/subword_tokenizer.hpp"

#include "icu_text.hpp"

namespace attn {

std::string SubwordTokenizer::decode_text(const std::vector<TokenId>& ids) const {
  return utf8_with_replacement(decode(ids));
}

std::string SubwordTokenizer::text_or_id(TokenId id) const {
  return has_token(id) ? token_text(id) : "<id " + std::to_string(id) + ">";
}

std::string SubwordTokenizer::label_or_id(TokenId id) const {
  return has_token(id) ? token_label(id) : "<id " + std::to_string(id) + ">";
}

}  // namespace attn
