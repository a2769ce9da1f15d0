// Attention sinks and grouped-query heads, drawn (decoder_lessons_picture.hpp).
#include "attn/render/views/decoder_lessons_picture.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "attn/io/number_format.hpp"
#include "attn/render/draw/heatmap.hpp"
#include "attn/render/draw/line_plot.hpp"

namespace attn {
namespace {

// A table of numbers drawn on one linear scale from 0 to vmax (no log scale, whatever its size).
HeatmapSpec scaled_table(Tensor2 values, double vmax, const std::string& colormap, std::string value_label,
                         std::string row_title, std::string col_title) {
  HeatmapSpec spec;
  spec.weights = std::move(values);
  spec.vmin = 0.0, spec.vmax = vmax;
  spec.auto_log = false;
  spec.colormap = colormap;
  spec.value_label = std::move(value_label);
  spec.row_title = std::move(row_title);
  spec.col_title = std::move(col_title);
  return spec;
}

}  // namespace

Figure sinks_figure(const SinkLesson& s, const std::string& model, const std::string& colormap) {
  const std::size_t layers = s.first_token.size(), heads = layers ? s.first_token[0].size() : 0;
  Tensor2 weights = Tensor2::from_shape({layers, heads});
  for (std::size_t l = 0; l < layers; ++l)
    for (std::size_t h = 0; h < heads; ++h) weights(l, h) = float(s.first_token[l][h]);
  HeatmapSpec spec = scaled_table(std::move(weights), 1.0, colormap, "Mean weight on token 0", "Layer", "Query head");
  spec.query_tokens = position_labels(layers, "layer ");
  spec.key_tokens = position_labels(heads, "head ");
  spec.title = "Attention sinks in " + model + ": how much each head puts on the first token";
  spec.subtitle = count_of(s.tokens, "token") + " · mean over queries 1.." + std::to_string(s.tokens - 1) +
                  " · a head spreading its weight evenly would put " + format_fixed(s.uniform, 3) +
                  " there · every layer under a " + std::to_string(s.window) +
                  "-key window: KL(full ‖ windowed) of the next token = " + format_g(s.kl_evicted, 3) +
                  " nats with token 0 evicted, " + format_g(s.kl_kept, 3) + " with it kept as a sink";
  return heatmap_figure(spec);
}

Figure rope_bands_figure(const ModelRopeLesson& r, const std::string& model, const std::string& colormap) {
  const std::size_t layers = r.band_share.size(), heads = layers ? r.band_share[0].size() : 0;
  const std::size_t pairs = r.frequencies.size();
  Tensor2 shares = Tensor2::from_shape({layers * heads, pairs});
  std::vector<std::string> rows;
  double top = 0;
  for (std::size_t l = 0; l < layers; ++l)
    for (std::size_t h = 0; h < heads; ++h) {
      rows.push_back("L" + std::to_string(l) + " H" + std::to_string(h));
      for (std::size_t f = 0; f < pairs; ++f) {
        shares(l * heads + h, f) = float(r.band_share[l][h][f]);
        top = std::max(top, r.band_share[l][h][f]);
      }
    }
  HeatmapSpec spec = scaled_table(std::move(shares), std::max(top, 1e-12), colormap, "Share of q·k length",
                                  "Layer, query head", "Rotate-half pair f (dims f, f + d/2), fastest first");
  spec.query_tokens = std::move(rows);
  spec.key_tokens = position_labels(pairs, "f");
  spec.title = "RoPE in " + model + ": which rotation speeds each head's q and k use";
  const double slow = r.frequencies.back();
  spec.subtitle = "pair f turns θ_f per token: f0 by " + format_g(r.frequencies.front(), 3) + " rad (a turn every " +
                  format_g(2 * std::numbers::pi / r.frequencies.front(), 3) + " tokens), f" + std::to_string(pairs - 1) +
                  " by " + format_g(slow, 3) + " rad (every " + format_g(2 * std::numbers::pi / slow, 3) +
                  " tokens) · a head in the fast pairs tells neighbours apart; the slow pairs barely turn over " +
                  count_of(r.tokens, "token") + " and carry content";
  return heatmap_figure(spec);
}

Figure rope_distance_figure(const ModelRopeLesson& r, const std::string& model) {
  // The heads whose mean q.k by distance the rotation changes most and least.
  struct Head {
    std::size_t layer, head;
    double change;
  };
  std::vector<Head> heads;
  for (std::size_t l = 0; l < r.score_rotated.size(); ++l)
    for (std::size_t h = 0; h < r.score_rotated[l].size(); ++h) {
      double change = 0, pairs = 0;  // each distance weighed by its n - d pairs: the far ones are few
      for (std::size_t d = 0; d < r.tokens; ++d) {
        change += double(r.tokens - d) * std::fabs(r.score_rotated[l][h][d] - r.score_raw[l][h][d]);
        pairs += double(r.tokens - d);
      }
      heads.push_back({l, h, change / pairs});
    }
  const auto [least, most] = std::minmax_element(heads.begin(), heads.end(),
                                                 [](const Head& a, const Head& b) { return a.change < b.change; });
  LinePlotSpec spec;
  std::vector<double> distance(r.tokens);
  for (std::size_t d = 0; d < r.tokens; ++d) distance[d] = double(d);
  std::size_t colour = 0;
  for (const Head* h : {&*most, &*least}) {
    const std::string name = "L" + std::to_string(h->layer) + " H" + std::to_string(h->head);
    PlotSeries rotated{name + " with RoPE", distance, r.score_rotated[h->layer][h->head]};
    rotated.color = series_color(colour);
    rotated.marker = r.tokens <= 24 ? Marker::circle : Marker::none;
    PlotSeries raw{name + " without", distance, r.score_raw[h->layer][h->head]};
    raw.color = series_color(colour++);
    raw.dashed = true;
    spec.series.push_back(std::move(rotated));
    if (h == &*least && least == most) break;  // one head: one pair of lines
    spec.series.push_back(std::move(raw));
  }
  spec.references.push_back(ReferenceLine::horizontal(0));
  spec.x = {"Distance i − j between query and key (tokens)", AxisScale::linear, {}, {}, true};
  spec.y = {"Mean q·k / √d", AxisScale::linear};
  spec.title = "RoPE in " + model + ": the mean score by distance, with and without the rotation";
  spec.subtitle = "the same q, k before and after RoPE · the heads it changes most (L" + std::to_string(most->layer) +
                  " H" + std::to_string(most->head) + ") and least (L" + std::to_string(least->layer) + " H" +
                  std::to_string(least->head) + ") · " + count_of(r.tokens, "token") +
                  ", each distance averaged over the query-key pairs that far apart";
  return line_plot_figure(spec);
}

Figure gqa_figure(const GqaLesson& g, const std::string& model, const std::string& colormap) {
  const std::size_t H = g.heads, group = g.heads / g.kv_heads;
  std::vector<std::size_t> shown;  // at most 4 layers, first and last among them
  const std::size_t panels = std::min<std::size_t>(4, g.layers);
  for (std::size_t p = 0; p < panels; ++p) shown.push_back(panels == 1 ? 0 : p * (g.layers - 1) / (panels - 1));
  std::vector<HeatmapSpec> specs;
  for (std::size_t l : shown) {
    Tensor2 similarity = Tensor2::from_shape({H, H});
    for (std::size_t h = 0; h < H; ++h)
      for (std::size_t k = 0; k < H; ++k) similarity(h, k) = float(1 - g.divergence[l][h][k] / std::numbers::ln2);
    HeatmapSpec spec = scaled_table(std::move(similarity), 1.0, colormap, "1 − JS / ln 2", "Query head", "Query head");
    spec.query_tokens = spec.key_tokens = position_labels(H, "h");
    for (std::size_t h = 0; h < H; ++h)
      for (std::size_t k = 0; k < H; ++k)
        if (h != k && h / group == k / group) spec.outlined.push_back({h, k});
    spec.title = "layer " + std::to_string(l);
    spec.colorbar = l == shown.back();
    specs.push_back(std::move(spec));
  }
  auto mean = [](double x) { return std::isnan(x) ? std::string("none") : format_fixed(1 - x / std::numbers::ln2, 3); };
  return heatmap_row_figure(
      specs, "Grouped-query heads in " + model + ": do heads that share keys and values attend alike?",
      std::to_string(H) + " query heads share " + std::to_string(g.kv_heads) + " key/value heads (" +
          std::to_string(group) + " each; pairs outlined) · 1 = the same attention rows · mean " + mean(g.within) +
          " for pairs that share, " + mean(g.across) + " for the others · KV cache per token (bf16): " +
          std::to_string(g.bytes_gqa) + " bytes, against " + std::to_string(g.bytes_mha) + " for multi-head and " +
          std::to_string(g.bytes_mqa) + " for multi-query");
}

}  // namespace attn
