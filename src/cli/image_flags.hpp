#pragma once
// The flags every picture-writing subcommand shares: --format, --scale, --colormap.
#include <CLI/CLI.hpp>

#include <string>

#include "attn/canvas.hpp"

namespace attn::cli {

struct ImageFlags {
  std::string format;  // png | svg | both; empty = from --out's extension, else png
  double scale = 2.0;
  std::string colormap = "Blues";
};

void add_image_flags(CLI::App* cmd, ImageFlags& flags, bool with_colormap);

// --out PATH without a .png/.svg extension: the stem each format's extension is added to.
std::string image_stem(const std::string& out);

// The formats and scale to write; --out's extension decides when --format is not given.
ImageOptions image_options(const ImageFlags& flags, const std::string& out = "");

// Colormap::by_name, so a typo fails before any work is done.
void check_colormap(const std::string& name);

}  // namespace attn::cli
