// The pictures of `attn-cli demo`: the heatmaps a notebook draws with seaborn, written as files.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "attn/render/views/demo_pictures.hpp"
#include "attn/engine/attention/mask.hpp"
#include "attn/render/views/approximations_picture.hpp"
#include "attn/render/views/experiment_pictures.hpp"
#include "attn/render/views/flash_tiles_picture.hpp"
#include "attn/render/views/split_kv_picture.hpp"
#include "attn/render/draw/head_grid.hpp"
#include "attn/render/draw/heatmap.hpp"
#include "attn/render/views/mask_diagram.hpp"
#include "attn/render/views/model_pictures.hpp"
#include "attn/io/number_format.hpp"
#include "attn/render/draw/text_table.hpp"
#include "draw/figure_parts.hpp"

namespace attn {
namespace {

// Saves the figure as dir/name.png (and/or .svg) and lists each file as an artifact.
void save(const Figure& figure, const std::string& dir, const std::string& name,
          const std::string& kind, const std::string& title, const DemoPictureOptions& o,
          std::vector<Artifact>& artifacts) {
  save_figure(figure, (std::filesystem::path(dir) / name).string(), o.image);
  for (ImageFormat format : o.image.formats) {
    artifacts.push_back({name + "." + extension(format), kind, title});
  }
}

// "causal: 2 of 6 tiles skipped" -- the count a learner should take away from each panel.
std::string tile_panel_title(const std::string& run, const std::vector<FlashTile>& tiles) {
  const TileCounts n = count_tiles(tiles);
  const std::string of = " of " + count_of(n.total(), "tile") + " ";
  if (n.skipped > 0) return run + ": " + std::to_string(n.skipped) + of + "skipped";
  if (n.diagonal > 0) return run + ": " + std::to_string(n.diagonal) + of + "index-tested, none skipped";
  return run + (n.total() == 1 ? ": the one tile computed in full" : ": all " + count_of(n.total(), "tile") + " computed in full");
}

std::string formatted(const char* format, double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}
std::string fixed_e(double v) { return v == 0 ? "0" : formatted("%.1e", v); }
std::string fixed(double v) { return formatted("%.3f", v); }

// The default demo's trained model on the sentence: its previous-token head and its induction
// head side by side, the cells each score reads outlined.
Figure trained_heads_figure(const DemoModel& m, const std::string& colormap) {
  const std::size_t n = m.labels.size();
  auto panel = [&](const HeadScores& h, const std::string& what, const std::optional<double>& score,
                   const std::optional<KindBar>& bar) {
    HeatmapSpec s;
    s.weights = xt::view(m.attention[h.layer], h.head, xt::all(), xt::all());
    s.query_tokens = s.key_tokens = visible_token_labels(m.labels);
    s.allowed = causal_allowed(n, n);
    s.colormap = colormap;
    s.vmax = 1.0;  // both panels on one scale: a weight of 1 is a head sure of one key
    s.title = "layer " + std::to_string(h.layer) + ", head " + std::to_string(h.head) + ": " +
              (h.kind == what ? what + " head · score " : h.kind + " · " + what + " score ") +
              (score ? fixed(*score) + (bar ? " (bar " + fixed(bar->bar) + ")" : "") : "not measured");
    return s;
  };
  HeatmapSpec prev = panel(m.prev_token_head, "previous-token", m.prev_token_head.previous_token,
                           m.summary.previous_token_bar);
  for (std::size_t i = 1; i < n; ++i) prev.outlined.push_back({i, i - 1});
  HeatmapSpec ind = panel(m.induction_head, "induction", m.induction_head.induction, m.summary.induction_bar);
  for (const InductionCell& c : m.summary.induction_cells) ind.outlined.push_back({c.query, c.key});
  const std::string on = m.repeated ? "the sentence twice (no word of it repeats)" : "the sentence";
  return heatmap_pair_figure(
      prev, ind, "What training made of it: " + m.path + " on " + on,
      std::to_string(m.config.layers) + " layers x " + std::to_string(m.config.heads) +
          " heads of attention trained by `attn-cli train --no-timing` · outlined: the cells each score reads (left: the "
      "word just before; right: the word after the query word's earlier copy) · " +
          "kinds: " + kHeadKindRule);
}

// "score 0.420, under the bar 0.563 (a uniform head gets 0.417)" and the like.
std::string against_bar(const std::string& name, double score, const std::string& measured, const KindBar& bar,
                        const HeadScores& h, const std::string& kind) {
  const std::string said = name + " " + fixed(score) + measured;
  const std::string uniform = "a head spreading its weight evenly gets " + fixed(bar.uniform);
  if (h.kind == kind) return said + ", over the bar " + fixed(bar.bar) + " (" + uniform + ")";
  if (score >= bar.bar)
    return said + ", over the bar " + fixed(bar.bar) + ", but its " + h.kind + " score is larger (heads.png calls it " +
           head_kind_short(h.kind) + ")";
  return said + ", under the bar " + fixed(bar.bar) + " (" + uniform + ")";
}

// The single head's heatmap and its causal copy, from the seeded projections.
struct HeadHeatmaps {
  HeatmapSpec single, causal;
};
HeadHeatmaps seeded_heatmaps(const DemoResult& r, const std::string& quoted, const DemoPictureOptions& o) {
  const std::string d = std::to_string(r.config.d_model);
  HeatmapSpec single;
  single.weights = r.weights;
  single.query_tokens = single.key_tokens = visible_token_labels(r.tokens);
  single.title = "Self-attention weights: " + quoted;
  // What the runs know of order (--positions): without positions two copies of a word have one row.
  const std::string positions = r.config.positions == PositionKind::sinusoidal
                                    ? "sinusoidal positions added (x + PE)"
                                    : "no positions: copies of a word get identical rows";
  single.subtitle = "one head, d_model = " + d + ", seeded untrained projections · " + positions + " · each row sums to 1";
  single.colormap = o.colormap;
  HeatmapSpec causal = single;
  causal.weights = r.causal_weights;
  causal.allowed = r.causal_allowed;
  causal.title = "Masked (causal) self-attention: " + quoted;
  causal.subtitle = "the same Q, K, V (" +
                    std::string(r.config.positions == PositionKind::sinusoidal ? "sinusoidal positions added"
                                                                                : "no positions") +
                    "); each token sees only itself and the tokens before it";
  return {single, causal};
}

// With --model: both heads are the trained model's own, causal as it was trained. Each is named
// for a pattern only when heads.png's rule gives it that kind (head_summary.hpp: the score must
// reach its bar, which a head spreading its weight evenly does not); otherwise it is the best
// candidate.
void name_model_heatmaps(const DemoResult& r, const std::string& quoted, HeadHeatmaps& maps) {
  HeatmapSpec &single = maps.single, &causal = maps.causal;
  const std::size_t L = r.tokens.size();
  const DemoModel& m = *r.model;
  const HeadScores& ind = m.induction_head;
  const HeadScores& prev = m.prev_token_head;
  const std::string trained = (m.architecture == "gpt2"  ? std::string("GPT-2 model ")
                               : m.architecture == "toy" ? std::string("trained model ")
                                                         : m.architecture + " model ") +
                              m.path + " · ";
  const std::string at = " (layer " + std::to_string(ind.layer) + ", head " + std::to_string(ind.head) + "): ";
  single.allowed = r.causal_allowed;
  const bool ind_formed = ind.kind == "induction";
  const std::string shown = m.repeated ? "the sentence twice (no word of it repeats) · " : "";
  if (!ind.induction) {
    const bool one = L < 2;
    single.title = std::string("Candidate induction head (") +
                   (one ? "one token: no repeat to test it" : "not measured: no word appears twice") + ")" + at + quoted;
    single.subtitle = trained + (one ? std::string("a single token repeats nothing, so no head can show induction")
                                     : "no word of the sentence appears twice, and the sentence twice (" +
                                           count_of(2 * L, "token") + ") does not fit the model's " +
                                           std::to_string(m.config.context) + " positions");
  } else {
    single.title = std::string(ind_formed ? "Induction head" : "Best induction candidate, no induction head yet") +
                   at + quoted;
    single.subtitle = trained + shown +
                      against_bar("induction score", *ind.induction, "", *m.summary.induction_bar, ind, "induction") +
                      " · outlined: the cells it reads, each repeated word's key just after its earlier copy";
    for (const InductionCell& c : m.summary.induction_cells) single.outlined.push_back({c.query, c.key});
  }
  const std::string prev_at = " (layer " + std::to_string(prev.layer) + ", head " + std::to_string(prev.head) + "): ";
  if (!prev.previous_token) {  // one token has nothing before it
    causal.title = "Candidate previous-token head (one token: nothing before it to test)" + prev_at + quoted;
    causal.subtitle = trained + "a single token has no token before it, so no head can show previous-token attention";
  } else {
    const bool prev_formed = prev.kind == "previous-token";
    causal.title = std::string(prev_formed ? "Previous-token head" : "Best previous-token candidate, not formed yet") +
                   prev_at + quoted;
    causal.subtitle = trained + against_bar("previous-token score", *prev.previous_token, "",
                                            *m.summary.previous_token_bar, prev, "previous-token") +
                      (prev_formed ? ": each token attends to the token just before it" : "");
  }
}

// Which keys each query may see under the causal mask, the tokens beside the rows.
MaskDiagramSpec causal_mask_spec(const DemoResult& r) {
  const std::size_t L = r.tokens.size();
  MaskDiagramSpec mask;
  std::vector<std::string> labels = time_labels(L);
  for (std::size_t i = 0; i < L; ++i) labels[i] += " " + r.tokens[i];
  mask.rows.push_back({r.causal_allowed, labels, time_labels(L), ""});
  mask.title = "Causal mask for " + count_of(L, "token");
  mask.subtitle = "query t=i may attend to keys t ≤ i: no looking at the future";
  return mask;
}

// Every head: the model's layers x heads, each titled with its kind, or the seeded multi-head run.
void save_heads(const DemoResult& r, const std::string& quoted, const std::string& dir, const DemoPictureOptions& o,
                std::vector<Artifact>& artifacts) {
  const std::string d = std::to_string(r.config.d_model);
  const std::size_t L = r.tokens.size();
  if (r.model) {
    const ToyConfig& c = r.model->config;
    const std::string title = "Every head of " + r.model->path + ": " + quoted;
    const std::string subtitle = std::to_string(c.layers) + " layers × " + std::to_string(c.heads) +
                                 " heads, head dim " + std::to_string(c.d_model / c.heads) +
                                 " · rows: query (attending), columns: key (attended to) · causal · one colour scale" +
                                 (L >= 2 ? " · each head titled with its kind, " + induction_scope(r.model->summary) +
                                           " (manifest: results.model.head_summary)"
                                         : " · one token attends only to itself: no head can be classified");
    const ModelViewSpec spec{r.model->attention, r.tokens, L >= 2 ? &r.model->summary : nullptr, title, subtitle,
                             o.colormap};
    save(model_view_figure(spec), dir, "heads", "heads", title, o, artifacts);
  } else {
    HeadGridSpec heads;
    heads.weights = r.head_weights;
    heads.query_tokens = heads.key_tokens = r.tokens;
    heads.title = std::to_string(r.config.heads) + "-head self-attention: " + quoted;
    heads.subtitle = "d_model = " + d + ", head dim " + std::to_string(r.config.d_model / r.config.heads) +
                     (r.rope ? ", RoPE (" + rope_style_name(r.rope->style) + ")" : std::string()) +
                     (r.config.positions == PositionKind::sinusoidal ? ", sinusoidal positions" : "") +
                     " · rows: query (attending), columns: key (attended to) · one colour scale";
    heads.colormap = o.colormap;
    save(head_grid_figure(heads), dir, "heads", "heads", heads.title, o, artifacts);
  }
}

// The flash check's teaching run as the kernel walked it, non-causal and causal.
FlashTilesSpec flash_tiles_spec(const DemoResult& r, const std::string& quoted) {
  const std::size_t L = r.tokens.size();
  const DemoFlashCheck& fl = r.flash;
  FlashTilesSpec tiles;
  tiles.Lq = tiles.Lk = L;
  tiles.query_tokens = tiles.key_tokens = visible_token_labels(r.tokens);
  tiles.panels = {{fl.tiles, false, tile_panel_title("non-causal", fl.tiles)},
                  {fl.causal_tiles, true, tile_panel_title("causal", fl.causal_tiles)}};
  tiles.title = "FlashAttention tiles: " + quoted;
  tiles.subtitle =
      "the score matrix as the tiled kernel walks it, in tiles of " +
      tile_shape_text(fl.teaching.tiling.block_q, fl.teaching.tiling.block_k, L, L) +
      " (asked for " +
      std::to_string(fl.requested_block_q) + " × " + std::to_string(fl.requested_block_k) +
      "; key tiles are rounded up to whole packed key panels of the micro-kernel)" +
      " · this run's max |flash − naive| on the outputs: " +
      fixed_e(std::max(fl.teaching.plain.output, fl.teaching.causal.output));
  return tiles;
}

// The causal heatmap with RoPE beside what RoPE changed.
void save_rope(const DemoResult& r, const HeatmapSpec& causal, const std::string& quoted, const std::string& dir,
               const DemoPictureOptions& o, std::vector<Artifact>& artifacts) {
  HeatmapSpec rope = causal;
  rope.weights = r.rope->causal_weights;
  const std::size_t i = r.rope->max_change_query, j = r.rope->max_change_key;
  rope.title = "RoPE (" + rope_style_name(r.rope->style) + "), causal: " + quoted;
  rope.subtitle = "attention_causal's Q, K, V with q and k rotated to their positions (base 10000) · " +
                  (r.rope->max_change == 0
                       ? std::string("RoPE changed no weight (one token sees only itself)")
                       : "largest change: '" + r.tokens[i] + "' → '" + r.tokens[j] + "', " +
                             fixed(r.causal_weights(i, j)) + " → " + fixed(r.rope->causal_weights(i, j)));
  // Beside it, what RoPE changed: weight with RoPE minus without, white = unchanged. The two
  // maps alone look alike; the difference shows which pairs position moved, and by how much.
  HeatmapSpec diff = rope;
  diff.weights = r.rope->causal_weights - r.causal_weights;
  double most = 0;
  for (float v : diff.weights) most = std::max(most, std::fabs(double(v)));
  diff.colormap = "RdBu_r";
  diff.vmax = most > 0 ? most : 1;
  diff.vmin = -*diff.vmax;
  diff.value_label = "Change in weight";
  diff.title = "with RoPE − without (attention_causal)";
  rope.title = "with RoPE";
  const std::string title = "RoPE (" + rope_style_name(r.rope->style) + "), causal: " + quoted;
  save(heatmap_pair_figure(rope, diff, title, rope.subtitle), dir, "attention_causal_rope", "rope", title, o,
       artifacts);
}

}  // namespace

std::vector<Artifact> write_demo_pictures(const DemoResult& r, const std::string& dir,
                                          const DemoPictureOptions& o) {
  std::vector<Artifact> artifacts;
  const std::string quoted = title_quote(r.config.sentence);
  const std::size_t L = r.tokens.size();
  HeadHeatmaps maps = seeded_heatmaps(r, quoted, o);
  if (r.model) name_model_heatmaps(r, quoted, maps);
  save(heatmap_figure(maps.single), dir, "attention", "heatmap", maps.single.title, o, artifacts);
  if (r.trained && r.trained->labels.size() >= 2) {  // one token: nothing before it, no score (the terminal says so)
    const Figure trained = trained_heads_figure(*r.trained, o.colormap);
    save(trained, dir, "trained_heads", "heatmap", trained.title, o, artifacts);
  }
  save(heatmap_figure(maps.causal), dir, "attention_causal", "heatmap", maps.causal.title, o, artifacts);
  const MaskDiagramSpec mask = causal_mask_spec(r);
  save(mask_figure(mask), dir, "mask_causal", "mask", mask.title, o, artifacts);
  save_heads(r, quoted, dir, o, artifacts);
  const FlashTilesSpec tiles = flash_tiles_spec(r, quoted);
  save(flash_tiles_figure(tiles), dir, "flash_tiles", "flash", tiles.title, o, artifacts);

  const std::vector<std::string> shown = visible_token_labels(r.tokens);
  const std::string last = "'" + shown[L - 1] + "' [" + std::to_string(L - 1) + "]";
  save(split_kv_figure(r.split_kv, shown, last), dir, "split_kv", "flash",
       "Split-KV (Flash-Decoding): the last query's KV cache in " + count_of(r.split_kv.chunks.size(), "chunk") +
           ", merged exactly",
       o, artifacts);
  if (r.rope) save_rope(r, maps.causal, quoted, dir, o, artifacts);

  const Figure approximations = approximations_figure(r.approximations, o.colormap);
  save(approximations, dir, "approximations", "heatmap", approximations.title, o, artifacts);
  save(variance_figure(r.variance), dir, "variance", "variance",
       "Why attention divides by sqrt(d_k): Var(q.k) = d_k unscaled, 1 scaled", o, artifacts);
  save(complexity_figure(r.complexity, L), dir, "complexity", "complexity",
       "FLOPs of one attention layer vs n: the n^2 d matmuls overtake the n d^2 projections", o, artifacts);
  return artifacts;
}

}  // namespace attn
