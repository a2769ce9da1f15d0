// `attn-cli attention-conv --plots`: the heads' one-hot rows, the attention output beside the
// convolution's, and the trained head's moving offsets, read back from the PNGs' pixels; the
// JSON stays pure with --plots, and refused folders and lengths are one error line.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "attn/engine/core/error.hpp"
#include "attn/io/number_format.hpp"
#include "attn/io/shipped_model.hpp"
#include "attn/lessons/concepts/attention_conv.hpp"
#include "attn/render/draw/heatmap.hpp"
#include "attn/render/views/attention_conv_picture.hpp"
#include "picture_support.hpp"

using namespace attn;
using namespace attn::test;
namespace fs = std::filesystem;

namespace {

// The command's defaults, as `attn-cli attention-conv --plots` runs them.
ConvLesson default_lesson() {
  ConvLessonConfig c;
  c.keep_head_weights = true;
  const ToyModel model = shipped_toy_model();
  return run_conv_lesson(c, &model);
}

// The middle of cell (i, j)'s left edge, where an outline (kOutlineColor) is drawn.
Rgb8 left_edge(const DecodedPng& img, const CellGrid& g, std::size_t i, std::size_t j) {
  return img.pixel(g.cell_x(j) + 0.5, g.cell_y(i) + g.cell_h / 2, 2);
}

}  // namespace

TEST_CASE("attention-conv heads picture: head h's row i is dark only at key i + its offset") {
  const ConvLesson l = default_lesson();
  const Figure f = conv_heads_figure(l);
  const std::size_t L = l.config.length;
  REQUIRE(f.grids.size() == l.one_d.heads);  // one panel per head, no mean
  const DecodedPng img = DecodedPng::from_bytes(render_png(f, 2));
  REQUIRE(img.ok());
  const Rgb8 one = to_rgb8(Colormap::by_name("Blues").at(1)), zero = to_rgb8(Colormap::by_name("Blues").at(0));
  for (std::size_t h = 0; h < l.one_d.heads; ++h) {
    const long offset = l.one_d.offsets[h][0];
    for (std::size_t i = 0; i < L; ++i)
      for (std::size_t j = 0; j < L; ++j) {
        CAPTURE(h);
        CAPTURE(i);
        CAPTURE(j);
        const bool on = long(j) - long(i) == offset;
        CHECK(near(img.cell_corner(f.grids[h], i, j, 2), on ? one : zero, 3));
      }
  }
}

TEST_CASE("attention-conv heads picture: refused without the heads' weights, and past 64 positions") {
  ConvLessonConfig c;
  const ConvLesson l = run_conv_lesson(c, nullptr);
  CHECK_THROWS_AS(conv_heads_figure(l), InputError);
  c.keep_head_weights = true;
  c.length = kMaxKeptPositions + 1;
  CHECK_THROWS_AS(check_conv_lesson(c), InputError);
}

TEST_CASE("attention-conv outputs picture: both outputs on one symmetric scale, cell by cell the same") {
  const ConvLesson l = default_lesson();
  const Figure f = conv_outputs_figure(l);
  REQUIRE(f.grids.size() == 2);
  CHECK(read_as_plain(f.title).find("max |attention − convolution| = " + format_g(l.one_d.max_abs_diff, 3)) != std::string::npos);
  const DecodedPng img = DecodedPng::from_bytes(render_png(f, 2));
  REQUIRE(img.ok());
  const ArrayF64& y = l.one_d.conv;
  double top = 0;
  for (double v : y) top = std::max(top, std::fabs(v));
  const Colormap rdbu = Colormap::by_name("RdBu_r");
  for (std::size_t i = 0; i < y.shape(0); ++i)
    for (std::size_t o = 0; o < y.shape(1); ++o) {
      CAPTURE(i);
      CAPTURE(o);
      const Rgb8 expected = to_rgb8(rdbu.at((y(i, o) + top) / (2 * top)));
      CHECK(near(img.cell_corner(f.grids[0], i, o, 2), expected, 3));
      CHECK(near(img.cell_corner(f.grids[1], i, o, 2), expected, 3));
    }
}

