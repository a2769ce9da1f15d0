// attn-cli pitfalls: common attention mistakes computed beside the right way.
#include <memory>
#include <optional>

#include "attn/render/views/explain_pictures.hpp"
#include "attn/lessons/concepts/pitfalls.hpp"
#include "commands.hpp"
#include "experiment_output.hpp"

namespace attn::cli {
namespace {

struct PitfallsOptions {
  std::optional<std::string> id;
  std::uint64_t seed = 42;
  OutputOptions output;
  PlotOptions plots;
};

std::string indent(const std::string& block, const std::string& pad) {
  std::string out;
  std::size_t start = 0;
  while (start < block.size()) {
    const std::size_t end = block.find('\n', start);
    out += pad + block.substr(start, end - start) + "\n";
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return out;
}

std::string pitfall_text(const Pitfall& p, std::size_t number, TableFormat f) {
  std::string out = std::to_string(number) + ". " + p.title + "   [" + p.id + "]\n";
  out += "   wrong: " + p.wrong_way + "\n   right: " + p.right_way + "\n   seen in: " + p.seen_in + "\n\n";
  for (const PitfallTable& t : p.tables) {
    Table table{{""}, {}};
    table.header.insert(table.header.end(), t.col_labels.begin(), t.col_labels.end());
    for (std::size_t i = 0; i < t.row_labels.size(); ++i) {
      for (const auto& [which, m] : {std::pair{"wrong", &t.wrong}, std::pair{"right", &t.right}}) {
        std::vector<std::string> row = {t.row_labels[i] + ", " + which};
        for (std::size_t j = 0; j < m->shape(1); ++j) row.push_back(format_g((*m)(i, j), 4));
        table.rows.push_back(row);
      }
    }
    out += "   " + t.caption + ":\n" + indent(render_table(table, f), "   ") + "\n";
  }
  Table facts{{"", "wrong", "right"}, {}};
  for (const PitfallFact& x : p.facts) facts.rows.push_back({x.name, format_g(x.wrong, 4), format_g(x.right, 4)});
  out += indent(render_table(facts, f), "   ");
  out += "   Lesson: " + p.lesson + "\n\n";
  return out;
}

void run_pitfalls(const PitfallsOptions& opts) {
  PreparedPlots plots = prepare_plots(opts.plots);
  const std::vector<Pitfall> list = opts.id ? std::vector<Pitfall>{find_pitfall(*opts.id, opts.seed)}
                                            : all_pitfalls(opts.seed);
  emit(opts.output, pitfalls_json(list), [&](TableFormat f) {
    std::string out;
    for (std::size_t i = 0; i < list.size(); ++i) out += pitfall_text(list[i], i + 1, f);
    return out;
  });
  if (opts.plots.dir.empty()) return;
  std::vector<NamedFigure> figures;
  std::string without;  // pitfalls whose lesson is a few numbers, not a matrix: no picture, said so
  for (const Pitfall& p : list) {
    if (pitfall_has_figure(p)) figures.push_back({"pitfall-" + p.id, pitfall_figure(p)});
    else without += (without.empty() ? "" : ", ") + p.id;
  }
  write_plots(plots, opts.output, figures);
  if (!without.empty()) {
    picture_log(opts.output)
        << "No picture for " << without << ": " << (list.size() == 1 ? "its lesson is" : "their lessons are")
        << " numbers, not a matrix (in the output above)" << (figures.empty() ? "; nothing written to --plots" : "")
        << ".\n";
  }
}

}  // namespace

void setup_pitfalls(CLI::App& app) {
  auto opts = std::make_shared<PitfallsOptions>();
  CLI::App* cmd = app.add_subcommand("pitfalls", "Common attention mistakes, computed beside the right way");
  std::string ids;
  for (const Pitfall& p : all_pitfalls(opts->seed)) ids += (ids.empty() ? "" : ", ") + p.id;
  cmd->add_option("id", opts->id, "show one pitfall: " + ids);
  cmd->add_option("--seed", opts->seed, "seed of the random example (missing-scale)")->capture_default_str();
  add_output_options(cmd, opts->output, {"text", "json", "markdown"});
  add_plot_options(cmd, opts->plots);
  cmd->footer(R"(Pictures written into --plots DIR: pitfall-ID for each pitfall that has tables, its wrong
and right tables side by side ("wrong | right"), the lesson as subtitle; the pitfalls whose lesson
is a few numbers are named as having no picture.

Examples:
  attn-cli pitfalls
  attn-cli pitfalls fully-masked-row
  attn-cli pitfalls float-mask-sdpa
  attn-cli pitfalls causal-alignment --format json
  attn-cli pitfalls fully-masked-row --plots pitfall-plots
)");
  cmd->callback([opts] { run_pitfalls(*opts); });
}

}  // namespace attn::cli
