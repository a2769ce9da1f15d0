// attn-cli tokenize: how attn-cli splits a sentence into tokens (ICU word boundaries).
#include <iostream>
#include <memory>

#include "attn/io/json_io.hpp"
#include "attn/engine/tokenize.hpp"
#include "commands.hpp"

namespace attn::cli {
namespace {

struct TokenizeOptions {
  std::string sentence;
  bool json = false;
  std::size_t max_tokens = kDefaultMaxTokens;
};

void run_tokenize(const TokenizeOptions& opts) {
  const std::vector<Token> tokens = tokenize(opts.sentence, opts.max_tokens);
  if (opts.json) {
    Json offsets = Json::array();
    for (const Token& t : tokens) offsets.push_back(t.byte_offset);
    const Json out = {{"sentence", opts.sentence}, {"tokens", token_texts(tokens)},
                      {"byte_offsets", offsets}};
    std::cout << out.dump() << "\n";
    return;
  }
  for (std::size_t i = 0; i < tokens.size(); ++i) std::cout << i << "\t" << tokens[i].text << "\n";
}

}  // namespace

void setup_tokenize(CLI::App& app) {
  auto opts = std::make_shared<TokenizeOptions>();
  CLI::App* cmd = app.add_subcommand(
      "tokenize", "Split a sentence into tokens (words and punctuation; Chinese by dictionary)");
  cmd->add_option("sentence", opts->sentence, "the sentence (UTF-8)")->required();
  cmd->add_flag("--json", opts->json, "print {\"tokens\": [...], \"byte_offsets\": [...]}");
  cmd->add_option("--max-tokens", opts->max_tokens, "refuse sentences with more tokens")
      ->capture_default_str()->check(CLI::Range(1, 1000000));
  cmd->footer(R"(Examples:
  attn-cli tokenize "The cat sat on the mat."
  attn-cli tokenize "我喜欢深度学习" --json
)");
  cmd->callback([opts] { run_tokenize(*opts); });
}

}  // namespace attn::cli
