// explain and pitfalls draw into --plots like the other experiments: PNG/SVG per
// --image-format, byte-identical reruns, stdout unchanged, masked cells never read as 0.
#include <doctest/doctest.h>

#include <filesystem>

#include "attn/engine/error.hpp"
#include "attn/render/explain_pictures.hpp"
#include "picture_support.hpp"
#include "support.hpp"

using namespace attn;
using namespace attn::test;
namespace fs = std::filesystem;

TEST_CASE("cli explain/pitfalls pictures: files exist, decode, and reruns are byte-identical") {
  TempDir dir;
  const std::string cwd = dir.path.string();
  for (const char* run : {"a", "b"}) {
    const std::string out = std::string("p-") + run;
    const CliResult e = run_cli("explain --plots " + out, "", cwd);
    CAPTURE(e.err);
    REQUIRE(e.code == 0);
    CHECK(e.out.find("Wrote " + out + "/explain-3-masked.png") != std::string::npos);
    const CliResult p = run_cli("pitfalls --plots " + out, "", cwd);
    CAPTURE(p.err);
    REQUIRE(p.code == 0);
    CHECK(p.out.find("Wrote " + out + "/pitfall-causal-alignment.png") != std::string::npos);
  }
  const std::vector<std::string> names = {"explain-1-scores", "explain-2-scaled", "explain-3-masked",
                                          "explain-4-weights", "explain-5-output", "pitfall-mask-polarity",
                                          "pitfall-causal-alignment", "pitfall-fully-masked-row"};
  CHECK(files_in(dir.path / "p-a") == 12);  // 5 steps + 7 pitfalls, no temporary files left
  CHECK(files_in(dir.path / "p-b") == 12);
  for (const std::string& name : names) {
    CAPTURE(name);
    const DecodedPng img = DecodedPng::from_file(dir / ("p-a/" + name + ".png"));
    REQUIRE(img.ok());
    CHECK(img.width() > 400);
    CHECK(read_text(dir / ("p-a/" + name + ".png")) == read_text(dir / ("p-b/" + name + ".png")));
  }
}

TEST_CASE("explain pictures: a masked cell is drawn unlike an unmasked cell of weight 0") {
  ExplainResult r = explain_attention({});
  REQUIRE(!r.allowed(0, 1));  // causal: query 0 may not see key 1
  // Make an allowed cell carry exactly weight 0, the colour a masked cell must not share.
  r.weights(1, 0) = 0;
  const Figure f = explain_step_figure(r, 4);
  const DecodedPng img = DecodedPng::from_bytes(render_png(f, 2));
  REQUIRE(img.ok());
  const Rgb8 masked = img.cell_mean(f.grids[0], 0, 1, 2);
  const Rgb8 zero = img.cell_mean(f.grids[0], 1, 0, 2);
  CAPTURE(masked);
  CAPTURE(zero);
  CHECK(!near(masked, zero, 8));
  // A corner of the cell, away from its "0.000", is the colormap's own 0.
  const CellGrid& g = f.grids[0];
  CHECK(near(img.pixel(g.cell_x(0) + 4, g.cell_y(1) + 4, 2), to_rgb8(Colormap::by_name("Blues").at(0)), 3));
  CHECK_THROWS_AS(explain_step_figure(r, 6), InputError);
}

TEST_CASE("pitfall pictures: wrong | right panels, two per table") {
  const Pitfall p = pitfall_causal_alignment();
  REQUIRE(pitfall_has_figure(p));
  const Figure f = pitfall_figure(p);
  REQUIRE(f.grids.size() == 2 * p.tables.size());
  CHECK(f.grids[0].rows == 2);
  CHECK(f.grids[1].cols == 4);
  CHECK(f.grids[1].x > f.grids[0].x + f.grids[0].cell_w * 4);  // right sits beside wrong
  Pitfall none = p;
  none.tables.clear();
  CHECK(!pitfall_has_figure(none));
}

TEST_CASE("cli explain/pitfalls pictures: --format json stdout unchanged; bad flags exit 2") {
  TempDir dir;
  const std::string cwd = dir.path.string();
  for (const std::string args : {"explain --format json", "pitfalls fully-masked-row --format json"}) {
    CAPTURE(args);
    const CliResult plain = run_cli(args, "", cwd);
    REQUIRE(plain.code == 0);
    CHECK(files_in(dir.path) == (args[0] == 'e' ? 0 : 1));  // no --plots: nothing drawn (1 = j/ of explain)
    const CliResult drawn = run_cli(args + " --plots j --image-format both", "", cwd);
    CAPTURE(drawn.err);
    REQUIRE(drawn.code == 0);
    CHECK(drawn.out == plain.out);
    CHECK(drawn.err.find("Wrote j/") != std::string::npos);
  }
  CHECK(well_formed_xml(read_text(dir / "j/explain-1-scores.svg")));
  CHECK(DecodedPng::from_file(dir / "j/pitfall-fully-masked-row.png").ok());
  check_input_error(run_cli("explain --plots q --image-format gif", "", cwd), "gif");
  check_input_error(run_cli("pitfalls --plots q --image-format jpeg", "", cwd), "jpeg");
  CHECK(!fs::exists(dir.path / "q"));
}
