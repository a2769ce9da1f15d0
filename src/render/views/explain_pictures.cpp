// The pictures of explain and pitfalls (explain_pictures.hpp): every value drawn comes from a result.
#include "attn/render/views/explain_pictures.hpp"

#include <algorithm>
#include <cmath>
#include <memory>

#include "attn/engine/core/error.hpp"
#include "attn/render/draw/heatmap.hpp"
#include "attn/render/report/report_table.hpp"
#include "attn/io/number_format.hpp"
#include "attn/render/draw/text_table.hpp"
#include "draw/figure_parts.hpp"

namespace attn {
namespace {

// The tallest a paired table's grid grows (points): about the height of the other steps' heatmaps.
constexpr double kTallestGrid = 560;

// The largest finite |v|: the half-width of a diverging scale centred on 0, so white always means 0.
double max_abs(const Tensor2& m) {
  double a = 0;
  for (float v : m)
    if (std::isfinite(v)) a = std::max(a, std::fabs(double(v)));
  return a > 0 ? a : 1;
}

HeatmapSpec signed_spec(const Tensor2& m, const ExplainResult& r, double half_width) {
  HeatmapSpec s;
  s.weights = m;
  s.query_tokens = r.tokens;
  s.key_tokens = r.tokens;
  s.colormap = "RdBu_r";
  s.vmax = half_width;
  s.vmin = -half_width;
  return s;
}

// Two matrices drawn side by side on one colour scale (pitfalls: wrong | right; explain: V | output).
struct PanelPair {
  std::string caption;  // the column axis title of both
  std::string left_title, right_title;
  std::vector<std::string> row_labels, col_labels;
  Tensor2 left, right;
  bool weights = false;  // attention weights: the scale is [0, 1]
  std::optional<Mask2> left_allowed{}, right_allowed{};  // false = masked: hatched, no value
  std::optional<double> reference{};  // a diverging scale centred here (pitfalls.hpp)
};

Figure paired_figure(const std::string& title, const std::string& subtitle, std::vector<PanelPair> pairs);
Figure explain_output_figure(const ExplainResult& r);

std::string sentence_line(const ExplainResult& r) {
  return title_quote(r.config.sentence) + ": " + count_of(r.tokens.size(), "token") + ", one head, d = " +
         std::to_string(r.config.d_model) + ", seed " + std::to_string(r.config.seed) + " (untrained)";
}

}  // namespace

Figure explain_step_figure(const ExplainResult& r, int step) {
  if (step == 6) return explain_output_figure(r);
  const std::string d = std::to_string(r.config.d_model);
  // Steps 1 to 4 are all scores: one colour scale for the four, set by step 1's largest |score|,
  // so the division by √d shows as paler colours and a value keeps its colour from step to step.
  const double score_max = max_abs(r.scores);
  HeatmapSpec s;
  switch (step) {
    case 1:
      s = signed_spec(r.scores, r, score_max);
      s.title = "Step 1 of 6 · scores = Q Kᵀ";
      s.subtitle = sentence_line(r) + ". Cell (i, j) = q_i · k_j: how much query i matches key j. "
                   "Steps 1 to 4 share this colour scale.";
      s.value_label = "Score";
      break;
    case 2:
      s = signed_spec(r.scaled, r, score_max);
      s.title = "Step 2 of 6 · scaled = scores / √" + d;
      s.subtitle = "Every score × " + format_g(r.scale, 4) + ": keeps the scores' variance near 1 for any d "
                   "(attn-cli variance). Same colour scale as step 1, so the scores look paler.";
      s.value_label = "Score";
      break;
    case 3:
      s = signed_spec(r.masked, r, score_max);
      s.allowed = r.allowed;
      s.title = "Step 3 of 6 · masked";
      s.subtitle = r.config.causal
                       ? "Causal mask: query i may attend to keys j ≤ i; the blocked scores become −∞ (hatched)."
                       : "No mask (--mask none): every query may attend to every key; the scores pass unchanged.";
      s.value_label = "Score";
      break;
    case 4: {
      s = signed_spec(r.shifted, r, score_max);
      s.allowed = r.allowed;
      s.title = "Step 4 of 6 · shifted = masked − max of the row";
      // Up to 12 rows the maxima are listed; a longer sentence gets their range (the JSON has all).
      std::string maxes;
      if (r.row_max.size() <= 12) {
        for (std::size_t i = 0; i < r.row_max.size(); ++i) maxes += (i ? ", " : "") + format_fixed(r.row_max(i), 3);
      } else {
        const auto [lo, hi] = std::minmax_element(r.row_max.begin(), r.row_max.end());
        maxes = "from " + format_fixed(*lo, 3) + " to " + format_fixed(*hi, 3) + " over the " +
                std::to_string(r.row_max.size()) + " rows";
      }
      s.subtitle = "Row maxima subtracted: " + maxes + ". Every score is now ≤ 0, so every exp is in (0, 1] and "
                   "cannot overflow; softmax is unchanged, since " +
                   unbreakable("exp(s − c) / Σ exp(s − c) = exp(s) / Σ exp(s).");  // one formula, one line
      s.value_label = "Score";
      break;
    }
    case 5: {
      s.weights = r.weights;
      s.query_tokens = r.tokens;
      s.key_tokens = r.tokens;
      s.allowed = r.allowed;
      // [0, 1] for a short sentence; a long causal one gets the heatmaps' log scale (said in the
      // subtitle), else its later rows, sharing their weight among many keys, would look white.
      if (r.tokens.size() < 16 || !r.config.causal) {
        s.vmin = 0;
        s.vmax = 1;
      }
      s.title = "Step 5 of 6 · weights = softmax of each row";
      std::string sums;
      if (r.row_sums.size() <= 12) {
        for (std::size_t i = 0; i < r.row_sums.size(); ++i) sums += (i ? ", " : "") + format_fixed(r.row_sums(i), 3);
      } else {
        const auto [lo, hi] = std::minmax_element(r.row_sums.begin(), r.row_sums.end());
        sums = format_fixed(*lo, 3) == format_fixed(*hi, 3)
                   ? "all " + std::to_string(r.row_sums.size()) + " rows sum to " + format_fixed(*lo, 3)
                   : "from " + format_fixed(*lo, 3) + " to " + format_fixed(*hi, 3);
      }
      s.subtitle = "Row sums: " + sums + ". exp(−∞) = 0: a blocked key gets exactly 0 weight.";
      break;
    }
    default:
      throw InputError("explain step must be 1 to 6, got " + std::to_string(step));
  }
  return heatmap_figure(s);
}

Figure explain_jacobian_figure(const ExplainResult& r) {
  if (!r.jacobian) throw InputError("explain: the Jacobian was not computed (--jacobian)");
  const JacobianLesson& J = *r.jacobian;
  HeatmapSpec s = signed_spec(J.jacobian, r, max_abs(J.jacobian));
  s.query_tokens.clear();
  s.key_tokens.clear();
  for (std::size_t j = 0; j < r.tokens.size(); ++j) {
    s.query_tokens.push_back("p(" + r.tokens[j] + ")");
    s.key_tokens.push_back("s(" + r.tokens[j] + ")");
  }
  s.title = "Softmax Jacobian of row " + std::to_string(J.row) + " ('" + r.tokens[J.row] + "'): diag(p) − p pᵀ";
  s.subtitle = "Cell (j, k) = ∂p_j / ∂s_k. Checked by central differences in float64: max |difference| " +
               format_g(J.max_fd_diff, 2) + ". Each row sums to 0 (max |sum| " + format_g(J.max_row_sum, 2) +
               "): adding the same number to every score changes nothing. " + jacobian_masked_text(r);
  s.row_title = "Weight p_j";
  s.col_title = "Score s_k";
  s.value_label = "∂p_j / ∂s_k";
  return heatmap_figure(s);
}

bool pitfall_has_figure(const Pitfall& p) { return !p.tables.empty(); }

namespace {

// One row of a paired figure: two panels on one colour scale, and the scale's colorbar.
struct PairRow {
  std::shared_ptr<render::MatrixPanel> wrong, right;
  render::PanelLayout wl, rl;
  ColorScale scale;
  std::string label;
  std::shared_ptr<Colormap> cmap;
};

// One scale for left and right, so the two read alike: weights on [0, 1] (a third must
// not look like a whole), other values from 0 up, signed values centred on 0.
void choose_pair_scale(const PanelPair& tab, PairRow& row) {
  std::vector<float> values(tab.left.begin(), tab.left.end());
  values.insert(values.end(), tab.right.begin(), tab.right.end());
  const bool weights = tab.weights;
  const bool is_signed = std::any_of(values.begin(), values.end(), [](float v) { return v < 0; });
  row.label = weights ? "Attention weight" : "Value";
  row.cmap = std::make_shared<Colormap>(Colormap::by_name(is_signed || tab.reference ? "RdBu_r" : "Blues"));
  if (weights) {
    row.scale = {0, 1};
  } else if (tab.reference) {
    // White at the reference, red above it, blue below: the departure is what to see.
    double a = 0;
    for (float v : values) a = std::max(a, std::fabs(double(v) - *tab.reference));
    if (a == 0) a = 1;
    row.scale = {*tab.reference - a, *tab.reference + a};
    row.label = "Value (white = " + format_g(*tab.reference) + ")";
  } else if (is_signed) {
    double a = 0;
    for (float v : values) a = std::max(a, std::fabs(double(v)));
    row.scale = {-a, a};
  } else {
    row.scale = color_scale_for(values, std::nullopt);
  }
}

// Table t's left (wrong) or right panel, coloured on the row's scale.
std::shared_ptr<render::MatrixPanel> pair_panel(const std::shared_ptr<std::vector<PanelPair>>& tables, std::size_t t,
                                                bool wrong, const PairRow& row) {
  const PanelPair& tab = (*tables)[t];
  auto panel = std::make_shared<render::MatrixPanel>();
  panel->rows = tab.row_labels.size();
  panel->cols = tab.col_labels.size();
  panel->row_labels = tab.row_labels;
  panel->col_labels = tab.col_labels;
  panel->title = wrong ? tab.left_title : tab.right_title;
  panel->col_title = tab.caption;
  panel->cell = std::min(58.0, 320.0 / static_cast<double>(std::max<std::size_t>(panel->cols, 1)));
  // A long, narrow table (V of 48 tokens) keeps its width and gets shorter rows, so the
  // picture is as tall as the other steps' and its values stay written.
  panel->cell_h = std::min(panel->cell, kTallestGrid / static_cast<double>(std::max<std::size_t>(panel->rows, 1)));
  const ColorScale scale = row.scale;
  const auto cmap = row.cmap;
  panel->cell_at = [tables, t, wrong, cmap, scale](std::size_t i, std::size_t j) {
    const PanelPair& p = (*tables)[t];
    const std::optional<Mask2>& allowed = wrong ? p.left_allowed : p.right_allowed;
    if (allowed && !(*allowed)(i, j)) return render::Cell{{}, true, std::nullopt, ""};
    const double v = wrong ? p.left(i, j) : p.right(i, j);
    return render::Cell{cmap->at(scale.position(v)), false, v, ""};
  };
  return panel;
}

std::vector<PairRow> pair_rows(Canvas& m, const std::shared_ptr<std::vector<PanelPair>>& tables) {
  std::vector<PairRow> rows;
  for (std::size_t t = 0; t < tables->size(); ++t) {
    PairRow row;
    choose_pair_scale((*tables)[t], row);
    for (bool wrong : {true, false}) {
      auto panel = pair_panel(tables, t, wrong, row);
      (wrong ? row.wrong : row.right) = panel;
      (wrong ? row.wl : row.rl) = render::layout_panel(m, *panel);
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

bool any_pair_masked(const std::vector<PanelPair>& tables) {
  bool any_masked = false;
  for (const PanelPair& tab : tables)
    for (const std::optional<Mask2>* a : {&tab.left_allowed, &tab.right_allowed})
      any_masked = any_masked || (*a && std::find((*a)->begin(), (*a)->end(), false) != (*a)->end());
  return any_masked;
}

// Where a row's two panels and colorbar land.
struct PlacedRow {
  double wx, rx, y, bar_x, bar_y, bar_h;
};

// Rows of two panels side by side, each row on its own colour scale shared by its two panels.
Figure paired_figure(const std::string& heading, const std::string& subheading, std::vector<PanelPair> pairs) {
  auto tables = std::make_shared<std::vector<PanelPair>>(std::move(pairs));
  Canvas m = Canvas::measuring();
  const std::vector<PairRow> rows = pair_rows(m, tables);
  const double margin = 16, gap = 24, row_gap = 22;
  double body_w = 0, body_h = 0;
  std::vector<double> bar_w;
  for (const PairRow& r : rows) {
    bar_w.push_back(render::colorbar_width(m, r.scale.vmin, r.scale.vmax, r.label));
    body_w = std::max(body_w, r.wl.width + gap + r.rl.width + gap + bar_w.back());
    body_h += std::max(r.wl.height, r.wl.grid_y + 80.0) + (body_h > 0 ? row_gap : 0);
  }
  const bool any_masked = any_pair_masked(*tables);
  const TextSize legend = any_masked ? render::masked_legend_size(m) : TextSize{};
  const render::TitleBlock titles{heading, subheading, std::max({body_w, legend.width, 520.0})};
  const TextSize title = render::title_block_size(m, titles);
  const double content_w = std::max({body_w, title.width, legend.width});

  Figure f;
  f.width = content_w + 2 * margin;
  std::vector<PlacedRow> placed;
  double y = margin + title.height;
  for (std::size_t t = 0; t < rows.size(); ++t) {
    const PairRow& r = rows[t];
    const double w = r.wl.width + gap + r.rl.width + gap + bar_w[t];
    const double x = margin + (content_w - w) / 2;
    const double grid_h = render::row_height(*r.wrong) * static_cast<double>(r.wrong->rows);
    const double bar_h = std::max(grid_h, 80.0);
    placed.push_back({x, x + r.wl.width + gap, y, x + r.wl.width + gap + r.rl.width + gap, y + r.wl.grid_y, bar_h});
    f.grids.push_back(render::panel_grid(*r.wrong, r.wl, placed.back().wx, y));
    f.grids.push_back(render::panel_grid(*r.right, r.rl, placed.back().rx, y));
    y += std::max(r.wl.height, r.wl.grid_y + bar_h) + row_gap;
  }
  const double legend_y = y - row_gap + 10;
  f.height = y - row_gap + margin + (any_masked ? legend.height + 10 : 0);
  const double legend_x = margin + (content_w - legend.width) / 2;
  const double cx = f.width / 2;
  f.draw = [=](Canvas& c) {
    render::draw_title_block(c, titles, cx, margin);
    for (std::size_t t = 0; t < rows.size(); ++t) {
      const PlacedRow& q = placed[t];
      render::draw_panel(c, *rows[t].wrong, rows[t].wl, q.wx, q.y);
      render::draw_panel(c, *rows[t].right, rows[t].rl, q.rx, q.y);
      render::draw_colorbar(c, *rows[t].cmap, rows[t].scale.vmin, rows[t].scale.vmax, q.bar_x, q.bar_y, q.bar_h,
                            rows[t].label);
    }
    if (any_masked) render::draw_masked_legend(c, legend_x, legend_y);
  };
  return f;
}

}  // namespace

Figure pitfall_figure(const Pitfall& p) {
  if (p.tables.empty()) throw InputError("pitfall " + p.id + " has no matrices to draw");
  std::vector<PanelPair> pairs;
  for (const PitfallTable& t : p.tables)
    pairs.push_back({t.caption, t.wrong_title, t.right_title, t.row_labels, t.col_labels, t.wrong, t.right,
                     t.caption.rfind("weights", 0) == 0, t.wrong_allowed, t.right_allowed, t.reference});
  return paired_figure(p.title, "Lesson: " + p.lesson, std::move(pairs));
}

namespace {

Figure explain_output_figure(const ExplainResult& r) {
  std::vector<std::string> dims;
  for (std::size_t c = 0; c < r.output.shape(1); ++c) dims.push_back("d" + std::to_string(c));
  PanelPair pair{"Dimension of V", "V: one row per key", "output = weights V: one row per query", r.tokens, dims,
                 r.v, r.output, false};
  return paired_figure("Step 6 of 6 · output = weights V",
                       "Row i of the output is query i's weighted mean of V's rows (step 5's weights), so every "
                       "output value lies between the smallest and largest value of its column of V: one colour "
                       "scale for both. Max |difference| from attn::sdpa in one call: " +
                           format_g(r.max_abs_diff, 3) + ".",
                       {pair});
}

}  // namespace

}  // namespace attn
