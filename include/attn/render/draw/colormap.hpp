#pragma once
// Sequential colormaps for attention weights: matplotlib's Blues, Oranges, Greens, Reds,
// Purples, Greys (ColorBrewer, 9 anchors each, exactly as matplotlib tabulates them) and
// viridis / magma (9 evenly spaced samples of matplotlib's 256-entry tables). Between anchors
// the colour is interpolated linearly in sRGB, as matplotlib's LinearSegmentedColormap does.
// For signed values there are diverging maps too: RdBu and RdBu_r (ColorBrewer, 11 anchors).
#include <string>
#include <string_view>
#include <vector>

namespace attn {

struct Rgb {
  double r = 0, g = 0, b = 0;  // sRGB, each in [0, 1]
  bool operator==(const Rgb&) const = default;
};

// 0xRRGGBB -> Rgb.
Rgb rgb_from_hex(unsigned hex);

// WCAG relative luminance in [0, 1]: decides whether text on a cell is drawn dark or light.
double relative_luminance(const Rgb& c);

// Near-black on light backgrounds, white on dark ones (the higher WCAG contrast of the two).
Rgb readable_text_on(const Rgb& background);

class Colormap {
 public:
  // "Blues", "oranges", "viridis", ... (case-insensitive); InputError naming the known ones.
  static Colormap by_name(std::string_view name);
  // The sequential maps (for weights, --colormap).
  static std::vector<std::string> names();
  // The diverging maps: light in the middle, for values centred on 0 with a symmetric scale.
  static std::vector<std::string> diverging_names();

  // Colour for t in [0, 1] (clamped): 0 = lightest end for the sequential maps.
  Rgb at(double t) const;

  const std::string& name() const { return name_; }
  // Evenly spaced anchors from t = 0 to t = 1 (a gradient through them equals at()).
  const std::vector<Rgb>& anchors() const { return anchors_; }

 private:
  Colormap(std::string name, std::vector<Rgb> anchors);
  std::string name_;
  std::vector<Rgb> anchors_;
};

}  // namespace attn
