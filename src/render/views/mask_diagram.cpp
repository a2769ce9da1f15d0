#include "attn/render/views/mask_diagram.hpp"

#include <algorithm>
#include <memory>

#include "attn/engine/core/error.hpp"
#include "draw/figure_parts.hpp"

namespace attn {

std::vector<std::string> time_labels(std::size_t n, std::size_t first) {
  std::vector<std::string> labels;
  for (std::size_t i = 0; i < n; ++i) labels.push_back("t=" + std::to_string(first + i));
  return labels;
}

namespace {

const Rgb kBlockedRed = rgb_from_hex(0xd6604d), kAllowedGreen = rgb_from_hex(0x41ab5d), kOff = rgb_from_hex(0xf7f7f7);

// One of a row's two views of its mask: what is added to the score (blocked) or the bool mask.
std::shared_ptr<render::MatrixPanel> mask_panel(const MaskDiagramRow& row, const std::string& axis_noun, bool blocked_view) {
  const std::size_t Lq = row.allowed.shape(0), Lk = row.allowed.shape(1);
  auto allowed = std::make_shared<Mask2>(row.allowed);
  auto p = std::make_shared<render::MatrixPanel>();
  p->rows = Lq;
  p->cols = Lk;
  p->row_labels = row.query_labels.empty() ? time_labels(Lq) : row.query_labels;
  p->col_labels = row.key_labels.empty() ? time_labels(Lk) : row.key_labels;
  p->title = blocked_view ? "Blocked: −∞ added to the score" : "Allowed: 1 = may attend (bool mask)";
  p->row_title = "Query " + axis_noun + " — attending";
  p->col_title = "Key " + axis_noun + " — attended to";
  p->cell = render::cell_size_for(Lq, Lk, 300, 2, 44);
  // A few queries against many keys (decode: one row of 48 keys) would be a strip a few
  // points tall: its rows grow to make the grid at least 40 points high.
  if (double(Lq) * p->cell < 40) p->cell_h = std::min(44.0, 40.0 / double(Lq));
  p->label_size = 10;
  const Rgb blocked_red = kBlockedRed, allowed_green = kAllowedGreen, off = kOff;
  p->cell_at = [allowed, blocked_view, blocked_red, allowed_green, off](std::size_t i, std::size_t j) {
    const bool ok = (*allowed)(i, j);
    if (blocked_view) return render::Cell{ok ? off : blocked_red, false, std::nullopt, ok ? "0" : "−∞"};
    return render::Cell{ok ? allowed_green : off, false, std::nullopt, ok ? "1" : "0"};
  };
  return p;
}

struct PlacedPanel {
  std::shared_ptr<render::MatrixPanel> panel;
  render::PanelLayout layout;
};

// The subtitle's note on thinned labels: the thinnest panel's step, over the longest axis.
std::string mask_thinning_note(const std::vector<PlacedPanel>& placed, const std::string& axis_noun) {
  std::size_t label_step = 1, rows = 0;
  for (const auto& pl : placed) {
    label_step = std::max(label_step, pl.layout.label_step);
    rows = std::max({rows, pl.panel->rows, pl.panel->cols});  // labels are thinned on both axes
  }
  return render::label_thinning_note(label_step, rows, axis_noun);
}

}  // namespace

Figure mask_figure(const MaskDiagramSpec& spec) {
  if (spec.rows.empty()) throw InputError("mask diagram: no mask to draw");
  std::vector<PlacedPanel> placed;
  Canvas m = Canvas::measuring();
  for (const MaskDiagramRow& row : spec.rows) {
    for (bool blocked_view : {true, false}) {
      auto p = mask_panel(row, spec.axis_noun, blocked_view);
      placed.push_back({p, render::layout_panel(m, *p)});
    }
  }

  const double margin = 16, gap = 36, row_gap = 22;
  double pair_w = 0;
  std::vector<double> row_h, caption_h;
  for (std::size_t r = 0; r < spec.rows.size(); ++r) {
    const auto& a = placed[2 * r].layout;
    const auto& b = placed[2 * r + 1].layout;
    pair_w = std::max(pair_w, a.width + gap + b.width);
    const std::string& caption = spec.rows[r].caption;
    caption_h.push_back(caption.empty() ? 0 : m.measure(caption, {11, true}).height + 6);
    row_h.push_back(caption_h.back() + std::max(a.height, b.height));
  }
  const render::TitleBlock titles{spec.title, render::with_note(spec.subtitle, mask_thinning_note(placed, spec.axis_noun)),
                                  std::max(pair_w, 480.0)};
  const TextSize title = render::title_block_size(m, titles);
  const double title_h = title.height;
  const double content_w = std::max(pair_w, title.width);

  Figure f;
  f.title = titles.title;
  f.subtitle = titles.subtitle;
  std::vector<std::pair<double, double>> origins;
  double y = margin + title_h;
  std::vector<double> caption_y;
  for (std::size_t r = 0; r < spec.rows.size(); ++r) {
    const auto& a = placed[2 * r].layout;
    const auto& b = placed[2 * r + 1].layout;
    const double x = margin + (content_w - (a.width + gap + b.width)) / 2;
    caption_y.push_back(y);
    const double py = y + caption_h[r];
    // Align the two grids' tops even if one panel's title block is taller.
    const double top = std::max(a.grid_y, b.grid_y);
    origins.emplace_back(x, py + top - a.grid_y);
    origins.emplace_back(x + a.width + gap, py + top - b.grid_y);
    for (int k = 0; k < 2; ++k) {
      f.grids.push_back(render::panel_grid(*placed[2 * r + k].panel, placed[2 * r + k].layout,
                                           origins[2 * r + k].first, origins[2 * r + k].second));
    }
    y += row_h[r] + (top - std::min(a.grid_y, b.grid_y)) + row_gap;
  }
  f.width = content_w + 2 * margin;
  f.height = y - row_gap + margin;
  const double cx = f.width / 2;
  const MaskDiagramSpec s = spec;
  f.draw = [=](Canvas& c) {
    render::draw_title_block(c, titles, cx, margin);
    for (std::size_t r = 0; r < s.rows.size(); ++r) {
      if (!s.rows[r].caption.empty()) {
        c.text(s.rows[r].caption, margin, caption_y[r], {11, true, rgb_from_hex(0x1a1a1a)});
      }
    }
    for (std::size_t k = 0; k < placed.size(); ++k) {
      render::draw_panel(c, *placed[k].panel, placed[k].layout, origins[k].first, origins[k].second);
    }
  };
  return f;
}

}  // namespace attn
