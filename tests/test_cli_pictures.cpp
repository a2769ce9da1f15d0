// End-to-end: demo, heatmap and mask as a user runs them, pictures decoded back.
#include <doctest/doctest.h>

#include <filesystem>
#include <set>

#include "picture_support.hpp"
#include "support.hpp"

using namespace attn;
using namespace attn::test;
namespace fs = std::filesystem;

namespace {

std::size_t files_in(const fs::path& dir) {
  return static_cast<std::size_t>(std::distance(fs::directory_iterator(dir), fs::directory_iterator{}));
}

// Runs demo into dir/out and checks the folder against its manifest; returns the manifest.
Json check_demo(const TempDir& dir, const std::string& sentence, const std::string& out,
                const std::string& flags = "") {
  const CliResult r = run_cli("demo '" + sentence + "' --out " + out + " " + flags, "", dir.path.string());
  CAPTURE(r.err);
  REQUIRE(r.code == 0);
  CHECK(r.out.find('\x1b') == std::string::npos);  // piped: plain numbers, no colour codes
  const Json m = read_json(dir / (out + "/manifest.json"));
  CHECK(m["sentence"] == sentence);
  std::set<std::string> kinds;
  for (const Json& a : m["artifacts"]) {
    const std::string path = a["path"];
    CAPTURE(path);
    CHECK(fs::path(path).is_relative());
    CHECK(path.find("..") == std::string::npos);
    CHECK(!a["title"].get<std::string>().empty());
    REQUIRE(fs::exists(dir.path / out / path));
    CHECK(r.out.find(path) != std::string::npos);  // the terminal says where each file went
    if (fs::path(path).extension() == ".png") {
      const DecodedPng img = DecodedPng::from_file(dir / (out + "/" + path));
      REQUIRE(img.ok());
      CHECK(img.width() > 200);
      CHECK(img.height() > 150);
    } else {
      CHECK(well_formed_xml(read_text(dir / (out + "/" + path))));
    }
    kinds.insert(a["kind"].get<std::string>());
  }
  CHECK(kinds == std::set<std::string>{"heatmap", "mask", "heads"});
  CHECK(files_in(dir.path / out) == m["artifacts"].size() + 1);  // no temporary files left
  return m;
}

}  // namespace

TEST_CASE("cli pictures: demo writes every picture its manifest lists, byte-identical on rerun") {
  TempDir dir;
  const Json m = check_demo(dir, "The cat sat on", "run1");
  CHECK(m["artifacts"].size() == 4);
  const Json& causal = m["results"]["causal"];
  CHECK(causal["weights"][0][0] == 1.0);  // the first token sees only itself
  CHECK(causal["weights"][0][3] == 0.0);
  CHECK(causal["allowed"][0][3] == 0);
  for (const Json& q : causal["top_k"]) {  // a masked (future) key is never listed
    for (const Json& t : q["top"]) CHECK(t["index"].get<std::size_t>() <= q["index"].get<std::size_t>());
  }
  CHECK(m["results"]["multi_head"]["weights"].size() == 4);
  check_demo(dir, "The cat sat on", "run2");
  for (const char* file : {"manifest.json", "attention.png", "attention_causal.png", "mask_causal.png", "heads.png"}) {
    CAPTURE(file);
    CHECK(read_text(dir / (std::string("run1/") + file)) == read_text(dir / (std::string("run2/") + file)));
  }
}

TEST_CASE("cli pictures: demo with a Chinese sentence, SVG too, another colormap and head count") {
  TempDir dir;
  const Json m = check_demo(dir, "我喜欢深度学习", "zh", "--format both --colormap viridis --heads 2 --scale 1");
  CHECK(m["tokens"].size() == 4);
  CHECK(m["artifacts"].size() == 8);
  CHECK(m["results"]["multi_head"]["weights"].size() == 2);
  check_input_error(run_cli("demo --heads 3"), "--heads: 3 does not divide");
  check_input_error(run_cli("demo --colormap rainbow --out never", "", dir.path.string()), "rainbow");
  CHECK_FALSE(fs::exists(dir.path / "never"));
  CHECK(run_cli("demo 'a b' --no-color --out nc", "", dir.path.string()).out.find('\x1b') == std::string::npos);
}

