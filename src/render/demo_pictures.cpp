// The pictures of `attn-cli demo`: what seed 000 draws with seaborn, written as files.
#include <filesystem>

#include "attn/demo.hpp"
#include "attn/head_grid.hpp"
#include "attn/heatmap.hpp"
#include "attn/mask_diagram.hpp"

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

}  // namespace

std::vector<Artifact> write_demo_pictures(const DemoResult& r, const std::string& dir,
                                          const DemoPictureOptions& o) {
  std::vector<Artifact> artifacts;
  const std::string quoted = "\"" + r.config.sentence + "\"";
  const std::string d = std::to_string(r.config.d_model);
  const std::size_t L = r.tokens.size();

  HeatmapSpec single;
  single.weights = r.weights;
  single.query_tokens = single.key_tokens = r.tokens;
  single.title = "Self-attention weights: " + quoted;
  single.subtitle = "one head, d_model = " + d + ", seeded untrained projections · each row sums to 1";
  single.colormap = o.colormap;
  save(heatmap_figure(single), dir, "attention", "heatmap", single.title, o, artifacts);

  HeatmapSpec causal = single;
  causal.weights = r.causal_weights;
  causal.allowed = r.causal_allowed;
  causal.title = "Masked (causal) self-attention: " + quoted;
  causal.subtitle = "the same Q, K, V; each token sees only itself and the tokens before it";
  save(heatmap_figure(causal), dir, "attention_causal", "heatmap", causal.title, o, artifacts);

  MaskDiagramSpec mask;
  std::vector<std::string> labels = time_labels(L);
  for (std::size_t i = 0; i < L; ++i) labels[i] += " " + r.tokens[i];
  mask.rows.push_back({r.causal_allowed, labels, time_labels(L), ""});
  mask.title = "Causal mask for " + std::to_string(L) + " tokens";
  mask.subtitle = "query t=i may attend to keys t ≤ i: no looking at the future";
  save(mask_figure(mask), dir, "mask_causal", "mask", mask.title, o, artifacts);

  HeadGridSpec heads;
  heads.weights = r.head_weights;
  heads.query_tokens = heads.key_tokens = r.tokens;
  heads.title = std::to_string(r.config.heads) + "-head self-attention: " + quoted;
  heads.subtitle = "d_model = " + d + ", head dim " + std::to_string(r.config.d_model / r.config.heads) +
                   " · rows: query (attending), columns: key (attended to) · one colour scale";
  heads.colormap = o.colormap;
  save(head_grid_figure(heads), dir, "heads", "heads", heads.title, o, artifacts);
  return artifacts;
}

}  // namespace attn
