// `attn-cli forward` as a library call (forward.hpp).
#include "attn/lessons/models/forward.hpp"

#include <charconv>
#include <map>

#include "attn/engine/core/error.hpp"

namespace attn {

ToyTokens toy_tokens_from_words(const std::vector<std::string>& words, std::size_t vocab) {
  ToyTokens t;
  std::map<std::string, std::int32_t> ids;
  for (const std::string& w : words) {
    auto [it, fresh] = ids.emplace(w, std::int32_t(ids.size()));
    if (fresh && ids.size() > vocab)
      throw InputError("text: more distinct words than the model's vocabulary of " + std::to_string(vocab));
    t.ids.push_back(it->second);
    t.texts.push_back(w);
  }
  t.labels = t.texts;
  return t;
}

ToyTokens toy_tokens_from_list(const std::string& list, std::size_t vocab) {
  ToyTokens t;
  std::size_t begin = 0;
  while (begin <= list.size()) {
    const std::size_t end = std::min(list.find(',', begin), list.size());
    const std::string item = list.substr(begin, end - begin);
    long long id = -1;
    const auto [ptr, ec] = std::from_chars(item.data(), item.data() + item.size(), id);
    if (item.empty() || ec != std::errc() || ptr != item.data() + item.size())
      throw InputError("--tokens: expected comma-separated integer ids, got \"" + item + "\"");
    if (id < 0 || std::size_t(id) >= vocab)
      throw InputError("--tokens: id " + item + " out of range [0, " + std::to_string(vocab) + ")");
    t.ids.push_back(std::int32_t(id));
    t.texts.push_back(item);
    begin = end + 1;
  }
  t.labels = t.texts;
  return t;
}

ToyForward run_toy_forward(const ToyModel& model, const ToyTokens& tokens) {
  if (tokens.ids.empty()) throw InputError("tokens: expected at least one token");
  if (tokens.ids.size() > model.config.context)
    throw InputError("tokens: " + std::to_string(tokens.ids.size()) + " tokens exceed the model's context of " +
                     std::to_string(model.config.context));
  return toy_forward(model, tokens.ids);
}

Json forward_json(const ToyTokens& tokens, const ToyForward& forward) {
  return forward_json(tokens, forward.attention, forward.logits);
}

Json forward_json(const ToyTokens& tokens, const std::vector<Tensor3>& attention, const Tensor2& logits) {
  Json list = Json::array(), layers = Json::array();
  for (std::size_t i = 0; i < tokens.ids.size(); ++i) list.push_back({{"id", tokens.ids[i]}, {"text", tokens.texts[i]}});
  for (const Tensor3& layer : attention) layers.push_back(to_json(layer));
  return {{"tokens", list}, {"attention", layers}, {"logits", to_json(logits)}};
}

}  // namespace attn
