// GPT-2 folders end to end beyond `forward --json`: the pictures of `forward --out` (the model
// view, the head view of --layer L, head_summary.json), `demo --model` on a GPT-2 folder, and
// `generate --model`, with every bad input answered by one error line and exit 2. The numbers
// are checked against float64 NumPy by scripts/check_gpt2_heads.py and check_gpt2_generate.py.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <optional>

#include "attn/io/json_io.hpp"
#include "picture_support.hpp"
#include "support.hpp"

using namespace attn;
using namespace attn::test;
namespace fs = std::filesystem;

namespace {

std::string tiny() { return "'" + data_path("gpt2_tiny") + "'"; }

}  // namespace

TEST_CASE("cli forward gpt2 --out: the model view, the head view of --layer, and head_summary.json") {
  TempDir dir;
  const CliResult r = run_cli("forward --model " + tiny() + " 'the cat sat on the mat, the cat sat' --out '" + dir / "v" + "' --layer 1");
  REQUIRE(r.code == 0);
  CHECK(r.out.find("kind") != std::string::npos);  // the summary table
  for (const char* png : {"heads.png", "heads_layer1.png"}) {
    CAPTURE(png);
    const DecodedPng p = DecodedPng::from_file(dir / ("v/" + std::string(png)));
    REQUIRE(p.ok());
    CHECK(p.ink_on_border(3) == 0);  // nothing runs off the picture
  }
  const Json s = read_json(dir / "v/head_summary.json");
  CHECK(s["heads"].size() == 4);  // 2 layers x 2 heads
  CHECK(s["rule"].get<std::string>().find("broad") != std::string::npos);
  CHECK(s["induction_measured"] == true);
  CHECK(s["bars"]["previous_token"]["bar"].get<double>() >= 0.4);
  for (const Json& h : s["heads"]) {
    for (const char* key : {"previous_token", "first_token", "induction", "entropy"}) {
      CHECK(h[key].get<double>() >= 0);
      CHECK(h[key].get<double>() <= 1 + 1e-6);
    }
  }
}

TEST_CASE("cli forward gpt2 --out: one token draws the model view and an untested summary, and 32 tokens") {
  TempDir dir;
  CliResult r = run_cli("forward --model " + tiny() + " --tokens 5 --out '" + dir / "one" + "'");
  REQUIRE(r.code == 0);
  CHECK(fs::exists(dir / "one/heads.png"));
  // --help promises head_summary.json: query 0 alone says nothing about a head, so every head
  // is listed untested, every score null.
  const Json one = read_json(dir / "one/head_summary.json");
  REQUIRE(one["heads"].size() == 4);
  for (const Json& h : one["heads"]) {
    CHECK(h["kind"] == "untested");
    CHECK(h["previous_token"].is_null());
    CHECK(h["induction"].is_null());
  }
  std::string ids;
  for (int i = 0; i < 32; ++i) ids += (i ? "," : "") + std::to_string(60 + i);
  r = run_cli("forward --model " + tiny() + " --tokens " + ids + " --out '" + dir / "long" + "' --layer 1");
  REQUIRE(r.code == 0);  // the thinning note itself: test_render_heatmap.cpp
  for (const char* png : {"long/heads.png", "long/heads_layer1.png"}) {
    const DecodedPng p = DecodedPng::from_file(dir / png);
    REQUIRE(p.ok());
    CHECK(p.ink_on_border(3) == 0);
  }
}

TEST_CASE("cli forward: --layer out of range or without --out is one error line") {
  TempDir dir;
  check_input_error(run_cli("forward --model " + tiny() + " 'the cat' --out '" + dir / "x" + "' --layer 2"),
                    "--layer: expected 0..1");
  CHECK_FALSE(fs::exists(dir / "x"));
  check_input_error(run_cli("forward --model " + tiny() + " 'the cat' --layer 0"), "give --out too");
  check_input_error(run_cli("forward --model " + tiny() + " 'the cat' --out '" + dir / "y" + "' --layer -1"), "--layer");
}

