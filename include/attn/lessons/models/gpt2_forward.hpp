#pragma once
// `attn-cli forward --model DIR` on a GPT-2 folder (io/gpt2_model_file.hpp): the text is
// tokenized by GPT-2's own BPE from the same folder, run through the model, and the terminal
// shows what the model expects next.
#include <optional>
#include <string>
#include <vector>

#include "attn/engine/text/gpt2_bpe.hpp"
#include "attn/engine/models/gpt2_model.hpp"
#include "attn/lessons/models/forward.hpp"
#include "attn/lessons/models/head_summary.hpp"

namespace attn {

// Text -> GPT-2's ids, each with its token's text.
ToyTokens gpt2_tokens_from_text(const SubwordTokenizer& tokenizer, const std::string& text);
// The same for a model with `vocab` embedding rows: an InputError when the text gives no token
// or a token the model has no row for (a tokenizer larger than the model).
ToyTokens model_tokens_from_text(const SubwordTokenizer& tokenizer, const std::string& text, std::size_t vocab);
// "464,3290" -> ids in [0, vocab), each with its token's text (InputError as toy_tokens_from_list).
// Without a tokenizer (a folder of weights alone) each token is shown as "<id N>".
ToyTokens gpt2_tokens_from_list(const SubwordTokenizer* tokenizer, const std::string& list, std::size_t vocab);

// The k most likely tokens after the last position, most likely first: softmax of the last
// row of the logits (in float64), with each token's text ("<id N>" without a tokenizer).
struct NextToken {
  TokenId id;
  std::string text, label;  // ToyTokens' texts and labels
  double probability;
};
std::vector<NextToken> top_next_tokens(const Tensor2& logits, const SubwordTokenizer* tokenizer, std::size_t k);

// FLOPs of gpt2_forward on n tokens (2 per multiply-add): the matmuls, 2 n (12 n_layer D^2 +
// vocab D) (c_attn 3D^2, c_proj D^2, the MLP 8D^2 per layer; the logits), plus causal attention,
// 2 n^2 D per layer (QK^T and AV over the n(n+1)/2 visible pairs, rounded to n^2 / 2 each).
// LayerNorm, GELU and softmax are left out (a few percent at n = 64).
double gpt2_forward_flops(const Gpt2Config& config, std::size_t n);

}  // namespace attn
