#include "attn/render/draw/colormap.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <span>

#include "attn/engine/core/error.hpp"

namespace attn {
namespace {

struct Table {
  const char* name;
  std::vector<unsigned> hex;  // evenly spaced from t = 0 to t = 1
};

// ColorBrewer sequential schemes as matplotlib's _cm.py lists them (_Blues_data, ...), and
// viridis/magma sampled at t = 0, 1/8, ..., 1 from matplotlib's _cm_listed.py.
const std::array<Table, 8> kTables{{
    {"Blues", {0xf7fbff, 0xdeebf7, 0xc6dbef, 0x9ecae1, 0x6baed6, 0x4292c6, 0x2171b5, 0x08519c, 0x08306b}},
    {"Oranges", {0xfff5eb, 0xfee6ce, 0xfdd0a2, 0xfdae6b, 0xfd8d3c, 0xf16913, 0xd94801, 0xa63603, 0x7f2704}},
    {"Greens", {0xf7fcf5, 0xe5f5e0, 0xc7e9c0, 0xa1d99b, 0x74c476, 0x41ab5d, 0x238b45, 0x006d2c, 0x00441b}},
    {"Reds", {0xfff5f0, 0xfee0d2, 0xfcbba1, 0xfc9272, 0xfb6a4a, 0xef3b2c, 0xcb181d, 0xa50f15, 0x67000d}},
    {"Purples", {0xfcfbfd, 0xefedf5, 0xdadaeb, 0xbcbddc, 0x9e9ac8, 0x807dba, 0x6a51a3, 0x54278f, 0x3f007d}},
    {"Greys", {0xffffff, 0xf0f0f0, 0xd9d9d9, 0xbdbdbd, 0x969696, 0x737373, 0x525252, 0x252525, 0x000000}},
    {"viridis", {0x440154, 0x472d7b, 0x3b528b, 0x2c728e, 0x21908c, 0x27ad81, 0x5dc863, 0xaadc32, 0xfde725}},
    {"magma", {0x000004, 0x1d1147, 0x51127c, 0x832681, 0xb73779, 0xe75263, 0xfc8961, 0xfec287, 0xfcfdbf}},
}};

// Diverging maps, for signed values centred on 0 (a sinusoid, a score): matplotlib's RdBu
// (_RdBu_data, ColorBrewer's 11 anchors, red = low, blue = high) and RdBu_r, the same reversed
// (red = high, as in coolwarm). Luminance peaks at the centre instead of growing monotonically.
const std::array<Table, 2> kDivergingTables{{
    {"RdBu", {0x67001f, 0xb2182b, 0xd6604d, 0xf4a582, 0xfddbc7, 0xf7f7f7, 0xd1e5f0, 0x92c5de, 0x4393c3, 0x2166ac, 0x053061}},
    {"RdBu_r", {0x053061, 0x2166ac, 0x4393c3, 0x92c5de, 0xd1e5f0, 0xf7f7f7, 0xfddbc7, 0xf4a582, 0xd6604d, 0xb2182b, 0x67001f}},
}};

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

double linear_channel(double c) {  // sRGB -> linear light (WCAG 2.x)
  return c <= 0.03928 ? c / 12.92 : std::pow((c + 0.055) / 1.055, 2.4);
}

}  // namespace

Rgb rgb_from_hex(unsigned hex) {
  return {((hex >> 16) & 0xff) / 255.0, ((hex >> 8) & 0xff) / 255.0, (hex & 0xff) / 255.0};
}

double relative_luminance(const Rgb& c) {
  return 0.2126 * linear_channel(c.r) + 0.7152 * linear_channel(c.g) + 0.0722 * linear_channel(c.b);
}

Rgb readable_text_on(const Rgb& background) {
  const Rgb dark = rgb_from_hex(0x1a1a1a), light{1, 1, 1};
  // Contrast ratio (L1 + 0.05) / (L2 + 0.05) against each candidate; keep the larger.
  const double l = relative_luminance(background);
  const double with_dark = (l + 0.05) / (relative_luminance(dark) + 0.05);
  const double with_light = 1.05 / (l + 0.05);
  return with_dark >= with_light ? dark : light;
}

Colormap::Colormap(std::string name, std::vector<Rgb> anchors)
    : name_(std::move(name)), anchors_(std::move(anchors)) {}

Colormap Colormap::by_name(std::string_view name) {
  for (std::span<const Table> tables : {std::span<const Table>(kTables), std::span<const Table>(kDivergingTables)}) {
    for (const Table& t : tables) {
      if (lower(t.name) != lower(name)) continue;
      std::vector<Rgb> anchors;
      for (unsigned hex : t.hex) anchors.push_back(rgb_from_hex(hex));
      return Colormap(t.name, anchors);
    }
  }
  std::string known;
  std::vector<std::string> all = names();
  for (const std::string& n : diverging_names()) all.push_back(n);
  for (const std::string& n : all) known += (known.empty() ? "" : ", ") + n;
  throw InputError("--colormap: unknown colormap \"" + std::string(name) + "\" (known: " + known + ")");
}

std::vector<std::string> Colormap::names() {
  std::vector<std::string> out;
  for (const Table& t : kTables) out.emplace_back(t.name);
  return out;
}

std::vector<std::string> Colormap::diverging_names() {
  std::vector<std::string> out;
  for (const Table& t : kDivergingTables) out.emplace_back(t.name);
  return out;
}

Rgb Colormap::at(double t) const {
  if (!(t > 0)) t = 0;  // NaN lands on the light end too
  t = std::min(t, 1.0);
  const double pos = t * static_cast<double>(anchors_.size() - 1);
  const std::size_t i = std::min(static_cast<std::size_t>(pos), anchors_.size() - 2);
  const double f = pos - static_cast<double>(i);
  const Rgb& a = anchors_[i];
  const Rgb& b = anchors_[i + 1];
  return {a.r + f * (b.r - a.r), a.g + f * (b.g - a.g), a.b + f * (b.b - a.b)};
}

}  // namespace attn
