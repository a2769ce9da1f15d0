// Attention sinks and grouped-query heads, drawn (decoder_lessons_picture.hpp).
#include "attn/render/views/decoder_lessons_picture.hpp"

#include <cmath>
#include <numbers>

#include "attn/io/number_format.hpp"
#include "attn/render/draw/heatmap.hpp"

namespace attn {

Figure sinks_figure(const SinkLesson& s, const std::string& model, const std::string& colormap) {
  const std::size_t layers = s.first_token.size(), heads = layers ? s.first_token[0].size() : 0;
  HeatmapSpec spec;
  spec.weights = Tensor2::from_shape({layers, heads});
  for (std::size_t l = 0; l < layers; ++l)
    for (std::size_t h = 0; h < heads; ++h) spec.weights(l, h) = float(s.first_token[l][h]);
  spec.query_tokens = position_labels(layers, "layer ");
  spec.key_tokens = position_labels(heads, "head ");
  spec.vmin = 0.0, spec.vmax = 1.0;
  spec.auto_log = false;
  spec.colormap = colormap;
  spec.value_label = "Mean weight on token 0";
  spec.row_title = "Layer";
  spec.col_title = "Query head";
  spec.title = "Attention sinks in " + model + ": how much each head puts on the first token";
  spec.subtitle = count_of(s.tokens, "token") + " · mean over queries 1.." + std::to_string(s.tokens - 1) +
                  " · a head spreading its weight evenly would put " + format_fixed(s.uniform, 3) +
                  " there · every layer under a " + std::to_string(s.window) +
                  "-key window: KL(full ‖ windowed) of the next token = " + format_g(s.kl_evicted, 3) +
                  " nats with token 0 evicted, " + format_g(s.kl_kept, 3) + " with it kept as a sink";
  return heatmap_figure(spec);
}

Figure gqa_figure(const GqaLesson& g, const std::string& model, const std::string& colormap) {
  const std::size_t H = g.heads, group = g.heads / g.kv_heads;
  std::vector<std::size_t> shown;  // at most 4 layers, first and last among them
  const std::size_t panels = std::min<std::size_t>(4, g.layers);
  for (std::size_t p = 0; p < panels; ++p) shown.push_back(panels == 1 ? 0 : p * (g.layers - 1) / (panels - 1));
  std::vector<HeatmapSpec> specs;
  for (std::size_t l : shown) {
    HeatmapSpec spec;
    spec.weights = Tensor2::from_shape({H, H});
    for (std::size_t h = 0; h < H; ++h)
      for (std::size_t k = 0; k < H; ++k) spec.weights(h, k) = float(1 - g.divergence[l][h][k] / std::numbers::ln2);
    spec.query_tokens = spec.key_tokens = position_labels(H, "h");
    for (std::size_t h = 0; h < H; ++h)
      for (std::size_t k = 0; k < H; ++k)
        if (h != k && h / group == k / group) spec.outlined.push_back({h, k});
    spec.vmin = 0.0, spec.vmax = 1.0;
    spec.auto_log = false;
    spec.colormap = colormap;
    spec.value_label = "1 − JS / ln 2";
    spec.row_title = spec.col_title = "Query head";
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
