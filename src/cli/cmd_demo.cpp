// attn-cli demo: a sentence through self-attention, printed and written to a folder.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>

#include "attn/demo.hpp"
#include "attn/error.hpp"
#include "attn/text_table.hpp"
#include "commands.hpp"

namespace attn::cli {
namespace {

struct DemoOptions {
  DemoConfig config;
  std::string out = "attn-out";
};

// Creates DIR (and parents) and checks that a file can be created in it, before any work.
void prepare_output_dir(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir)) {
    throw InputError("--out: cannot create folder " + dir + ": " +
                     (ec ? ec.message() : std::string("a file of that name exists")));
  }
  const fs::path probe = fs::path(dir) / ".attn-write-test";
  FILE* f = std::fopen(probe.c_str(), "w");
  if (!f) throw InputError("--out: folder " + dir + " is not writable");
  std::fclose(f);
  fs::remove(probe, ec);
}

void run_demo_command(const DemoOptions& opts) {
  prepare_output_dir(opts.out);
  const DemoResult r = run_demo(opts.config);
  const std::size_t L = r.tokens.size();

  std::cout << "Sentence: \"" << r.config.sentence << "\"\n";
  std::cout << "Tokens (" << L << "):";
  for (std::size_t i = 0; i < L; ++i) std::cout << "  [" << i << "] " << r.tokens[i];
  std::cout << "\n\n";

  char scale[64];
  std::snprintf(scale, sizeof scale, "%.6g", r.scale);
  std::cout << "Single-head self-attention weights (d_model = " << r.config.d_model
            << ", seeded untrained projections, scale = 1/sqrt(" << r.config.d_model
            << ") = " << scale << ")\n"
            << "Rows: query (attending). Columns: key (attended to). Each row sums to 1.\n\n";
  std::cout << matrix_table(r.tokens, r.tokens, r.weights) << "\n";

  std::cout << "Top-" << r.config.top_k << " attended tokens per query:\n";
  std::size_t label_w = 0;
  for (const auto& t : r.tokens) label_w = std::max(label_w, display_width(t) + 2);
  for (std::size_t i = 0; i < L; ++i) {
    std::cout << "  " << pad_to_width("'" + r.tokens[i] + "'", label_w) << " attends most to:";
    for (std::size_t j : r.top[i]) {
      char w[32];
      std::snprintf(w, sizeof w, "%.3f", static_cast<double>(r.weights(i, j)));
      std::cout << "  '" << r.tokens[j] << "' (" << w << ")";
    }
    std::cout << "\n";
  }

  const std::string manifest = (std::filesystem::path(opts.out) / "manifest.json").string();
  write_file_atomically(manifest, demo_manifest(r, {}).dump(2) + "\n");
  std::cout << "\nWrote " << manifest << "\n";
}

}  // namespace

void setup_demo(CLI::App& app) {
  auto opts = std::make_shared<DemoOptions>();
  CLI::App* cmd = app.add_subcommand(
      "demo", "Run a sentence through self-attention and show what happens");
  cmd->add_option("sentence", opts->config.sentence, "the sentence (UTF-8)")->capture_default_str();
  cmd->add_option("-o,--out", opts->out, "folder for manifest.json and the pictures")
      ->capture_default_str();
  cmd->add_option("--seed", opts->config.seed, "seed for embeddings and projections")
      ->capture_default_str();
  cmd->add_option("--d-model", opts->config.d_model, "embedding width")
      ->capture_default_str()->check(CLI::Range(1, 4096));
  cmd->add_option("--top-k", opts->config.top_k, "attended tokens listed per query")
      ->capture_default_str()->check(CLI::Range(1, 1000000));
  cmd->add_option("--max-tokens", opts->config.max_tokens, "refuse sentences with more tokens")
      ->capture_default_str()->check(CLI::Range(1, 1000000));
  cmd->footer(R"(Examples:
  attn-cli demo
  attn-cli demo "The cat sat on the mat" --out cat-demo
  attn-cli demo "我喜欢深度学习" --seed 7
)");
  cmd->callback([opts] { run_demo_command(*opts); });
}

}  // namespace attn::cli
