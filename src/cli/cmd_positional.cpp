// attn-cli positional: the sinusoidal positional encoding and the ALiBi biases, in numbers.
#include <optional>
#include <bit>
#include <cstdio>
#include <iostream>
#include <memory>

#include "attn/engine/positions/alibi.hpp"
#include "attn/io/json_io.hpp"
#include "attn/engine/positions/positional.hpp"
#include "attn/engine/positions/rope.hpp"
#include "attn/render/views/positional_pictures.hpp"
#include "attn/render/draw/text_table.hpp"
#include "commands.hpp"
#include "image_flags.hpp"

namespace attn::cli {
namespace {

struct PositionalOptions {
  std::size_t length = 8;
  std::size_t d_model = 8;
  std::size_t heads = 4;
  double base = 10000.0;
  bool json = false;
  std::string out;  // empty: no pictures (like --plots of the experiments)
  ImageFlags image;
};

std::vector<std::string> numbered(std::size_t n, const std::string& prefix = "") {
  std::vector<std::string> labels;
  for (std::size_t i = 0; i < n; ++i) labels.push_back(prefix + std::to_string(i));
  return labels;
}

void write_pictures(const PositionalOptions& o, OutputFolder& folder, const ImageOptions& image, const Tensor2& pe,
                    const std::vector<double>& slopes, const Tensor3& bias) {
  save_pictures({{"sinusoidal", sinusoidal_figure(pe, o.base)}, {"alibi", alibi_figure(bias, slopes)}}, folder, image,
                o.json ? std::cerr : std::cout);
}

void run_positional(const PositionalOptions& o) {
  const ImageOptions image = image_options(o.image);
  const Tensor2 pe = sinusoidal_encoding(o.length, o.d_model, o.base);
  const std::vector<double> slopes = alibi_slopes(o.heads);
  const Tensor3 bias = alibi_bias(slopes, o.length, o.length);
  std::optional<OutputFolder> folder;
  if (!o.out.empty()) folder.emplace(prepare_picture_dir(o.out));
  if (o.json) {
    const Json out = {
        {"sinusoidal",
         {{"length", o.length}, {"d_model", o.d_model}, {"base", o.base},
          {"embedding_scale", embedding_scale(o.d_model)},
          {"formula", "PE[pos, 2i] = sin(pos / base^(2i/d_model)), PE[pos, 2i+1] = cos(pos / base^(2i/d_model))"},
          {"pe", to_json(pe)}}},
        {"alibi",
         {{"heads", o.heads}, {"slopes", slopes},
          {"formula", "bias[h, i, j] = -slopes[h] * |i - j|, added to the scaled scores (causal: j <= i)"},
          {"bias", to_json(bias)}}},
    };
    std::cout << out.dump() << "\n";
    if (folder) write_pictures(o, *folder, image, pe, slopes, bias);
    return;
  }
  char scale[32];
  std::snprintf(scale, sizeof scale, "%.4g", embedding_scale(o.d_model));
  std::cout << "Sinusoidal positional encoding (Vaswani et al. 2017, section 3.5), L = " << o.length
            << ", d_model = " << o.d_model << ":\n"
            << "  PE[pos, 2i] = sin(pos / " << o.base << "^(2i/d_model)),  PE[pos, 2i+1] = cos(same angle)\n"
            << "Rows: position. Columns: dim (pairs 2i, 2i+1 share a frequency; low dims turn fastest).\n\n"
            << matrix_table(numbered(o.length), numbered(o.d_model, "d"), pe, 3)
            << "\nToken embeddings are multiplied by sqrt(d_model) = " << scale
            << " before PE is added (section 3.4): x * sqrt(d_model) + PE.\n\n";

  std::cout << "ALiBi (Press et al. 2022): no position in the embeddings; each head h adds "
            << "-m_h * (i - j) to the score of query i and key j <= i.\nSlopes m_h for H = " << o.heads
            << (std::has_single_bit(o.heads) ? " (2^(-8(h+1)/H)):" : " (not a power of two: the paper's interpolation):");
  for (double m : slopes) {
    char buf[32];
    std::snprintf(buf, sizeof buf, " %.6g", m);
    std::cout << buf;
  }
  std::cout << "\nBias matrices -m_h |i - j| (rows: query, columns: key; causal attention uses j <= i only):\n";
  for (std::size_t h = 0; h < o.heads; ++h) {
    std::cout << "\nhead " << h << " (m = " << slopes[h] << ")\n"
              << matrix_table(numbered(o.length), numbered(o.length),
                              Tensor2(xt::view(bias, h, xt::all(), xt::all())), 3);
  }
  std::cout << "\n";
  if (folder) write_pictures(o, *folder, image, pe, slopes, bias);
}

}  // namespace

void setup_positional(CLI::App& app) {
  auto opts = std::make_shared<PositionalOptions>();
  CLI::App* cmd = app.add_subcommand(
      "positional", "Sinusoidal positional encoding and ALiBi biases, in numbers");
  cmd->add_option("--length", opts->length, "positions 0..L-1")->capture_default_str()->check(CLI::Range(1, 4096));
  cmd->add_option("--d-model", opts->d_model, "embedding width of the encoding")
      ->capture_default_str()->check(CLI::Range(1, 4096));
  cmd->add_option("--heads", opts->heads, "ALiBi heads (one slope each)")->capture_default_str()->check(CLI::Range(1, 1024));
  // The same range as RoPE's base (rope.hpp): frequencies base^(-2i/d) that fall with i.
  cmd->add_option("--base", opts->base, "the 10000 of the sinusoid formula")
      ->capture_default_str()->check(CLI::Range(kRopeBaseMin, kRopeBaseMax));
  cmd->add_flag("--json", opts->json, "print the matrices as one JSON object (\"Wrote\" lines go to stderr)");
  cmd->add_option("-o,--out,--plots", opts->out, "draw the pictures into this folder (without it, nothing is drawn)");
  add_image_flags(cmd, opts->image, /*with_colormap=*/false);
  cmd->footer(R"(Pictures, only with --plots DIR (or -o/--out DIR): sinusoidal (PE as a heatmap, positions x dims, on a
diverging scale from -1 to 1) and alibi (the bias matrix of every head, one shared scale).

Examples:
  attn-cli positional
  attn-cli positional --length 6 --d-model 16 --heads 6
  attn-cli positional --heads 8 --json
  attn-cli positional --length 32 --d-model 32 --heads 4 --plots pe-pictures --format svg
)");
  cmd->callback([opts] { run_positional(*opts); });
}

}  // namespace attn::cli
