// attn-cli temperature: one row of scores under a sweep of softmax temperatures.
#include <memory>

#include "attn/render/views/experiment_pictures.hpp"
#include "attn/lessons/concepts/temperature.hpp"
#include "commands.hpp"
#include "experiment_output.hpp"

namespace attn::cli {
namespace {

struct TemperatureOptions {
  std::vector<double> scores = kDefaultScores;
  std::vector<double> temperatures = kDefaultTemperatures;
  OutputOptions output;
  PlotOptions plots;
};

std::string temperature_text(const TemperatureResult& r, TableFormat format) {
  Table t{{"T", "entropy", "dH/dT", "max p"}, {}};
  for (double s : r.scores) t.header.push_back("p(s=" + format_g(s) + ")");
  for (const TemperaturePoint& p : r.points) {
    std::vector<std::string> row = {format_g(p.temperature), format_fixed(p.entropy, 4),
                                    format_g(p.entropy_slope, 3), format_fixed(p.max_weight, 4)};
    for (double w : p.weights) row.push_back(format_fixed(w, 4));
    t.rows.push_back(row);
  }
  if (format == TableFormat::csv) return render_table(t, format);
  const TemperaturePoint &lo = r.points.front(), &hi = r.points.back();
  std::string out = "softmax(s / T) for one row of " + std::to_string(r.scores.size()) +
                    " scores; entropy in nats, limits " + format_fixed(r.entropy_at_zero, 4) +
                    " (T -> 0) and ln " + std::to_string(r.scores.size()) + " = " +
                    format_fixed(r.entropy_at_infinity, 4) + " (T -> infinity).\n\n";
  out += render_table(t, format) + "\n";
  if (r.points.size() < 2) return out;
  if (r.entropy_at_zero == r.entropy_at_infinity) {  // every score is the maximum
    return out + "All " + std::to_string(r.scores.size()) + " scores are equal, so softmax is uniform at every T " +
           "(entropy ln " + std::to_string(r.scores.size()) + " = " + format_fixed(r.entropy_at_infinity, 4) +
           "): temperature only rescales differences between scores, and there are none. Give scores that differ.\n";
  }
  out += std::string("Entropy rises at every step of T: ") + (r.entropy_increasing ? "yes" : "no") +
         " (dH/dT = Var_p(s) / T^3 >= 0). The largest weight falls from " + format_fixed(lo.max_weight, 4) +
         " at T = " + format_g(lo.temperature) + " to " + format_fixed(hi.max_weight, 4) + " at T = " +
         format_g(hi.temperature) + ".\n";
  out += "A common tutorial says a larger T gives the high values more weight (\"T越大 ... 让高值更多权重\"): "
         "these numbers say the opposite. A larger T flattens softmax; a smaller T sharpens it.\n";
  return out;
}

void run_temperature_command(const TemperatureOptions& opts) {
  const TemperatureResult r = run_temperature(opts.scores, opts.temperatures);
  PreparedPlots plots = prepare_plots(opts.plots);
  emit(opts.output, temperature_json(r), [&](TableFormat f) { return temperature_text(r, f); });
  write_plots(plots, opts.output, {{"temperature", temperature_figure(r)}});
}

}  // namespace

void setup_temperature(CLI::App& app) {
  auto opts = std::make_shared<TemperatureOptions>();
  CLI::App* cmd = app.add_subcommand(
      "temperature", "Softmax of one row of scores as the temperature T varies: weights and entropy");
  cmd->add_option("--scores", opts->scores, "one row of attention scores (comma-separated; "
                  "write --scores=-1,2 when the first is negative)")->delimiter(',')->capture_default_str();
  cmd->add_option("--t", opts->temperatures, "temperatures to sweep (comma-separated, > 0)")
      ->delimiter(',')->capture_default_str();
  add_output_options(cmd, opts->output, {"text", "json", "markdown", "csv"});
  add_plot_options(cmd, opts->plots);
  cmd->footer(R"(Pictures written into --plots DIR: temperature (each key's weight vs T, and the entropy vs T
on a log T axis).

Examples:
  attn-cli temperature
  attn-cli temperature --scores 3,1,0.2 --t 0.5,1,2 --format json
  attn-cli temperature --t 0.1,0.2,0.5,1,2,5,10,20 --plots temperature-plots
)");
  cmd->callback([opts] { run_temperature_command(*opts); });
}

}  // namespace attn::cli
