#pragma once
// Output flags shared by the experiment subcommands (variance, temperature, complexity,
// explain, pitfalls): --format picks what stdout gets, --out FILE also writes the JSON.
#include <CLI/CLI.hpp>

#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "attn/render/draw/canvas.hpp"
#include "attn/io/json_io.hpp"
#include "attn/render/report/report_table.hpp"
#include "image_flags.hpp"

namespace attn::cli {

struct OutputOptions {
  std::string format = "text";
  std::string out;  // empty = no file
};

// Adds --format (one of `formats`, the first is the default) and --out FILE.
void add_output_options(CLI::App* cmd, OutputOptions& opts, const std::vector<std::string>& formats);

// Writes the JSON to --out (atomically) when asked, then prints to stdout either the JSON
// (--format json) or what `text` renders for the table format chosen.
void emit(const OutputOptions& opts, const Json& json,
          const std::function<std::string(TableFormat)>& text);

// The experiments' pictures: --plots DIR, --image-format png|svg|both, --scale. Without --plots
// nothing is drawn, so the JSON contracts of docs/contracts.md run exactly as before.
struct PlotOptions {
  std::string dir;  // empty = no pictures
  ImageFlags image;
};

void add_plot_options(CLI::App* cmd, PlotOptions& opts);

// --plots DIR made ready: its image options and the folder (absent without --plots).
struct PreparedPlots {
  ImageOptions image;
  std::optional<OutputFolder> folder;
};

// Checks the image flags and prepares --plots DIR before any work (no-op without --plots).
PreparedPlots prepare_plots(const PlotOptions& opts);

// Writes the figures into --plots DIR, as a whole; "Wrote" lines go to stderr when stdout
// carries data (json, csv), to stdout otherwise.
void write_plots(PreparedPlots& plots, const OutputOptions& output, const std::vector<NamedFigure>& figures);
// Where lines about the pictures go: stderr when stdout carries JSON or CSV data, else stdout.
std::ostream& picture_log(const OutputOptions& output);

}  // namespace attn::cli