TEST_CASE("attention-conv trained picture: each query's largest weight outlined, at its measured offset") {
  const ConvLesson l = default_lesson();
  REQUIRE(l.trained);
  const TrainedOffsets& t = *l.trained;
  const Figure f = conv_trained_figure(t);
  REQUIRE(f.grids.size() == 1);
  const DecodedPng img = DecodedPng::from_bytes(render_png(f, 2));
  REQUIRE(img.ok());
  const Rgb8 outline = to_rgb8(kOutlineColor);
  for (std::size_t i = 1; i < t.tokens.size(); ++i) {
    const std::size_t top = std::size_t(long(i) + t.argmax_offset[i - 1]);
    CAPTURE(i);
    CHECK(near(left_edge(img, f.grids[0], i, top), outline, 12));
    for (std::size_t j = 0; j <= i; ++j)  // the row's other visible cells, away from the outline
      if (j + 1 < top || j > top + 1) CHECK(!near(left_edge(img, f.grids[0], i, j), outline, 40));
  }
  CHECK(t.distinct > 1);  // the picture's point: not one fixed offset
}

TEST_CASE("cli attention-conv --plots: three PNGs, the heads' file drawn from the door's weights") {
  TempDir dir;
  const CliResult run = run_cli("attention-conv --plots '" + (dir / "p") + "'");
  CAPTURE(run.err);
  REQUIRE(run.code == 0);
  CHECK(files_in(dir.path / "p") == 3);
  for (const char* name : {"attention_conv_heads", "attention_conv_outputs", "attention_conv_trained"}) {
    CAPTURE(name);
    CHECK(run.out.find("Wrote " + (dir / "p/") + name + ".png") != std::string::npos);
    const DecodedPng img = DecodedPng::from_file(dir / (std::string("p/") + name + ".png"));
    REQUIRE(img.ok());
    CHECK(img.width() > 600);
    CHECK(img.height() > 300);
  }
  const ConvLesson l = default_lesson();
  const Figure f = conv_heads_figure(l);
  const DecodedPng img = DecodedPng::from_file(dir / "p/attention_conv_heads.png");
  REQUIRE(img.width() == int(std::ceil(f.width * 2)));
  // Head 0 looks one position back: row 3's dark cell is key 2, not key 3.
  REQUIRE(l.one_d.offsets[0][0] == -1);
  CHECK(near(img.cell_corner(f.grids[0], 3, 2, 2), to_rgb8(Colormap::by_name("Blues").at(1)), 3));
  CHECK(near(img.cell_corner(f.grids[0], 3, 3, 2), to_rgb8(Colormap::by_name("Blues").at(0)), 3));
}

TEST_CASE("cli attention-conv --plots --json: stdout is the same pure JSON, Wrote lines on stderr") {
  TempDir dir;
  const CliResult plain = run_cli("attention-conv --json", "", dir.path.string());
  REQUIRE(plain.code == 0);
  CHECK(files_in(dir.path) == 0);  // no --plots: nothing drawn
  const CliResult drawn = run_cli("attention-conv --json --plots p --image-format svg", "", dir.path.string());
  CAPTURE(drawn.err);
  REQUIRE(drawn.code == 0);
  CHECK(drawn.out == plain.out);
  CHECK(Json::parse(drawn.out).contains("one_d"));
  CHECK(drawn.err.find("Wrote p/attention_conv_heads.svg") != std::string::npos);
  CHECK(well_formed_xml(read_text(dir / "p/attention_conv_trained.svg")));
}

TEST_CASE("cli attention-conv --plots: an unmakeable folder or too long a --length is one error line, exit 2") {
  TempDir dir;
  { std::ofstream(dir / "file") << "x"; }
  check_input_error(run_cli("attention-conv --plots file/sub", "", dir.path.string()), "--plots");
  check_input_error(run_cli("attention-conv --length 65 --plots p", "", dir.path.string()), "--length");
  CHECK(!fs::exists(dir.path / "p"));
  CHECK(run_cli("attention-conv --length 65 --json", "", dir.path.string()).code == 0);  // no picture: no limit
}
