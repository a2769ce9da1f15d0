// attn-cli mask: draws a mask as "blocked" and "allowed" side by side (PyTorch SDPA's boolean attn_mask: true = may attend).
#include <iostream>
#include <memory>
#include <optional>

#include "attn/engine/core/error.hpp"
#include "attn/engine/text/printable_text.hpp"
#include "attn/engine/attention/mask.hpp"
#include "attn/engine/attention/variant.hpp"
#include "attn/engine/attention/flash.hpp"
#include "attn/render/views/flash_tiles_picture.hpp"
#include "attn/render/views/mask_diagram.hpp"
#include "attn/io/number_format.hpp"
#include "commands.hpp"
#include "common.hpp"
#include "image_flags.hpp"
#include "variant_fields.hpp"

namespace attn::cli {
namespace {

struct MaskOptions {
  std::string kind;
  std::size_t size = 5;
  std::size_t queries = 0;  // 0 = size (square)
  std::vector<std::size_t> lengths;
  std::size_t window = 3;
  std::size_t right = 0;
  std::vector<std::string> edges;
  bool directed = false;
  bool no_self_loops = false;
  std::size_t sinks = 1, stride = 3;
  std::optional<std::size_t> prefix;
  std::vector<std::int64_t> segments;
  std::string variant;    // attend: the variant fields as attend's JSON takes them
  std::size_t tiles = 0;  // tile edge of the block-mask picture; 0 = none
  std::string out;  // default mask-KIND
  ImageFlags image;
};

// "2-3" -> (2, 3).
std::pair<std::size_t, std::size_t> parse_edge(const std::string& text) {
  const auto dash = text.find('-');
  try {
    std::size_t used_a = 0, used_b = 0;
    if (dash == std::string::npos) throw std::invalid_argument(text);
    const std::string a = text.substr(0, dash), b = text.substr(dash + 1);
    const unsigned long from = std::stoul(a, &used_a), to = std::stoul(b, &used_b);
    if (used_a != a.size() || used_b != b.size() || a[0] == '-' || b[0] == '-') throw std::invalid_argument(text);
    return {from, to};
  } catch (const std::exception&) {
    throw InputError("--edges: expected FROM-TO pairs such as 0-1,1-2, got \"" + text + "\"");
  }
}

// The kinds that are attend's variants, drawn from the very descriptor attend's kernels use
// (engine/attention/variant.hpp), each with the causal mask the models that use it pair it with.
void variant_mask(const MaskOptions& o, std::size_t Lq, std::size_t Lk, const std::vector<std::string>& query_t,
                  MaskDiagramSpec& spec) {
  AttentionMask m;
  bool causal = true;
  if (o.kind == "sinks") {
    if (o.window < 1) throw InputError("--window: expected at least 1");
    m.window = variants::SlidingWindow{o.window - 1, 0, o.sinks};
    spec.title = "Attention sinks with a sliding window: " + count_of(o.sinks, "sink") + ", window " +
                 std::to_string(o.window);
    spec.subtitle = "StreamingLLM: the first " + count_of(o.sinks, "key") + " stay visible to every query, the rest "
                    "only within the window (attend: \"window\": [" + std::to_string(o.window - 1) + ", 0], \"sinks\": " +
                    std::to_string(o.sinks) + ", \"causal\": true)";
  } else if (o.kind == "document") {
    std::vector<std::int64_t> ids = o.segments;
    if (ids.empty())  // two documents packed into one row
      for (std::size_t j = 0; j < Lk; ++j) ids.push_back(j < (Lk + 1) / 2 ? 0 : 1);
    if (ids.size() != Lk) throw InputError("--segments: expected " + std::to_string(Lk) + " ids (one per position)");
    m.segments = variants::Documents{{ids.end() - std::ptrdiff_t(Lq), ids.end()}, ids};
    spec.title = "Document masking: packed sequences attend only within their own document";
    spec.subtitle = "block-causal: query i sees key j when both are in the same document and j ≤ i (attend: "
                    "\"segments\", \"causal\": true)";
  } else if (o.kind == "prefix") {
    if (Lq != Lk) throw InputError("--queries: the prefix-LM mask is self-attention (queries = size)");
    const std::size_t prefix = o.prefix ? *o.prefix : Lk / 2;
    m.prefix = variants::PrefixLM{prefix};
    causal = false;
    spec.title = "Prefix-LM mask, a prefix of " + count_of(prefix, "position");
    spec.subtitle = "the prefix is read bidirectionally (every query sees it), the rest causally (T5's prefix LM, "
                    "UniLM; attend: \"prefix\": " + std::to_string(prefix) + ")";
  } else {
    if (o.stride < 1) throw InputError("--stride: expected at least 1");
    m.stride = variants::Strided{o.stride};
    causal = false;  // the strided pattern is causal by itself
    spec.title = "Strided sparse mask, stride " + std::to_string(o.stride);
    spec.subtitle = "Child et al. 2019: query t=i sees the last " + count_of(o.stride, "key") +
                    " and, before them, every key a multiple of " + std::to_string(o.stride) +
                    " back (attend: \"method\": \"sparse\", \"stride\": " + std::to_string(o.stride) + ")";
  }
  m.check(Lq, Lk);
  Mask2 allowed = m.allowed(Lq, Lk);
  if (causal) allowed = allowed && causal_allowed(Lq, Lk);
  spec.rows.push_back({allowed, query_t, {}, ""});
}

// Any mix of attend's variant fields, as attend's JSON writes them, drawn from the descriptor the
// kernels use: a variant added to the engine is drawn here without a line of its own.
void attend_mask(const MaskOptions& o, std::size_t Lq, std::size_t Lk, const std::vector<std::string>& query_t,
                 MaskDiagramSpec& spec) {
  if (o.variant.empty()) throw InputError("--variant: --kind attend needs the variant fields, e.g. '{\"window\": [2, 0]}'");
  Json in;
  try {
    in = Json::parse(o.variant);
  } catch (const Json::parse_error& e) {
    throw InputError(std::string("--variant: not valid JSON (") + e.what() + ")");
  }
  if (!in.is_object()) throw InputError(std::string("--variant: expected a JSON object, got ") + in.type_name());
  std::vector<std::string> known = variant_fields();
  known.push_back("causal");
  warn_unknown_fields(in, known);
  SdpaOptions so;
  // The picture has no heads: ALiBi's slopes, which change scores and not the mask, are taken
  // as one per head of however many were given.
  const bool slopes = in.contains("alibi") && in.at("alibi").is_array() && !in.at("alibi").empty();
  variants_from(in, slopes ? in.at("alibi").size() : 1, so);
  const bool causal = optional_bool(in, "causal", false);
  so.mask_mod.check(Lq, Lk);
  Mask2 allowed = so.mask_mod.allowed(Lq, Lk);
  if (causal) allowed = allowed && causal_allowed(Lq, Lk);
  spec.rows.push_back({allowed, query_t, {}, ""});
  Json shown = Json::object();  // the fields drawn, without the ones warned about
  for (const std::string& field : known)
    if (in.contains(field)) shown[field] = in.at(field);
  spec.title = "attend's mask for " + printable_text(shown.dump());
  spec.subtitle = std::string("the keys each query may see under these fields") +
                  (so.score_mod.any() ? "; softcap and alibi change the scores, not the mask" : "");
}

MaskDiagramSpec mask_spec(const MaskOptions& o) {
  const std::size_t Lk = o.size, Lq = o.queries ? o.queries : o.size;
  if (Lq > Lk) throw InputError("--queries: expected at most --size = " + std::to_string(Lk) + " queries");
  // Queries are the last Lq positions (bottom-right alignment): label them by position.
  const std::vector<std::string> query_t = time_labels(Lq, Lk - Lq);
  MaskDiagramSpec spec;
  if (o.kind == "causal") {
    spec.rows.push_back({causal_allowed(Lq, Lk), query_t, {}, ""});
    spec.title = "Causal mask, " + count_of(Lk, "position");
    spec.subtitle = "query t=i may attend to keys t ≤ i: no looking at the future";
    if (Lq < Lk) spec.subtitle += (Lq == 1 ? std::string(" (the query is the last position)")
                                  : " (the " + count_of(Lq, "query", "queries") + " are the last positions)");
  } else if (o.kind == "window") {
    if (o.window < 1) throw InputError("--window: expected at least 1");
    spec.rows.push_back({sliding_window_allowed(Lq, Lk, o.window - 1, o.right), query_t, {}, ""});
    // The window counts the query itself: window 3 is the query and the 2 keys before it.
    // With --right the window back and the keys ahead add up: say the total a row sees.
    spec.title = "Sliding-window mask, window " + std::to_string(o.window) + " (the query and " +
                 count_of(o.window - 1, "key") + " before it" +
                 (o.right ? ") + " + count_of(o.right, "key") + " ahead: up to " +
                                count_of(o.window + o.right, "key") + " a row"
                          : ")");
    spec.subtitle = "query t=i may attend to keys t=i−" + std::to_string(o.window - 1) + " … t=i" +
                    (o.right ? "+" + std::to_string(o.right) + " (local attention looking ahead too, as in Longformer; "
                                                                "Mistral's window is causal)"
                             : " (local attention, as in Mistral)");
  } else if (o.kind == "padding") {
    const std::vector<std::size_t> lengths = o.lengths.empty() ? std::vector<std::size_t>{Lk - Lk / 3} : o.lengths;
    const Mask3 m = padding_allowed(lengths, Lk);
    for (std::size_t b = 0; b < lengths.size(); ++b) {
      spec.rows.push_back({xt::view(m, b, xt::all(), xt::all()), {}, {},
                           "sequence " + std::to_string(b) + ": " + count_of(lengths[b], "real token") + ", " +
                               std::to_string(Lk - lengths[b]) + " padding"});
    }
    spec.title = "Padding mask, batch padded to " + count_of(Lk, "position");
    spec.subtitle = "keys at padding positions are blocked for every query";
  } else if (o.kind == "graph") {
    std::vector<std::pair<std::size_t, std::size_t>> edges;
    for (const std::string& e : o.edges) edges.push_back(parse_edge(e));
    if (edges.empty()) {  // a path graph 0-1-2-...: the simplest picture of "neighbours only"
      for (std::size_t i = 0; i + 1 < Lk; ++i) edges.emplace_back(i, i + 1);
    }
    spec.rows.push_back({graph_allowed(Lk, edges, o.directed, !o.no_self_loops),
                         std::vector<std::string>(), std::vector<std::string>(), ""});
    for (std::size_t i = 0; i < Lk; ++i) {
      spec.rows[0].query_labels.push_back(std::to_string(i));
      spec.rows[0].key_labels.push_back(std::to_string(i));
    }
    spec.axis_noun = "node";
    spec.title = "Graph mask, " + count_of(Lk, "node") + ", " +
                 count_of(edges.size(), o.directed ? "directed edge" : "undirected edge");
    spec.subtitle = std::string("node i attends to node j only along an edge") +
                    (o.no_self_loops ? "" : ", and to itself") + " (graph attention)";
  } else if (o.kind == "sinks" || o.kind == "document" || o.kind == "prefix" || o.kind == "sparse") {
    variant_mask(o, Lq, Lk, query_t, spec);
  } else if (o.kind == "attend") {
    attend_mask(o, Lq, Lk, query_t, spec);
  } else {
    throw InputError("--kind: expected causal, padding, window, graph, sinks, document, prefix, sparse or attend, "
                     "got \"" + o.kind + "\"");
  }
  // A query that may attend to no key has a softmax of 0/0: say which, and what attn-cli does.
  std::size_t empty_rows = 0;
  for (const MaskDiagramRow& row : spec.rows) {
    for (std::size_t i = 0; i < row.allowed.shape(0); ++i) {
      bool any = false;
      for (std::size_t j = 0; j < row.allowed.shape(1) && !any; ++j) any = row.allowed(i, j);
      empty_rows += any ? 0 : 1;
    }
  }
  if (empty_rows > 0) {
    spec.subtitle += " · " + count_of(empty_rows, "query row") + (empty_rows == 1 ? " allows" : " allow") +
                     " no key: softmax would be 0/0 there; attn-cli gives such a row all-zero weights and warns "
                     "(attn-cli pitfalls fully-masked-row)";
  }
  return spec;
}

// "6 skipped (never read), 6 index-tested, 4 run without the mask": one panel's tiles by kind.
std::string tile_counts(const std::vector<FlashTile>& tiles) {
  std::size_t n[3] = {0, 0, 0};
  for (const FlashTile& t : tiles) ++n[static_cast<int>(t.kind)];
  return std::to_string(n[static_cast<int>(FlashTile::Kind::skipped)]) + " of " + std::to_string(tiles.size()) +
         " skipped (never read), " + std::to_string(n[static_cast<int>(FlashTile::Kind::diagonal)]) +
         " index-tested, " + std::to_string(n[static_cast<int>(FlashTile::Kind::full)]) + " run without the mask";
}

// The flash kernel's block mask for each mask drawn (FlexAttention's): its tiles of `block`
// positions a side, classified by the very function the kernel uses (flash.hpp's flash_tiles),
// one panel per mask; the counts go to the terminal too.
FlashTilesSpec tiles_spec(const MaskDiagramSpec& spec, std::size_t block) {
  const MaskDiagramRow& first = spec.rows.front();
  FlashTilesSpec t;
  t.Lq = first.allowed.shape(0), t.Lk = first.allowed.shape(1);
  t.query_tokens = first.query_labels, t.key_tokens = first.key_labels;
  FlashOptions fo;  // the float64 teaching kernel, as flash's replay: tiles as small as asked
  fo.block_q = fo.block_k = block;
  fo.precision = FlashPrecision::float64;
  fo.isa = "generic";
  const FlashTiling tiling = flash_tiling(t.Lq, t.Lk, fo);
  std::string per_panel;  // several masks side by side: their counts under the title, not above each
  for (const MaskDiagramRow& row : spec.rows) {
    const Mask2 allowed = row.allowed;
    const std::vector<FlashTile> tiles = flash_tiles(t.Lq, t.Lk, fo, &allowed);
    const std::string counts = tile_counts(tiles);
    std::cout << "Flash tiles" << (row.caption.empty() ? "" : " (" + row.caption + ")") << ": " << counts << "\n";
    t.panels.push_back({tiles, false, row.caption.empty() ? counts : row.caption, allowed});
    if (!row.caption.empty()) per_panel += " · " + row.caption + ": " + counts;
  }
  t.title = "The flash kernel's block mask: " + spec.title;
  t.subtitle = "tiles of " + tile_shape_text(tiling.block_q, tiling.block_k, t.Lq, t.Lk) + " (asked for " +
               std::to_string(block) + "; key tiles are rounded up to whole packed key panels)" +
               " · a tile the mask hides is never read, one it shows whole runs unmasked" + per_panel;
  return t;
}

void run_mask(const MaskOptions& opts) {
  const std::string out = opts.out.empty() ? "mask-" + opts.kind : opts.out;
  const ImageOptions image = image_options(opts.image, out);
  const std::string stem = image_stem(out);
  const MaskDiagramSpec spec = mask_spec(opts);
  std::vector<std::string> written = save_figure(mask_figure(spec), stem, image);
  if (opts.tiles) {
    const FlashTilesSpec tiles = tiles_spec(spec, opts.tiles);
    for (const std::string& path : save_figure(flash_tiles_figure(tiles), stem + "-tiles", image)) written.push_back(path);
  }
  for (const std::string& path : written) std::cout << "Wrote " << printable_text(path) << "\n";
}

}  // namespace

void setup_mask(CLI::App& app) {
  auto opts = std::make_shared<MaskOptions>();
  CLI::App* cmd = app.add_subcommand("mask", "Draw an attention mask: blocked vs allowed, side by side");
  cmd->add_option("-k,--kind", opts->kind,
                  "causal, padding, window, graph, attend's variants sinks, document, prefix, sparse, or attend "
                  "(any --variant fields)")->required();
  cmd->add_option("-n,--size", opts->size, "positions (keys), or nodes for a graph")
      ->capture_default_str()->check(CLI::Range(1, 512));
  cmd->add_option("--queries", opts->queries, "causal/window: fewer queries than keys (the last ones)")
      ->check(CLI::Range(1, 512));
  cmd->add_option("--lengths", opts->lengths, "padding: real length of each sequence, e.g. 5,3")
      ->delimiter(',')->check(CLI::Range(0, 512));
  cmd->add_option("-w,--window", opts->window, "window: keys looked at, the query's own included")
      ->capture_default_str()->check(CLI::Range(1, 512));
  cmd->add_option("--right", opts->right, "window: keys looked at ahead of the query (0 = causal)")
      ->capture_default_str()->check(CLI::Range(0, 512));
  cmd->add_option("--edges", opts->edges, "graph: edges FROM-TO, e.g. 0-1,1-2,2-0 (default: a path)")
      ->delimiter(',');
  cmd->add_flag("--directed", opts->directed, "graph: an edge a-b lets a attend to b only");
  cmd->add_flag("--no-self-loops", opts->no_self_loops, "graph: a node does not attend to itself");
  cmd->add_option("--sinks", opts->sinks, "sinks: the first keys every query sees, whatever the window")
      ->capture_default_str()->check(CLI::Range(0, 512));
  cmd->add_option("--segments", opts->segments, "document: one document id per position, e.g. 0,0,1,1,1 "
                  "(default: two halves)")->delimiter(',')->check(CLI::Range(0, 1 << 30));
  cmd->add_option("--prefix", opts->prefix, "prefix: positions read bidirectionally (default: half)")
      ->check(CLI::Range(0, 512));
  cmd->add_option("--stride", opts->stride, "sparse: the stride of the strided pattern")
      ->capture_default_str()->check(CLI::Range(1, 512));
  cmd->add_option("--variant", opts->variant, "attend: attend's variant fields as JSON, e.g. "
                  "'{\"window\": [3, 0], \"sinks\": 1, \"causal\": true}'");
  cmd->add_option("--tiles", opts->tiles, "also draw the flash kernel's block mask in tiles of this edge "
                  "(STEM-tiles.png): skipped, index-tested, run unmasked")->check(CLI::Range(1, 512));
  cmd->add_option("-o,--out", opts->out, "output path or stem (default mask-KIND)");
  add_image_flags(cmd, opts->image, /*with_colormap=*/false);
  cmd->footer(R"(Masks follow PyTorch SDPA: 1/true = the query MAY attend. The left panel shows the
blocked cells as the −∞ added to their scores; the right panel shows the boolean mask.

Examples:
  attn-cli mask --kind causal --size 5
  attn-cli mask --kind causal --size 6 --queries 2 --out decode.svg
  attn-cli mask --kind padding --size 6 --lengths 6,4,2
  attn-cli mask --kind window --size 8 --window 3
  attn-cli mask --kind graph --size 5 --edges 0-1,1-2,2-3,3-4,4-0 --format both
  attn-cli mask --kind sinks --size 10 --window 3 --sinks 2
  attn-cli mask --kind document --size 8 --segments 0,0,0,1,1,2,2,2
  attn-cli mask --kind prefix --size 8 --prefix 3
  attn-cli mask --kind sparse --size 12 --stride 3
  attn-cli mask --kind document --size 12 --segments 0,0,0,0,1,1,1,1,1,2,2,2 --tiles 4
  attn-cli mask --kind attend --size 12 --variant '{"chunk": 4, "causal": true}' --tiles 4
)");
  cmd->callback([opts] { run_mask(*opts); });
}

}  // namespace attn::cli
