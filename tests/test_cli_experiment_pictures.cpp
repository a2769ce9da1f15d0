// The experiments' pictures: --plots DIR draws them, --image-format picks PNG/SVG,
// and without --plots the docs/contracts.md contracts run exactly as before, stdout pure JSON.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

#include "picture_support.hpp"
#include "support.hpp"

using namespace attn;
using namespace attn::test;
namespace fs = std::filesystem;

namespace {

void check_png(const TempDir& dir, const std::string& path) {
  CAPTURE(path);
  const DecodedPng img = DecodedPng::from_file(dir / path);
  REQUIRE(img.ok());
  CHECK(img.width() > 600);
  CHECK(img.height() > 400);
}

}  // namespace

TEST_CASE("cli experiment pictures: variance, temperature and complexity draw into --plots, byte-identical") {
  TempDir dir;
  const std::string cwd = dir.path.string();
  const std::string variance = "variance --dk 8,32,128 --samples 300 --seed 3";
  const std::string temperature = "temperature --t 0.2,1,5";
  const std::string complexity = "complexity --n 64,256,1024 --d-model 128 --heads 4";
  for (const char* run : {"a", "b"}) {
    const std::string out = std::string("plots-") + run;
    CliResult r = run_cli(variance + " --plots " + out, "", cwd);
    CAPTURE(r.err);
    REQUIRE(r.code == 0);
    CHECK(r.out.find("Wrote " + out + "/variance.png") != std::string::npos);
    CHECK(r.out.find("Wrote " + out + "/saturation.png") != std::string::npos);
    REQUIRE(run_cli(temperature + " --plots " + out, "", cwd).code == 0);
    REQUIRE(run_cli(complexity + " --plots " + out, "", cwd).code == 0);
    CHECK(files_in(dir.path / out) == 4);  // no temporary files left behind
    for (const char* name : {"variance", "saturation", "temperature", "complexity"}) {
      check_png(dir, out + "/" + name + ".png");
    }
  }
  for (const char* name : {"variance", "saturation", "temperature", "complexity"}) {
    CAPTURE(name);
    CHECK(read_text(dir / (std::string("plots-a/") + name + ".png")) ==
          read_text(dir / (std::string("plots-b/") + name + ".png")));
  }
}

TEST_CASE("cli experiment pictures: the JSON contracts are unchanged, pictures or not") {
  TempDir dir;
  const std::string cwd = dir.path.string();
  const std::string variance = "variance --dk 8,64 --samples 200 --seed 5 --format json";
  const std::string complexity = "complexity --n 128,512 --d-model 256 --heads 4 --causal --dtype-bytes 2 --format json";
  for (const std::string& args : {variance, complexity}) {
    CAPTURE(args);
    const CliResult plain = run_cli(args, "", cwd);
    REQUIRE(plain.code == 0);
    CHECK(files_in(dir.path) == (args == variance ? 0 : 1));  // no --plots: nothing drawn
    const CliResult drawn = run_cli(args + " --plots plots --image-format both", "", cwd);
    CAPTURE(drawn.err);
    REQUIRE(drawn.code == 0);
    CHECK(drawn.out == plain.out);  // stdout is the same pure JSON
    CHECK(Json::parse(drawn.out).contains("rows"));
    CHECK(drawn.err.find("Wrote plots/") != std::string::npos);  // "Wrote" lines go to stderr
  }
  for (const char* name : {"variance", "saturation", "complexity"}) {
    CAPTURE(name);
    CHECK(well_formed_xml(read_text(dir / (std::string("plots/") + name + ".svg"))));
    CHECK(DecodedPng::from_file(dir / (std::string("plots/") + name + ".png")).ok());
  }
}

TEST_CASE("cli experiment pictures: complexity --measure adds the scaling plot") {
  TempDir dir;
  const CliResult r = run_cli("complexity --n 64 --measure --measure-n 16,32,64 --repeat 1 --plots m", "",
                              dir.path.string());
  CAPTURE(r.err);
  REQUIRE(r.code == 0);
  check_png(dir, "m/complexity.png");
  check_png(dir, "m/scaling.png");
}

TEST_CASE("cli experiment pictures: bad picture flags are one error line, exit 2, nothing written") {
  TempDir dir;
  const std::string cwd = dir.path.string();
  { std::ofstream(dir / "file") << "x"; }
  check_input_error(run_cli("variance --dk 8 --samples 100 --plots p --image-format gif", "", cwd), "gif");
  check_input_error(run_cli("temperature --plots file/sub", "", cwd), "--plots");
  check_input_error(run_cli("variance --dk 0 --plots p", "", cwd), "--dk");
  CHECK(!fs::exists(dir.path / "p"));
}
