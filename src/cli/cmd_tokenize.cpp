// attn-cli tokenize: how a sentence is split into tokens: ICU word boundaries (the tokens the
// lessons use), or with --model DIR, a model's own byte-level BPE from a Hugging Face folder
// (tokenizer.json, or GPT-2's vocab.json + merges.txt).
#include <iostream>
#include <memory>

#include "attn/engine/core/error.hpp"
#include "attn/engine/text/printable_text.hpp"
#include "attn/engine/text/tokenize.hpp"
#include "attn/io/hf_tokenizer_file.hpp"
#include "attn/io/json_io.hpp"
#include "attn/render/draw/text_table.hpp"
#include "commands.hpp"
#include "model_flag.hpp"

namespace attn::cli {
namespace {

struct TokenizeOptions {
  std::string sentence;
  std::string model;
  bool json = false;
  std::size_t max_tokens = kDefaultMaxTokens;
};

void print_words(const TokenizeOptions& opts) {
  const std::vector<Token> tokens = tokenize(opts.sentence, opts.max_tokens);
  if (opts.json) {
    Json offsets = Json::array();
    for (const Token& t : tokens) offsets.push_back(t.byte_offset);
    const Json out = {{"sentence", opts.sentence}, {"tokens", token_texts(tokens)},
                      {"byte_offsets", offsets}};
    std::cout << out.dump() << "\n";
    return;
  }
  for (std::size_t i = 0; i < tokens.size(); ++i) std::cout << i << "\t" << printable_text(tokens[i].text) << "\n";
}

// A token's text for the terminal: spaces as "␣", newlines and tabs as \n and \t.
std::string visible(const std::string& text) {
  std::string shown;
  for (char c : text) shown += c == ' ' ? std::string("␣") : std::string(1, c);
  return printable_text(shown);
}

void print_model_tokens(const TokenizeOptions& opts) {
  const std::unique_ptr<SubwordTokenizer> read = read_folder_tokenizer(opts.model);
  const SubwordTokenizer& tokenizer = *read;
  const std::vector<TokenId> ids = tokenizer.encode(opts.sentence);
  if (ids.size() > opts.max_tokens) {
    throw InputError("sentence: " + std::to_string(ids.size()) + " tokens, more than --max-tokens = " +
                     std::to_string(opts.max_tokens) + "; shorten it or raise --max-tokens");
  }
  if (opts.json) {
    Json tokens = Json::array();
    for (TokenId id : ids) tokens.push_back({{"id", id}, {"text", tokenizer.token_text(id)}});
    std::cout << Json{{"tokens", tokens}}.dump() << "\n";
    return;
  }
  std::cout << pad_to_width("index", 6, true) << "  " << pad_to_width("id", 6, true) << "  text\n";
  for (std::size_t i = 0; i < ids.size(); ++i) {
    std::cout << pad_to_width(std::to_string(i), 6, true) << "  " << pad_to_width(std::to_string(ids[i]), 6, true)
              << "  " << visible(tokenizer.token_label(ids[i])) << "\n";
  }
}

}  // namespace

void setup_tokenize(CLI::App& app) {
  auto opts = std::make_shared<TokenizeOptions>();
  CLI::App* cmd = app.add_subcommand(
      "tokenize",
      "Split a sentence into tokens: words and punctuation (Chinese by dictionary), or a model's own BPE");
  cmd->add_option("sentence", opts->sentence, "the sentence (UTF-8)")->required();
  add_model_option(cmd, opts->model,
                  "a Hugging Face folder with tokenizer.json (Llama 3, Qwen2, SmolLM, GPT-2) or GPT-2's vocab.json + "
                  "merges.txt: the model's byte-level BPE ids");
  cmd->add_flag("--json", opts->json,
                "print {\"tokens\": [...], \"byte_offsets\": [...]}; with --model {\"tokens\": [{\"id\", \"text\"}]}");
  cmd->add_option("--max-tokens", opts->max_tokens, "refuse sentences with more tokens")
      ->capture_default_str()->check(CLI::Range(1, 1000000));
  cmd->footer(R"(Without --model, tokens are ICU's word boundaries (whitespace dropped), as the lessons use.
With --model, a token's "text" is its bytes as UTF-8; a token holding part of a character
(an emoji is often split over two) shows U+FFFD for the bytes it cannot spell alone. In the
table a space is shown as ␣, a newline as \n. A tokenizer.json is run as Hugging Face's
tokenizers library runs it: special tokens such as <|begin_of_text|> are cut out of the text
first, and the tokens its post-processor adds (Llama 3's BOS) are added. data/gpt2_tokenizer/tiny
and data/llama_tiny are toy vocabularies (the 256 bytes and a few hundred merges); point --model
at a model's own folder for its real ids.

Examples:
  attn-cli tokenize "The cat sat on the mat."
  attn-cli tokenize "我喜欢深度学习" --json
  attn-cli tokenize --model data/gpt2_tokenizer/tiny "the cat sat on the mat"
  attn-cli tokenize --model data/gpt2_tokenizer/tiny " don't" --json
  attn-cli tokenize --model data/llama_tiny "The cat sat on 12345 mats 🐱"
)");
  cmd->callback([opts] {
    if (opts->model.empty()) {
      print_words(*opts);
    } else {
      print_model_tokens(*opts);
    }
  });
}

}  // namespace attn::cli
