// attn-cli rope: what rotary position embedding does, in numbers (JSON with --json).
#include <optional>
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>

#include "attn/lessons/concepts/rope_lesson.hpp"
#include "attn/render/views/rope_pictures.hpp"
#include "attn/render/draw/text_table.hpp"
#include "commands.hpp"
#include "image_flags.hpp"

namespace attn::cli {
namespace {

struct RopeCliOptions {
  RopeLessonConfig config;
  std::string style = "half";
  bool json = false;
  std::string out;  // empty: no pictures (like --plots of the experiments)
  ImageFlags image;
};

std::string fmt(const char* format, double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, x);
  return buf;
}

std::string dims(std::pair<std::size_t, std::size_t> p) {
  return "(" + std::to_string(p.first) + ", " + std::to_string(p.second) + ")";
}

void print_lesson(const RopeLesson& r) {
  const RopeLessonConfig& c = r.config;
  const std::size_t N = c.positions;
  std::cout << "RoPE, head dim d = " << c.head_dim << ", base = " << fmt("%g", c.base)
            << ", style = " << rope_style_name(c.style)
            << (c.style == RopeStyle::Half ? " (rotate_half: GPT-NeoX, LLaMA-HF)\n"
                                           : " (interleaved: GPT-J, RoFormer, Meta's llama)\n");

  std::cout << "\n1. Frequencies: pair i turns by theta_i = base^(-2i/d) radians per token\n"
            << "   pair  dims (half)  dims (interleaved)  theta          wavelength (tokens)\n";
  for (const RopeFrequency& f : r.frequencies) {
    std::cout << "   " << pad_to_width(std::to_string(f.pair), 4) << "  " << pad_to_width(dims(f.half_dims), 11)
              << "  " << pad_to_width(dims(f.interleaved_dims), 18) << "  "
              << pad_to_width(fmt("%.6g", f.theta), 13) << "  " << fmt("%.6g", f.wavelength) << "\n";
  }

  std::cout << "\n2. Pair " << c.pair << " turning with position: the unit vector on its first dim, "
            << "rotated by the kernel\n   pos  angle (rad)  x = cos      y = sin\n";
  for (const RopeRotationPoint& p : r.rotation) {
    std::cout << "   " << pad_to_width(std::to_string(p.position), 3) << "  "
              << pad_to_width(fmt("%.4f", p.angle), 11) << "  " << pad_to_width(fmt("%+.6f", p.x), 11)
              << "  " << fmt("%+.6f", p.y) << "\n";
  }

  std::cout << "\n3. Score rope(q, i) . rope(k, j) for one seeded q and k (rows i = query position, "
            << "columns j = key position).\n   Without RoPE every cell would be q . k = "
            << fmt("%.4f", r.score_without_rope) << ".\n";
  std::vector<std::string> labels;
  for (std::size_t p = 0; p < N; ++p) labels.push_back(std::to_string(p));
  Tensor2 scores = Tensor2::from_shape({N, N});
  for (std::size_t i = 0; i < N; ++i)
    for (std::size_t j = 0; j < N; ++j) scores(i, j) = static_cast<float>(r.scores[i][j]);
  std::cout << matrix_table(labels, labels, scores, 4)
            << "   Along each diagonal i - j = const the score is the same:\n"
            << "   i - j  cells  score      spread (max - min)\n";
  for (const RopeOffset& o : r.by_offset) {
    std::cout << "   " << pad_to_width(std::to_string(o.offset), 5, true) << "  "
              << pad_to_width(std::to_string(o.count), 5) << "  " << pad_to_width(fmt("%+.6f", o.mean), 9)
              << "  " << fmt("%.1e", o.spread) << "\n";
  }
  std::cout << "   Largest spread " << fmt("%.1e", r.max_spread)
            << " (float64 rounding): the score depends on i - j only.\n";

  std::cout << "\n4. The two styles on one vector x at position " << c.position << "\n"
            << "   dim  x          half       interleaved\n";
  for (std::size_t m = 0; m < c.head_dim; ++m) {
    std::cout << "   " << pad_to_width(std::to_string(m), 3) << "  " << pad_to_width(fmt("%+.5f", r.x[m]), 9)
              << "  " << pad_to_width(fmt("%+.5f", r.half[m]), 9) << "  " << fmt("%+.5f", r.interleaved[m]) << "\n";
  }
  std::string perm;
  for (std::size_t p : r.permutation) perm += (perm.empty() ? "" : " ") + std::to_string(p);
  std::cout << "   Half pairs dims (i, i + d/2), interleaved pairs (2i, 2i + 1). De-interleaving maps one onto\n"
            << "   the other: with (P x)[m] = x[perm[m]], perm = (" << perm << "),\n"
            << "   max |rope_half(P x) - P rope_interleaved(x)| = " << fmt("%.1e", r.permutation_max_diff)
            << ": the same rotation in another memory layout\n"
            << "   (why HF's convert_llama_weights_to_hf.py permutes the rows of W_q and W_k).\n";
}

void run_rope(RopeCliOptions opts) {
  opts.config.style = parse_rope_style(opts.style, "--style");
  const ImageOptions image = image_options(opts.image);
  const RopeLesson r = rope_lesson(opts.config);
  std::optional<OutputFolder> folder;
  if (!opts.out.empty()) folder.emplace(prepare_picture_dir(opts.out));
  if (opts.json) {
    std::cout << rope_lesson_json(r).dump() << "\n";
  } else {
    print_lesson(r);
    std::cout << "\n";
  }
  if (!folder) return;
  const std::vector<NamedFigure> figures{{"rope_rotation", rope_rotation_figure(r)},
                                         {"rope_scores", rope_scores_figure(r)},
                                         {"rope_frequencies", rope_frequencies_figure(r)},
                                         {"rope_styles", rope_styles_figure(r)}};
  save_pictures(figures, *folder, image, opts.json ? std::cerr : std::cout);
}

}  // namespace

