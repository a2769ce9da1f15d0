// attn-cli train: grow an induction head in a 2-layer attention-only transformer, and watch.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>

#include "attn/engine/core/error.hpp"
#include "attn/engine/text/printable_text.hpp"
#include "attn/io/number_format.hpp"
#include "attn/lessons/models/train.hpp"
#include "attn/render/report/report_table.hpp"
#include "attn/render/draw/text_table.hpp"
#include "attn/render/views/train_pictures.hpp"
#include "budget.hpp"
#include "commands.hpp"
#include "image_flags.hpp"

namespace attn::cli {
namespace {

struct TrainCliOptions {
  TrainOptions train;
  std::string task = "induction", backend = "flash";
  std::string out, resume;  // out: train-out, or the resumed folder
  bool no_timing = false;
  ImageFlags image;
};

// One progress line: on a terminal it is redrawn in place; otherwise one line per tenth of
// the run, so a log stays short.
class Progress {
 public:
  Progress(std::size_t steps, std::size_t log_every)
      : tty_(isatty(STDERR_FILENO)), steps_(steps), every_(std::max<std::size_t>(1, steps / 10 / log_every) * log_every) {}
  void operator()(const TrainPoint& p) {
    if (!tty_ && p.step % every_ != 0 && p.step != steps_) return;
    const std::size_t width = 24, filled = width * p.step / steps_;
    std::fprintf(stderr, "%s[%s%s] step %zu/%zu  loss %.3f  prev-token %.2f  induction %.2f%s",
                 tty_ ? "\r" : "", std::string(filled, '#').c_str(), std::string(width - filled, '.').c_str(),
                 p.step, steps_, p.loss, p.prev_token_score, p.induction_score, tty_ ? "" : "\n");
    if (tty_ && p.step == steps_) std::fputc('\n', stderr);
    std::fflush(stderr);
  }

