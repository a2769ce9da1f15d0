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

#include "attn/engine/attention/mask.hpp"
#include "attn/io/number_format.hpp"
#include "attn/render/views/explain_pictures.hpp"
#include "attn/render/draw/heatmap.hpp"
#include "attn/render/draw/text_table.hpp"
#include "draw/figure_parts.hpp"

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

constexpr int kColumns = 6;  // 0 x, 1 Q K V, 2 A_h, 3 O_h, 4 O, 5 y

// The matrices, left to right, and the arrows between their columns; y is relative to the body's top.
struct Body {
  double c = 0;  // cell edge
  double label_h = 15, shape_h = 26, row_gap = 8, col_gap = 86;
  std::size_t label_step = 1;
  TextStyle label_style{9.5, true, kInk}, shape_style{9, false, kArrow}, token_style, arrow_style;
  double mat_h = 0, slot = 0, top = 0, width = 0, height = 0;
  std::vector<Block> blocks;
  double col_w[kColumns] = {}, mat_w[kColumns] = {}, col_x[kColumns] = {};
  std::string arrow_text[kColumns - 1];
};

// Every matrix with its label and shape, each in its column (x and the top offset come later).
std::vector<Block> matrix_blocks(const MultiHeadByHand& mh, double slot, std::vector<int>& column) {
  const std::size_t L = mh.x.shape(0), D = mh.x.shape(1), H = mh.heads, d = mh.head_dim;
  std::vector<Block> blocks;
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
  return blocks;
}

// A column is as wide as its widest matrix, label or shape, so a short sentence's labels do
// not run into the next column; the arrows fill the gaps.
void place_columns(Canvas& m, Body& b, const std::vector<int>& column, double token_w) {
  for (std::size_t i = 0; i < b.blocks.size(); ++i) {
    const Block& k = b.blocks[i];
    const double w = b.c * double(k.m->shape(1));
    b.mat_w[column[i]] = std::max(b.mat_w[column[i]], w);
    b.col_w[column[i]] = std::max({b.col_w[column[i]], w, m.measure(k.label, b.label_style).width + 6,
                                   m.measure(k.shape, b.shape_style).width + 6});
  }
  const double gaps[kColumns - 1] = {b.col_gap, b.col_gap, 46, b.col_gap, b.col_gap};
  b.col_x[0] = token_w + 6;
  for (int k = 1; k < kColumns; ++k) b.col_x[k] = b.col_x[k - 1] + b.col_w[k - 1] + gaps[k - 1];
}

Body layout_body(Canvas& m, const ExplainResult& r) {
  const MultiHeadByHand& mh = *r.multihead;
  const std::size_t L = mh.x.shape(0), D = mh.x.shape(1), H = mh.heads;
  Body b;
  // Cells: as large as 16 points, smaller when the sentence, the width or the heads are many.
  b.c = std::clamp(std::floor(std::min(160.0 / double(std::max(L, D)), 640.0 / double(H * L))), 3.0, 16.0);
  // Rows shorter than a line of text label every label_step-th token, and the subtitle says so.
  b.label_step = b.c >= 10 ? 1 : static_cast<std::size_t>(std::ceil(10.0 / b.c));
  b.token_style = {std::min(9.0, std::max(b.c, 6.0)), false, kInk};
  double token_w = 0;
  for (const std::string& t : r.tokens) token_w = std::max(token_w, m.measure(t, b.token_style).width);
  b.mat_h = b.c * double(L);
  b.slot = b.label_h + b.mat_h + b.shape_h + b.row_gap;  // one matrix with its label and shape
  std::vector<int> column;
  b.blocks = matrix_blocks(mh, b.slot, column);
  place_columns(m, b, column, token_w);
  // Room above the first row for the arrows' wrapped labels.
  b.arrow_style = {8.5, false, kArrow, b.col_gap - 8, true};
  const std::string arrow_text[kColumns - 1] = {
      "× W_qᵀ, W_kᵀ, W_vᵀ [D, D] (or one fused W_qkv [3D, D])", "split: [L, D] → " + std::to_string(H) + " × [L, d_h]",
      "× V_h", "concat: " + std::to_string(H) + " × [L, d_h] → [L, D]", "× W_oᵀ [D, D]: mixes the heads"};
  double arrow_h = 0;
  for (int k = 0; k + 1 < kColumns; ++k) {
    b.arrow_text[k] = arrow_text[k];
    arrow_h = std::max(arrow_h, m.measure(arrow_text[k], b.arrow_style).height);
  }
  b.top = std::max(0.0, arrow_h + 6 - (b.label_h + b.mat_h / 2));
  for (std::size_t i = 0; i < b.blocks.size(); ++i) {
    b.blocks[i].x = b.col_x[column[i]];
    b.blocks[i].y += b.top;
  }
  for (const Block& k : b.blocks) {
    b.width = std::max({b.width, k.x + b.c * double(k.m->shape(1)), k.x + m.measure(k.label, b.label_style).width,
                        k.x + m.measure(k.shape, b.shape_style).width});
    b.height = std::max(b.height, k.y + b.slot);
  }
  return b;
}

