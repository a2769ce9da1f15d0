#include "attn/render/draw/heatmap.hpp"

#include <algorithm>
#include <stdexcept>
#include <memory>

#include "attn/engine/core/error.hpp"
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
  if (allowed.shape(0) != Lq || allowed.shape(1) != Lk)
    throw std::logic_error("long_causal_log_scale: the mask's shape differs from the weights'");
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

OutsideScale count_outside_scale(const Tensor3& weights, const std::optional<Mask3>& allowed,
                                 const ColorScale& scale) {
  OutsideScale n;
  const double slack = 1e-6 * std::max(std::fabs(scale.vmin), std::fabs(scale.vmax));  // float rounding is not clipping
  for (std::size_t h = 0; h < weights.shape(0); ++h)
    for (std::size_t i = 0; i < weights.shape(1); ++i)
      for (std::size_t j = 0; j < weights.shape(2); ++j) {
        if (allowed && !(*allowed)(allowed->shape(0) == 1 ? 0 : h, i, j)) continue;
        const double v = weights(h, i, j);
        ++n.visible;
        n.below += v < scale.vmin - slack;
        n.above += v > scale.vmax + slack;
      }
  return n;
}

std::string outside_scale_note(const OutsideScale& n, const ColorScale& scale) {
  const std::string of = " of " + std::to_string(n.visible) + " cells lie ";
  std::string note;
  if (n.below > 0) {
    note = std::to_string(n.below) + of + "below the colour scale's " + (scale.log ? "floor " : "bottom ") +
           render::tick_label(scale.vmin) + " and are drawn in its lowest colour";
  }
  if (n.above > 0) {
    note = render::with_note(note, std::to_string(n.above) + of + "above the colour scale's top " +
                                       render::tick_label(scale.vmax) + " and are drawn in its highest colour");
  }
  return note;
}

std::string row_sum_note(const Tensor3& weights, const std::optional<Mask3>& allowed) {
  std::size_t rows = 0, off = 0;
  double lo = 0, hi = 0;
  for (std::size_t h = 0; h < weights.shape(0); ++h)
    for (std::size_t i = 0; i < weights.shape(1); ++i) {
      double sum = 0;
      for (std::size_t j = 0; j < weights.shape(2); ++j)
        if (!allowed || (*allowed)(allowed->shape(0) == 1 ? 0 : h, i, j)) sum += weights(h, i, j);
      ++rows;
      if (std::fabs(sum - 1) <= 1e-3 || std::fabs(sum) <= 1e-3) continue;
      lo = off == 0 ? sum : std::min(lo, sum);
      hi = off == 0 ? sum : std::max(hi, sum);
      ++off;
    }
  if (off == 0) return "";
  return std::to_string(off) + " of " + std::to_string(rows) + (rows == 1 ? " row" : " rows") + (off == 1 ? " does" : " do") +
         " not sum to 1 (" + (off == 1 ? "its sum " + render::tick_label(lo)
                                      : "sums " + render::tick_label(lo) + " to " + render::tick_label(hi)) +
         "): not softmax weights?";
}

namespace {

// One heatmap's panel, colour scale and colorbar, laid out but not yet placed: a figure holds
// one (heatmap_figure) or two side by side (heatmap_pair_figure).
struct HeatmapBody {
  std::shared_ptr<HeatmapSpec> spec;
  std::shared_ptr<Colormap> cmap;
  ColorScale scale;
  std::shared_ptr<render::MatrixPanel> panel;
  render::PanelLayout layout;
  double bar_w = 0, bar_h = 0;
  bool any_masked = false;
  std::string outside;  // outside_scale_note, already in the subtitle
  static constexpr double kGap = 14;