TEST_CASE("cli pictures: heatmap renders a bare [L, L] array, an attend output and [H, L, L] heads") {
  TempDir dir;
  const std::string cwd = dir.path.string();
  CliResult r = run_cli("heatmap --input - --out bare", "[[0.25, 0.75], [1, 0]]", cwd);
  CAPTURE(r.err);
  REQUIRE(r.code == 0);
  CHECK(r.out == "Wrote bare.png\n");
  const DecodedPng bare = DecodedPng::from_file(dir / "bare.png");
  REQUIRE(bare.ok());

  r = run_cli("heatmap --input - --out heads.svg",
              R"({"weights": [[[1, 0], [0, 1]], [[0.5, 0.5], [0.5, 0.5]], [[0, 1], [1, 0]]],
                  "tokens": ["深度", "学习"], "mask": [[1, 0], [1, 1]]})", cwd);
  REQUIRE(r.code == 0);
  CHECK(fs::exists(dir.path / "heads.svg"));
  CHECK_FALSE(fs::exists(dir.path / "heads.png"));
  CHECK(well_formed_xml(read_text(dir / "heads.svg")));

  r = run_cli("heatmap --input - --head 1 --format both --out one", R"({"weights": [[[1]], [[1]]]})", cwd);
  REQUIRE(r.code == 0);
  CHECK(fs::exists(dir.path / "one.png"));
  CHECK(fs::exists(dir.path / "one.svg"));

  // attend's output as is: its weights are drawn, its output and lse are not complained about.
  REQUIRE(run_cli("attend --input " + data_path("examples/attend_small.json") + " --output attend.json", "", cwd).code == 0);
  r = run_cli("heatmap --input attend.json --causal --out from-attend", "", cwd);
  CAPTURE(r.err);
  CHECK(r.code == 0);
  CHECK(r.err.empty());
  CHECK(DecodedPng::from_file(dir / "from-attend.png").ok());
}

TEST_CASE("cli pictures: heatmap refuses bad input with one error line and writes nothing") {
  TempDir dir;
  const std::string cwd = dir.path.string();
  check_input_error(run_cli("heatmap --input -", R"({"weights": [1, 2]})", cwd), "weights: expected [Lq, Lk]");
  check_input_error(run_cli("heatmap --input -", R"({"weights": [[1, 0], [0, 1]], "tokens": ["a"]})", cwd),
                    "expected 2 labels");
  check_input_error(run_cli("heatmap --input -", R"({"weights": [[1, 0], [0, 1]], "mask": [[1, 0]]})", cwd), "mask");
  check_input_error(run_cli("heatmap --input -", R"({"tokens": ["a"]})", cwd), "weights: required");
  check_input_error(run_cli("heatmap --input -", R"("hello")", cwd), "input: expected");
  check_input_error(run_cli("heatmap --input - --head 5", R"([[[1]], [[1]]])", cwd), "--head");
  check_input_error(run_cli("heatmap --input - --format gif", "[[1]]", cwd), "--format");
  check_input_error(run_cli("heatmap --input - --colormap jet", "[[1]]", cwd), "jet");
  CHECK(files_in(dir.path) == 0);
  const CliResult io = run_cli("heatmap --input - --out /nonexistent/dir/x", "[[1]]", cwd);
  CHECK(io.code == 1);
  CHECK(io.err.rfind("error: cannot write /nonexistent/dir/x.png", 0) == 0);
}

TEST_CASE("cli pictures: mask draws causal, padding, window and graph masks") {
  TempDir dir;
  const std::string cwd = dir.path.string();
  for (const std::string& args : {"--kind causal --size 5", "--kind causal --size 6 --queries 2",
                                  "--kind padding --size 6 --lengths 6,4,2", "--kind window --size 8 --window 3 --right 1",
                                  "--kind graph --size 4 --edges 0-1,2-3 --directed --no-self-loops"}) {
    CAPTURE(args);
    const CliResult r = run_cli("mask " + args + " --out m", "", cwd);
    CAPTURE(r.err);
    REQUIRE(r.code == 0);
    CHECK(DecodedPng::from_file(dir / "m.png").ok());
  }
  CHECK(run_cli("mask --kind causal", "", cwd).out == "Wrote mask-causal.png\n");
  check_input_error(run_cli("mask --kind diagonal", "", cwd), "--kind");
  check_input_error(run_cli("mask --kind graph --edges 0-9 --size 3", "", cwd), "edge");
  check_input_error(run_cli("mask --kind graph --edges 0:1", "", cwd), "--edges");
  check_input_error(run_cli("mask --kind causal --size 3 --queries 4", "", cwd), "--queries");
  check_input_error(run_cli("mask --kind padding --size 3 --lengths 5", "", cwd), "padding length");
}
