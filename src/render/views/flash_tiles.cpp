#include "attn/render/views/flash_tiles_picture.hpp"

#include <algorithm>
#include <memory>

#include "attn/engine/core/error.hpp"
#include "attn/io/number_format.hpp"
#include "attn/render/draw/heatmap.hpp"
#include "attn/engine/attention/tile_math.hpp"
#include "draw/figure_parts.hpp"

namespace attn {
namespace {

using Kind = FlashTile::Kind;

const Rgb kTileEdge = rgb_from_hex(0x1a1a1a);
const Rgb kLegendInk = rgb_from_hex(0x404040);

// Per score (i, j) of one panel: the kind of the tile holding it, and whether the kernel lets
// it through (a diagonal tile's index test hides the scores above the diagonal).
struct ScoreMap {
  std::size_t Lk = 0;
  std::vector<Kind> kind;
  std::vector<bool> visible;
};

ScoreMap score_map(const FlashTilesPanel& panel, std::size_t Lq, std::size_t Lk, std::size_t index) {
  ScoreMap map{Lk, std::vector<Kind>(Lq * Lk, Kind::full), std::vector<bool>(Lq * Lk, true)};
  std::vector<int> covered(Lq * Lk, 0);
  if (panel.allowed.size() && (panel.allowed.shape(0) != Lq || panel.allowed.shape(1) != Lk))
    throw InputError("flash tiles: panel " + std::to_string(index) + "'s mask is not " + std::to_string(Lq) + " x " +
                     std::to_string(Lk));
  for (const FlashTile& t : panel.tiles) {
    if (t.i0 + t.rows > Lq || t.j0 + t.cols > Lk) {
      throw InputError("flash tiles: panel " + std::to_string(index) + " has a tile outside the " +
                       std::to_string(Lq) + " x " + std::to_string(Lk) + " score matrix");
    }
    for (std::size_t i = t.i0; i < t.i0 + t.rows; ++i) {
      for (std::size_t j = t.j0; j < t.j0 + t.cols; ++j) {
        ++covered[i * Lk + j];
        map.kind[i * Lk + j] = t.kind;
        map.visible[i * Lk + j] =
            t.kind == Kind::full ||
            (t.kind == Kind::diagonal && (!panel.causal || tile::causal_visible(long(i), long(j), long(Lq), long(Lk))) &&
             (panel.allowed.size() == 0 || panel.allowed(i, j)));
      }
    }
  }
  if (std::any_of(covered.begin(), covered.end(), [](int c) { return c != 1; })) {
    throw InputError("flash tiles: panel " + std::to_string(index) + " does not cover every score exactly once");
  }
  return map;
}

struct LegendEntry {
  bool hatched;
  Rgb fill;
  std::string text;
};

const char* kSkippedLabel = "skipped";

}  // namespace

Rgb flash_tile_color(FlashTile::Kind kind) {
  switch (kind) {
    case Kind::full: return rgb_from_hex(0x6baed6);      // Blues, mid
    case Kind::diagonal: return rgb_from_hex(0xfdae6b);  // Oranges, mid
    case Kind::skipped: break;
  }
  return rgb_from_hex(0xf7f7f7);  // near the page: nothing happened here
}

namespace {

// The legend under the grids: a swatch and a line for each kind of tile that occurs.
struct TileLegend {
  std::vector<LegendEntry> entries;
  TextStyle style{10, false, kLegendInk};
  double width = 0, line_h = 14;
};

// masked: some panel's tiles were classified by a mask (a block mask), not by causality alone.
TileLegend tile_legend(Canvas& m, const bool (&any)[3], bool any_hidden, bool masked) {
  TileLegend l;
  if (any[static_cast<int>(Kind::full)])
    l.entries.push_back({false, flash_tile_color(Kind::full), "computed in full: every score visible, no index test"});
  if (any[static_cast<int>(Kind::diagonal)])
    l.entries.push_back({false, flash_tile_color(Kind::diagonal),
                         masked ? "partly masked: computed, then each score tested against the mask"
                                : "on the diagonal: computed, then each score tested by its indices"});
  if (any_hidden)
    l.entries.push_back({true, {}, "hidden by that test: score set to −∞ before the softmax"});
  if (any[static_cast<int>(Kind::skipped)])
    l.entries.push_back({false, flash_tile_color(Kind::skipped),
                         masked ? "skipped: the mask hides every score, never read or computed"
                                : "skipped: above the diagonal, never read or computed"});
  for (const LegendEntry& e : l.entries) {
    const TextSize t = m.measure(e.text, l.style);
    l.width = std::max(l.width, 14 + 6 + t.width);
    l.line_h = std::max(l.line_h, t.height + 4);
  }
  return l;
}

void draw_tile_legend(Canvas& c, const TileLegend& l, double x, double y) {
  for (std::size_t k = 0; k < l.entries.size(); ++k) {
    const double ly = y + l.line_h * double(k), sy = ly + l.line_h / 2 - 7;
    if (l.entries[k].hatched) {
      c.hatch_rect(x, sy, 14, 14);
    } else {
      c.fill_rect(x, sy, 14, 14, l.entries[k].fill);
    }
    c.stroke_rect(x, sy, 14, 14, kTileEdge, 0.8);
    c.text(l.entries[k].text, x + 20, ly + l.line_h / 2, l.style, 0, 0.5);
  }
}

// Panel p's grid: each score coloured by its tile's kind, hatched where the diagonal test hid it.
std::shared_ptr<render::MatrixPanel> tiles_panel(const FlashTilesSpec& s, std::size_t p, std::shared_ptr<const ScoreMap> map) {
  auto panel = std::make_shared<render::MatrixPanel>();
  panel->rows = s.Lq;
  panel->cols = s.Lk;
  panel->row_labels = s.query_tokens;
  panel->col_labels = s.key_tokens;
  panel->title = s.panels[p].title;
  panel->row_title = "Query — rows of Q";
  panel->col_title = "Key — rows of K";
  panel->cell = render::cell_size_for(s.Lq, s.Lk, 300, 4, 40);
  panel->label_size = 10;
  panel->cell_at = [map](std::size_t i, std::size_t j) {
    const std::size_t c = i * map->Lk + j;
    if (map->kind[c] == Kind::diagonal && !map->visible[c]) return render::Cell{{}, true, std::nullopt, ""};
    return render::Cell{flash_tile_color(map->kind[c]), false, std::nullopt, ""};
  };
  return panel;
}

// The tile boundaries on top of the cells, and the word "skipped" where it fits.
void draw_tile_edges(Canvas& c, const std::vector<FlashTile>& tiles, const CellGrid& g) {
  for (const FlashTile& t : tiles) {
    const double tx = g.cell_x(t.j0), ty = g.cell_y(t.i0);
    const double tw = g.cell_w * double(t.cols), th = g.cell_h * double(t.rows);
    c.stroke_rect(tx, ty, tw, th, kTileEdge, 1.8);
    if (t.kind == Kind::skipped) {
      const TextStyle word{std::clamp(g.cell_h * 0.3, 7.0, 10.0), false, kLegendInk};
      if (c.measure(kSkippedLabel, word).width <= tw - 6) c.text(kSkippedLabel, tx + tw / 2, ty + th / 2, word, 0.5, 0.5);
    }
  }
}

}  // namespace

Figure flash_tiles_figure(const FlashTilesSpec& spec) {
  const std::size_t Lq = spec.Lq, Lk = spec.Lk;
  if (spec.panels.empty()) throw InputError("flash tiles: no tile grid to draw");
  render::check_labels(spec.query_tokens, Lq, "query tokens");
  render::check_labels(spec.key_tokens, Lk, "key tokens");
  const auto s = std::make_shared<FlashTilesSpec>(spec);
  if (s->query_tokens.empty()) s->query_tokens = position_labels(Lq);
  if (s->key_tokens.empty()) s->key_tokens = position_labels(Lk);

  struct Placed {
    std::shared_ptr<render::MatrixPanel> panel;
    render::PanelLayout layout;
  };
  std::vector<Placed> placed;
  bool any[3] = {false, false, false};
  bool any_hidden = false;
  Canvas m = Canvas::measuring();
  for (std::size_t p = 0; p < s->panels.size(); ++p) {
    const auto map = std::make_shared<ScoreMap>(score_map(s->panels[p], Lq, Lk, p));
    for (std::size_t c = 0; c < map->kind.size(); ++c) {
      any[static_cast<int>(map->kind[c])] = true;
      any_hidden = any_hidden || (map->kind[c] == Kind::diagonal && !map->visible[c]);
    }
    const auto panel = tiles_panel(*s, p, map);
    placed.push_back({panel, render::layout_panel(m, *panel)});
  }

  const bool masked = std::any_of(s->panels.begin(), s->panels.end(), [](const FlashTilesPanel& p) { return p.allowed.size() > 0; });
  const TileLegend legend = tile_legend(m, any, any_hidden, masked);
  const double legend_w = legend.width, line_h = legend.line_h;

  const double margin = 16, gap = 40;
  double row_w = 0, top = 0, bottom = 0;
  for (const Placed& pl : placed) {
    row_w += pl.layout.width + (row_w > 0 ? gap : 0);
    top = std::max(top, pl.layout.grid_y);
    bottom = std::max(bottom, pl.layout.height - pl.layout.grid_y);
  }
  std::size_t label_step = 1;
  for (const Placed& pl : placed) label_step = std::max(label_step, pl.layout.label_step);
  const std::string subtitle =
      render::with_note(s->subtitle, render::label_thinning_note(label_step, placed.front().panel->rows));
  const render::FigureFrame frame = render::frame_figure(m, s->title, subtitle, {row_w, legend_w}, 0, margin);

  Figure f;
  std::vector<std::pair<double, double>> origins;
  double x = frame.centred_x(row_w);
  const double panels_y = frame.body_y();
  for (const Placed& pl : placed) {  // grids' tops aligned even if one title block is taller
    origins.emplace_back(x, panels_y + top - pl.layout.grid_y);
    f.grids.push_back(render::panel_grid(*pl.panel, pl.layout, origins.back().first, origins.back().second));
    x += pl.layout.width + gap;
  }
  const double legend_x = frame.centred_x(legend_w);
  const double legend_y = panels_y + top + bottom + 14;
  f.width = frame.width();
  f.height = legend_y + line_h * static_cast<double>(legend.entries.size()) + margin;
  const std::vector<CellGrid> grids = f.grids;
  f.draw = [=](Canvas& c) {
    frame.draw_title(c);
    for (std::size_t p = 0; p < placed.size(); ++p) {
      render::draw_panel(c, *placed[p].panel, placed[p].layout, origins[p].first, origins[p].second);
      draw_tile_edges(c, s->panels[p].tiles, grids[p]);
    }
    draw_tile_legend(c, legend, legend_x, legend_y);
  };
  return f;
}

std::string tile_shape_text(std::size_t block_q, std::size_t block_k, std::size_t Lq, std::size_t Lk) {
  return count_of(std::min(block_q, Lq), "query", "queries") + " × " + count_of(std::min(block_k, Lk), "key");
}

}  // namespace attn
