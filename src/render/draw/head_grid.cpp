#include "attn/render/draw/head_grid.hpp"

#include <algorithm>
#include <cmath>
#include <memory>

#include "attn/engine/core/error.hpp"
#include "attn/engine/attention/sdpa.hpp"
#include "attn/render/draw/heatmap.hpp"
#include "figure_parts.hpp"

namespace attn {

namespace {

// Panel p < H is head p; panel H is the mean. A cell of the mean is masked only when it is
// masked in every head (otherwise it averages real weights with zeros).
bool masked_cell(const HeadGridSpec& s, std::size_t H, std::size_t p, std::size_t i, std::size_t j) {
  if (!s.allowed) return false;
  const Mask3& a = *s.allowed;
  if (a.shape(0) == 1) return !a(0, i, j);
  if (p < H) return !a(p, i, j);
  for (std::size_t h = 0; h < H; ++h) if (a(h, i, j)) return false;
  return true;
}

bool any_masked_cell(const HeadGridSpec& s, std::size_t H, std::size_t Lq, std::size_t Lk) {
  for (std::size_t i = 0; i < Lq; ++i)
    for (std::size_t j = 0; j < Lk; ++j)
      for (std::size_t p = 0; p < H; ++p)
        if (masked_cell(s, H, p, i, j)) return true;
  return false;
}

void check_spec(const HeadGridSpec& spec) {
  const std::size_t H = spec.weights.shape(0), Lq = spec.weights.shape(1), Lk = spec.weights.shape(2);
  render::check_labels(spec.query_tokens, Lq, "query tokens");
  render::check_labels(spec.key_tokens, Lk, "key tokens");
  render::check_labels(spec.panel_titles, H, "panel titles");
  if (spec.allowed && ((spec.allowed->shape(0) != 1 && spec.allowed->shape(0) != H) ||
                       spec.allowed->shape(1) != Lq || spec.allowed->shape(2) != Lk)) {
    throw InputError("mask: expected shape [1 or " + std::to_string(H) + ", " + std::to_string(Lq) +
                     ", " + std::to_string(Lk) + "], got " + shape_string(spec.allowed->shape()));
  }
}

// One scale for the whole picture: the spec's, else the log one when every head would get it
// alone (the subtitle then says so), else the weights' own.
ColorScale grid_scale(HeadGridSpec& s) {
  const std::size_t H = s.weights.shape(0);
  ColorScale scale = color_scale_for({s.weights.data(), s.weights.size()}, s.vmax);
  if (s.scale) {
    scale = *s.scale;
  } else if (s.auto_log && !s.vmax && s.allowed) {
    std::optional<ColorScale> log;
    for (std::size_t h = 0; h < H; ++h) {
      const Tensor2 w = xt::view(s.weights, h, xt::all(), xt::all());
      const Mask2 a = xt::view(*s.allowed, s.allowed->shape(0) == 1 ? 0 : h, xt::all(), xt::all());
      log = long_causal_log_scale(w, a);
      if (!log) break;
    }
    if (log) {
      scale = *log;
      s.subtitle = render::with_note(s.subtitle, kLongCausalLogNote);
    }
  }
  return scale;
}

std::size_t grid_columns(const HeadGridSpec& s, std::size_t n_panels) {
  return s.columns ? std::min(n_panels, s.columns)
                   : std::min<std::size_t>(n_panels, static_cast<std::size_t>(
                                                         std::ceil(std::sqrt(1.5 * static_cast<double>(n_panels)))));
}

// One panel per head, then the mean when the spec asks for it.
std::vector<std::shared_ptr<render::MatrixPanel>> head_panels(const std::shared_ptr<const HeadGridSpec>& s,
                                                              const std::shared_ptr<const Colormap>& cmap,
                                                              const ColorScale& scale) {
  const std::size_t H = s->weights.shape(0), Lq = s->weights.shape(1), Lk = s->weights.shape(2);
  auto mean = std::make_shared<Tensor2>(mean_over_heads(s->weights));
  auto masked = [s, H](std::size_t p, std::size_t i, std::size_t j) { return masked_cell(*s, H, p, i, j); };
  const std::size_t n_panels = H + (s->show_mean ? 1 : 0);
  std::vector<std::shared_ptr<render::MatrixPanel>> panels;
  for (std::size_t p = 0; p < n_panels; ++p) {
    auto panel = std::make_shared<render::MatrixPanel>();
    panel->rows = Lq;
    panel->cols = Lk;
    panel->row_labels = s->query_tokens;
    panel->col_labels = s->key_tokens;
    panel->title = p < H ? (s->panel_titles.empty() ? "Head " + std::to_string(p) : s->panel_titles[p])
                         : "Mean of " + std::to_string(H) + " heads";
    panel->cell = render::cell_size_for(Lq, Lk, s->panel_points, 2, 36);
    panel->label_size = 9;
    panel->title_size = 11;
    panel->cell_at = [s, mean, cmap, scale, masked, p, H](std::size_t i, std::size_t j) {
      if (masked(p, i, j)) return render::Cell{{}, true, std::nullopt, ""};
      const double w = p < H ? s->weights(p, i, j) : (*mean)(i, j);
      return render::Cell{cmap->at(scale.position(w)), false, w, ""};
    };
    panels.push_back(panel);
  }
  return panels;
}

// Every slot is as large as the largest panel, with the grids aligned across slots.
struct Slots {
  double grid_x = 0, grid_y = 0, width = 0, height = 0;
  std::size_t label_step = 1;  // the thinnest labelling of any panel
};

Slots common_slots(const std::vector<render::PanelLayout>& layouts) {
  Slots s;
  double right = 0, below = 0;
  for (const auto& l : layouts) {
    s.grid_x = std::max(s.grid_x, l.grid_x);
    s.grid_y = std::max(s.grid_y, l.grid_y);
    right = std::max(right, l.width - l.grid_x);
    below = std::max(below, l.height - l.grid_y);
  }
  s.width = s.grid_x + right;
  s.height = s.grid_y + below;
  for (const auto& l : layouts) s.label_step = std::max(s.label_step, l.label_step);
  return s;
}

// The heads' cells outside the scale (the mean's lie between theirs), as the subtitle says it.
std::string outside_note(const HeadGridSpec& s, const ColorScale& scale) {
  const std::size_t H = s.weights.shape(0), Lq = s.weights.shape(1), Lk = s.weights.shape(2);
  OutsideScale outside_count = count_outside_scale(s.weights, s.allowed, scale);
  if (s.scale && s.scale->log) {
    for (std::size_t p = 0; p < H; ++p)
      for (std::size_t i = 0; i < Lq; ++i)
        for (std::size_t j = 0; j < Lk; ++j) outside_count.below -= !masked_cell(s, H, p, i, j) && s.weights(p, i, j) == 0;
  }
  return outside_scale_note(outside_count, scale);
}

}  // namespace

Figure head_grid_figure(const HeadGridSpec& spec) {
  check_spec(spec);
  const std::size_t H = spec.weights.shape(0), Lq = spec.weights.shape(1), Lk = spec.weights.shape(2);
  auto s = std::make_shared<HeadGridSpec>(spec);
  if (s->query_tokens.empty()) s->query_tokens = position_labels(Lq);
  if (s->key_tokens.empty()) s->key_tokens = position_labels(Lk);
  const auto cmap = std::make_shared<Colormap>(Colormap::by_name(s->colormap));
  const ColorScale scale = grid_scale(*s);
  const bool any_masked = any_masked_cell(*s, H, Lq, Lk);

  const std::vector<std::shared_ptr<render::MatrixPanel>> panels = head_panels(s, cmap, scale);
  const std::size_t n_panels = panels.size(), ncols = grid_columns(*s, n_panels);
  const std::size_t nrows = (n_panels + ncols - 1) / ncols;
  std::vector<render::PanelLayout> layouts;
  Canvas m = Canvas::measuring();
  for (const auto& panel : panels) layouts.push_back(render::layout_panel(m, *panel));
  const Slots slots = common_slots(layouts);
  s->subtitle = render::with_note(s->subtitle, render::label_thinning_note(slots.label_step, Lq));
  const std::string outside = outside_note(*s, scale);
  s->subtitle = render::with_note(s->subtitle, outside);
  const double margin = 16, gap = 18;
  const double panels_w = static_cast<double>(ncols) * slots.width + static_cast<double>(ncols - 1) * gap;
  const double panels_h = static_cast<double>(nrows) * slots.height + static_cast<double>(nrows - 1) * gap;
  const double bar_w = render::colorbar_width(m, scale.vmin, scale.vmax, s->value_label, scale.log);
  const TextSize legend = any_masked ? render::masked_legend_size(m) : TextSize{};
  // The legend starts under the first grid's left edge, so the body must reach past its end too.
  const double body_w = std::max(panels_w + gap + bar_w, slots.grid_x + legend.width);
  const render::FigureFrame frame =
      render::frame_figure(m, s->title, s->subtitle, {body_w, legend.width}, 0, margin);

  Figure f;
  f.title = frame.titles.title;
  f.subtitle = frame.titles.subtitle;
  const double x0 = frame.centred_x(body_w), y0 = frame.body_y();
  std::vector<std::pair<double, double>> origins;
  for (std::size_t p = 0; p < n_panels; ++p) {
    const double sx = x0 + static_cast<double>(p % ncols) * (slots.width + gap);
    const double sy = y0 + static_cast<double>(p / ncols) * (slots.height + gap);
    origins.emplace_back(sx + slots.grid_x - layouts[p].grid_x, sy + slots.grid_y - layouts[p].grid_y);
    f.grids.push_back(render::panel_grid(*panels[p], layouts[p], origins.back().first, origins.back().second));
  }
  const double bar_x = x0 + panels_w + gap, bar_y = y0 + slots.grid_y;
  const double bar_h = render::colorbar_height(m, panels_h - slots.grid_y, s->value_label);
  const double legend_y = y0 + std::max(panels_h, slots.grid_y + bar_h) + 10;
  f.width = frame.width();
  f.height = legend_y + (any_masked ? legend.height + 4 : -10) + margin;
  if (!outside.empty()) f.notes.push_back(outside);
  f.draw = [=](Canvas& c) {
    frame.draw_title(c);
    for (std::size_t p = 0; p < n_panels; ++p) {
      render::draw_panel(c, *panels[p], layouts[p], origins[p].first, origins[p].second);
    }
    render::draw_colorbar(c, *cmap, scale.vmin, scale.vmax, bar_x, bar_y, bar_h, s->value_label, scale.log);
    if (any_masked) render::draw_masked_legend(c, x0 + slots.grid_x, legend_y);
  };
  return f;
}

}  // namespace attn