// The heads share one mask; a long causal one puts every head's weights on heatmap.hpp's log
// scale, as every other weight picture does.
ColorScale heads_weight_scale(const MultiHeadByHand& mh) {
  ColorScale weight_scale{0, 1};
  if (mh.causal) {
    const std::size_t L = mh.x.shape(0);
    const Mask2 allowed = causal_allowed(L, L);
    std::optional<ColorScale> log;
    for (const Tensor2& w : mh.weights)
      if (!(log = long_causal_log_scale(w, allowed))) break;
    if (log) weight_scale = *log;
  }
  return weight_scale;
}

// Three value scales centred on 0 (x, Q, K, V; O_h, O; y), the weights on [0, 1]; four colorbars.
struct Bars {
  double vmax[3] = {0, 0, 0};
  ColorScale weight_scale{0, 1};
  double h = 0, width = 0;
  double x[4] = {0, 0, 0, 0};  // the four colorbars' left edges, from the first
  std::string label[3] = {"value: x, Q, K, V", "value: O_h, O (own scale)", "value: y (own scale)"};
};

Bars layout_bars(Canvas& m, const MultiHeadByHand& mh, const Body& body) {
  Bars bars;
  for (const Block& b : body.blocks) {
    if (b.weights) continue;
    for (float v : *b.m) bars.vmax[b.scale] = std::max(bars.vmax[b.scale], double(std::fabs(v)));
  }
  for (double& top : bars.vmax)
    if (top == 0) top = 1;
  bars.weight_scale = heads_weight_scale(mh);
  bars.h = std::max(120.0, std::min(body.height - 20, 220.0));
  for (int k = 0; k < 3; ++k)
    bars.x[k + 1] = bars.x[k] + render::colorbar_width(m, -bars.vmax[k], bars.vmax[k], bars.label[k]) + 24;
  bars.width = bars.x[3] + render::colorbar_width(m, bars.weight_scale.vmin, bars.weight_scale.vmax, "weight",
                                                  bars.weight_scale.log);
  return bars;
}

std::string multihead_subtitle(const MultiHeadByHand& mh, const Body& body, const ColorScale& weight_scale) {
  const std::size_t L = mh.x.shape(0);
  return std::string(mh.causal ? "causal (hatched: masked, not a weight of 0) · " : "no mask · ") +
         "rows are the tokens in order · O_h and O share their own colour scale, y has its own: each row of O_h "
         "averages V's rows, so on x, Q, K, V's scale it would fade" +
         (L >= 16 ? std::string(" (a late row averages many, so its values shrink toward V's mean: pale there is small)") : "") +
         (weight_scale.log ? std::string(" · ") + kLongCausalLogNote : "") +
         (body.label_step > 1 ? " · " + render::label_thinning_note(body.label_step, L) : "") +
         " · split = a reshape [L, H, d_h] and a transpose, no arithmetic · "
         "max |by hand − attn::mha| = " + format_g(mh.max_diff_vs_mha, 2) +
         " · fused W_qkv [3D, D], one product split in three: max |fused − separate| = " + format_g(mh.max_diff_fused, 2);
}

// One matrix with its label above and its shape below; (bx, by) is its label's top-left.
void draw_block(Canvas& cv, const Block& b, const Body& body, const Bars& bars, const Colormap& values,
                const Colormap& weights, bool causal, double bx, double by) {
  const double c = body.c, label_h = body.label_h;
  cv.text(b.label, bx, by + label_h - 3, b.head ? TextStyle{9.5, true, head_colour(*b.head)} : body.label_style, 0, 1);
  const std::size_t rows = b.m->shape(0), cols = b.m->shape(1);
  for (std::size_t i = 0; i < rows; ++i) {
    for (std::size_t j = 0; j < cols; ++j) {
      const double x = bx + c * double(j), y = by + label_h + c * double(i);
      // A key the causal mask hides is hatched, as in every picture: not a weight of 0.
      if (b.weights && causal && j > i) {
        cv.hatch_rect(x, y, c, c);
        continue;
      }
      const double v = (*b.m)(i, j);
      cv.fill_rect(x, y, c, c,
                   b.weights ? weights.at(std::clamp(bars.weight_scale.position(v), 0.0, 1.0))
                             : values.at((v / bars.vmax[b.scale] + 1) / 2));
    }
  }
  const double w = c * double(cols), h = c * double(rows);
  if (b.head) cv.stroke_rect(bx - 1, by + label_h - 1, w + 2, h + 2, head_colour(*b.head), 2);
  else cv.stroke_rect(bx, by + label_h, w, h, rgb_from_hex(0x909090), 0.6);
  const std::size_t hd = b.head_blocks ? cols / b.head_blocks : 0;
  // A head's columns are outlined in its colour; a block too narrow for an outline to leave
  // its cells visible (48 tokens, d_h = 2) gets a bar of its colour under the matrix instead.
  const bool head_bars = b.head_blocks && c * double(hd) < 12;
  for (std::size_t k = 0; k < b.head_blocks; ++k) {
    if (head_bars) cv.fill_rect(bx + c * double(k * hd), by + label_h + h + 1, c * double(hd), 3, head_colour(k));
    else cv.stroke_rect(bx + c * double(k * hd) + 0.75, by + label_h + 0.75, c * double(hd) - 1.5, h - 1.5, head_colour(k), 1.5);
  }
  cv.text(b.shape, bx, by + label_h + h + (head_bars ? 5 : 2), body.shape_style, 0, 0);
}

