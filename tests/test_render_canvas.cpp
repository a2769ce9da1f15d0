// The canvas: fonts that cover Chinese, deterministic PNG/SVG bytes, atomic saving.
#include <doctest/doctest.h>

#include <cairo.h>

#include <filesystem>

#include "attn/render/draw/canvas.hpp"
#include "attn/lessons/concepts/temperature.hpp"
#include "attn/render/views/experiment_pictures.hpp"
#include "attn/engine/core/error.hpp"
#include "picture_support.hpp"
#include "support.hpp"

using namespace attn;
using namespace attn::test;
namespace fs = std::filesystem;

namespace {

// A 100 x 50 pt figure: a red square at (10, 10) and a line of text.
Figure sample_figure() {
  Figure f;
  f.width = 100;
  f.height = 50;
  f.draw = [](Canvas& c) {
    c.fill_rect(10, 10, 20, 20, {1, 0, 0});
    c.text("我喜欢 attention", 40, 25, {10}, 0, 0.5);
  };
  return f;
}

}  // namespace

TEST_CASE("canvas: Chinese tokens render as glyphs, not boxes (fonts-wqy-microhei)") {
  Canvas c = Canvas::measuring();
  CHECK(c.unknown_glyphs("我喜欢深度学习", {11}) == 0);
  CHECK(c.unknown_glyphs("Query — attending −∞ ≤ …", {11}) == 0);
  CHECK(c.unknown_glyphs("我喜欢深度学习", {14, true}) == 0);
  // The check itself can fail: a private-use code point has no glyph in any installed font.
  CHECK(c.unknown_glyphs("\xf3\xb0\x80\x80", {11}) > 0);
}

TEST_CASE("canvas: text measures proportionally to its size (no hinting), so PNG and SVG agree") {
  Canvas c = Canvas::measuring();
  const TextSize small = c.measure("Key — attended to", {10});
  const TextSize big = c.measure("Key — attended to", {20});
  CHECK(small.width > 0);
  CHECK(big.width == doctest::Approx(2 * small.width).epsilon(0.01));
  CHECK(c.measure("a very long token indeed", {10, false, {}, 40}).width <= 40.5);  // ellipsized
}

TEST_CASE("canvas: PNG has scale x the figure's size in pixels, the drawn colours, and the same bytes every time") {
  const Figure f = sample_figure();
  const std::string png = render_png(f, 2.0);
  CHECK(png.rfind("\x89PNG\r\n\x1a\n", 0) == 0);
  const DecodedPng img = DecodedPng::from_bytes(png);
  REQUIRE(img.ok());
  CHECK(img.width() == 200);
  CHECK(img.height() == 100);
  CHECK(img.pixel(20, 20, 2) == Rgb8{255, 0, 0});
  CHECK(img.pixel(5, 45, 2) == Rgb8{255, 255, 255});  // opaque white page
  CHECK(render_png(f, 2.0) == png);
  CHECK(DecodedPng::from_bytes(render_png(f, 1.5)).width() == 150);
}

TEST_CASE("canvas: SVG is well-formed XML of the figure's size") {
  const std::string svg = render_svg(sample_figure());
  CHECK(well_formed_xml(svg));
  CHECK(svg.find("<svg") != std::string::npos);
  CHECK(svg.find("width=\"100") != std::string::npos);
  CHECK_FALSE(well_formed_xml(svg.substr(0, svg.size() / 2)));  // the check can fail
}

TEST_CASE("canvas: save_figure writes each format atomically and leaves nothing else behind") {
  TempDir dir;
  ImageOptions both;
  both.formats = parse_image_formats("both");
  const auto written = save_figure(sample_figure(), dir / "fig", both);
  REQUIRE(written.size() == 2);
  CHECK(fs::exists(dir.path / "fig.png"));
  CHECK(fs::exists(dir.path / "fig.svg"));
  CHECK(std::distance(fs::directory_iterator(dir.path), fs::directory_iterator{}) == 2);
  CHECK(DecodedPng::from_file(dir / "fig.png").ok());
  CHECK_THROWS_AS(save_figure(sample_figure(), dir / "missing/fig", both), InputError);
  CHECK_THROWS_AS(parse_image_formats("jpeg"), InputError);
}

TEST_CASE("canvas: a ZWJ family emoji is one glyph of the emoji font, not three or a box") {
  // Noto Color Emoji draws 👨‍👩‍👧 as grey silhouettes on a tile: that is its design, not a
  // fallback. What must hold: no unknown glyph, and the sequence is shaped as one emoji.
  Canvas c = Canvas::measuring();
  CHECK(c.unknown_glyphs("👨‍👩‍👧", {11}) == 0);
  const double family = c.measure("👨‍👩‍👧", {11}).width, man = c.measure("👨", {11}).width;
  CHECK(family < 1.5 * man);
}

