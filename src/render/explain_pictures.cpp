// The pictures of explain and pitfalls (explain_pictures.hpp): every value drawn comes from a result.
#include "attn/render/explain_pictures.hpp"

#include <algorithm>
#include <cmath>
#include <memory>

#include "attn/engine/error.hpp"
#include "attn/render/heatmap.hpp"
#include "attn/render/report_table.hpp"
#include "attn/lessons/number_format.hpp"
#include "figure_parts.hpp"

namespace attn {
namespace {

// The largest |v| over the finite values (and the allowed cells, when a mask is given): the
// half-width of a diverging scale centred on 0, so white always means 0.
double max_abs(const Tensor2& m, const Mask2* allowed = nullptr) {
  double a = 0;
  for (std::size_t i = 0; i < m.shape(0); ++i)
    for (std::size_t j = 0; j < m.shape(1); ++j)
      if (std::isfinite(m(i, j)) && (!allowed || (*allowed)(i, j))) a = std::max(a, std::fabs(double(m(i, j))));
  return a > 0 ? a : 1;
}

HeatmapSpec signed_spec(const Tensor2& m, const ExplainResult& r, const Mask2* allowed = nullptr) {
  HeatmapSpec s;
  s.weights = m;
  s.query_tokens = r.tokens;
  s.key_tokens = r.tokens;
  s.colormap = "RdBu_r";
  s.vmax = max_abs(m, allowed);
  s.vmin = -*s.vmax;
  return s;
}

std::string sentence_line(const ExplainResult& r) {
  return "\"" + r.config.sentence + "\": " + count_of(r.tokens.size(), "token") + ", one head, d = " +
         std::to_string(r.config.d_model) + ", seed " + std::to_string(r.config.seed) + " (untrained)";
}

}  // namespace

Figure explain_step_figure(const ExplainResult& r, int step) {
  const std::string d = std::to_string(r.config.d_model);
  HeatmapSpec s;
  switch (step) {
    case 1:
      s = signed_spec(r.scores, r);
      s.title = "Step 1 of 5 · scores = Q Kᵀ";
      s.subtitle = sentence_line(r) + ". Cell (i, j) = q_i · k_j: how much query i matches key j.";
      s.value_label = "Score q·k";
      break;
    case 2:
      s = signed_spec(r.scaled, r);
      s.title = "Step 2 of 5 · scaled = scores / √" + d;
      s.subtitle = "Every score × " + format_g(r.scale, 4) + ": keeps the scores' variance near 1 for any d "
                   "(attn-cli variance).";
      s.value_label = "Score q·k / √" + d;
      break;
    case 3:
      s = signed_spec(r.masked, r, &r.allowed);
      s.allowed = r.allowed;
      s.title = "Step 3 of 5 · masked";
      s.subtitle = r.config.causal
                       ? "Causal mask: query i may attend to keys j ≤ i; the blocked scores become −∞ (hatched)."
                       : "No mask (--mask none): every query may attend to every key; the scores pass unchanged.";
      s.value_label = "Masked score";
      break;
    case 4: {
      s.weights = r.weights;
      s.query_tokens = r.tokens;
      s.key_tokens = r.tokens;
      s.allowed = r.allowed;
      s.title = "Step 4 of 5 · weights = softmax of each row";
      std::string sums;
      for (std::size_t i = 0; i < r.row_sums.size(); ++i) sums += (i ? ", " : "") + format_fixed(r.row_sums(i), 3);
      s.subtitle = "Row sums: " + sums + ". exp(−∞) = 0: a blocked key gets exactly 0 weight.";
      break;
    }
    case 5:
      s = signed_spec(r.output, r);
      s.key_tokens.clear();
      for (std::size_t c = 0; c < r.output.shape(1); ++c) s.key_tokens.push_back("d" + std::to_string(c));
      s.title = "Step 5 of 5 · output = weights V";
      s.subtitle = "Row i is query i's weighted mix of the value rows; max |difference| from attn::sdpa in one call: " +
                   format_g(r.max_abs_diff, 3) + ".";
      s.col_title = "Dimension of V";
      s.value_label = "Output";
      break;
    default:
      throw InputError("explain step must be 1 to 5, got " + std::to_string(step));
  }
  return heatmap_figure(s);
}

bool pitfall_has_figure(const Pitfall& p) { return !p.tables.empty(); }

Figure pitfall_figure(const Pitfall& p) {
  if (p.tables.empty()) throw InputError("pitfall " + p.id + " has no matrices to draw");
  struct Row {
    std::shared_ptr<render::MatrixPanel> wrong, right;
    render::PanelLayout wl, rl;
    ColorScale scale;
    std::string label;
    std::shared_ptr<Colormap> cmap;
  };
  auto tables = std::make_shared<std::vector<PitfallTable>>(p.tables);
  Canvas m = Canvas::measuring();
  std::vector<Row> rows;
  for (std::size_t t = 0; t < tables->size(); ++t) {
    const PitfallTable& tab = (*tables)[t];
    std::vector<float> values(tab.wrong.begin(), tab.wrong.end());
    values.insert(values.end(), tab.right.begin(), tab.right.end());
    Row row;
    // One scale for wrong and right, so the two read alike: weights on [0, 1] (a third must
    // not look like a whole), other values from 0 up, signed values centred on 0.
    const bool weights = tab.caption.rfind("weights", 0) == 0;
    const bool is_signed = std::any_of(values.begin(), values.end(), [](float v) { return v < 0; });
    row.label = weights ? "Attention weight" : "Value";
    row.cmap = std::make_shared<Colormap>(Colormap::by_name(is_signed ? "RdBu_r" : "Blues"));
    if (weights) {
      row.scale = {0, 1};
    } else if (is_signed) {
      double a = 0;
      for (float v : values) a = std::max(a, std::fabs(double(v)));
      row.scale = {-a, a};
    } else {
      row.scale = color_scale_for(values, std::nullopt);
    }
    for (bool wrong : {true, false}) {
      auto panel = std::make_shared<render::MatrixPanel>();
      panel->rows = tab.row_labels.size();
      panel->cols = tab.col_labels.size();
      panel->row_labels = tab.row_labels;
      panel->col_labels = tab.col_labels;
      panel->title = wrong ? "✗ wrong" : "✓ right";
      panel->col_title = tab.caption;
      panel->cell = std::min(58.0, 320.0 / static_cast<double>(std::max<std::size_t>(panel->cols, 1)));
      const ColorScale scale = row.scale;
      const auto cmap = row.cmap;
      panel->cell_at = [tables, t, wrong, cmap, scale](std::size_t i, std::size_t j) {
        const double v = wrong ? (*tables)[t].wrong(i, j) : (*tables)[t].right(i, j);
        return render::Cell{cmap->at(scale.position(v)), false, v, ""};
      };
      (wrong ? row.wrong : row.right) = panel;
      (wrong ? row.wl : row.rl) = render::layout_panel(m, *panel);
    }
    rows.push_back(std::move(row));
  }
  const double margin = 16, gap = 24, row_gap = 22;
  double body_w = 0, body_h = 0;
  std::vector<double> bar_w;
  for (const Row& r : rows) {
    bar_w.push_back(render::colorbar_width(m, r.scale.vmin, r.scale.vmax, r.label));
    body_w = std::max(body_w, r.wl.width + gap + r.rl.width + gap + bar_w.back());
    body_h += std::max(r.wl.height, r.wl.grid_y + 80.0) + (body_h > 0 ? row_gap : 0);
  }
  const render::TitleBlock titles{p.title, "Lesson: " + p.lesson, std::max(body_w, 520.0)};
  const TextSize title = render::title_block_size(m, titles);
  const double content_w = std::max(body_w, title.width);

  Figure f;
  f.width = content_w + 2 * margin;
  struct Placed {
    double wx, rx, y, bar_x, bar_y, bar_h;
  };
  std::vector<Placed> placed;
  double y = margin + title.height;
  for (std::size_t t = 0; t < rows.size(); ++t) {
    const Row& r = rows[t];
    const double w = r.wl.width + gap + r.rl.width + gap + bar_w[t];
    const double x = margin + (content_w - w) / 2;
    const double grid_h = r.wrong->cell * static_cast<double>(r.wrong->rows);
    const double bar_h = std::max(grid_h, 80.0);
    placed.push_back({x, x + r.wl.width + gap, y, x + r.wl.width + gap + r.rl.width + gap, y + r.wl.grid_y, bar_h});
    f.grids.push_back(render::panel_grid(*r.wrong, r.wl, placed.back().wx, y));
    f.grids.push_back(render::panel_grid(*r.right, r.rl, placed.back().rx, y));
    y += std::max(r.wl.height, r.wl.grid_y + bar_h) + row_gap;
  }
  f.height = y - row_gap + margin;
  const double cx = f.width / 2;
  f.draw = [=](Canvas& c) {
    render::draw_title_block(c, titles, cx, margin);
    for (std::size_t t = 0; t < rows.size(); ++t) {
      const Placed& q = placed[t];
      render::draw_panel(c, *rows[t].wrong, rows[t].wl, q.wx, q.y);
      render::draw_panel(c, *rows[t].right, rows[t].rl, q.rx, q.y);
      render::draw_colorbar(c, *rows[t].cmap, rows[t].scale.vmin, rows[t].scale.vmax, q.bar_x, q.bar_y, q.bar_h,
                            rows[t].label);
    }
  };
  return f;
}

}  // namespace attn
