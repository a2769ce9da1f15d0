// `attn-cli linear-attention --plots`: softmax's weights beside linear attention's and their
// difference, and the memory a decoding step carries, read back from the PNGs' pixels; the JSON
// stays pure with --plots, and a folder that cannot be made is one error line.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <filesystem>
#include <fstream>

#include "attn/engine/attention/mask.hpp"
#include "attn/io/number_format.hpp"
#include "attn/render/draw/heatmap.hpp"
#include "attn/lessons/concepts/linear_rnn.hpp"
#include "attn/render/draw/line_plot.hpp"
#include "attn/render/views/linear_rnn_picture.hpp"
#include "picture_support.hpp"

using namespace attn;
using namespace attn::test;
namespace fs = std::filesystem;

namespace {

// The command's default sentence, d and seed: the same result the CLI draws.
LinearRnnResult default_lesson() { return run_linear_rnn(LinearRnnConfig{}); }

// Where a log-log point lands: the axis rule of line_plot.hpp (the data's range in log10,
// widened by 5% a side), from the lesson's own first and last memory rows.
Rgb8 memory_pixel(const DecodedPng& img, const Figure& f, const LinearRnnResult& r, double t, double bytes) {
  const double x_lo = std::log10(double(r.memory.front().t)), x_hi = std::log10(double(r.memory.back().t));
  const double y_lo = std::log10(std::min(r.memory.front().kv_cache_bytes, r.memory.front().state_bytes));
  const double y_hi = std::log10(r.memory.back().kv_cache_bytes);
  const double x_pad = 0.05 * (x_hi - x_lo), y_pad = 0.05 * (y_hi - y_lo);
  const double fx = (std::log10(t) - x_lo + x_pad) / (x_hi - x_lo + 2 * x_pad);
  const double fy = (std::log10(bytes) - y_lo + y_pad) / (y_hi - y_lo + 2 * y_pad);
  const PlotRect& p = f.plots[0];
  return img.pixel(p.x + fx * p.width, p.y + (1 - fy) * p.height, 2);
}

}  // namespace

TEST_CASE("linear-attention picture: P and A on one 0..1 scale, A - P on a symmetric red-blue one") {
  const LinearRnnResult r = default_lesson();
  const Figure f = linear_attention_figure(r);
  REQUIRE(f.grids.size() == 3);
  CHECK(read_as_plain(f.title).find("max |A − P| = " + format_g(r.max_abs_weight_difference, 3)) != std::string::npos);
  CHECK(read_as_plain(f.title).find("max |A V − P V| = " + format_g(r.max_abs_output_difference, 3)) != std::string::npos);
  const DecodedPng img = DecodedPng::from_bytes(render_png(f, 2));
  REQUIRE(img.ok());
  const Colormap blues = Colormap::by_name("Blues"), rdbu = Colormap::by_name("RdBu_r");
  const double m = r.max_abs_weight_difference;
  const std::size_t L = r.tokens.size();
  for (std::size_t i = 0; i < L; ++i)
    for (std::size_t j = 0; j <= i; ++j) {
      CAPTURE(i);
      CAPTURE(j);
      CHECK(near(img.cell_corner(f.grids[0], i, j, 2), to_rgb8(blues.at(r.softmax_weights(i, j))), 3));
      CHECK(near(img.cell_corner(f.grids[1], i, j, 2), to_rgb8(blues.at(r.linear_weights(i, j))), 3));
      const double d = r.linear_weights(i, j) - r.softmax_weights(i, j);
      CHECK(near(img.cell_corner(f.grids[2], i, j, 2), to_rgb8(rdbu.at((d + m) / (2 * m))), 3));
    }
  // The first query sees only itself in both: weight 1, difference 0 (the map's white middle).
  CHECK(near(img.cell_corner(f.grids[2], 0, 0, 2), to_rgb8(rdbu.at(0.5)), 3));
  // Keys after the query are hatched grey in all three, not a weight of 0.
  for (std::size_t g = 0; g < 3; ++g) {
    const Rgb8 masked = img.cell_mean(f.grids[g], 0, L - 1, 2);
    CHECK(std::abs(masked.r - masked.b) <= 3);
  }
}

TEST_CASE("linear-attention picture: one token is drawn, its difference 0 on the scale's white") {
  LinearRnnConfig c;
  c.sentence = "cat";
  const LinearRnnResult r = run_linear_rnn(c);
  const Figure f = linear_attention_figure(r);
  const DecodedPng img = DecodedPng::from_bytes(render_png(f, 2));
  REQUIRE(img.ok());
  CHECK(near(img.cell_corner(f.grids[1], 0, 0, 2), to_rgb8(Colormap::by_name("Blues").at(1)), 3));
  CHECK(near(img.cell_corner(f.grids[2], 0, 0, 2), to_rgb8(Colormap::by_name("RdBu_r").at(0.5)), 3));
}

