// The pictures of `attn-cli train` (train_pictures.hpp).
#include "attn/render/views/train_pictures.hpp"

#include <cstdio>
#include <filesystem>
#include <map>

#include "attn/engine/attention/mask.hpp"
#include "attn/render/views/model_pictures.hpp"
#include "attn/render/draw/line_plot.hpp"

namespace attn {
namespace {

std::string fixed(double v, int digits) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

PlotSeries curve(std::string name, const std::vector<double>& x, std::vector<double> y, std::size_t color) {
  PlotSeries s;
  s.name = std::move(name);
  s.x = x;
  s.y = std::move(y);
  s.color = series_color(color);
  return s;
}

}  // namespace

Figure train_curves_figure(const TrainRun& run, const TrainOptions& o) {
  std::vector<double> steps, loss, prev, induction;
  for (const TrainPoint& p : run.points) {
    steps.push_back(double(p.step));
    loss.push_back(p.loss);
    prev.push_back(p.prev_token_score);
    induction.push_back(p.induction_score);
  }
  const PlotAxis step_axis{"training step", AxisScale::linear, 0.0, double(run.points.back().step), true};

  LinePlotSpec left;
  left.title = "Held-out loss";
  left.series = {curve("loss (nats per token)", steps, loss, 0)};
  left.references = {ReferenceLine::horizontal(run.uniform_loss, "ln(vocab) = " + fixed(run.uniform_loss, 2) +
                                                                     ": a uniform guess"),
                     ReferenceLine::horizontal(run.best_loss, "floor " + fixed(run.best_loss, 2) +
                                                                  ": the first half is random")};
  left.references[1].color = series_color(2);
  left.x = step_axis;
  left.y = {"cross-entropy (nats)", AxisScale::linear, 0.0};
  left.width = 340;
  left.height = 240;
  left.legend = LegendPlace::lower_left;

  LinePlotSpec right = left;
  right.title = "Best head of each kind";
  right.series = {curve("previous-token score", steps, prev, 1), curve("induction score", steps, induction, 3)};
  right.references = {};
  right.y = {"mean attention on the target key", AxisScale::linear, 0.0, 1.0};
  right.legend = LegendPlace::upper_left;
  if (run.phase_change_step) {
    const std::string name = "phase change, step " + std::to_string(*run.phase_change_step);
    left.references.push_back(ReferenceLine::vertical(double(*run.phase_change_step), name));
    right.references.push_back(ReferenceLine::vertical(double(*run.phase_change_step), name));
    left.references.back().color = right.references.back().color = series_color(3);
  }
  const ToyConfig& c = o.config;
  const std::string subtitle =
      std::string(train_task_name(o.task)) + " task: " + std::to_string(c.context / 2) + " random tokens, then " +
      (o.task == TrainTask::induction ? "the same again" : "the same reversed") + " · " + std::to_string(c.layers) +
      " layers × " + std::to_string(c.heads) + " heads, d_model " + std::to_string(c.d_model) + ", vocab " +
      std::to_string(c.vocab) + " · Adam lr " + fixed(o.lr, 4) + ", batch " + std::to_string(o.batch) +
      ", seed " + std::to_string(o.seed) + " · scores: head_summary's, on " +
      std::to_string(run.final_summary.sequences) +
      " held-out sequences whose repeat varies in period and start, so position alone cannot score" +
      (run.phase_change_step ? "" : " · no phase change: the loss never fell 0.5 nats below ln(vocab)");
  return line_plot_row_figure({left, right}, "An attention-only transformer learning in context", subtitle);
}

Figure train_heads_figure(const std::vector<Tensor3>& attention, const std::vector<std::string>& tokens,
                          const std::string& title, const std::string& subtitle, const std::string& colormap) {
  // One linear 0..1 scale in all three moments, so they compare: before training a head spreads
  // its weight and is pale; a learned head is dark where it looks. Said, as a log scale is.
  ModelViewSpec spec{attention, tokens, nullptr, title,
                     subtitle + " · one linear colour scale 0 to 1 in the before, phase-change and after pictures, "
                                "so a head that spreads its weight is pale and a learned one dark",
                     colormap, /*fixed_scale=*/true};
  return model_view_figure(spec);
}

std::vector<std::string> write_train_pictures(const TrainRun& run, const TrainOptions& o, const std::string& dir,
                                              const ImageOptions& image, const std::string& colormap) {
  std::vector<std::string> tokens;
  for (std::int32_t t : run.shown_sequence) tokens.push_back(std::to_string(t));
  // The shown sequence's repeat: most of its induction cells lie period - 1 below the diagonal
  // (a token repeated by chance in the random prefix adds a stray one).
  const std::vector<InductionCell> cells = induction_cells(run.shown_sequence);
  std::map<std::size_t, std::size_t> below;  // query - key -> cells
  for (const InductionCell& c : cells) ++below[c.query - c.key];
  std::size_t offset = 0, first = 0;
  for (const auto& [d, count] : below)
    if (count > below[offset]) offset = d;
  for (auto it = cells.rbegin(); it != cells.rend(); ++it)
    if (it->query - it->key == offset) first = it->query;
  const std::string stripe =
      cells.empty() ? std::string("no token repeats in this sequence")
                    : "an induction head lights the cells " + std::to_string(offset) + " below the diagonal from query " +
                          std::to_string(first) + " on (each repeated token's key just after its earlier copy)";
  const std::string what =
      o.task == TrainTask::induction
          ? "rows: query, columns: key · " + stripe + "; a previous-token head lights the line just below the diagonal"
          : "rows: query, columns: key · the reverse task is solved by position: the second half's queries "
            "attend to the mirror image of their position, an anti-diagonal";
  struct Moment {
    const char* name;
    std::string title;
    const std::vector<Tensor3>* attention;
  };
  const std::size_t last = run.points.back().step;
  const std::vector<Moment> moments = {
      {"heads_before", "Every head before training (step 0), on a held-out sequence", &run.attention_before()},
      {"heads_phase_change",
       run.phase_change_step ? "Every head at the phase change (step " + std::to_string(*run.phase_change_step) + ")"
                             : "No phase change: every head at the end (step " + std::to_string(last) + ")",
       &run.attention_at_phase_change()},
      {"heads_after", "Every head after training (step " + std::to_string(last) + ")", &run.attention_after()}};
  std::vector<std::string> written =
      save_figure(train_curves_figure(run, o), (std::filesystem::path(dir) / "curves").string(), image);
  for (const Moment& m : moments) {
    const Figure f = train_heads_figure(*m.attention, tokens, m.title, what, colormap);
    for (const std::string& path : save_figure(f, (std::filesystem::path(dir) / m.name).string(), image))
      written.push_back(path);
  }
  return written;
}

}  // namespace attn
