#include "image_flags.hpp"

#include <cstdio>
#include <filesystem>

#include "attn/render/draw/colormap.hpp"
#include "attn/engine/core/error.hpp"
#include "attn/engine/text/printable_text.hpp"

namespace attn::cli {
namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

void add_image_flags(CLI::App* cmd, ImageFlags& flags, bool with_colormap, const std::string& format_flag) {
  cmd->add_option(format_flag, flags.format,
                  format_flag == "--format" ? "png, svg or both (default: from --out, else png)"
                                            : "pictures as png, svg or both (default png)");
  cmd->add_option("--scale", flags.scale, "PNG pixels per point (2 = HiDPI; SVG is vector)")
      ->capture_default_str()->check(CLI::Range(0.25, 8.0));
  if (with_colormap) {
    std::string names;
    for (const std::string& n : Colormap::names()) names += (names.empty() ? "" : ", ") + n;
    cmd->add_option("--colormap", flags.colormap, "colour scale for the weights: " + names)
        ->capture_default_str();
  }
}

std::string image_stem(const std::string& out) {
  // "DIR/" (or an existing folder) would become the hidden file DIR/.png.
  std::error_code ec;
  if (out.empty() || out.back() == '/' || std::filesystem::is_directory(out, ec)) {
    throw InputError("--out: " + (out.empty() ? std::string("nothing") : out) +
                     " is a folder; give a file name or stem, such as " +
                     (std::filesystem::path(out) / "picture.png").lexically_normal().string());
  }
  for (const char* ext : {".png", ".svg"}) {
    if (ends_with(out, ext)) return out.substr(0, out.size() - 4);
  }
  return out;
}

ImageOptions image_options(const ImageFlags& flags, const std::string& out) {
  ImageOptions o;
  o.scale = flags.scale;
  if (!flags.format.empty()) {
    o.formats = parse_image_formats(flags.format);
  } else if (ends_with(out, ".svg")) {
    o.formats = {ImageFormat::svg};
  }
  return o;
}

void check_colormap(const std::string& name) { (void)Colormap::by_name(name); }

OutputFolder prepare_picture_dir(const std::string& dir, const std::string& flag) {
  if (dir.empty()) throw InputError(flag + ": expected a folder name, got nothing");
  return OutputFolder(dir, flag);
}

void save_pictures(const std::vector<NamedFigure>& figures, OutputFolder& folder, const ImageOptions& options,
                   std::ostream& log) {
  std::vector<std::string> written;
  for (const NamedFigure& f : figures) {
    for (const std::string& path : save_figure(f.figure, (std::filesystem::path(folder.staging()) / f.name).string(),
                                               options)) {
      written.push_back(folder.final_path(std::filesystem::path(path).filename().string()));
    }
  }
  folder.commit();
  for (const std::string& path : written) log << "Wrote " << printable_text(path) << "\n";
}

}  // namespace attn::cli
