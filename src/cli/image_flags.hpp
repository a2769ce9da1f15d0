#pragma once
// The flags every picture-writing subcommand shares: --format, --scale, --colormap.
#include <CLI/CLI.hpp>

#include <ostream>
#include <string>
#include <vector>

#include "attn/io/output_folder.hpp"
#include "attn/render/draw/canvas.hpp"

namespace attn::cli {

struct ImageFlags {
  std::string format;  // png | svg | both; empty = from --out's extension, else png
  double scale = 2.0;
  std::string colormap = "Blues";
};

// format_flag names the picture format's flag: "--format" for the picture commands,
// "--image-format" for the experiments, whose --format picks what stdout gets.
void add_image_flags(CLI::App* cmd, ImageFlags& flags, bool with_colormap,
                     const std::string& format_flag = "--format");

// --out PATH without a .png/.svg extension: the stem each format's extension is added to.
std::string image_stem(const std::string& out);

// The formats and scale to write; --out's extension decides when --format is not given.
ImageOptions image_options(const ImageFlags& flags, const std::string& out = "");

// Colormap::by_name, so a typo fails before any work is done.
void check_colormap(const std::string& name);

// A subcommand that writes several pictures into one folder (--out DIR): each figure becomes
// DIR/name.png and/or DIR/name.svg.
struct NamedFigure {
  std::string name;
  Figure figure;
};

// Prepares DIR before any work, to be written as a whole (io/output_folder.hpp): InputError
// naming the flag (`flag`, --out unless told) when it cannot be.
OutputFolder prepare_picture_dir(const std::string& dir, const std::string& flag = "--out");

// Saves every figure into the folder, commits it, then says "Wrote PATH" on `log` for each file.
void save_pictures(const std::vector<NamedFigure>& figures, OutputFolder& folder, const ImageOptions& options,
                   std::ostream& log);

}  // namespace attn::cli
