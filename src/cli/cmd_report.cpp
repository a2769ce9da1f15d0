// attn-cli report: one offline, interactive HTML page for a demo or train folder.
#include <filesystem>
#include <iostream>
#include <memory>

#include "attn/engine/core/error.hpp"
#include "attn/engine/text/printable_text.hpp"
#include "attn/io/file_io.hpp"
#include "attn/lessons/demo/demo_result.hpp"
#include "attn/render/report/report_html.hpp"
#include "budget.hpp"
#include "commands.hpp"

namespace attn::cli {
namespace {

struct ReportOptions {
  std::string dir;
  std::string out;       // "" = DIR/report.html
  std::string sentence;  // for a model folder; "" = the demo's sentence for models
};

bool is_model_folder(const std::filesystem::path& dir) {
  return std::filesystem::is_regular_file(dir / "config.json") &&
         (std::filesystem::is_regular_file(dir / "model.safetensors") ||
          std::filesystem::is_regular_file(dir / "model.safetensors.index.json"));
}

// A model folder (attn-cli train's DIR/model, a GPT-2, Llama, Mistral or Qwen2 folder): the demo with that model, run now, without
// pictures: every layer and head on the sentence, the scaled scores, the flash replay.
ReportContent model_report(const ReportOptions& opts) {
  DemoConfig c;
  use_model_folder(c, opts.dir);  // GPT-2's own tokens and every layer x head, as demo --model runs it
  c.sentence = opts.sentence.empty() ? kDemoModelSentence : opts.sentence;
  require_demo_budgets(demo_size(c));
  const DemoResult r = run_demo(c);
  ReportContent content;
  content.manifest = demo_manifest(r, {});
  content.title = "attn-cli report: the model in " + opts.dir + " on \u201c" + c.sentence + "\u201d";
  content.summary = "The model's attention, run now by attn-cli report (every layer and head, causal, as trained); "
                    "no pictures: attn-cli demo --model writes them.";
  return content;
}

void run_report_command(const ReportOptions& opts) {
  const std::string out = opts.out.empty() ? (std::filesystem::path(opts.dir) / "report.html").string() : opts.out;
  const bool model = is_model_folder(opts.dir);
  if (!model && !opts.sentence.empty()) throw InputError("--sentence: only for a model folder");
  const std::string page = report_html(model ? model_report(opts) : read_report_folder(opts.dir));
  write_file_atomically(out, page);
  // The page itself on stdout (--out - or /dev/stdout): the note goes to stderr, not into the page.
  (is_stdout_name(out) ? std::cerr : std::cout) << "Wrote " << printable_text(out) << " (" << (page.size() + 512) / 1024 << " KiB, self-contained: open it in any browser, offline)\n";
}

}  // namespace

void setup_report(CLI::App& app) {
  auto opts = std::make_shared<ReportOptions>();
  CLI::App* cmd = app.add_subcommand(
      "report", "Write report.html for a demo, train or model folder: one self-contained, interactive page");
  cmd->add_option("dir", opts->dir,
                  "a folder written by attn-cli demo (manifest.json), attn-cli train (train.json), or a model "
                  "folder (DIR/model of train, or a GPT-2, Llama, Mistral or Qwen2 folder)")
      ->required();
  cmd->add_option("--sentence", opts->sentence, "for a model folder: the sentence to run (default: the demo's)");
  cmd->add_option("-o,--out", opts->out, "where to write the page (default: DIR/report.html)");
  add_memory_flag(cmd);  // a model folder's page runs the demo on --sentence: the demo's budgets
  add_time_flag(cmd);
  cmd->footer(R"(The page embeds its data, its pictures (as data: URLs), its script and its style: it makes no
request of any kind and works from file:// on a machine with no network.

Examples:
  attn-cli demo "The cat sat on the mat" --out cat-demo
  attn-cli report cat-demo
  attn-cli train --steps 20 --out train-quick
  attn-cli report train-quick --out train-quick.html
  attn-cli report train-quick/model --sentence "a b c a b c"
  attn-cli report data/llama_tiny --out llama-report.html
)");
  cmd->callback([opts] { run_report_command(*opts); });
}

}  // namespace attn::cli