TEST_CASE("typographic_minus: a number's minus sign becomes U+2212, while hyphens, ranges and options stay") {
  CHECK(typographic_minus("-1.5") == "−1.5");
  CHECK(typographic_minus("score -1, t=-2; [-3 (-0.5 /-4 ×-2") == "score −1, t=−2; [−3 (−0.5 /−4 ×−2");
  CHECK(typographic_minus("-.5 and -∞") == "−.5 and −∞");
  CHECK(typographic_minus("1.2e-05, 3e-7") == "1.2e−05, 3e−7");
  for (const char* kept : {"well-known", "keys 0-3", "--heads 2", "x-1", "i - 1", "e-5", "-", "a -b", "2024-05"})
    CHECK(typographic_minus(kept) == kept);
}

TEST_CASE("wrapped text keeps an operator with its left operand and a shape in brackets whole") {
  const std::string nb = "\u00a0";
  CHECK(keep_expressions_whole("n = 64 keys · 6.56 / k") == "n" + nb + "= 64 keys · 6.56" + nb + "/ k");
  CHECK(keep_expressions_whole("max p → 1, i − 1 ≤ j") == "max p" + nb + "→ 1, i" + nb + "− 1" + nb + "≤ j");
  CHECK(keep_expressions_whole("split: [L, D] into [L, H, d_h]") == "split: [L," + nb + "D] into [L," + nb + "H," + nb + "d_h]");
  const std::string wj = "\u2060";
  CHECK(keep_expressions_whole("FLOPs 6.56 k, 16 MiB in 3 ms") == "FLOPs 6.56" + nb + "k, 16" + nb + "MiB in 3" + nb + "ms");
  CHECK(keep_expressions_whole("Cell (i, j) and (dH/dT") == "Cell (i," + nb + "j) and (dH/" + wj + "dT");
  CHECK(keep_expressions_whole("max |flash − naive|") == "max |" + wj + "flash" + nb + "− naive|");
  for (const char* kept : {"q · k", "a=b", "keys 0-3", "x =", "= y", "d_k grows", "--heads 2", "a [b c", "a] b",
                           "2 keys", "8 Ms", "a (long parenthesis here)", "x | y", "a /b"})
    CHECK(keep_expressions_whole(kept) == kept);
}

TEST_CASE("wrapped text keeps a sum sign with what it sums, and unbreakable() a whole formula") {
  const std::string nb = "\u00a0";
  CHECK(keep_expressions_whole("c = Σ exp(s) here") == "c" + nb + "= Σ" + nb + "exp(s) here");
  CHECK(keep_expressions_whole("∑ x") == "∑" + nb + "x");
  CHECK(unbreakable("exp(s) / Σ exp(s)") == "exp(s)" + nb + "/" + nb + "Σ" + nb + "exp(s)");
  const std::string wj = "\u2060";  // pango would break after an opening bar or a slash in a word
  CHECK(unbreakable("max |a − b| = 0") == "max" + nb + "|" + wj + "a" + nb + "−" + nb + "b|" + wj + nb + "=" + nb + "0");
  CHECK(unbreakable("dH/dT") == "dH/" + wj + "dT");
}

// Issue 34: a subtitle wrapped so that "1" stood alone on its last line. At every wrap width
// the last line holds at least 12 characters, every line fits the width, and no word is lost.
TEST_CASE("wrapped text leaves no widow: the last line is never a lone short word") {
  const std::string subtitle =
      "one head, d_model = 64, seeded untrained projections · no positions: copies of a word get identical rows · "
      "each row sums to 1";
  Canvas c = Canvas::measuring();
  std::vector<DrawnText> drawn;
  c.record_drawn(&drawn);
  int wrapped = 0;
  for (double width = 200; width <= 900; width += 3) {
    CAPTURE(width);
    drawn.clear();
    const TextStyle style{11, false, {0, 0, 0}, width, true};
    c.text(subtitle, 0, 0, style, 0, 0);
    REQUIRE(drawn.size() == 1);
    const std::vector<std::string>& lines = drawn[0].lines;
    if (lines.size() < 2) continue;  // it fits on one line
    ++wrapped;
    const std::string last = lines.back();
    CAPTURE(last);
    CHECK(characters(last) >= 12);
    std::string joined;
    for (const std::string& line : lines) {
      std::string shown = line;  // a line ends in the space it broke at, which takes no room
      while (!shown.empty() && shown.back() == ' ') shown.pop_back();
      CHECK(c.measure(shown, {11}).width <= width + 0.5);
      joined += line;
    }
    CHECK(joined == subtitle);
  }
  CHECK(wrapped > 100);
}

TEST_CASE("pictures draw negative numbers with the typographic minus") {
  const Figure f = temperature_figure(run_temperature({2, -1, 0.5}, {0.5, 1, 2}));
  bool minus = false;
  for (const std::string& t : drawn_texts(f)) {
    CAPTURE(t);
    CHECK(t.find("-1") == std::string::npos);  // no ASCII hyphen before a digit: "−1"
    minus = minus || t.find("score −1") != std::string::npos;
  }
  CHECK(minus);
  // Measured as drawn: "−" is wider than "-", so a box sized for one fits the other.
  Canvas m = Canvas::measuring();
  CHECK(m.measure("-1", {10}).width == m.measure("−1", {10}).width);
}
