#include "experiment_output.hpp"

#include <iostream>

namespace attn::cli {

void add_output_options(CLI::App* cmd, OutputOptions& opts, const std::vector<std::string>& formats) {
  opts.format = formats.front();
  std::string names;
  for (const auto& f : formats) names += (names.empty() ? "" : "|") + f;
  cmd->add_option("--format", opts.format, "what to print: " + names)
      ->capture_default_str()
      ->check(CLI::IsMember(formats));
  cmd->add_option("--out", opts.out, "also write the JSON result to this file");
}

void emit(const OutputOptions& opts, const Json& json,
          const std::function<std::string(TableFormat)>& text) {
  if (!opts.out.empty()) write_file_atomically(opts.out, json.dump(2) + "\n");
  if (opts.format == "json") {
    std::cout << json.dump(2) << "\n";
  } else if (opts.format == "markdown") {
    std::cout << text(TableFormat::markdown);
  } else if (opts.format == "csv") {
    std::cout << text(TableFormat::csv);
  } else {
    std::cout << text(TableFormat::text);
  }
}

void add_plot_options(CLI::App* cmd, PlotOptions& opts) {
  cmd->add_option("--plots", opts.dir, "also draw the pictures into this folder");
  add_image_flags(cmd, opts.image, /*with_colormap=*/false, "--image-format");
}

PreparedPlots prepare_plots(const PlotOptions& opts) {
  if (opts.dir.empty()) return {};
  PreparedPlots plots{image_options(opts.image), std::nullopt};
  plots.folder.emplace(prepare_picture_dir(opts.dir, "--plots"));
  return plots;
}

void write_plots(PreparedPlots& plots, const OutputOptions& output, const std::vector<NamedFigure>& figures) {
  if (!plots.folder) return;
  save_pictures(figures, *plots.folder, plots.image, picture_log(output));
}

std::ostream& picture_log(const OutputOptions& output) {
  return output.format == "json" || output.format == "csv" ? std::cerr : std::cout;
}

}  // namespace attn::cli
