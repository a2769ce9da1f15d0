// attn-cli heatmap: renders attention weights from any model as a publication-ready picture.
#include <iostream>
#include <memory>
#include <optional>

#include "attn/engine/core/error.hpp"
#include "attn/engine/text/printable_text.hpp"
#include "attn/render/draw/head_grid.hpp"
#include "attn/render/draw/heatmap.hpp"
#include "attn/engine/attention/mask.hpp"
#include "commands.hpp"
#include "common.hpp"
#include "image_flags.hpp"

namespace attn::cli {
namespace {

struct HeatmapOptions {
  std::string input;
  std::string out = "heatmap";
  std::string title;
  std::optional<double> vmax;
  std::optional<std::size_t> head;
  bool causal = false;
  ImageFlags image;
};

// What the input file holds, whichever of the accepted shapes it came in.
struct WeightsInput {
  Tensor3 weights;  // [H, Lq, Lk]; H = 1 for a single matrix
  bool had_heads = false;
  std::vector<std::string> query_tokens, key_tokens;
  std::optional<Mask3> allowed;  // [1 or H, Lq, Lk]
  std::string title;
};

std::vector<std::string> string_list(const Json& in, const char* field) {
  if (!in.contains(field) || in.at(field).is_null()) return {};
  const Json& v = in.at(field);
  if (!v.is_array()) throw InputError(std::string(field) + ": expected an array of strings");
  std::vector<std::string> out;
  for (const Json& s : v) {
    if (!s.is_string()) throw InputError(std::string(field) + ": expected strings, got " + s.dump());
    out.push_back(s.get<std::string>());
  }
  return out;
}

WeightsInput read_weights(const std::string& path, bool causal_flag) {
  const Json in = read_json(path);
  WeightsInput w;
  const Json* weights = &in;  // a bare [L, L] / [H, L, L] array
  bool causal = causal_flag;
  if (in.is_object()) {
    warn_unknown_fields(in, {"weights", "tokens", "query_tokens", "key_tokens", "mask", "causal",
                             "title", "output", "lse", "grad_q", "grad_k", "grad_v"});
    weights = &require_field(in, "weights");
    w.key_tokens = string_list(in, "tokens");
    w.query_tokens = w.key_tokens;
    if (in.contains("query_tokens")) w.query_tokens = string_list(in, "query_tokens");
    if (in.contains("key_tokens")) w.key_tokens = string_list(in, "key_tokens");
    causal = optional_bool(in, "causal", false) || causal;
    if (in.contains("title") && in.at("title").is_string()) w.title = in.at("title").get<std::string>();
    if (in.contains("mask") && !in.at("mask").is_null()) {
      const DenseArray m = parse_array(in.at("mask"), "mask", /*booleans=*/true);
      if (m.shape.size() != 2 && m.shape.size() != 3) {
        throw InputError("mask: expected [Lq, Lk] or [H, Lq, Lk], got shape " + shape_string(m.shape));
      }
      w.allowed = mask_from(m);
    }
  } else if (!in.is_array()) {
    throw InputError(std::string("input: expected an object with \"weights\" or a bare [L, L] array, got ") +
                     in.type_name());
  }
  DenseArray a = parse_array(*weights, "weights");
  if (a.shape.size() != 2 && a.shape.size() != 3) {
    throw InputError("weights: expected [Lq, Lk] or [H, Lq, Lk], got shape " + shape_string(a.shape));
  }
  w.had_heads = a.shape.size() == 3;
  if (!w.had_heads) a.shape.insert(a.shape.begin(), 1);
  w.weights = to_tensor<3>(a);
  const std::size_t H = a.shape[0], Lq = a.shape[1], Lk = a.shape[2];
  if (w.allowed && (w.allowed->shape(1) != Lq || w.allowed->shape(2) != Lk ||
                    (w.allowed->shape(0) != 1 && w.allowed->shape(0) != H))) {
    throw InputError("mask: expected shape [" + std::to_string(Lq) + ", " + std::to_string(Lk) +
                     "] or [" + std::to_string(H) + ", " + std::to_string(Lq) + ", " +
                     std::to_string(Lk) + "], got " + shape_string(w.allowed->shape()));
  }
  if (causal) {
    const Mask2 c = causal_allowed(Lq, Lk);
    if (!w.allowed) w.allowed = Mask3(xt::expand_dims(c, 0));
    else *w.allowed = *w.allowed && c;  // both: a cell is allowed only if each allows it
  }
  return w;
}

void run_heatmap(const HeatmapOptions& opts) {
  check_colormap(opts.image.colormap);
  const ImageOptions image = image_options(opts.image, opts.out);
  const std::string stem = image_stem(opts.out);
  const WeightsInput w = read_weights(opts.input, opts.causal);
  const std::size_t H = w.weights.shape(0);
  const std::string title = !opts.title.empty() ? opts.title : !w.title.empty() ? w.title : "Attention weights";
  // Any numbers are drawn (scores, averaged maps), but never passed off as softmax weights.
  const std::string sums = row_sum_note(w.weights, w.allowed);

  Figure figure;
  if (w.had_heads && !opts.head && H > 1) {
    HeadGridSpec spec{w.weights, w.query_tokens, w.key_tokens, w.allowed, title,
                      "rows: query (attending) · columns: key (attended to) · one colour scale for all heads",
                      opts.image.colormap, opts.vmax};
    spec.subtitle += sums.empty() ? "" : " · " + sums;
    figure = head_grid_figure(spec);
  } else {
    const std::size_t h = opts.head.value_or(0);
    if (h >= H) throw InputError("--head: expected a head index below " + std::to_string(H) + ", got " + std::to_string(h));
    HeatmapSpec spec;
    spec.weights = xt::view(w.weights, h, xt::all(), xt::all());
    spec.query_tokens = w.query_tokens;
    spec.key_tokens = w.key_tokens;
    if (w.allowed) spec.allowed = xt::view(*w.allowed, w.allowed->shape(0) == 1 ? 0 : h, xt::all(), xt::all());
    spec.title = title;
    if (w.had_heads) spec.subtitle = "head " + std::to_string(h) + " of " + std::to_string(H);
    if (!sums.empty()) spec.subtitle += (spec.subtitle.empty() ? "" : " · ") + sums;
    spec.colormap = opts.image.colormap;
    spec.vmax = opts.vmax;
    figure = heatmap_figure(spec);
  }
  // What the picture states about its numbers, said on stderr too: clipping is never silent.
  if (!sums.empty()) warn(sums);
  for (const std::string& note : figure.notes) warn(note);
  for (const std::string& path : save_figure(figure, stem, image)) {
    std::cout << "Wrote " << printable_text(path) << "\n";
  }
}

}  // namespace

void setup_heatmap(CLI::App& app) {
  auto opts = std::make_shared<HeatmapOptions>();
  CLI::App* cmd = app.add_subcommand("heatmap", "Draw attention weights (yours or attn-cli's) as PNG/SVG");
  cmd->add_option("-i,--input", opts->input, "JSON: {\"weights\", \"tokens\"?, \"mask\"?, \"causal\"?} "
                  "or a bare [L,L] / [H,L,L] array; - reads stdin")->required();
  cmd->add_option("-o,--out", opts->out, "output path or stem (.png/.svg added)")->capture_default_str();
  cmd->add_option("--title", opts->title, "title above the picture");
  cmd->add_option("--vmax", opts->vmax, "top of the colour scale (default: the largest weight); larger weights "
                  "are drawn in the top colour and counted in the subtitle and a warning")
      ->check(CLI::Range(1e-9, 1e9));  // weights are in [0, 1]; PositiveNumber would print 1.8e308 in full
  cmd->add_option("--head", opts->head, "draw only this head of [H, Lq, Lk] weights (default: all, in a grid)");
  cmd->add_flag("--causal", opts->causal, "mark the causal mask's cells (j > i) as masked");
  add_image_flags(cmd, opts->image, /*with_colormap=*/true);
  cmd->footer(R"(Input fields: "weights" [Lq,Lk] or [H,Lq,Lk] (attend/mha output works as is),
"tokens" (or "query_tokens" and "key_tokens"), "mask" of 0/1 (1 = may attend), "causal", "title".
Masked cells are hatched grey, never drawn as a weight of 0.
Any numbers are drawn, but never silently: rows whose unmasked cells do not sum to 1 (softmax
rows do; a row with every key masked sums to 0) and cells outside the colour scale (above
--vmax, or under a long causal map's log floor) are counted in the picture's subtitle and in a
"warning:" line on stderr. The picture is still written (exit 0): scores or averaged maps are
legitimate input, as long as the picture says what they are.

Examples:
  attn-cli heatmap --input data/examples/heatmap_tokens.json
  attn-cli heatmap --input data/examples/heatmap_heads.json --out heads.svg
  attn-cli attend --input data/examples/attend_mask.json | attn-cli heatmap --input - --colormap Oranges --format both
)");
  cmd->callback([opts] { run_heatmap(*opts); });
}

}  // namespace attn::cli
