// explain --heads H: multi-head attention as one picture, left to right, with the shape of every
// matrix under it and what each arrow does above it:
//   x [L, D] -> (x W_q^T, x W_k^T, x W_v^T) Q, K, V [L, D], each cut into H column blocks
//   -> per head A_h [L, L] and O_h [L, d_h] -> concat O [L, D] -> y = O W_o^T [L, D].
// Values are red-blue scales centred on 0: one for the inputs x, Q, K, V, one for the heads'
// outputs O_h and their concatenation O (each O_h row is a weighted average of V's rows, smaller
// than V: on V's scale it was washed out) and one for y = O W_o^T; weights one [0, 1] scale. A head keeps its colour (the outline of its
// columns) from the split to the concatenation.
#include <algorithm>
#include <cmath>
#include <memory>

#include "attn/engine/mask.hpp"
#include "attn/lessons/number_format.hpp"
#include "attn/render/explain_pictures.hpp"
#include "attn/render/heatmap.hpp"
#include "attn/render/text_table.hpp"
#include "figure_parts.hpp"

namespace attn {
namespace {

const Rgb kInk = rgb_from_hex(0x1a1a1a);
const Rgb kArrow = rgb_from_hex(0x606060);
// One colour per head (matplotlib's tab10), repeated past 10 heads.
const unsigned kHeadColours[] = {0x1f77b4, 0xff7f0e, 0x2ca02c, 0xd62728, 0x9467bd,
                                 0x8c564b, 0xe377c2, 0x7f7f7f, 0xbcbd22, 0x17becf};
Rgb head_colour(std::size_t h) { return rgb_from_hex(kHeadColours[h % 10]); }


struct Block {  // one matrix: where it is drawn and with which scale
  const Tensor2* m = nullptr;
  double x = 0, y = 0;
  bool weights = false;           // [0, 1] Blues, else a value scale
  std::size_t scale = 0;          // value scale: 0 x, Q, K, V; 1 O_h, O; 2 y
  std::size_t head_blocks = 0;    // > 0: outline this many column blocks in head colours
  std::optional<std::size_t> head;  // outline the whole matrix in this head's colour
  std::string label, shape;       // above, below
};

}  // namespace

Figure multihead_figure(const ExplainResult& r) {
  if (!r.multihead) throw std::logic_error("multihead_figure: the result has no multi-head lesson");
  const MultiHeadByHand& mh = *r.multihead;
  const std::size_t L = mh.x.shape(0), D = mh.x.shape(1), H = mh.heads, d = mh.head_dim;
  // Cells: as large as 16 points, smaller when the sentence, the width or the heads are many.
  const double c = std::clamp(std::floor(std::min(160.0 / double(std::max(L, D)), 640.0 / double(H * L))), 3.0, 16.0);
  const double label_h = 15, shape_h = 26, row_gap = 8, col_gap = 86;
  // Rows shorter than a line of text label every label_step-th token, and the subtitle says so.
  const std::size_t label_step = c >= 10 ? 1 : static_cast<std::size_t>(std::ceil(10.0 / c));
  const TextStyle label_style{9.5, true, kInk}, shape_style{9, false, kArrow},
      token_style{std::min(9.0, std::max(c, 6.0)), false, kInk};

  Canvas m = Canvas::measuring();
  double token_w = 0;
  for (const std::string& t : r.tokens) token_w = std::max(token_w, m.measure(t, token_style).width);
  const double mat_h = c * double(L);
  const double slot = label_h + mat_h + shape_h + row_gap;  // one matrix with its label and shape

  // Columns left to right (0 x, 1 Q K V, 2 A_h, 3 O_h, 4 O, 5 y); y is relative to the body's top.
  std::vector<Block> blocks;
  std::vector<int> column;
  auto add = [&](int col, Block b) {
    blocks.push_back(std::move(b));
    column.push_back(col);
  };
  add(0, {&mh.x, 0, 0, false, 0, 0, std::nullopt, "x (embeddings)", "[L, D] = [" + std::to_string(L) + ", " + std::to_string(D) + "]"});
  const char* qkv_names[] = {"Q = x W_qᵀ", "K = x W_kᵀ", "V = x W_vᵀ"};
  const Tensor2* qkv[] = {&mh.q, &mh.k, &mh.v};
  for (int i = 0; i < 3; ++i) {
    add(1, {qkv[i], 0, slot * i, false, 0, H, std::nullopt, qkv_names[i],
            "[L, D], " + std::to_string(H) + " blocks of d_h = " + std::to_string(d)});
  }
  for (std::size_t h = 0; h < H; ++h) {
    const std::string n = std::to_string(h);
    add(2, {&mh.weights[h], 0, slot * double(h), true, 0, 0, h, "head " + n + ": A_" + n,
            "[L, L] =\nsoftmax(Q_" + n + " K_" + n + "ᵀ / √" + std::to_string(d) + ")"});
    add(3, {&mh.head_out[h], 0, slot * double(h), false, 1, 0, h, "O_" + n + " = A_" + n + " V_" + n,
            "[L, d_h] = [" + std::to_string(L) + ", " + std::to_string(d) + "]"});
  }
  add(4, {&mh.concat, 0, 0, false, 1, H, std::nullopt, "O = [O_0 | … | O_" + std::to_string(H - 1) + "]", "[L, D]"});
  add(5, {&mh.output, 0, 0, false, 2, 0, std::nullopt, "y = O W_oᵀ", "[L, D]: the layer's output"});

  // A column is as wide as its widest matrix, label or shape, so a short sentence's labels do
  // not run into the next column; the arrows fill the gaps.
  constexpr int kColumns = 6;
  double col_w[kColumns] = {}, mat_w[kColumns] = {};
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    const Block& b = blocks[i];
    const double w = c * double(b.m->shape(1));
    mat_w[column[i]] = std::max(mat_w[column[i]], w);
    col_w[column[i]] = std::max({col_w[column[i]], w, m.measure(b.label, label_style).width + 6,
                                 m.measure(b.shape, shape_style).width + 6});
  }
  const double gaps[kColumns - 1] = {col_gap, col_gap, 46, col_gap, col_gap};
  double col_x[kColumns];
  col_x[0] = token_w + 6;
  for (int k = 1; k < kColumns; ++k) col_x[k] = col_x[k - 1] + col_w[k - 1] + gaps[k - 1];
  // Room above the first row for the arrows' wrapped labels.
  const TextStyle arrow_style{8.5, false, kArrow, col_gap - 8, true};
  const std::string arrow_text[kColumns - 1] = {
      "× W_qᵀ, W_kᵀ, W_vᵀ [D, D] (or one fused W_qkv [3D, D])", "split: [L, D] → " + std::to_string(H) + " × [L, d_h]",
      "× V_h", "concat: " + std::to_string(H) + " × [L, d_h] → [L, D]", "× W_oᵀ [D, D]: mixes the heads"};
  double arrow_h = 0;
  for (const std::string& t : arrow_text) arrow_h = std::max(arrow_h, m.measure(t, arrow_style).height);
  const double top = std::max(0.0, arrow_h + 6 - (label_h + mat_h / 2));
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    blocks[i].x = col_x[column[i]];
    blocks[i].y += top;
  }

  double body_w = 0, body_h = 0;
  for (const Block& b : blocks) {
    body_w = std::max({body_w, b.x + c * double(b.m->shape(1)), b.x + m.measure(b.label, label_style).width,
                       b.x + m.measure(b.shape, shape_style).width});
    body_h = std::max(body_h, b.y + slot);
  }
  // Three value scales centred on 0 (x, Q, K, V; O_h, O; y), the weights on [0, 1].
  double vmax[3] = {0, 0, 0};
  for (const Block& b : blocks) {
    if (b.weights) continue;
    for (float v : *b.m) vmax[b.scale] = std::max(vmax[b.scale], double(std::fabs(v)));
  }
  for (double& top : vmax)
    if (top == 0) top = 1;
  const auto values = std::make_shared<Colormap>(Colormap::by_name("RdBu_r"));
  const auto weights = std::make_shared<Colormap>(Colormap::by_name("Blues"));
  // The heads share one mask; a long causal one puts every head's weights on heatmap.hpp's log
  // scale, as every other weight picture does.
  ColorScale weight_scale{0, 1};
  if (mh.causal) {
    const Mask2 allowed = causal_allowed(L, L);
    std::optional<ColorScale> log;
    for (const Tensor2& w : mh.weights)
      if (!(log = long_causal_log_scale(w, allowed))) break;
    if (log) weight_scale = *log;
  }
  const double bar_h = std::max(120.0, std::min(body_h - 20, 220.0));
  const std::string bar_label[3] = {"value: x, Q, K, V", "value: O_h, O (own scale)", "value: y (own scale)"};
  double bar_x[4] = {0, 0, 0, 0};  // the four colorbars' left edges, from the first
  for (int k = 0; k < 3; ++k) bar_x[k + 1] = bar_x[k] + render::colorbar_width(m, -vmax[k], vmax[k], bar_label[k]) + 24;
  const double bars_w =
      bar_x[3] + render::colorbar_width(m, weight_scale.vmin, weight_scale.vmax, "weight", weight_scale.log);
  const double total_w = body_w + 30 + bars_w;

  const std::string title = "Multi-head attention by hand: " + count_of(H, "head") + " of d_h = " +
                            std::to_string(D) + " / " + std::to_string(H) + " = " + std::to_string(d) + " on " +
                            title_quote(r.config.sentence);
  const std::string subtitle =
      std::string(mh.causal ? "causal (hatched: masked, not a weight of 0) · " : "no mask · ") +
      "rows are the tokens in order · O_h and O share their own colour scale, y has its own: each row of O_h "
      "averages V's rows, so on x, Q, K, V's scale it would fade" +
      (L >= 16 ? std::string(" (a late row averages many, so its values shrink toward V's mean: pale there is small)") : "") +
      (weight_scale.log ? std::string(" · ") + kLongCausalLogNote : "") +
      (label_step > 1 ? " · " + render::label_thinning_note(label_step, L) : "") + " · split = a reshape [L, H, d_h] and a transpose, no arithmetic · "
      "max |by hand − attn::mha| = " + format_g(mh.max_diff_vs_mha, 2) +
      " · fused W_qkv [3D, D], one product split in three: max |fused − separate| = " + format_g(mh.max_diff_fused, 2);
  const render::FigureFrame frame = render::frame_figure(m, title, subtitle, {total_w}, 0, 16);
  const double ox = frame.centred_x(total_w), oy = frame.body_y();

  Figure f;
  f.title = frame.titles.title;
  f.subtitle = frame.titles.subtitle;
  f.width = frame.width();
  f.height = oy + body_h + 16;
  for (const Block& b : blocks) {
    f.grids.push_back({ox + b.x, oy + b.y + label_h, c, c, b.m->shape(0), b.m->shape(1)});
  }
  const double mid_y = oy + top + label_h + mat_h / 2;  // the first row of matrices' middle
  f.draw = [=](Canvas& cv) {
    frame.draw_title(cv);
    // The label sits over the gap between two columns (tx), where no matrix label reaches.
    auto arrow = [&](double xa, double ya, double xb, double yb, double tx, const std::string& text) {
      cv.polyline({{xa, ya}, {xb, yb}}, kArrow, 1.2);
      const double ang = std::atan2(yb - ya, xb - xa), s = 6;
      cv.fill_polygon({{xb, yb}, {xb - s * std::cos(ang - 0.4), yb - s * std::sin(ang - 0.4)},
                       {xb - s * std::cos(ang + 0.4), yb - s * std::sin(ang + 0.4)}},
                      kArrow);
      cv.text(text, tx, (ya + yb) / 2 - 3, arrow_style, 0.5, 1);
    };
    for (std::size_t i = 0; i < r.tokens.size(); i += label_step) {
      cv.text(r.tokens[i], ox + col_x[0] - 4, oy + top + label_h + c * (double(i) + 0.5), token_style, 1, 0.5);
    }
    for (const Block& b : blocks) {
      const double bx = ox + b.x, by = oy + b.y;
      cv.text(b.label, bx, by + label_h - 3, b.head ? TextStyle{9.5, true, head_colour(*b.head)} : label_style, 0, 1);
      const std::size_t rows = b.m->shape(0), cols = b.m->shape(1);
      for (std::size_t i = 0; i < rows; ++i) {
        for (std::size_t j = 0; j < cols; ++j) {
          const double x = bx + c * double(j), y = by + label_h + c * double(i);
          // A key the causal mask hides is hatched, as in every picture: not a weight of 0.
          if (b.weights && mh.causal && j > i) {
            cv.hatch_rect(x, y, c, c);
            continue;
          }
          const double v = (*b.m)(i, j);
          cv.fill_rect(x, y, c, c,
                       b.weights ? weights->at(std::clamp(weight_scale.position(v), 0.0, 1.0))
                                 : values->at((v / vmax[b.scale] + 1) / 2));
        }
      }
      const double w = c * double(cols), h = c * double(rows);
      if (b.head) cv.stroke_rect(bx - 1, by + label_h - 1, w + 2, h + 2, head_colour(*b.head), 2);
      else cv.stroke_rect(bx, by + label_h, w, h, rgb_from_hex(0x909090), 0.6);
      const std::size_t hd = b.head_blocks ? cols / b.head_blocks : 0;
      // A head's columns are outlined in its colour; a block too narrow for an outline to leave
      // its cells visible (48 tokens, d_h = 2) gets a bar of its colour under the matrix instead.
      const bool bars = b.head_blocks && c * double(hd) < 12;
      for (std::size_t k = 0; k < b.head_blocks; ++k) {
        if (bars) cv.fill_rect(bx + c * double(k * hd), by + label_h + h + 1, c * double(hd), 3, head_colour(k));
        else cv.stroke_rect(bx + c * double(k * hd) + 0.75, by + label_h + 0.75, c * double(hd) - 1.5, h - 1.5, head_colour(k), 1.5);
      }
      cv.text(b.shape, bx, by + label_h + h + (bars ? 5 : 2), shape_style, 0, 0);
    }
    for (int k = 0; k + 1 < kColumns; ++k) {
      arrow(ox + col_x[k] + mat_w[k] + 6, mid_y, ox + col_x[k + 1] - 6, mid_y,
            ox + (col_x[k] + col_w[k] + col_x[k + 1]) / 2, arrow_text[k]);
    }
    const double bx = ox + body_w + 30, by = oy + label_h;
    for (int k = 0; k < 3; ++k) render::draw_colorbar(cv, *values, -vmax[k], vmax[k], bx + bar_x[k], by, bar_h, bar_label[k]);
    render::draw_colorbar(cv, *weights, weight_scale.vmin, weight_scale.vmax, bx + bar_x[3], by, bar_h, "weight",
                          weight_scale.log);
  };
  return f;
}

}  // namespace attn