TEST_CASE("cli demo --model on a GPT-2 folder: GPT-2's tokens, its attention, every number in the manifest") {
  TempDir dir;
  const CliResult r = run_cli("demo --model " + tiny() + " --out '" + dir / "d" + "'");
  REQUIRE(r.code == 0);
  CHECK(r.out.find("GPT-2 model") != std::string::npos);
  const Json m = read_json(dir / "d/manifest.json");
  CHECK(m["config"]["model"]["architecture"] == "gpt2");
  const Json ids = Json::parse(run_cli("tokenize --model " + tiny() + " 'the cat sat on the mat . the cat sat on the mat' --json").out);
  REQUIRE(m["tokens"].size() == ids["tokens"].size());
  for (std::size_t i = 0; i < m["tokens"].size(); ++i) CHECK(m["tokens"][i] == ids["tokens"][i]["text"]);
  // The model's attention in the manifest is forward's, to the printed digits.
  const Json f = Json::parse(run_cli("forward --model " + tiny() + " 'the cat sat on the mat . the cat sat on the mat' --json").out);
  const Json& a = m["results"]["model"]["attention"];
  REQUIRE(a.size() == 2);
  for (std::size_t l = 0; l < 2; ++l)
    for (std::size_t i = 0; i < a[l][1].size(); ++i)
      for (std::size_t j = 0; j <= i; ++j)
        CHECK(a[l][1][i][j].get<double>() == doctest::Approx(f["attention"][l][1][i][j].get<double>()).epsilon(1e-5));
  const Json& heads = m["results"]["model"]["head_summary"]["heads"];
  CHECK(heads.size() == 4);
  // attention.png's head is named by heads.png's own scores and rule: the best-scoring head the
  // rule calls induction, else the best induction score after layer 0 -- chosen here from the
  // summary, and its score is the summary's, not a second computation.
  std::optional<std::size_t> want;
  for (std::size_t k = 0; k < heads.size(); ++k)
    if (heads[k]["kind"] == "induction" && (!want || heads[k]["induction"] > heads[*want]["induction"])) want = k;
  if (!want)
    for (std::size_t k = 2; k < heads.size(); ++k)  // layer 1 of 2 layers x 2 heads
      if (!want || heads[k]["induction"] > heads[*want]["induction"]) want = k;
  REQUIRE(want);
  const Json& shown = m["results"]["single_head"];
  CHECK(shown["layer"] == heads[*want]["layer"]);
  CHECK(shown["head"] == heads[*want]["head"]);
  CHECK(shown["induction_score"] == heads[*want]["induction"]);
  CHECK(shown["kind"] == heads[*want]["kind"]);
  const std::string title = m["artifacts"][0]["title"];
  CHECK(title.rfind(heads[*want]["kind"] == "induction" ? "Induction head (layer " : "Best induction candidate", 0) == 0);
  CHECK(m["results"]["decode"]["max_abs_diff_output"].get<double>() < 1e-4);
  CHECK(fs::exists(dir / "d/heads.png"));
}

TEST_CASE("cli generate --model: greedy text through the cache, checked - bad settings are one error line") {
  CliResult r = run_cli("generate --model " + tiny() + " 'the cat' --tokens 5 --check --json");
  REQUIRE(r.code == 0);
  const Json g = Json::parse(r.out);
  REQUIRE(g["steps"].size() == 5);
  for (const Json& s : g["steps"])
    CHECK(s["max_abs_diff_vs_full"].get<double>() <= 1e-4 * std::max(1.0, s["logit_scale"].get<double>()));
  CHECK(g["ids"].size() == g["prompt"].size() + 5);
  r = run_cli("generate --model " + tiny() + " 'the cat' --tokens 3");
  REQUIRE(r.code == 0);
  CHECK(r.out.find("Greedy") != std::string::npos);

  check_input_error(run_cli("generate --model no-such-folder 'the cat' --tokens 3"), "no-such-folder");
  check_input_error(run_cli("generate --model " + tiny() + " 'the cat' --tokens 0"), "--tokens");
  check_input_error(run_cli("generate --model " + tiny() + " 'the cat' --tokens 99999999"), "--tokens");
  check_input_error(run_cli("generate --model " + tiny() + " 'the cat' --tokens 40"), "n_positions");  // 32 positions
  check_input_error(run_cli("generate --model " + tiny() + " 'the cat' --tokens 3 --temperature nan"), "--temperature");
  check_input_error(run_cli("generate --model " + tiny() + " 'the cat' --tokens 3 --temperature inf"), "--temperature");
  check_input_error(run_cli("generate --model " + tiny() + " 'the cat' --tokens 3 --temperature -1"), "--temperature");
  check_input_error(run_cli("generate --model " + tiny() + " 'the cat' --tokens 3 --heads 2"), "--heads");
  check_input_error(run_cli("generate --model " + tiny() + " 'the cat'"), "--tokens");
  std::string long_prompt;
  for (int i = 0; i < 40; ++i) long_prompt += "a ";
  check_input_error(run_cli("generate --model " + tiny() + " '" + long_prompt + "' --tokens 1"), "n_positions");
}

TEST_CASE("cli forward --out: heads.png's title names the text it was run on") {
  TempDir dir;
  // The model is named "m", relative to the folder the command runs in: the title names the
  // model's path too, and a checkout's own path (longer in a worktree) wrapped it onto two lines.
  std::filesystem::copy(data_path("gpt2_tiny"), dir / "m");
  // The title used to be "Every head of MODEL" whatever the text: as wide for 3 words as for 6.
  auto title_ink_width = [&](const std::string& name, const std::string& text) {
    const CliResult r = run_cli("forward --model m '" + text + "' --out " + name, "", dir.path.string());
    REQUIRE(r.code == 0);
    const DecodedPng img = DecodedPng::from_file(dir / (name + "/heads.png"));
    REQUIRE(img.ok());
    double left = 1e9, right = -1e9;  // 16 points of margin, then a 14-point bold line
    for (double y = 16; y < 34; y += 0.5)
      for (double x = 0; x < img.width() / 2.0; x += 0.5) {
        const Rgb8 p = img.pixel(x, y, 2);
        if (p.r + p.g + p.b > 3 * 200) continue;
        left = std::min(left, x);
        right = std::max(right, x);
      }
    return right - left;
  };
  const double short_text = title_ink_width("short", "the cat sat");
  const double long_text = title_ink_width("long", "the cat sat on the mat");
  CHECK(long_text > short_text + 40);
}