  // Without its colorbar (HeatmapSpec::colorbar false) a body is its panel alone.
  double width() const { return spec->colorbar ? layout.width + kGap + bar_w : layout.width; }
  double height() const { return spec->colorbar ? std::max(layout.height, layout.grid_y + bar_h) : layout.height; }
  void draw(Canvas& c, double x, double y) const {
    render::draw_panel(c, *panel, layout, x, y);
    const double cell = panel->cell, line = std::clamp(cell * 0.12, 1.5, 3.0);
    for (const auto& [i, j] : spec->outlined)
      c.stroke_rect(x + layout.grid_x + double(j) * cell + line / 2, y + layout.grid_y + double(i) * cell + line / 2,
                    cell - line, cell - line, kOutlineColor, line);
    if (spec->colorbar)
      render::draw_colorbar(c, *cmap, scale.vmin, scale.vmax, x + layout.width + kGap, y + layout.grid_y, bar_h,
                            spec->value_label, scale.log);
  }
};

HeatmapBody heatmap_body(Canvas& m, const HeatmapSpec& spec, double target) {
  const std::size_t Lq = spec.weights.shape(0), Lk = spec.weights.shape(1);
  render::check_labels(spec.query_tokens, Lq, "query tokens");
  render::check_labels(spec.key_tokens, Lk, "key tokens");
  for (const auto& [i, j] : spec.outlined)
    if (i >= Lq || j >= Lk) throw InputError("outlined cell (" + std::to_string(i) + ", " + std::to_string(j) + ") outside the map");
  if (spec.allowed && (spec.allowed->shape(0) != Lq || spec.allowed->shape(1) != Lk)) {
    throw InputError("mask: expected shape " + shape_string(spec.weights.shape()) + ", got " +
                     shape_string(spec.allowed->shape()));
  }
  HeatmapBody b;
  // The drawing closure outlives this call: it owns copies of everything it reads.
  auto s = std::make_shared<HeatmapSpec>(spec);
  if (s->query_tokens.empty()) s->query_tokens = position_labels(Lq);
  if (s->key_tokens.empty()) s->key_tokens = position_labels(Lk);
  b.spec = s;
  b.cmap = std::make_shared<Colormap>(Colormap::by_name(s->colormap));
  b.scale = color_scale_for({s->weights.data(), s->weights.size()}, s->vmax, s->vmin);
  if (s->auto_log && !s->vmax && !s->vmin && s->allowed) {
    if (const auto log = long_causal_log_scale(s->weights, *s->allowed)) {
      b.scale = *log;
      s->subtitle = render::with_note(s->subtitle, kLongCausalLogNote);
    }
  }
  b.any_masked = s->allowed && std::find(s->allowed->begin(), s->allowed->end(), false) != s->allowed->end();
  const std::optional<Mask3> allowed3 =
      s->allowed ? std::optional<Mask3>(xt::expand_dims(*s->allowed, 0)) : std::nullopt;
  b.outside = outside_scale_note(count_outside_scale(xt::expand_dims(s->weights, 0), allowed3, b.scale), b.scale);
  s->subtitle = render::with_note(s->subtitle, b.outside);

  b.panel = std::make_shared<render::MatrixPanel>();
  render::MatrixPanel& panel = *b.panel;
  panel.rows = Lq;
  panel.cols = Lk;
  panel.row_labels = s->query_tokens;
  panel.col_labels = s->key_tokens;
  panel.row_title = s->row_title;
  panel.col_title = s->col_title;
  panel.cell = render::cell_size_for(Lq, Lk, target, 2, 64);
  const auto cmap = b.cmap;
  const ColorScale scale = b.scale;
  panel.cell_at = [s, cmap, scale](std::size_t i, std::size_t j) {
    if (s->allowed && !(*s->allowed)(i, j)) return render::Cell{{}, true, std::nullopt, ""};
    const double w = s->weights(i, j);
    return render::Cell{cmap->at(scale.position(w)), false, w, ""};
  };
  b.layout = render::layout_panel(m, panel);
  s->subtitle = render::with_note(s->subtitle, render::label_thinning_note(b.layout.label_step, Lq));
  b.bar_w = render::colorbar_width(m, b.scale.vmin, b.scale.vmax, s->value_label, b.scale.log);
  b.bar_h = render::colorbar_height(m, panel.cell * static_cast<double>(Lq), s->value_label);
  return b;
}

}  // namespace

Figure heatmap_figure(const HeatmapSpec& spec) {
  Canvas m = Canvas::measuring();
  const HeatmapBody b = heatmap_body(m, spec, 520);
  const double margin = 16;
  const TextSize legend = b.any_masked ? render::masked_legend_size(m) : TextSize{};

  Figure f;
  // The legend starts under the grid's left edge, so the body must reach past its end too.
  const double body_w = std::max(b.width(), b.layout.grid_x + legend.width);
  const render::TitleBlock titles{b.spec->title, b.spec->subtitle, std::max({body_w, legend.width, 480.0})};
  const TextSize title = render::title_block_size(m, titles);
  const double content_w = std::max({body_w, title.width, legend.width});
  const double panel_x = margin + (content_w - body_w) / 2;
  const double panel_y = margin + title.height;
  f.title = titles.title;
  f.subtitle = titles.subtitle;
  const double legend_y = panel_y + b.height() + 10;
  f.width = content_w + 2 * margin;
  f.height = legend_y + (b.any_masked ? legend.height + 4 : 0) + margin - (b.any_masked ? 0 : 10);
  f.grids.push_back(render::panel_grid(*b.panel, b.layout, panel_x, panel_y));
  if (!b.outside.empty()) f.notes.push_back(b.outside);
  const double cx = f.width / 2;
  f.draw = [=](Canvas& c) {
    render::draw_title_block(c, titles, cx, margin);
    b.draw(c, panel_x, panel_y);
    if (b.any_masked) render::draw_masked_legend(c, panel_x + b.layout.grid_x, legend_y);
  };
  return f;
}

