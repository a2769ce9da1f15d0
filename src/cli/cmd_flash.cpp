// attn-cli flash: one head of a short sentence through the tiled FlashAttention kernel with
// tiny tiles, tile by tile as the kernel's own observer hook recorded it; --replay also writes
// the steps as numbered frames, replay.json and a report.html that steps through them.
#include <algorithm>
#include <filesystem>
#include <iostream>
#include <memory>

#include "attn/engine/core/error.hpp"
#include "attn/engine/text/printable_text.hpp"
#include "attn/io/file_io.hpp"
#include "attn/lessons/demo/demo_result.hpp"
#include "attn/lessons/concepts/flash_replay.hpp"
#include "attn/io/number_format.hpp"
#include "attn/render/views/flash_replay_pictures.hpp"
#include "attn/render/views/flash_tiles_picture.hpp"
#include "attn/render/report/report_html.hpp"
#include "attn/render/draw/text_table.hpp"
#include "budget.hpp"
#include "commands.hpp"
#include "image_flags.hpp"

namespace attn::cli {
namespace {

struct FlashCmdOptions {
  DemoConfig config;
  bool replay = false;
  std::string out = "flash-replay";
  std::size_t block = 0;  // 0 = the demo's teaching tiles
  bool no_causal = false;
  std::size_t max_frames = 300;  // --block 1 on 64 tokens would be 4097 frames, hundreds of MB
  ImageFlags image;
};

// "query 3" or "queries 2-3": a tile's rows or columns.
std::string index_range(std::size_t first, std::size_t count, const char* one, const char* many) {
  return count == 1 ? std::string(one) + " " + std::to_string(first)
                    : std::string(many) + " " + std::to_string(first) + "-" + std::to_string(first + count - 1);
}

std::string num(double x) { return std::isfinite(x) ? format_g(x, 4) : (x < 0 ? "-inf" : "inf"); }

void print_replay(const FlashReplay& r) {
  std::cout << "FlashAttention, tile by tile: one head of " << count_of(r.tokens.size(), "token") << ", "
            << (r.causal ? "causal, " : "") << "tiles of "
            << tile_shape_text(r.block_q, r.block_k, r.tokens.size(), r.tokens.size()) << ", float64 ("
            << r.isa << " micro-kernels), recorded by the kernel's observer hook.\n"
            << "m = running max of the scaled scores, l = running sum of exp(s - m), rescale = exp(m_before - m_after).\n";
  for (std::size_t k = 0; k < r.steps.size(); ++k) {
    const FlashTileStep& s = r.steps[k];
    std::cout << "\nstep " << k + 1 << ": " << index_range(s.i0, s.rows, "query", "queries") << " x "
              << index_range(s.j0, std::min(s.cols, r.tokens.size() - s.j0), "key", "keys") << ": "
              << (s.skipped ? "skipped by causality (never read)" : s.diagonal ? "on the diagonal" : "read in full")
              << "\n";
    if (s.skipped) continue;
    for (std::size_t row = 0; row < s.rows; ++row) {
      const std::size_t i = s.i0 + row;
      std::cout << "  " << pad_to_width("'" + r.tokens[i] + "' [" + std::to_string(i) + "]", 18) << " sees "
                << s.visible[row] << "  m " << num(s.m_before[row]) << " -> " << num(s.m_after[row]) << "  l "
                << num(s.l_before[row]) << " -> " << num(s.l_after[row]) << "  rescale " << num(s.rescale[row])
                << "\n";
    }
  }
  std::cout << "\nEnd: O = O / l. max |flash - naive| = " << format_g(r.max_diff_output, 2) << " (outputs), "
            << format_g(r.max_diff_lse, 2) << " (log-sum-exp); " << count_of(r.read(), "tile") << " read, "
            << r.skipped() << " skipped.\n";
}

// The frames --replay would draw, refused up front past --max-frames or the time budget: each
// frame is a picture of the whole L x L grid (about 60 ms and 110 KB at 64 tokens, measured).
void check_replay_budgets(std::size_t frames, std::size_t L, std::size_t block, std::size_t max_frames) {
  const std::string what = "--replay at --block " + std::to_string(block) + " on " + count_of(L, "token") + ": " +
                           std::to_string(frames) + " frames";
  if (frames > max_frames)
    throw InputError(what + ", more than --max-frames = " + std::to_string(max_frames) +
                     "; raise --block (fewer, larger tiles) or --max-frames");
  constexpr double kSecondsPerFrame = 0.02, kSecondsPerFrameCell = 1.5e-5;
  require_time(double(frames) * (kSecondsPerFrame + double(L * L) * kSecondsPerFrameCell), what,
               "raise --block (fewer, larger tiles)");
}

void run_flash_command(const FlashCmdOptions& opts) {
  const ImageOptions image = image_options(opts.image);
  std::optional<OutputFolder> folder;
  if (opts.replay) folder.emplace(prepare_picture_dir(opts.out));
  const DemoHead head = demo_seeded_head(opts.config);
  const std::size_t L = head.tokens.size();
  const std::size_t block = opts.block ? opts.block : teaching_block(L);
  const FlashReplay r = replay_flash(head.q, head.k, head.v, head.tokens, {block, block, !opts.no_causal});
  if (folder) check_replay_budgets(r.steps.size() + 1, L, block, opts.max_frames);
  print_replay(r);
  if (!folder) return;

  const std::size_t frames = r.steps.size() + 1;
  const std::filesystem::path staging(folder->staging());
  for (std::size_t k = 0; k < frames; ++k)
    save_figure(flash_replay_frame(r, k), (staging / flash_replay_frame_name(k, frames)).string(), image);
  Json replay = flash_replay_json(r);
  replay["sentence"] = opts.config.sentence;
  replay["seed"] = opts.config.seed;
  replay["d_model"] = opts.config.d_model;
  write_file_atomically((staging / "replay.json").string(), replay.dump(1) + "\n");
  ReportContent report;
  report.title = "attn-cli flash --replay: \u201c" + opts.config.sentence + "\u201d";
  report.summary = "The kernel's tile loop, step by step, from this folder's replay.json (the frames are the same steps as pictures).";
  report.replay = replay;
  write_file_atomically((staging / "report.html").string(), report_html(report));
  folder->commit();
  std::cout << "\nWrote into " << printable_text(opts.out) << "/: " << flash_replay_frame_name(0, frames) << " ... "
            << flash_replay_frame_name(frames - 1, frames) << " (" << frames << " frames: one per tile, then the end), "
            << "replay.json, report.html\n";
}

}  // namespace

void setup_flash(CLI::App& app) {
  auto opts = std::make_shared<FlashCmdOptions>();
  opts->config.sentence = "The cat sat on the mat";
  opts->config.max_tokens = 64;
  CLI::App* cmd = app.add_subcommand(
      "flash", "Step through the FlashAttention kernel tile by tile on a short sentence (--replay: frames)");
  cmd->add_option("sentence", opts->config.sentence, "the sentence (UTF-8), at most --max-tokens tokens")
      ->capture_default_str();
  cmd->add_flag("--replay", opts->replay, "also write numbered frames, replay.json and report.html into --out");
  cmd->add_option("-o,--out", opts->out, "folder for the frames (with --replay)")->capture_default_str();
  cmd->add_option("--block", opts->block, "tile edge (default: 2 up to 16 tokens, then about 8 tiles a side)")
      ->check(CLI::Range(1, 64));
  cmd->add_flag("--no-causal", opts->no_causal, "every query sees every key: no tile is skipped");
  cmd->add_option("--seed", opts->config.seed, "seed for embeddings and projections (as in demo)")->capture_default_str();
  cmd->add_option("--d-model", opts->config.d_model, "embedding width = head dim")
      ->capture_default_str()->check(CLI::Range(1, 1024));
  cmd->add_option("--max-tokens", opts->config.max_tokens, "refuse sentences with more tokens")
      ->capture_default_str()->check(CLI::Range(1, 64));
  cmd->add_option("--max-frames", opts->max_frames, "with --replay: refuse runs that would draw more frames")
      ->capture_default_str()->check(CLI::Range(1, 100000));
  add_time_flag(cmd);
  add_image_flags(cmd, opts->image, /*with_colormap=*/false);
  cmd->footer(R"(The numbers are the kernel's own (src/engine/attention/flash/), recorded by an observer hook in its
tile loop as it runs: not a re-implementation. Q, K, V are the demo's single head (seeded).

Examples:
  attn-cli flash "The cat sat on"
  attn-cli flash "The cat sat on the mat" --replay --out cat-flash
  attn-cli flash "a b c d e f g h i j k l" --block 4 --no-causal --replay --format svg
)");
  cmd->callback([opts] { run_flash_command(*opts); });
}

}  // namespace attn::cli