// The label sits over the gap between two columns (tx), where no matrix label reaches.
void draw_arrow(Canvas& cv, double xa, double ya, double xb, double yb, double tx, const std::string& text,
                const TextStyle& style) {
  cv.polyline({{xa, ya}, {xb, yb}}, kArrow, 1.2);
  const double ang = std::atan2(yb - ya, xb - xa), s = 6;
  cv.fill_polygon({{xb, yb}, {xb - s * std::cos(ang - 0.4), yb - s * std::sin(ang - 0.4)},
                   {xb - s * std::cos(ang + 0.4), yb - s * std::sin(ang + 0.4)}},
                  kArrow);
  cv.text(text, tx, (ya + yb) / 2 - 3, style, 0.5, 1);
}

// The body with its top-left at (ox, oy): token labels, matrices, arrows.
void draw_body(Canvas& cv, const ExplainResult& r, const Body& body, const Bars& bars, const Colormap& values,
               const Colormap& weights, double ox, double oy) {
  const double c = body.c, label_h = body.label_h;
  for (std::size_t i = 0; i < r.tokens.size(); i += body.label_step) {
    cv.text(r.tokens[i], ox + body.col_x[0] - 4, oy + body.top + label_h + c * (double(i) + 0.5), body.token_style, 1, 0.5);
  }
  for (const Block& b : body.blocks) draw_block(cv, b, body, bars, values, weights, r.multihead->causal, ox + b.x, oy + b.y);
  const double mid_y = oy + body.top + label_h + body.mat_h / 2;  // the first row of matrices' middle
  for (int k = 0; k + 1 < kColumns; ++k) {
    draw_arrow(cv, ox + body.col_x[k] + body.mat_w[k] + 6, mid_y, ox + body.col_x[k + 1] - 6, mid_y,
               ox + (body.col_x[k] + body.col_w[k] + body.col_x[k + 1]) / 2, body.arrow_text[k], body.arrow_style);
  }
}

}  // namespace

Figure multihead_figure(const ExplainResult& r) {
  if (!r.multihead) throw std::logic_error("multihead_figure: the result has no multi-head lesson");
  const MultiHeadByHand& mh = *r.multihead;
  const std::size_t D = mh.x.shape(1), H = mh.heads, d = mh.head_dim;
  Canvas m = Canvas::measuring();
  const Body body = layout_body(m, r);
  const Bars bars = layout_bars(m, mh, body);
  const double total_w = body.width + 30 + bars.width;
  const std::string title = "Multi-head attention by hand: " + count_of(H, "head") + " of d_h = " +
                            std::to_string(D) + " / " + std::to_string(H) + " = " + std::to_string(d) + " on " +
                            title_quote(r.config.sentence);
  const render::FigureFrame frame =
      render::frame_figure(m, title, multihead_subtitle(mh, body, bars.weight_scale), {total_w}, 0, 16);
  const double ox = frame.centred_x(total_w), oy = frame.body_y();

  Figure f;
  f.title = frame.titles.title;
  f.subtitle = frame.titles.subtitle;
  f.width = frame.width();
  f.height = oy + body.height + 16;
  for (const Block& b : body.blocks) {
    f.grids.push_back({ox + b.x, oy + b.y + body.label_h, body.c, body.c, b.m->shape(0), b.m->shape(1)});
  }
  const auto values = std::make_shared<Colormap>(Colormap::by_name("RdBu_r"));
  const auto weights = std::make_shared<Colormap>(Colormap::by_name("Blues"));
  f.draw = [=](Canvas& cv) {
    frame.draw_title(cv);
    draw_body(cv, r, body, bars, *values, *weights, ox, oy);
    const double bx = ox + body.width + 30, by = oy + body.label_h;
    for (int k = 0; k < 3; ++k)
      render::draw_colorbar(cv, *values, -bars.vmax[k], bars.vmax[k], bx + bars.x[k], by, bars.h, bars.label[k]);
    render::draw_colorbar(cv, *weights, bars.weight_scale.vmin, bars.weight_scale.vmax, bx + bars.x[3], by, bars.h,
                          "weight", bars.weight_scale.log);
  };
  return f;
}

}  // namespace attn