 private:
  bool tty_;
  std::size_t steps_, every_;
};

void print_summary(const TrainRun& run, const TrainOptions& o, const std::string& out) {
  Table t{{"layer", "head", "previous-token", "first-token", "induction", "kind"}, {}};
  auto cell = [](const std::optional<double>& x) { return x ? format_fixed(*x, 3) : std::string("-"); };
  for (const HeadScores& s : run.final_summary.heads)
    t.rows.push_back({std::to_string(s.layer), std::to_string(s.head), cell(s.previous_token), cell(s.first_token),
                      cell(s.induction), s.kind});
  const TrainPoint& last = run.points.back();
  std::cout << "Trained " << o.config.layers << " layers x " << o.config.heads << " heads on the "
            << train_task_name(o.task) << " task for " << last.step << " steps";
  if (o.timing) std::cout << " in " << format_fixed(last.seconds, 1) << " s";
  std::cout << ".\nHeld-out loss " << format_fixed(last.loss, 3) << " nats (uniform guess ln(vocab) = "
            << format_fixed(run.uniform_loss, 3) << ", floor " << format_fixed(run.best_loss, 3) << ").\n";
  if (run.phase_change_step)
    std::cout << "Phase change at step " << *run.phase_change_step << " (the loss's sudden drop; see train.json).\n";
  else
    std::cout << "No phase change: the loss never fell 0.5 nats below ln(vocab).\n";
  const HeadSummary& s = run.final_summary;
  std::cout << "\n"
            << wrap_words("Every head, scored on " + std::to_string(s.sequences) +
                              " held-out sequences (a random prefix, then a run of random tokens repeated; period and "
                              "start vary, so position alone cannot find the copy): previous-token = weight on the "
                              "token before; induction = weight on the token after the query token's earlier copy. "
                              "Kind: " + kHeadKindRule + ".",
                          100)
            << "\n"
            << render_table(t, TableFormat::text) << "\nWrote " << printable_text(out) << "/model/, " << printable_text(out) << "/train.json\n";
}

void run_train_command(TrainCliOptions o) {
  check_colormap(o.image.colormap);
  const ImageOptions image = image_options(o.image);
  TrainOptions options = o.train;
  options.task = parse_train_task(o.task);
  options.backend = parse_backend(o.backend);
  options.timing = !o.no_timing;
  std::optional<TrainRun> resumed;
  if (!o.resume.empty()) {
    const std::size_t steps = options.steps;
    resumed = read_train_run(o.resume, options);
    options.steps = steps;
  }
  check_train_options(options);
  require_memory(train_memory_bytes(options), "train with these --context, --heads, --layers, --batch and --steps",
                 "lower --context first (the scoring's attention grows as its square), or raise --log-every");
  if (o.out.empty()) o.out = o.resume.empty() ? "train-out" : o.resume;
  // Everything is written into a staging folder and put in place at the end, as a whole: an
  // interrupted or failed run leaves no half a model (a resumed folder stays as it was).
  OutputFolder folder = prepare_picture_dir(o.out);
  const TrainRun run = run_training(options, Progress(options.steps, options.log_every), resumed ? &*resumed : nullptr);
  write_train_run(folder.staging(), run, options);
  const std::vector<std::string> pictures = write_train_pictures(run, options, folder.staging(), image, o.image.colormap);
  folder.commit();
  print_summary(run, options, o.out);
  for (const std::string& path : pictures)
    std::cout << "Wrote " << printable_text(folder.final_path(std::filesystem::path(path).filename().string())) << "\n";
}

}  // namespace

void setup_train(CLI::App& app) {
  auto opts = std::make_shared<TrainCliOptions>();
  TrainOptions& t = opts->train;
  CLI::App* cmd = app.add_subcommand("train", "Train a tiny attention-only transformer and watch an induction head form");
  std::vector<CLI::Option*> fixed_by_resume = {
      cmd->add_option("--task", opts->task, "induction (P random tokens, then the same again) | reverse (then reversed)")
          ->capture_default_str(),
      cmd->add_option("--seed", t.seed, "seed of the initialisation and of every batch")->capture_default_str(),
      cmd->add_option("--batch", t.batch, "sequences per step")->capture_default_str(),
      cmd->add_option("--lr", t.lr, "Adam's learning rate")->capture_default_str(),
      cmd->add_option("--layers", t.config.layers, "attention layers")->capture_default_str(),
      cmd->add_option("--heads", t.config.heads, "heads per layer")->capture_default_str(),
      cmd->add_option("--d-model", t.config.d_model, "width of the residual stream")->capture_default_str(),
      cmd->add_option("--vocab", t.config.vocab, "token ids 0..vocab-1")->capture_default_str(),
      cmd->add_option("--context", t.config.context, "sequence length L = 2P (even)")->capture_default_str(),
      cmd->add_option("--log-every", t.log_every, "held-out loss and scores every this many steps")
          ->capture_default_str()};
  cmd->add_option("--steps", t.steps, "training steps in all (with --resume: the new total)")->capture_default_str();
  cmd->add_option("--threads", t.threads, "BLAS and attention threads (0 = all; 1 is fastest for the default model)")->capture_default_str();
  cmd->add_option("--backend", opts->backend, "attention kernel: flash (float32 tiles) | naive (float64)")
      ->capture_default_str();
  cmd->add_option("--out", opts->out, "folder for model/, train.json and the pictures (default train-out; with "
                                     "--resume, the resumed folder)");
  CLI::Option* resume = cmd->add_option("--resume", opts->resume,
                                        "continue the run in this folder (its model, optimizer and history)");
  for (CLI::Option* option : fixed_by_resume) resume->excludes(option);
  cmd->add_flag("--no-timing", opts->no_timing, "write seconds as 0, so that train.json is byte-identical");
  add_image_flags(cmd, opts->image, true);
  add_memory_flag(cmd);
  cmd->footer(R"(Defaults: 2 layers x 4 heads, d_model 64, vocab 64, context 32 (16 random tokens repeated
once), batch 64, Adam lr 4e-3, 1000 steps, seed 42, one thread. Writes --out DIR: model/ (config.json and
model.safetensors, for `attn-cli forward --model`), train.json (every --log-every steps: held-out
loss, best previous-token and induction scores, seconds; per-head final scores; the phase change
and its rule), checkpoint.safetensors (for --resume) and the pictures curves.png,
heads_before.png, heads_phase_change.png, heads_after.png.

Same seed and --threads: byte-identical model and train.json (with --no-timing). A run continued
with --resume equals the uninterrupted run of the same total steps; the model's options come from
the folder.

Examples:
  attn-cli train --steps 20 --out train-quick
  attn-cli train --steps 20 --layers 1 --out train-one-layer
  attn-cli train --steps 20 --task reverse --out train-reverse
  attn-cli train --steps 20 --out train-quick --threads 1 --no-timing
  attn-cli train --resume train-quick --steps 30 --out train-more
)");
  cmd->callback([opts] { run_train_command(*opts); });
}

}  // namespace attn::cli