TEST_CASE("linear-attention picture: on 48 tokens P and A share the long causal map's log scale") {
  LinearRnnConfig c;
  c.sentence.clear();
  for (int w = 0; w < 48; ++w) c.sentence += (w ? " w" : "w") + std::to_string(w);
  const LinearRnnResult r = run_linear_rnn(c);
  REQUIRE(r.tokens.size() == 48);
  const Figure f = linear_attention_figure(r);
  const Mask2 allowed = causal_allowed(48, 48);
  const std::optional<ColorScale> scale = long_causal_log_scale(xt::cast<float>(r.softmax_weights), allowed);
  REQUIRE(scale);
  CHECK(scale->log);
  CHECK(f.subtitle.find("log colour scale") != std::string::npos);
  const DecodedPng img = DecodedPng::from_bytes(render_png(f, 2));
  REQUIRE(img.ok());
  const Colormap blues = Colormap::by_name("Blues");
  // A late row, whose weights a linear scale would draw near white: one scale for both panels.
  for (std::size_t j : {0, 20, 40}) {
    CAPTURE(j);
    const double p = std::clamp(scale->position(r.softmax_weights(44, j)), 0.0, 1.0);
    const double a = std::clamp(scale->position(r.linear_weights(44, j)), 0.0, 1.0);
    CHECK(near(img.cell_mean(f.grids[0], 44, j, 2, 0.4), to_rgb8(blues.at(p)), 4));
    CHECK(near(img.cell_mean(f.grids[1], 44, j, 2, 0.4), to_rgb8(blues.at(a)), 4));
  }
}

TEST_CASE("linear-attention memory picture: the cache rises along t, the state stays flat") {
  const LinearRnnResult r = default_lesson();
  const Figure f = linear_attention_memory_figure(r);
  REQUIRE(f.plots.size() == 1);
  const DecodedPng img = DecodedPng::from_bytes(render_png(f, 2));
  REQUIRE(img.ok());
  const Rgb8 cache = to_rgb8(series_color(3)), state = to_rgb8(series_color(0));
  const double d = double(r.config.d), b = double(r.config.value_bytes);
  // At t = 1024 (a row of the lesson): the cache's line at t (d + dv) numbers, the state's at d dv + d.
  CHECK(near(memory_pixel(img, f, r, 1024, 1024 * 2 * d * b), cache, 8));
  CHECK(near(memory_pixel(img, f, r, 1024, (d * d + d) * b), state, 8));
  // Not the other way round: no state at the cache's height, no cache at the state's.
  CHECK(!near(memory_pixel(img, f, r, 1024, 1024 * 2 * d * b), state, 40));
  CHECK(!near(memory_pixel(img, f, r, 32768, (d * d + d) * b), cache, 40));
  CHECK(draws_text(f, "crossover: the cache is larger from t = " + std::to_string(r.crossover_t)));
}

TEST_CASE("cli linear-attention --plots: two PNGs whose cells are the lesson's weights") {
  TempDir dir;
  const CliResult run = run_cli("linear-attention --plots '" + (dir / "p") + "'");
  CAPTURE(run.err);
  REQUIRE(run.code == 0);
  CHECK(run.out.find("Wrote " + (dir / "p/linear_attention.png")) != std::string::npos);
  CHECK(files_in(dir.path / "p") == 2);
  const DecodedPng img = DecodedPng::from_file(dir / "p/linear_attention.png");
  REQUIRE(img.ok());
  CHECK(img.width() > 1200);
  CHECK(img.height() > 400);
  const DecodedPng memory = DecodedPng::from_file(dir / "p/linear_attention_memory.png");
  REQUIRE(memory.ok());
  CHECK(memory.width() > 600);
  CHECK(memory.height() > 400);
  // The file is the picture of the command's default run: A's cell (2, 1) in A's colour, not P's.
  const LinearRnnResult r = default_lesson();
  const Figure f = linear_attention_figure(r);
  REQUIRE(img.width() == int(std::ceil(f.width * 2)));
  const Colormap blues = Colormap::by_name("Blues");
  CHECK(near(img.cell_corner(f.grids[1], 2, 1, 2), to_rgb8(blues.at(r.linear_weights(2, 1))), 3));
  CHECK(!near(img.cell_corner(f.grids[1], 2, 1, 2), to_rgb8(blues.at(r.softmax_weights(2, 1))), 3));
}

TEST_CASE("cli linear-attention --plots --json: stdout is the same pure JSON, Wrote lines on stderr") {
  TempDir dir;
  const std::string args = "linear-attention 'The cat sat' --json";
  const CliResult plain = run_cli(args, "", dir.path.string());
  REQUIRE(plain.code == 0);
  CHECK(files_in(dir.path) == 0);  // no --plots: nothing drawn
  const CliResult drawn = run_cli(args + " --plots p --image-format both", "", dir.path.string());
  CAPTURE(drawn.err);
  REQUIRE(drawn.code == 0);
  CHECK(drawn.out == plain.out);
  CHECK(Json::parse(drawn.out).contains("linear_weights"));
  CHECK(drawn.err.find("Wrote p/linear_attention.svg") != std::string::npos);
  CHECK(well_formed_xml(read_text(dir / "p/linear_attention_memory.svg")));
}

TEST_CASE("cli linear-attention --plots: a folder that cannot be made is one error line, exit 2") {
  TempDir dir;
  { std::ofstream(dir / "file") << "x"; }
  check_input_error(run_cli("linear-attention --plots file/sub", "", dir.path.string()), "--plots");
  check_input_error(run_cli("linear-attention --plots p --image-format gif", "", dir.path.string()), "gif");
  check_input_error(run_cli("linear-attention '' --plots p", "", dir.path.string()), "sentence");
  CHECK(!fs::exists(dir.path / "p"));
}
