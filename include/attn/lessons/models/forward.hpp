#pragma once
// `attn-cli forward --model DIR`: one sequence through a toy model folder (io/toy_model_file.hpp),
// every layer's attention and the logits, as docs/contracts.md's forward contract prints them.
//
// A toy model was trained on arbitrary ids, so text is mapped to ids by order of first
// appearance: each distinct word (tokenize.hpp's words) gets the next unused id, and a repeated
// word gets its earlier id. Induction works on any repeated words.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "attn/engine/training/toy_backprop.hpp"
#include "attn/io/json_io.hpp"
#include "attn/lessons/models/head_summary.hpp"

namespace attn {

struct ToyTokens {
  std::vector<std::int32_t> ids;
  std::vector<std::string> texts;  // the word, or the id as text for --tokens (JSON's "text")
  // As pictures and terminals show them: the texts, except that a GPT-2 token holding part of
  // a UTF-8 character shows its bytes (\xf0) where its text has U+FFFD.
  std::vector<std::string> labels;
};

// InputError when the text has more distinct words than the model's vocabulary.
ToyTokens toy_tokens_from_words(const std::vector<std::string>& words, std::size_t vocab);
// "3,17,5" -> ids; InputError for anything that is not a comma-separated list of integers in
// [0, vocab).
ToyTokens toy_tokens_from_list(const std::string& list, std::size_t vocab);

// InputError for an empty sequence or one longer than the model's context.
ToyForward run_toy_forward(const ToyModel& model, const ToyTokens& tokens);

// {"tokens": [{"id", "text"}], "attention": [layer][head][n][n], "logits": [n][vocab]}.
// The same for any model's attention and logits (GPT-2's too).
Json forward_json(const ToyTokens& tokens, const ToyForward& forward);
Json forward_json(const ToyTokens& tokens, const std::vector<Tensor3>& attention, const Tensor2& logits);

}  // namespace attn
