// Colormaps: matplotlib's anchors, interpolation, and readable text on every colour.
#include <doctest/doctest.h>

#include "attn/colormap.hpp"
#include "attn/error.hpp"
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

TEST_CASE("colormap: names are case-insensitive; an unknown one names the known ones") {
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
