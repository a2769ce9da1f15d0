// The attention-conv pictures (attention_conv_picture.hpp).
#include "attn/render/views/attention_conv_picture.hpp"

#include <algorithm>
#include <cmath>

#include "attn/engine/attention/mask.hpp"
#include "attn/engine/core/error.hpp"
#include "attn/io/number_format.hpp"
#include "attn/render/draw/head_grid.hpp"
#include "attn/render/draw/heatmap.hpp"
#include "attn/render/draw/text_rules.hpp"

namespace attn {
namespace {

// "−2", "0", "+1": an offset j − i with its sign, a typographic minus.
std::string signed_offset(long o) {
  return o < 0 ? "−" + std::to_string(-o) : (o > 0 ? "+" : "") + std::to_string(o);
}

std::string sizes_text(const ConvLessonConfig& c) {
  return "kernel K = " + std::to_string(c.kernel) + ", L = " + count_of(c.length, "position") + ", " +
         std::to_string(c.channels) + " channels in, " + std::to_string(c.out_channels) + " out, seed " +
         std::to_string(c.seed);
}

// One [positions, output channels] panel on the symmetric scale [-top, top].
HeatmapSpec output_panel(const ArrayF64& y, double top, const std::string& title) {
  HeatmapSpec s;
  s.weights = xt::cast<float>(y);
  s.query_tokens = position_labels(y.shape(0));
  s.key_tokens = position_labels(y.shape(1), "c");
  s.row_title = "Position i";
  s.col_title = "Output channel";
  s.colormap = "RdBu_r";
  s.vmax = top;
  s.vmin = -top;
  s.value_label = "Output value";
  s.title = title;
  return s;
}

}  // namespace

Figure conv_heads_figure(const ConvLesson& l) {
  const ConvCase& c = l.one_d;
  if (c.head_weights.size() == 0)
    throw InputError("attention-conv's heads picture needs the heads' weights (run it with keep_head_weights)");
  HeadGridSpec s;
  s.weights = c.head_weights;
  s.query_tokens = s.key_tokens = position_labels(l.config.length);
  for (std::size_t h = 0; h < c.heads; ++h)
    s.panel_titles.push_back("head " + std::to_string(h) + ": offset j − i = " + signed_offset(c.offsets[h][0]));
  s.vmax = 1;
  s.show_mean = false;
  s.title = "A 1-D convolution of kernel " + std::to_string(c.heads) + " is " + count_of(c.heads, "attention head") +
            ", each one-hot on one offset";
  s.subtitle = sizes_text(l.config) +
               " · rows: query position i, columns: key position j · head h gives key j the score 0 where j − i is "
               "its offset and −∞ elsewhere, so its softmax row is one-hot: it copies the input at i + offset, which "
               "W_o^h (the kernel's tap h) then maps · a row whose offset falls off the sequence sees no key and is "
               "all 0 (zero padding) · the weights as attention() returned them";
  return head_grid_figure(s);
}

Figure conv_outputs_figure(const ConvLesson& l) {
  const ConvCase& c = l.one_d;
  double top = 0;
  for (const ArrayF64* y : {&c.attention, &c.conv})
    for (double v : *y) top = std::max(top, std::fabs(v));
  if (!(top > 0)) top = 1;
  HeatmapSpec attention = output_panel(c.attention, top, "attention");
  attention.colorbar = false;  // one scale for both: the convolution's colorbar serves
  const HeatmapSpec conv = output_panel(c.conv, top, "convolution");
  const std::string title = "The heads compute the convolution: " +
                            unbreakable("max |attention − convolution| = " + format_g(c.max_abs_diff, 3)) +
                            (c.max_abs_diff <= 1e-12 ? ", the same to float64 round-off" : " (NOT the same)");
  const std::string subtitle =
      sizes_text(l.config) + " · attention: y_i = Σ_h W_o^h (A^h x)_i, " + count_of(c.heads, "head") +
      " through attention(), each head's output times its tap, summed · convolution: the textbook loop y_i = "
      "Σ_k W_k x_(i+k" + (c.heads > 1 ? "−" + std::to_string(c.heads / 2) : "") + "), zero padding · one colour "
      "scale for both · with the last head left out the difference is " + format_g(c.one_head_short, 3) +
      ": one tap short, no longer the convolution";
  return heatmap_pair_figure(attention, conv, title, subtitle);
}

Figure conv_trained_figure(const TrainedOffsets& t) {
  HeatmapSpec s;
  s.weights = t.weights;
  s.query_tokens = s.key_tokens = t.tokens;
  s.allowed = causal_allowed(t.tokens.size(), t.tokens.size());
  s.vmin = 0;
  s.vmax = 1;
  std::string offsets;
  for (std::size_t q = 0; q < t.argmax_offset.size(); ++q) {
    const long o = t.argmax_offset[q];
    s.outlined.push_back({q + 1, std::size_t(long(q + 1) + o)});  // argmax_offset starts at query 1
    offsets += (offsets.empty() ? "" : " ") + signed_offset(o);
  }
  s.title = "A trained head's offset depends on what it reads: layer " + std::to_string(t.layer) + ", head " +
            std::to_string(t.head) + " looks at " + unbreakable(count_of(t.distinct, "offset")) + ", not one";
  s.subtitle = "the toy model shipped with attn-cli, its most induction-like head past layer 0, on \"the cat sat on a "
               "mat\" twice · outlined: each query's largest weight (query 1 on), at offsets j − i = " + offsets +
               " · a convolution's head looks at one fixed offset for every query";
  return heatmap_figure(s);
}

}  // namespace attn