void setup_rope(CLI::App& app) {
  auto opts = std::make_shared<RopeCliOptions>();
  CLI::App* cmd = app.add_subcommand(
      "rope", "Rotary position embedding in numbers: frequencies, rotation, scores depend on i - j");
  cmd->add_option("--head-dim", opts->config.head_dim, "head dim d (even)")
      ->capture_default_str()->check(CLI::Range(2, 4096));
  cmd->add_option("--base", opts->config.base, "frequency base (theta_i = base^(-2i/d))")
      ->capture_default_str()->check(CLI::Range(kRopeBaseMin, kRopeBaseMax));
  cmd->add_option("--positions", opts->config.positions, "positions 0..N-1 in the tables")
      ->capture_default_str()->check(CLI::Range(1, 512));
  cmd->add_option("--pair", opts->config.pair, "the pair whose rotation is traced")->capture_default_str();
  cmd->add_option("--position", opts->config.position, "position of the side-by-side styles")
      ->capture_default_str()->check(CLI::Range(0, 1000000000));
  cmd->add_option("--style", opts->style, "half (rotate_half) or interleaved")->capture_default_str();
  cmd->add_option("--seed", opts->config.seed, "seed of the q, k and x vectors")->capture_default_str();
  cmd->add_flag("--json", opts->json, "print the numbers as one JSON object (\"Wrote\" lines go to stderr)");
  cmd->add_option("-o,--out,--plots", opts->out, "draw the pictures into this folder (without it, nothing is drawn)");
  add_image_flags(cmd, opts->image, /*with_colormap=*/false);
  cmd->footer(R"(Pictures, only with --plots DIR (or -o/--out DIR): rope_rotation (one pair on the unit circle, its angle vs
position), rope_scores (the score over (i, j): constant along diagonals), rope_frequencies
(theta_i and wavelength per pair, log scale), rope_styles (rotate-half vs interleaved pairs
and the permutation between them).

Examples:
  attn-cli rope
  attn-cli rope --head-dim 16 --positions 6 --pair 2 --style interleaved
  attn-cli rope --json
  attn-cli rope --head-dim 32 --positions 16 --plots rope-pictures --format both
)");
  cmd->callback([opts] { run_rope(*opts); });
}

}  // namespace attn::cli
