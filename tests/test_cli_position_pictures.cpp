// End-to-end: the pictures rope, positional and generate write, as a user runs them.
#include <doctest/doctest.h>

#include <filesystem>

#include "picture_support.hpp"
#include "support.hpp"

using namespace attn;
using namespace attn::test;
namespace fs = std::filesystem;

namespace {

// Runs `args` in dir and checks that exactly `names` (+ .png) were written into dir/out, each a
// decodable PNG of a sensible size, and that the run said so.
void check_pictures(const TempDir& dir, const std::string& args, const std::string& out,
                    const std::vector<std::string>& names) {
  const CliResult r = run_cli(args + " --out " + out, "", dir.path.string());
  CAPTURE(args);
  CAPTURE(r.err);
  REQUIRE(r.code == 0);
  std::size_t files = 0;
  for (const auto& entry : fs::directory_iterator(dir.path / out)) files += entry.is_regular_file();
  CHECK(files == names.size());  // no temporary files left behind
  for (const std::string& name : names) {
    const std::string path = out + "/" + name + ".png";
    CAPTURE(path);
    CHECK(r.out.find("Wrote " + path) != std::string::npos);
    const DecodedPng img = DecodedPng::from_file(dir / path);
    REQUIRE(img.ok());
    CHECK(img.width() > 400);
    CHECK(img.height() > 250);
  }
}


}  // namespace

TEST_CASE("cli position pictures: rope, positional and generate write every picture, byte-identical on rerun") {
  TempDir dir;
  const std::vector<std::string> rope{"rope_rotation", "rope_scores", "rope_frequencies", "rope_styles"};
  const std::vector<std::string> positional{"sinusoidal", "alibi"};
  const std::vector<std::string> generate{"kv_cache"};
  for (const char* run : {"a", "b"}) {
    check_pictures(dir, "rope --head-dim 16 --positions 6 --pair 1 --style interleaved", std::string("rope-") + run, rope);
    check_pictures(dir, "positional --length 6 --d-model 12 --heads 6", std::string("pos-") + run, positional);
    check_pictures(dir, "generate 'The cat sat on the mat' --prefill 2 --heads 4 --kv-heads 2 --rope half",
                   std::string("gen-") + run, generate);
  }
  for (const auto& [prefix, names] : {std::pair{"rope-", rope}, std::pair{"pos-", positional}, std::pair{"gen-", generate}}) {
    for (const std::string& name : names) {
      CAPTURE(name);
      CHECK(read_text(dir / (std::string(prefix) + "a/" + name + ".png")) ==
            read_text(dir / (std::string(prefix) + "b/" + name + ".png")));
    }
  }
}

TEST_CASE("cli position pictures: drawn only into --plots, SVG, and --json keeps stdout pure JSON") {
  TempDir dir;
  const std::string cwd = dir.path.string();
  // The lessons' rule (docs/positions.md, "One rule for pictures"): pictures only when a folder is named, as the experiments' --plots.
  CliResult r = run_cli("rope", "", cwd);
  REQUIRE(r.code == 0);
  CHECK(r.out.find("Wrote") == std::string::npos);
  r = run_cli("positional --json", "", cwd);
  REQUIRE(r.code == 0);
  CHECK(files_in(dir.path) == 0);
  r = run_cli("rope --plots rope-out", "", cwd);
  REQUIRE(r.code == 0);
  CHECK(r.out.find("Wrote rope-out/rope_scores.png") != std::string::npos);
  CHECK(files_in(dir.path / "rope-out") == 4);

  r = run_cli("positional --json --format both --out pe", "", cwd);
  CAPTURE(r.err);
  REQUIRE(r.code == 0);
  CHECK(Json::parse(r.out).contains("sinusoidal"));  // nothing but the JSON on stdout
  CHECK(r.err.find("Wrote pe/alibi.svg") != std::string::npos);
  for (const char* name : {"sinusoidal", "alibi"}) {
    CAPTURE(name);
    CHECK(well_formed_xml(read_text(dir / (std::string("pe/") + name + ".svg"))));
    CHECK(DecodedPng::from_file(dir / (std::string("pe/") + name + ".png")).ok());
  }

  r = run_cli("generate '我喜欢深度学习' --prefill 0 --window 2 --format svg --out zh", "", cwd);
  REQUIRE(r.code == 0);
  CHECK(well_formed_xml(read_text(dir / "zh/kv_cache.svg")));
  CHECK_FALSE(fs::exists(dir.path / "zh/kv_cache.png"));

  r = run_cli("rope --scale 1 --out small", "", cwd);
  REQUIRE(r.code == 0);
  const DecodedPng one = DecodedPng::from_file(dir / "small/rope_styles.png");
  const DecodedPng two = DecodedPng::from_file(dir / "rope-out/rope_styles.png");
  CHECK(two.width() == doctest::Approx(2 * one.width()).epsilon(0.01));
}

TEST_CASE("cli position pictures: bad picture flags exit 2 with one error line and write nothing") {
  TempDir dir;
  const std::string cwd = dir.path.string();
  check_input_error(run_cli("rope --format gif", "", cwd), "--format");
  check_input_error(run_cli("positional --scale 0", "", cwd), "--scale");
  check_input_error(run_cli("generate --format jpeg", "", cwd), "--format");
  check_input_error(run_cli("rope --pair 9 --out never", "", cwd), "--pair");
  CHECK(files_in(dir.path) == 0);
  check_input_error(run_cli("positional --out /proc/version/x"), "--out");
  const std::string blocker = dir / "a-file";
  write_file_atomically(blocker, "x");
  check_input_error(run_cli("generate --out a-file", "", cwd), "--out: cannot create folder a-file");
}
