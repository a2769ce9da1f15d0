// The linear-attention pictures (linear_rnn_picture.hpp).
#include "attn/render/views/linear_rnn_picture.hpp"

#include <algorithm>
#include <cmath>

#include "attn/engine/attention/mask.hpp"
#include "attn/io/number_format.hpp"
#include "attn/render/draw/heatmap.hpp"
#include "attn/render/draw/line_plot.hpp"
#include "attn/render/draw/text_rules.hpp"
#include "attn/render/draw/text_table.hpp"

namespace attn {
namespace {

// One causal [L, L] panel of the sentence's weights, titled by the caller. Its scale, unless the
// caller sets one, is heatmap.hpp's automatic one, the same for P and A: both are causal maps
// whose first row is a weight of exactly 1 (the first query sees only itself), so [0, 1] on a
// linear scale, or on a long sentence the one log scale long_causal_log_scale gives that mask
// (its later rows would look empty on a linear scale).
HeatmapSpec weights_panel(const LinearRnnResult& r, const MatrixF64& weights) {
  HeatmapSpec s;
  s.weights = xt::cast<float>(weights);
  s.query_tokens = s.key_tokens = r.tokens;
  s.allowed = causal_allowed(r.tokens.size(), r.tokens.size());
  return s;
}

std::string sizes_text(const LinearRnnResult& r) {
  return count_of(r.tokens.size(), "token") + ", one head, d = dv = " + std::to_string(r.config.d) + ", seed " +
         std::to_string(r.config.seed);
}

}  // namespace

Figure linear_attention_figure(const LinearRnnResult& r) {
  HeatmapSpec softmax = weights_panel(r, r.softmax_weights);
  softmax.title = "softmax P = softmax(QKᵀ/√d)";
  softmax.colorbar = false;  // the same scale as A's, whose colorbar stands beside A
  HeatmapSpec linear = weights_panel(r, r.linear_weights);
  linear.title = "linear attention A, φ = elu + 1";
  HeatmapSpec difference = weights_panel(r, MatrixF64(r.linear_weights - r.softmax_weights));
  const double most = r.max_abs_weight_difference;
  difference.colormap = "RdBu_r";
  difference.vmax = most > 0 ? most : 1;  // symmetric about 0: white = the same weight
  difference.vmin = -*difference.vmax;
  difference.value_label = "A − P";
  difference.title = "A − P (red: A larger, blue: P larger)";
  const std::string title = "Linear attention's weights are not softmax's: " +
                            unbreakable("max |A − P| = " + format_g(most, 3)) + ", " +
                            unbreakable("max |A V − P V| = " + format_g(r.max_abs_output_difference, 3));
  const std::string one_token =
      r.tokens.size() == 1 ? " · one token sees only itself: both give it the weight 1, the difference shows from two on" : "";
  const std::string subtitle =
      title_quote(r.config.sentence) + ", causal, " + sizes_text(r) + one_token +
      " · A_ij = φ(q_i)·φ(k_j) / Σ_{j′≤i} φ(q_i)·φ(k_j′), P on the same Q, K through attention() · "
      "φ(q)·φ(k) grows like a polynomial of the scores where exp grows exponentially, so A's rows are flatter: "
      "it cannot put all its weight on one key";
  return heatmap_row_figure({softmax, linear, difference}, title, subtitle);
}

Figure linear_attention_memory_figure(const LinearRnnResult& r) {
  const bool markers = r.memory.size() <= 64;
  PlotSeries cache, state;
  cache.name = "KV cache (softmax): t (d + dv) numbers";
  state.name = "state S, z (linear attention): d dv + d numbers";
  for (const MemoryAtStep& m : r.memory) {
    cache.x.push_back(double(m.t));
    cache.y.push_back(m.kv_cache_bytes);
    state.x.push_back(double(m.t));
    state.y.push_back(m.state_bytes);
  }
  cache.color = series_color(3);
  state.color = series_color(0);
  for (PlotSeries* s : {&cache, &state}) {
    s->marker = markers ? Marker::circle : Marker::none;
    s->marker_size = 4.5;
  }
  const MemoryAtStep& last = r.memory.back();
  LinePlotSpec p;
  p.series = {cache, state};
  ReferenceLine cross = ReferenceLine::vertical(double(r.crossover_t),
                                                "crossover: the cache is larger from t = " + std::to_string(r.crossover_t));
  cross.color = rgb_from_hex(0x777777);
  ReferenceLine here = ReferenceLine::vertical(double(r.tokens.size()),
                                               "this sentence ends: t = " + std::to_string(r.tokens.size()));
  here.color = series_color(2);
  here.dashed = false;
  p.references = {cross, here};
  // Each line's last value, written left of its last point: the cache's above its rising line,
  // the state's under its flat one, so neither covers a line.
  for (double bytes : {last.kv_cache_bytes, last.state_bytes}) {
    PlotLabel l;
    l.x = double(last.t);
    l.y = bytes;
    l.text = format_bytes(bytes) + "  ";
    l.anchor_x = 1;
    l.anchor_y = bytes == last.state_bytes ? 0 : 1;
    p.labels.push_back(l);
  }
  p.x = {"decoding step t (tokens so far, log₁₀ scale)", AxisScale::log10};
  p.y = {"bytes the step carries (log₁₀ scale)", AxisScale::log10};
  p.width = 440;
  p.height = 280;
  p.title = "What one decoding step carries: the KV cache grows with t, linear attention's state does not";
  p.subtitle = sizes_text(r) + ", " + std::to_string(r.config.value_bytes) +
               " bytes a number · " +
               (r.tokens.size() == 1 ? std::string("the sentence's step t = 1")
                                     : "the sentence's steps t = 1.." + std::to_string(r.tokens.size())) +
               ", then longer t from the same formulas · at " + unbreakable("t = " + std::to_string(last.t)) + ": " +
               format_bytes(last.kv_cache_bytes) + " of cache against " + format_bytes(last.state_bytes) + " of state";
  return line_plot_figure(p);
}

}  // namespace attn
