// `attn-cli forward` on a GPT-2 folder as a library call (gpt2_forward.hpp).
#include "attn/lessons/models/gpt2_forward.hpp"

#include <cmath>

#include "attn/engine/core/error.hpp"
#include "attn/engine/core/topk.hpp"
#include "attn/engine/text/printable_text.hpp"

namespace attn {
ToyTokens gpt2_tokens_from_text(const SubwordTokenizer& tokenizer, const std::string& text) {
  ToyTokens t;
  for (TokenId id : tokenizer.encode(text)) {
    t.ids.push_back(id);
    t.texts.push_back(tokenizer.token_text(id));
    t.labels.push_back(tokenizer.token_label(id));
  }
  return t;
}

ToyTokens model_tokens_from_text(const SubwordTokenizer& tokenizer, const std::string& text, std::size_t vocab) {
  ToyTokens tokens = gpt2_tokens_from_text(tokenizer, text);
  if (tokens.ids.empty()) throw InputError("sentence: no tokens (an empty text)");
  for (TokenId id : tokens.ids)
    if (std::size_t(id) >= vocab)
      throw InputError("sentence: the tokenizer gives id " + std::to_string(id) + " (" +
                       printable_text(tokenizer.label_or_id(id)) + "), past the model's vocabulary of " +
                       std::to_string(vocab) + " (config.json's vocab_size)");
  return tokens;
}

namespace {

std::string id_text(TokenId id) { return "<id " + std::to_string(id) + ">"; }

}  // namespace

ToyTokens gpt2_tokens_from_list(const SubwordTokenizer* tokenizer, const std::string& list, std::size_t vocab) {
  ToyTokens t = toy_tokens_from_list(list, vocab);
  for (std::size_t i = 0; i < t.ids.size(); ++i) {
    t.texts[i] = tokenizer ? tokenizer->text_or_id(t.ids[i]) : id_text(t.ids[i]);
    t.labels[i] = tokenizer ? tokenizer->label_or_id(t.ids[i]) : id_text(t.ids[i]);
  }
  return t;
}

std::vector<NextToken> top_next_tokens(const Tensor2& logits, const SubwordTokenizer* tokenizer, std::size_t k) {
  const std::size_t last = logits.shape(0) - 1, V = logits.shape(1);
  std::vector<double> row(V);
  for (std::size_t v = 0; v < V; ++v) row[v] = logits(last, v);
  const std::vector<std::size_t> best = top_k_indices(row, k);
  double sum = 0;  // softmax(row)[v] = exp(row[v] - max) / sum over all v of exp(row[v] - max)
  for (double x : row) sum += std::exp(x - row[best[0]]);
  std::vector<NextToken> out;
  for (std::size_t v : best)
    out.push_back({TokenId(v), tokenizer ? tokenizer->text_or_id(TokenId(v)) : id_text(TokenId(v)),
                   tokenizer ? tokenizer->label_or_id(TokenId(v)) : id_text(TokenId(v)), std::exp(row[v] - row[best[0]]) / sum});
  return out;
}

double gpt2_forward_flops(const Gpt2Config& c, std::size_t n) {
  const double N = double(n), D = double(c.n_embd), L = double(c.n_layer);
  return 2 * N * (12 * L * D * D + double(c.vocab_size) * D) + L * 2 * N * N * D;
}

}  // namespace attn
