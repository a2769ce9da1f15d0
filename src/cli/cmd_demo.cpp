// attn-cli demo: a sentence through self-attention, printed and written to a folder. This file
// parses the flags, runs the demo (lessons/demo/demo.hpp) and hands the result to the renderer
// (render/views/demo_view.hpp); the sections and their text and pictures live there.
#include <iostream>
#include <memory>

#include "attn/render/views/demo_view.hpp"
#include "attn/lessons/demo/demo.hpp"
#include "attn/engine/core/error.hpp"
#include "budget.hpp"
#include "commands.hpp"
#include "model_flag.hpp"
#include "image_flags.hpp"

namespace attn::cli {
namespace {

struct DemoOptions {
  DemoConfig config;
  std::string out = "attn-out";
  ImageFlags image;
  bool no_color = false;
  std::string rope;  // "", "half" or "interleaved"
  std::string positions = "none";  // none, sinusoidal or rope (= --rope half)
  std::string model;  // a trained model folder; "" = seeded projections
  bool random_only = false;  // no shipped trained model beside the seeded projections
  bool verbose = false;      // every table and check in full, not the short summary
  bool sentence_given = false, shape_given = false, positions_given = false;
};

// The run the flags ask for: positions, RoPE, and the model (given, shipped or none).
DemoConfig demo_config(const DemoOptions& opts) {
  DemoConfig config = opts.config;
  if (!opts.rope.empty()) config.rope = parse_rope_style(opts.rope, "--rope");
  config.positions = parse_position_kind(opts.positions, "--positions");
  if (!opts.model.empty() && config.positions != PositionKind::none) {
    throw InputError("--positions: a trained model has its own learned positions; leave out --positions with --model");
  }
  if (config.positions == PositionKind::rope) {
    // RoPE is the existing --rope path: q and k rotated in the multi-head run, and a causal RoPE picture.
    config.positions = PositionKind::none;
    if (!config.rope) config.rope = RopeStyle::Half;
  } else if (config.positions == PositionKind::none && config.rope && opts.positions_given) {
    throw InputError("--positions none contradicts --rope " + opts.rope);
  }
  if (!opts.model.empty()) {
    if (opts.shape_given) throw InputError("--model: the model has its own --d-model and --heads; leave them out");
    use_model_folder(config, opts.model);
    if (!opts.sentence_given) config.sentence = kDemoModelSentence;
  }
  if (opts.model.empty() && !opts.random_only) use_shipped_model(config);
  if (!opts.model.empty() && opts.random_only) throw InputError("--random-only: leave it out with --model");
  return config;
}

void run_demo_command(const DemoOptions& opts) {
  check_colormap(opts.image.colormap);
  const DemoConfig config = demo_config(opts);
  require_demo_budgets(demo_size(config));
  const DemoPictureOptions pictures{image_options(opts.image), opts.image.colormap};
  const DemoTextOptions text{opts.image.colormap, opts.no_color, opts.verbose};
  OutputFolder folder = prepare_picture_dir(opts.out);
  const std::shared_ptr<const DemoResult> r = run_demo_shared(config);
  std::cout << demo_text(*r, text);
  double ms = 0;
  const std::vector<Artifact> artifacts = write_demo_folder(*r, folder.staging(), pictures, ms);
  folder.commit();
  std::cout << demo_written_text(opts.out, artifacts, ms, text);
}

}  // namespace

void setup_demo(CLI::App& app) {
  auto opts = std::make_shared<DemoOptions>();
  CLI::App* cmd = app.add_subcommand(
      "demo", "Run a sentence through attention and write its heatmaps, mask and heads as pictures");
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
  add_memory_flag(cmd);
  add_time_flag(cmd);
  cmd->add_option("--heads", opts->config.heads, "heads of the multi-head run (must divide --d-model)")
      ->capture_default_str()->check(CLI::Range(1, 64));
  add_image_flags(cmd, opts->image, /*with_colormap=*/true);
  cmd->add_option("--rope", opts->rope,
                  "RoPE style for the multi-head run and the RoPE heatmap: half or interleaved (default: none)");
  cmd->add_option("--positions", opts->positions,
                  "what the runs know of word order: none (attention alone cannot see it: two copies of a "
                  "word get identical rows), sinusoidal (x + PE) or rope (= --rope half)")
      ->capture_default_str();
  add_model_option(cmd, opts->model,
                  "a model folder from attn-cli train, a GPT-2 folder (config.json, model.safetensors, vocab.json, "
                  "merges.txt), or a Llama, Mistral or Qwen2 folder (config.json, its safetensors, tokenizer.json): "
                  "its heads instead of seeded projections "
                  "(default sentence then: \"" + std::string(kDemoModelSentence) + "\")");
  cmd->add_flag("--no-color", opts->no_color, "plain numbers in the terminal (also: NO_COLOR=1)");
  cmd->add_flag("--random-only", opts->random_only,
                "only the seeded random projections: leave out the trained model's heads shown beside them");
  cmd->add_flag("-v,--verbose", opts->verbose,
                "every table and check in full (positions, flash tiles, split-KV, decode, variance, FLOPs) and every file");
  cmd->footer(R"(Beside the seeded random projections, the demo shows the heads of a toy model that attn-cli
carries inside it, trained by `attn-cli train --no-timing`: a previous-token head and an induction
head on your sentence (twice when no word of it repeats). --random-only leaves them out.

Examples:
  attn-cli demo
  attn-cli demo --verbose
  attn-cli demo "the cat sat on the mat" --random-only
  attn-cli demo "The cat sat on the mat" --out cat-demo
  attn-cli demo "我喜欢深度学习" --seed 7
  attn-cli demo "The cat sat on" --heads 2 --format both --colormap viridis --out cat-svg
  attn-cli demo "The cat sat on the mat" --rope half --out cat-rope
  attn-cli demo "the cat saw the dog" --positions sinusoidal --out dog-pe
  attn-cli train --steps 20 --out train-quick
  attn-cli demo --model train-quick/model --out cat-trained
(A 20-step model has no heads yet; `attn-cli train` with its defaults grows them in seconds.)
  attn-cli demo --model data/gpt2_tiny --out gpt2-demo
(A real GPT-2 is given the same way, e.g. --model ~/.cache/huggingface/hub/models--gpt2/snapshots/<hash>.
With a GPT-2 folder the sentence is GPT-2's own tokens; heads.png is every layer x head, each
titled with the kind its scores give: manifest.json's results.model.head_summary states the rule.
A Llama, Mistral or Qwen2 folder (SmolLM, Llama 3.2, Qwen2.5) runs the same way on its
tokenizer.json's tokens:)
  attn-cli demo --model data/llama_tiny --out llama-demo
)");
  cmd->callback([opts, cmd] {
    opts->sentence_given = cmd->count("sentence") > 0;
    opts->shape_given = cmd->count("--heads") + cmd->count("--d-model") > 0;
    opts->positions_given = cmd->count("--positions") > 0;
    run_demo_command(*opts);
  });
}

}  // namespace attn::cli
