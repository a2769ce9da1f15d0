// The efficient-attention family on one head, drawn (approximations_picture.hpp).
#include "attn/render/views/approximations_picture.hpp"

#include "attn/io/number_format.hpp"
#include "attn/render/draw/head_grid.hpp"
#include "attn/render/draw/heatmap.hpp"
#include "attn/render/views/model_pictures.hpp"

namespace attn {

Figure approximations_figure(const ApproximationsLesson& lesson, const std::string& colormap) {
  const std::size_t M = lesson.runs.size(), L = lesson.tokens.size();
  HeadGridSpec spec;
  spec.weights = Tensor3::from_shape({M, L, L});
  Mask3 allowed = Mask3::from_shape({M, L, L});
  for (std::size_t m = 0; m < M; ++m) {
    const ApproximationRun& r = lesson.runs[m];
    xt::view(spec.weights, m) = r.weights;
    xt::view(allowed, m) = r.allowed;
    spec.panel_titles.push_back(r.family == "exact" ? r.method + " (the reference)"
                                                    : r.method + " · error " + format_g(r.output_error, 2));
  }
  spec.allowed = std::move(allowed);
  spec.query_tokens = spec.key_tokens = visible_token_labels(lesson.tokens);
  spec.show_mean = false;
  // One scale for every panel: exact attention's, so that a method's paler or darker cell means a
  // different weight (a long sentence's rows share their weight among many keys: log scale).
  const std::optional<ColorScale> log_scale = long_causal_log_scale(lesson.runs.front().weights, lesson.runs.front().allowed);
  if (log_scale) spec.scale = log_scale;
  else spec.vmax = 1.0;
  spec.colormap = colormap;
  spec.columns = M <= 3 ? M : (L > 16 ? 3 : M);
  spec.panel_points = 150;  // five panels: the report embeds the picture, and keeps under its size budget
  spec.title = "Efficient attention on " + lesson.head;
  spec.subtitle = "the same q, k, v, causal · window and stride " + std::to_string(lesson.window) +
                  " (about √n) · error = ‖O − O_exact‖ / ‖O_exact‖ of the outputs · hatched: keys the method never "
                  "sees · linear and performer keep a fixed-size state instead of a score matrix" +
                  (log_scale ? std::string(" · ") + kLongCausalLogNote : std::string());
  if (L == 1)
    spec.subtitle = "one token sees only itself: every method gives it weight 1, and every error is 0 · a longer "
                    "sentence shows where they part";
  return head_grid_figure(spec);
}

}  // namespace attn
