#include "image_flags.hpp"

#include "attn/colormap.hpp"

namespace attn::cli {
namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

void add_image_flags(CLI::App* cmd, ImageFlags& flags, bool with_colormap) {
  cmd->add_option("--format", flags.format, "png, svg or both (default: from --out, else png)");
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

}  // namespace attn::cli
