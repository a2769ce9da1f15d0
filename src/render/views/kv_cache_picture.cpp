#include "attn/render/views/kv_cache_picture.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>

#include "attn/render/draw/head_grid.hpp"
#include "attn/render/draw/heatmap.hpp"
#include "attn/engine/attention/mask.hpp"
#include "attn/engine/attention/sdpa.hpp"
#include "attn/io/number_format.hpp"
#include "attn/render/draw/text_table.hpp"
#include "draw/figure_parts.hpp"

namespace attn {
namespace {

const Rgb kInk = rgb_from_hex(0x1a1a1a);
const Rgb kAxisInk = rgb_from_hex(0x404040);
const Rgb kPrefill = rgb_from_hex(0xe6550d);  // the prefill block and its bar
const Rgb kDecode = rgb_from_hex(0x8c8c8c);   // one decode step's bar (grey: not a weight)
const Rgb kEvicted = rgb_from_hex(0xf2c6bd);  // a key the window pushed out of the cache
const char* kNotYet = "·";
const char* kEvictedMark = "×";

std::string bytes_text(std::size_t bytes) {
  char buf[32];
  if (bytes < 10240) {
    std::snprintf(buf, sizeof buf, "%zu B", bytes);
  } else {
    std::snprintf(buf, sizeof buf, "%.1f KiB", static_cast<double>(bytes) / 1024);
  }
  return buf;
}

std::string scientific(double x) {
  if (x == 0) return "0 (exact)";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1e", x);
  return buf;
}

std::string step_text(const GenerateStep& s) {
  std::string cache = count_of(s.cache_len, "token") + " · " + bytes_text(s.cache_bytes);
  if (s.evicted > 0) cache += " · " + std::to_string(s.evicted) + " evicted";
  if (s.prefill) return "prefill " + std::to_string(s.count) + " → " + cache;
  return "+1 → " + cache;
}

// The legend under the picture, only what this picture shows: the prefill outline (a prefill
// of 2 or more tokens), the decode bars, the masked cells (causal inside such a prefill), the
// keys not yet cached, and the keys a window evicted.
enum class LegendEntry { prefill, decode, masked, not_yet, evicted };
struct CacheLegend {
  std::vector<std::pair<LegendEntry, std::string>> entries;
  double row = 0, width = 0, height = 0;
};

CacheLegend cache_legend(Canvas& m, const GenerateResult& r) {
  const std::size_t P = r.config.prefill, L = r.tokens.size();
  std::size_t evicted = 0;
  for (const GenerateStep& s : r.steps) evicted = std::max(evicted, s.evicted);
  CacheLegend l;
  if (P > 0) {
    l.entries.push_back({LegendEntry::prefill, "prefill: " + count_of(P, "prompt token") + " in one step" +
                                                   (P > 1 ? " (causal among themselves)" : "")});
  }
  if (P < L) l.entries.push_back({LegendEntry::decode, "decode: one token per step; its query reads every cached key"});
  if (P > 1) l.entries.push_back({LegendEntry::masked, ""});
  if (P < L) l.entries.push_back({LegendEntry::not_yet, "·  key not in the cache yet (that token has not been fed)"});
  if (evicted > 0) {
    l.entries.push_back({LegendEntry::evicted, "key evicted: outside the window of " + count_of(r.config.window, "token") +
                                                   ", dropped from the cache (the bars' light part counts them)"});
  }
  const TextSize masked = render::masked_legend_size(m);
  l.row = masked.height + 4;
  l.height = double(l.entries.size()) * l.row;
  for (const auto& [kind, text] : l.entries)
    l.width = std::max(l.width, kind == LegendEntry::masked ? masked.width : 18 + m.measure(text, {10}).width);
  return l;
}

void draw_cache_legend(Canvas& cv, const CacheLegend& l, double x, double y) {
  for (const auto& [kind, text] : l.entries) {
    switch (kind) {
      case LegendEntry::prefill: cv.stroke_rect(x + 1, y + 1, 10, 10, kPrefill, 2); break;
      case LegendEntry::decode: cv.fill_rect(x, y + 1, 12, 10, kDecode); break;
      case LegendEntry::masked: render::draw_masked_legend(cv, x, y); break;
      case LegendEntry::not_yet: break;  // the text starts with the dot itself
      case LegendEntry::evicted:
        cv.fill_rect(x, y + 1, 12, 10, kEvicted);
        cv.text(kEvictedMark, x + 6, y + 6, {9, false, kInk}, 0.5, 0.5);
        break;
    }
    if (kind != LegendEntry::masked) {
      cv.text(text, kind == LegendEntry::not_yet ? x + 3 : x + 18, y + 6, {10, false, kAxisInk}, 0, 0.5);
    }
    y += l.row;
  }
}

// The grid: row t is token t's mean weights when it was fed, over the keys the cache held then.
std::shared_ptr<render::MatrixPanel> cache_panel(const GenerateResult& r, const Mask2& allowed,
                                                 std::shared_ptr<Tensor2> mean, std::shared_ptr<Colormap> cmap,
                                                 const ColorScale& scale) {
  const std::size_t L = r.tokens.size();
  auto fed_until = std::make_shared<std::vector<std::size_t>>(L);  // row t: keys < fed_until[t] exist
  for (const GenerateStep& s : r.steps)
    for (std::size_t t = s.first; t < s.first + s.count; ++t) (*fed_until)[t] = s.first + s.count;
  auto mask = std::make_shared<Mask2>(allowed);
  auto panel = std::make_shared<render::MatrixPanel>();
  panel->rows = panel->cols = L;
  for (std::size_t t = 0; t < L; ++t) panel->row_labels.push_back(std::to_string(t) + " " + r.tokens[t]);
  panel->col_labels = r.tokens;
  panel->row_title = "token t fed (its query)";
  panel->col_title = "key in the KV cache";
  panel->cell = render::cell_size_for(L, L, 400, 2, 44);
  panel->cell_at = [mean, mask, fed_until, cmap, scale](std::size_t t, std::size_t j) {
    if ((*mask)(t, j)) {
      const double w = (*mean)(t, j);
      return render::Cell{cmap->at(scale.position(w)), false, w, ""};
    }
    // A key before t that t may not see was pushed out of the cache by the window.
    if (j < t) return render::Cell{kEvicted, false, std::nullopt, kEvictedMark};
    if (j < (*fed_until)[t]) return render::Cell{{}, true, std::nullopt, ""};
    return render::Cell{{1, 1, 1}, false, std::nullopt, kNotYet};
  };
  return panel;
}

std::string kv_cache_subtitle(const GenerateResult& r, bool log_scale, const std::string& outside, std::size_t label_step) {
  const GenerateConfig& c = r.config;
  return "row t is the attention of token t when it was fed: the cache grows by one key per step, so the rows stack "
         "into the causal triangle · weights averaged over " + std::to_string(c.num_heads) + " heads (" +
         std::to_string(r.num_kv_heads) + " kv heads cached) · largest difference from full recomputation " +
         scientific(r.max_diff) +
         (c.kv_dtype == KvDtype::bfloat16 ? " (the cache holds K and V rounded to bfloat16: that rounding, not the "
                                            "caching, is the difference)"
                                          : "") +
         " · FLOPs with the cache " + format_si(double(r.total_with_cache.total())) +
         ", recomputing the prefix every step " + format_si(double(r.total_recompute.total())) +
         (log_scale ? " · log colour scale: row t shares its weight among the keys it sees, so on a linear scale "
                      "the later rows would look empty"
                    : "") +
         (outside.empty() ? "" : " · " + outside) +
         (label_step > 1 ? " · " + render::label_thinning_note(label_step, r.tokens.size()) : "");
}

// Beside the grid: one bar per step, as long as the cache after it, with its size written.
struct StepBars {
  double text_size = 0, bar_max = 80, width = 0;
  std::size_t text_step = 1;  // every text_step-th decode step written (cells too short for all)
  std::string header = "KV cache after the step";
};

StepBars layout_step_bars(Canvas& m, const GenerateResult& r, double cell) {
  StepBars b;
  b.text_size = std::clamp(cell * 0.7, 6.0, 9.5);
  b.text_step = cell >= 8 ? 1 : static_cast<std::size_t>(std::ceil(8 / cell));
  double text_w = 0;
  for (const GenerateStep& s : r.steps) text_w = std::max(text_w, m.measure(step_text(s), {b.text_size}).width);
  b.width = std::max(b.bar_max + 6 + text_w, m.measure(b.header, {10, true}).width);
  return b;
}

// The bars from bars_x, each beside its step's rows of the grid g, whose cells are `cell` points.
void draw_step_bars(Canvas& cv, const StepBars& b, const std::vector<GenerateStep>& steps, std::size_t L, const CellGrid& g,
                    double cell, double bars_x) {
  const double grid_h = cell * static_cast<double>(L);
  cv.text(b.header, bars_x, g.y - 4, {10, true, kAxisInk}, 0, 1);
  std::size_t k = 0;
  for (const GenerateStep& s : steps) {
    const double y = g.cell_y(s.first) + std::min(1.5, cell * 0.15);
    const double h = cell * static_cast<double>(s.count) - 2 * std::min(1.5, cell * 0.15);
    const double w = b.bar_max * static_cast<double>(s.cache_len) / static_cast<double>(L);
    const double gone = b.bar_max * static_cast<double>(s.evicted) / static_cast<double>(L);
    cv.fill_rect(bars_x, y, std::max(w, 1.0), h, s.prefill ? kPrefill : kDecode);
    if (s.evicted > 0) cv.fill_rect(bars_x + w, y, gone, h, kEvicted);
    if (k++ % b.text_step == 0 || s.prefill) {
      cv.text(step_text(s), bars_x + w + gone + 6, y + h / 2, {b.text_size, false, kInk}, 0, 0.5);
    }
  }
  cv.fill_rect(bars_x, g.y, 0.8, grid_h, rgb_from_hex(0x8c8c8c));  // the bars' zero line
}

}  // namespace

Figure kv_cache_figure(const GenerateResult& r) {
  const GenerateConfig& c = r.config;
  const std::size_t L = r.tokens.size();
  const std::size_t P = c.prefill;
  // What each query may see: the same mask the one-shot run uses (causal, or a causal window).
  const Mask2 allowed = c.window ? sliding_window_allowed(L, L, c.window - 1, 0) : causal_allowed(L, L);
  auto mean = std::make_shared<Tensor2>(mean_over_heads(r.decoded.result.weights));
  // A long causal cache: row t shares its weight among t + 1 keys, so a linear scale would leave
  // the later rows white; the heatmaps' log scale then, said in the subtitle (heatmap.hpp).
  const std::optional<ColorScale> log_scale = long_causal_log_scale(*mean, allowed);
  const ColorScale scale = log_scale ? *log_scale : color_scale_for({mean->data(), mean->size()}, std::nullopt);
  const std::string outside =
      outside_scale_note(count_outside_scale(xt::expand_dims(*mean, 0), Mask3(xt::expand_dims(allowed, 0)), scale), scale);
  const auto cmap = std::make_shared<Colormap>(Colormap::by_name("Blues"));
  const auto panel = cache_panel(r, allowed, mean, cmap, scale);

  Canvas m = Canvas::measuring();
  const render::PanelLayout pl = render::layout_panel(m, *panel);
  const double cell = panel->cell, grid_h = cell * static_cast<double>(L);
  const StepBars bars = layout_step_bars(m, r, cell);
  const double margin = 16, gap = 16;
  const double bar_w = render::colorbar_width(m, scale.vmin, scale.vmax, "weight (mean over heads)", scale.log);
  const double body_w = pl.width + gap + bars.width + gap + bar_w;
  const CacheLegend legend = cache_legend(m, r);

  const render::FigureFrame frame = render::frame_figure(
      m, "KV-cache decoding of " + title_quote(c.sentence) + " with " + positions_name(c) + ", one row per token",
      kv_cache_subtitle(r, log_scale.has_value(), outside, pl.label_step), {body_w, legend.width}, 0, margin);
  const double panel_x = frame.centred_x(body_w), panel_y = frame.body_y();
  const CellGrid g = render::panel_grid(*panel, pl, panel_x, panel_y);
  const double bars_x = g.x + cell * static_cast<double>(L) + gap;
  const double cbar_x = panel_x + pl.width + gap + bars.width + gap;
  const double cbar_h = render::colorbar_height(m, grid_h, "weight (mean over heads)");
  const double legend_y = panel_y + std::max(pl.height, pl.grid_y + cbar_h) + 12;
  // Under the grid's left edge, unless the legend is wider than the room from there to the margin.
  const double legend_x = std::min(panel_x + pl.grid_x, frame.width() - frame.margin - legend.width);

  Figure f;
  f.title = frame.titles.title;
  f.subtitle = frame.titles.subtitle;
  f.width = frame.width();
  f.height = legend_y + legend.height + margin;
  f.grids.push_back(g);
  if (!outside.empty()) f.notes.push_back(outside);
  const std::vector<GenerateStep> steps = r.steps;
  f.draw = [=](Canvas& cv) {
    frame.draw_title(cv);
    render::draw_panel(cv, *panel, pl, panel_x, panel_y);
    if (P > 0) {
      const double edge = cell * static_cast<double>(P);
      cv.stroke_rect(g.x - 1, g.y - 1, edge + 2, edge + 2, kPrefill, 2);
    }
    draw_step_bars(cv, bars, steps, L, g, cell, bars_x);
    render::draw_colorbar(cv, *cmap, scale.vmin, scale.vmax, cbar_x, g.y, cbar_h, "weight (mean over heads)", scale.log);
    draw_cache_legend(cv, legend, legend_x, legend_y);
  };
  return f;
}

}  // namespace attn