namespace {

// heatmap_row_figure's panels laid out: each spec's title over its own panel (measured here,
// drawn by the figure), the bodies left to right with a gap between them.
struct HeatmapRow {
  std::vector<HeatmapBody> bodies;
  std::vector<std::string> titles;
  std::vector<TextStyle> title_styles;
  std::vector<std::string> notes;     // "<panel title>: <outside-scale note>"
  std::vector<std::string> thinning;  // label_thinning_note of the panels whose labels are thinned, once each
  double head_h = 0, width = 0, height = 0;
  bool any_masked = false, any_log = false;
  static constexpr double kGap = 36;
};

HeatmapRow lay_out_row(Canvas& m, const std::vector<HeatmapSpec>& specs) {
  if (specs.empty()) throw InputError("a row of heatmaps needs at least one panel");
  HeatmapRow row;
  for (const HeatmapSpec& spec : specs) {
    HeatmapSpec untitled = spec;
    untitled.title.clear();
    row.bodies.push_back(heatmap_body(m, untitled, 400));
    const HeatmapBody& b = row.bodies.back();
    row.titles.push_back(spec.title);
    row.title_styles.push_back({12, true, {0.1, 0.1, 0.1}, b.width(), true});
    row.head_h = std::max(row.head_h, m.measure(spec.title, row.title_styles.back()).height + 8);
    row.width += b.width() + (row.bodies.size() > 1 ? HeatmapRow::kGap : 0);
    row.height = std::max(row.height, b.height());
    row.any_masked = row.any_masked || b.any_masked;
    row.any_log = row.any_log || b.scale.log;
    if (!b.outside.empty()) row.notes.push_back(spec.title + ": " + b.outside);
    const std::string thin = render::label_thinning_note(b.layout.label_step, b.panel->rows);
    if (!thin.empty() && std::find(row.thinning.begin(), row.thinning.end(), thin) == row.thinning.end())
      row.thinning.push_back(thin);
  }
  return row;
}

}  // namespace

Figure heatmap_row_figure(const std::vector<HeatmapSpec>& specs, const std::string& title,
                          const std::string& subtitle) {
  Canvas m = Canvas::measuring();
  const HeatmapRow row = lay_out_row(m, specs);
  const double margin = 16;
  const TextSize legend = row.any_masked ? render::masked_legend_size(m) : TextSize{};
  std::string sub = subtitle;
  if (row.any_log) sub += " · log colour scale for the weights (long causal map)";
  for (const std::string& note : row.thinning) sub = render::with_note(sub, note);
  for (const std::string& note : row.notes) sub = render::with_note(sub, note);
  const render::TitleBlock titles{title, sub, std::max({row.width, 480.0})};
  const TextSize t = render::title_block_size(m, titles);
  const double content_w = std::max({row.width, t.width, legend.width});
  const double y0 = margin + t.height + row.head_h;
  std::vector<double> xs{margin + (content_w - row.width) / 2};
  for (std::size_t k = 1; k < row.bodies.size(); ++k)
    xs.push_back(xs.back() + row.bodies[k - 1].width() + HeatmapRow::kGap);
  const double legend_y = y0 + row.height + 10;
  Figure f;
  f.width = content_w + 2 * margin;
  f.height = legend_y + (row.any_masked ? legend.height + 4 : 0) + margin - (row.any_masked ? 0 : 10);
  for (std::size_t k = 0; k < row.bodies.size(); ++k)
    f.grids.push_back(render::panel_grid(*row.bodies[k].panel, row.bodies[k].layout, xs[k], y0));
  f.notes = row.notes;
  f.title = titles.title;
  f.subtitle = titles.subtitle;
  const double cx = f.width / 2;
  f.draw = [=](Canvas& c) {
    render::draw_title_block(c, titles, cx, margin);
    for (std::size_t k = 0; k < row.bodies.size(); ++k) {
      const HeatmapBody& b = row.bodies[k];
      const double grid_centre = xs[k] + b.layout.grid_x + b.panel->cell * static_cast<double>(b.panel->cols) / 2;
      c.text(row.titles[k], grid_centre, y0 - row.head_h, row.title_styles[k], 0.5, 0);
      b.draw(c, xs[k], y0);
    }
    if (row.any_masked) render::draw_masked_legend(c, xs[0] + row.bodies[0].layout.grid_x, legend_y);
  };
  return f;
}

Figure heatmap_pair_figure(const HeatmapSpec& left, const HeatmapSpec& right, const std::string& title,
                           const std::string& subtitle) {
  return heatmap_row_figure({left, right}, title, subtitle);
}

}  // namespace attn
