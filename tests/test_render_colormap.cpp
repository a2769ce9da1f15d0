// Colormaps: matplotlib's anchors, interpolation, and readable text on every colour.
#include <doctest/doctest.h>

#include "attn/render/draw/colormap.hpp"
#include "attn/engine/core/error.hpp"
#include "picture_support.hpp"

using namespace attn;
using namespace attn::test;

TEST_CASE("colormap: Blues has matplotlib's ColorBrewer anchors and interpolates linearly between them") {
  const Colormap blues = Colormap::by_name("Blues");
  // matplotlib _Blues_data: #f7fbff ... #08306b, nine anchors at t = k/8.
  CHECK(to_rgb8(blues.at(0)) == Rgb8{0xf7, 0xfb, 0xff});
  CHECK(to_rgb8(blues.at(0.5)) == Rgb8{0x6b, 0xae, 0xd6});
  CHECK(to_rgb8(blues.at(1)) == Rgb8{0x08, 0x30, 0x6b});
  // Halfway between the first two anchors #f7fbff and #deebf7.
  CHECK(near(to_rgb8(blues.at(1.0 / 16)), Rgb8{(0xf7 + 0xde) / 2, (0xfb + 0xeb) / 2, (0xff + 0xf7) / 2}, 1));
  CHECK(blues.at(-1) == blues.at(0));
  CHECK(blues.at(7) == blues.at(1));
  CHECK(blues.at(std::nan("")) == blues.at(0));
  CHECK(to_rgb8(Colormap::by_name("viridis").at(0)) == Rgb8{0x44, 0x01, 0x54});
  CHECK(to_rgb8(Colormap::by_name("oranges").at(1)) == Rgb8{0x7f, 0x27, 0x04});
}

TEST_CASE("colormap: every map is monotonic in luminance, so darker (or brighter) always means more") {
  for (const std::string& name : Colormap::names()) {
    CAPTURE(name);
    const Colormap c = Colormap::by_name(name);
    const double first = relative_luminance(c.at(0)), last = relative_luminance(c.at(1));
    CHECK(first != last);
    double previous = first;
    for (int k = 1; k <= 64; ++k) {
      const double l = relative_luminance(c.at(k / 64.0));
      CHECK((last < first ? l <= previous + 1e-12 : l >= previous - 1e-12));
      previous = l;
    }
  }
}

TEST_CASE("colormap: names are case-insensitive, an unknown one names the known ones") {
  CHECK(Colormap::by_name("BLUES").name() == "Blues");
  try {
    Colormap::by_name("jet");
    FAIL("expected InputError");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()).find("viridis") != std::string::npos);
  }
}

TEST_CASE("colormap: text is white on dark cells and dark on light ones") {
  const Colormap blues = Colormap::by_name("Blues");
  CHECK(readable_text_on(blues.at(1)) == Rgb{1, 1, 1});
  CHECK(readable_text_on(blues.at(0)) != Rgb{1, 1, 1});
  CHECK(readable_text_on(Colormap::by_name("viridis").at(0)) == Rgb{1, 1, 1});
  CHECK(readable_text_on(Colormap::by_name("viridis").at(1)) != Rgb{1, 1, 1});
}

TEST_CASE("colormap: the diverging RdBu (and RdBu_r) is light in the middle and dark at both ends") {
  const Colormap rdbu = Colormap::by_name("rdbu");
  // matplotlib _RdBu_data: #67001f ... #f7f7f7 (the 6th of 11 anchors) ... #053061.
  CHECK(to_rgb8(rdbu.at(0)) == Rgb8{0x67, 0x00, 0x1f});
  CHECK(to_rgb8(rdbu.at(0.5)) == Rgb8{0xf7, 0xf7, 0xf7});
  CHECK(to_rgb8(rdbu.at(1)) == Rgb8{0x05, 0x30, 0x61});
  CHECK(to_rgb8(rdbu.at(0.1)) == Rgb8{0xb2, 0x18, 0x2b});
  const Colormap reversed = Colormap::by_name("RdBu_r");
  for (int k = 0; k <= 20; ++k) CHECK(near(to_rgb8(reversed.at(k / 20.0)), to_rgb8(rdbu.at(1 - k / 20.0)), 1));
  double previous = relative_luminance(rdbu.at(0));
  for (int k = 1; k <= 64; ++k) {  // brighter up to the middle, darker after it
    const double l = relative_luminance(rdbu.at(k / 64.0));
    CHECK((k <= 32 ? l >= previous - 1e-12 : l <= previous + 1e-12));
    previous = l;
  }
  // Weights keep sequential maps: the diverging ones are not offered for --colormap.
  for (const std::string& n : Colormap::names()) CHECK(n.find("RdBu") == std::string::npos);
  CHECK(Colormap::diverging_names() == std::vector<std::string>{"RdBu", "RdBu_r"});
}
