#include "attn/render/heatmap.hpp"

#include <algorithm>
#include <memory>

#include "attn/engine/error.hpp"
#include "figure_parts.hpp"

namespace attn {

ColorScale color_scale_for(std::span<const float> values, std::optional<double> vmax,
                           std::optional<double> vmin) {
  double lo = 0, hi = 0;
  for (float v : values) {
    lo = std::min(lo, static_cast<double>(v));
    hi = std::max(hi, static_cast<double>(v));
  }
  if (vmax) hi = *vmax;
  if (vmin) lo = *vmin;
  if (!(hi > lo)) hi = lo + 1;  // all zeros (a fully masked matrix): any scale will do
  return {lo, hi};
}

std::vector<std::string> position_labels(std::size_t n, const std::string& prefix) {
  std::vector<std::string> labels;
  for (std::size_t i = 0; i < n; ++i) labels.push_back(prefix + std::to_string(i));
  return labels;
}

std::optional<ColorScale> long_causal_log_scale(const Tensor2& weights, const Mask2& allowed) {
  const std::size_t Lq = weights.shape(0), Lk = weights.shape(1);
  if (Lq < 16) return std::nullopt;
  std::size_t fewest = Lk, most = 0;
  for (std::size_t i = 0; i < Lq; ++i) {
    std::size_t seen = 0;
    for (std::size_t j = 0; j < Lk; ++j) seen += allowed(i, j);
    if (seen == 0) continue;  // a fully masked row shares nothing
    fewest = std::min(fewest, seen);
    most = std::max(most, seen);
  }
  if (most < 8 * fewest) return std::nullopt;
  for (float w : weights)
    if (!(w >= 0 && w <= 1)) return std::nullopt;  // not attention weights
  ColorScale scale;
  scale.log = true;
  scale.vmax = 1;
  scale.vmin = std::pow(10.0, std::floor(std::log10(1.0 / (2.0 * double(Lk)))));
  return scale;
}

Figure heatmap_figure(const HeatmapSpec& spec) {
  const std::size_t Lq = spec.weights.shape(0), Lk = spec.weights.shape(1);
  render::check_labels(spec.query_tokens, Lq, "query tokens");
  render::check_labels(spec.key_tokens, Lk, "key tokens");
  if (spec.allowed && (spec.allowed->shape(0) != Lq || spec.allowed->shape(1) != Lk)) {
    throw InputError("mask: expected shape " + shape_string(spec.weights.shape()) + ", got " +
                     shape_string(spec.allowed->shape()));
  }
  // The drawing closure outlives this call: it owns copies of everything it reads.
  auto s = std::make_shared<HeatmapSpec>(spec);
  if (s->query_tokens.empty()) s->query_tokens = position_labels(Lq);
  if (s->key_tokens.empty()) s->key_tokens = position_labels(Lk);
  const auto cmap = std::make_shared<Colormap>(Colormap::by_name(s->colormap));
  ColorScale scale = color_scale_for({s->weights.data(), s->weights.size()}, s->vmax, s->vmin);
  if (s->auto_log && !s->vmax && !s->vmin && s->allowed) {
    if (const auto log = long_causal_log_scale(s->weights, *s->allowed)) {
      scale = *log;
      s->subtitle += std::string(s->subtitle.empty() ? "" : " · ") + "log colour scale: query i shares its weight among "
                     "the i + 1 keys it sees, so on a linear scale the later rows would look empty";
    }
  }
  const bool any_masked =
      s->allowed && std::find(s->allowed->begin(), s->allowed->end(), false) != s->allowed->end();

  auto panel = std::make_shared<render::MatrixPanel>();
  panel->rows = Lq;
  panel->cols = Lk;
  panel->row_labels = s->query_tokens;
  panel->col_labels = s->key_tokens;
  panel->row_title = s->row_title;
  panel->col_title = s->col_title;
  panel->cell = render::cell_size_for(Lq, Lk, 520, 2, 64);
  panel->cell_at = [s, cmap, scale](std::size_t i, std::size_t j) {
    if (s->allowed && !(*s->allowed)(i, j)) return render::Cell{{}, true, std::nullopt, ""};
    const double w = s->weights(i, j);
    return render::Cell{cmap->at(scale.position(w)), false, w, ""};
  };

  Canvas m = Canvas::measuring();
  const render::PanelLayout pl = render::layout_panel(m, *panel);
  s->subtitle = render::with_note(s->subtitle, render::label_thinning_note(pl.label_step, Lq));
  const double margin = 16, gap = 14;
  const double bar_w = render::colorbar_width(m, scale.vmin, scale.vmax, s->value_label, scale.log);
  const TextSize legend = any_masked ? render::masked_legend_size(m) : TextSize{};
  const double grid_h = panel->cell * static_cast<double>(Lq);
  const double bar_h = std::max(grid_h, 120.0);

  Figure f;
  // The legend starts under the grid's left edge, so the body must reach past its end too.
  const double body_w = std::max(pl.width + gap + bar_w, pl.grid_x + legend.width);
  const render::TitleBlock titles{s->title, s->subtitle, std::max({body_w, legend.width, 480.0})};
  const TextSize title = render::title_block_size(m, titles);
  const double title_h = title.height;
  const double content_w = std::max({body_w, title.width, legend.width});
  const double panel_x = margin + (content_w - body_w) / 2;
  const double panel_y = margin + title_h;
  const double bar_x = panel_x + pl.width + gap, bar_y = panel_y + pl.grid_y;
  const double legend_y = panel_y + std::max(pl.height, pl.grid_y + bar_h) + 10;
  f.width = content_w + 2 * margin;
  f.height = legend_y + (any_masked ? legend.height + 4 : 0) + margin - (any_masked ? 0 : 10);
  f.grids.push_back(render::panel_grid(*panel, pl, panel_x, panel_y));
  const double cx = f.width / 2;
  f.draw = [=](Canvas& c) {
    render::draw_title_block(c, titles, cx, margin);
    render::draw_panel(c, *panel, pl, panel_x, panel_y);
    render::draw_colorbar(c, *cmap, scale.vmin, scale.vmax, bar_x, bar_y, bar_h, s->value_label, scale.log);
    if (any_masked) render::draw_masked_legend(c, panel_x + pl.grid_x, legend_y);
  };
  return f;
}

}  // namespace attn
