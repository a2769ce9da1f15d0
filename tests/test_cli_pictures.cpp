// End-to-end: demo, heatmap and mask as a user runs them, pictures decoded back.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <set>

#include "picture_support.hpp"
#include "support.hpp"

using namespace attn;
using namespace attn::test;
namespace fs = std::filesystem;

namespace {

// Runs demo into dir/out and checks the folder against its manifest; returns the manifest.
Json check_demo(const TempDir& dir, const std::string& sentence, const std::string& out,
                const std::string& flags = "") {
  const CliResult r = run_cli("demo '" + sentence + "' --verbose --out " + out + " " + flags, "", dir.path.string());
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
    CHECK(r.out.find(path) != std::string::npos);  // --verbose says where each file went
    if (fs::path(path).extension() == ".html") {
      CHECK(read_text(dir / (out + "/" + path)).rfind("<!DOCTYPE html>", 0) == 0);  // test_report_html.cpp: the rest
    } else if (fs::path(path).extension() == ".png") {
      const DecodedPng img = DecodedPng::from_file(dir / (out + "/" + path));
      REQUIRE(img.ok());
      CHECK(img.width() > 200);
      CHECK(img.height() > 150);
    } else {
      CHECK(well_formed_xml(read_text(dir / (out + "/" + path))));
    }
    kinds.insert(a["kind"].get<std::string>());
  }
  std::set<std::string> expected{"heatmap", "mask", "heads", "flash", "variance", "complexity", "report"};
  if (flags.find("--rope") != std::string::npos) expected.insert("rope");
  CHECK(kinds == expected);
  CHECK(files_in(dir.path / out) == m["artifacts"].size() + 1);  // no temporary files left
  return m;
}

}  // namespace

TEST_CASE("cli pictures: demo writes every picture its manifest lists, byte-identical on rerun") {
  TempDir dir;
  const Json m = check_demo(dir, "The cat sat on", "run1");
  CHECK(m["artifacts"].size() == 11);  // 10 pictures (trained_heads.png and approximations.png too) and report.html
  // The split-KV merge of the last query ('on', 4 keys) in 3 chunks equals the one-pass row.
  const Json& split = m["results"]["split_kv"];
  CHECK(split["query"] == 3);
  CHECK(split["chunk_count"] == 3);
  CHECK(split["max_abs_diff"].get<double>() < 1e-5);
  CHECK(test::max_abs_diff(test::flat(split["merged"]), test::flat(split["one_pass"])) == split["max_abs_diff"].get<double>());
  const Json& causal = m["results"]["causal"];
  CHECK(causal["weights"][0][0] == 1.0);  // the first token sees only itself
  CHECK(causal["weights"][0][3] == 0.0);
  CHECK(causal["allowed"][0][3] == 0);
  for (const Json& q : causal["top_k"]) {  // a masked (future) key is never listed
    for (const Json& t : q["top"]) CHECK(t["index"].get<std::size_t>() <= q["index"].get<std::size_t>());
  }
  CHECK(m["results"]["multi_head"]["weights"].size() == 4);
  // The experiments in the demo: the variance sweep within its band, and FLOPs from docs/contracts.md's closed
  // forms at the default d_model 64, for the sentence's 4 tokens among the lengths.
  const Json& variance = m["results"]["variance"]["rows"];
  REQUIRE(variance.size() >= 4);
  for (const Json& row : variance) {
    const double d = row["d_k"], S = row["samples"];
    CAPTURE(d);
    CHECK(std::fabs(row["var_unscaled"].get<double>() - d) <= 3 * std::sqrt((2 * d * d + 6 * d) / S) * 1.01);
    CHECK(std::fabs(row["var_scaled"].get<double>() - 1) <= 3 * std::sqrt((2 + 6 / d) / S) * 1.01);
  }
  bool sentence_row = false;
  for (const Json& row : m["results"]["complexity"]["rows"]) {
    const double n = row["n"], D = 64;
    CHECK(row["d_model"] == 64);
    CHECK(row["flops"]["scores"].get<double>() == 2 * n * n * D);
    CHECK(row["flops"]["qkv_proj"].get<double>() == 6 * n * D * D);
    sentence_row |= row["n"] == 4;
  }
  CHECK(sentence_row);
  CHECK(m["results"]["complexity"]["crossover"]["matmuls"].get<double>() == doctest::Approx(2 * 64.0));  // 4 n^2 D = 8 n D^2
  check_demo(dir, "The cat sat on", "run2");
  for (const char* file :
       {"manifest.json", "attention.png", "attention_causal.png", "mask_causal.png", "heads.png", "flash_tiles.png",
        "split_kv.png", "variance.png", "complexity.png", "report.html"}) {
    CAPTURE(file);
    CHECK(read_text(dir / (std::string("run1/") + file)) == read_text(dir / (std::string("run2/") + file)));
  }
}

TEST_CASE("cli pictures: demo with a Chinese sentence, SVG too, another colormap and head count") {
  TempDir dir;
  const Json m = check_demo(dir, "我喜欢深度学习", "zh", "--format both --colormap viridis --heads 2 --scale 1");
  CHECK(m["tokens"].size() == 4);
  CHECK(m["artifacts"].size() == 21);  // 10 pictures as PNG and SVG, and report.html
  CHECK(m["results"]["multi_head"]["weights"].size() == 2);
  check_input_error(run_cli("demo --heads 3"), "--heads: 3 does not divide");
  check_input_error(run_cli("demo --colormap rainbow --out never", "", dir.path.string()), "rainbow");
  CHECK_FALSE(fs::exists(dir.path / "never"));
  CHECK(run_cli("demo 'a b' --no-color --out nc", "", dir.path.string()).out.find('\x1b') == std::string::npos);
}

namespace {

// The kind of a tile of rows [i0, i1) x keys [j0, j1) of an L x L causal matrix, from the rule
// alone (query i sees key j iff j <= i).
std::string causal_tile_kind(std::size_t i0, std::size_t i1, std::size_t j0, std::size_t j1) {
  if (j0 > i1 - 1) return "skipped";
  if (j1 - 1 <= i0) return "full";
  return "diagonal";
}

}  // namespace

TEST_CASE("cli pictures: demo's flash check, its tile grid, and the decode check") {
  TempDir dir;
  const Json m = check_demo(dir, "The cat sat on the mat", "cat");
  const Json& flash = m["results"]["flash"];
  // The teaching run against the naive sdpa on the same inputs. The fast float32 run depends
  // on the CPU, so it is on the terminal only, never in the byte-identical manifest.
  CHECK_FALSE(flash.contains("fast"));
  for (const char* run : {"teaching"}) {
    for (const char* mode : {"non_causal", "causal"}) {
      CAPTURE(run);
      CAPTURE(mode);
      for (const char* field : {"max_abs_diff_output", "max_abs_diff_lse"}) {
        const double diff = flash[run][mode][field];
        CHECK(diff >= 0);
        CHECK(diff < 1e-5);
      }
    }
  }

  // The teaching grid: rebuilt from its tile sizes and the causal rule, then compared.
  const Json& teaching = flash["teaching"];
  CHECK(teaching["isa"] == "generic");
  const std::size_t L = 6, bq = teaching["block_q"], bk = teaching["block_k"];
  CHECK(bq == 2);
  CHECK(bk == 2);  // the generic float64 kernel's key panel is 2 keys: 2 x 2 tiles as asked
  const Json& causal = teaching["tiles"]["causal"];
  std::map<std::string, std::size_t> counted;
  std::size_t t = 0;
  for (std::size_t i0 = 0; i0 < L; i0 += bq) {
    for (std::size_t j0 = 0; j0 < L; j0 += bk, ++t) {
      const std::string kind = causal_tile_kind(i0, std::min(L, i0 + bq), j0, std::min(L, j0 + bk));
      ++counted[kind];
      REQUIRE(t < causal["tiles"].size());
      CHECK(causal["tiles"][t]["kind"] == kind);
      CHECK(teaching["tiles"]["non_causal"]["tiles"][t]["kind"] == "full");
    }
  }
  CHECK(causal["total"] == t);
  CHECK(causal["skipped"] == counted["skipped"]);
  CHECK(causal["diagonal"] == counted["diagonal"]);
  CHECK(causal["full"] == counted["full"]);
  CHECK(teaching["tiles"]["non_causal"]["full"] == t);

  const Json& decode = m["results"]["decode"];
  CHECK(decode["prefill"] == 3);
  CHECK(decode["kv_cache_len"] == L);
  CHECK(decode["rope"].is_null());
  CHECK(decode["max_abs_diff_output"].get<double>() < 1e-6);
  CHECK(decode["max_abs_diff_weights"].get<double>() < 1e-6);
}

TEST_CASE("cli pictures: demo --rope writes the RoPE heatmap, byte-identical on rerun, a bad style is refused") {
  TempDir dir;
  const Json m = check_demo(dir, "The cat sat on the mat", "r1", "--rope interleaved --heads 2");
  CHECK(m["artifacts"].size() == 12);
  CHECK(m["config"]["rope"] == "interleaved");
  const Json& rope = m["results"]["rope"];
  CHECK(rope["style"] == "interleaved");
  const Json& plain = m["results"]["causal"]["weights"];
  double change = 0;
  for (std::size_t i = 0; i < plain.size(); ++i) {
    double sum = 0;
    for (std::size_t j = 0; j < plain.size(); ++j) {
      const double w = rope["causal_weights"][i][j];
      sum += w;
      if (j > i) CHECK(w == 0.0);  // still causal
      change = std::max(change, std::fabs(w - plain[i][j].get<double>()));
    }
    CHECK(sum == doctest::Approx(1.0).epsilon(1e-5));
  }
  CHECK(change > 1e-3);  // position now matters
  CHECK(rope["max_abs_change_vs_no_rope"].get<double>() == doctest::Approx(change).epsilon(1e-6));
  // The decode check ran with RoPE: the cache holds rotated keys and still matches.
  CHECK(m["results"]["decode"]["rope"] == "interleaved");
  CHECK(m["results"]["decode"]["max_abs_diff_output"].get<double>() < 1e-6);

  const DecodedPng img = DecodedPng::from_file(dir / "r1/attention_causal_rope.png");
  REQUIRE(img.ok());
  check_demo(dir, "The cat sat on the mat", "r2", "--rope interleaved --heads 2");
  for (const char* file : {"manifest.json", "attention_causal_rope.png", "flash_tiles.png", "heads.png"}) {
    CAPTURE(file);
    CHECK(read_text(dir / (std::string("r1/") + file)) == read_text(dir / (std::string("r2/") + file)));
  }

  check_input_error(run_cli("demo --rope spiral --out never", "", dir.path.string()), "--rope");
  CHECK_FALSE(fs::exists(dir.path / "never"));
  check_input_error(run_cli("demo --rope half --d-model 6 --heads 2 --out never", "", dir.path.string()),
                    "head dim must be even");
  CHECK_FALSE(fs::exists(dir.path / "never"));
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

TEST_CASE("cli pictures: attend | heatmap hatches what attend masked, as a heatmap given the mask does") {
  // attend_mask.json hides key 2 from query 0 and every key from query 1 (a fully masked row):
  // drawn from attend's output, those cells must be the hatched "masked" cells, not weights of 0.
  TempDir dir;
  const std::string cwd = dir.path.string();
  REQUIRE(run_cli("attend --input " + data_path("examples/attend_mask.json") + " --output a.json", "", cwd).code == 0);
  const Json a = Json::parse(read_text(dir / "a.json"));
  CHECK(a["mask"] == Json::parse("[[1, 1, 0], [0, 0, 0]]"));
  REQUIRE(run_cli("heatmap --input a.json --out from-attend", "", cwd).code == 0);
  Json explicit_mask = {{"weights", a["weights"]}, {"mask", a["mask"]}};
  Json no_mask = {{"weights", a["weights"]}};
  REQUIRE(run_cli("heatmap --input - --out given", explicit_mask.dump(), cwd).code == 0);
  REQUIRE(run_cli("heatmap --input - --out unmasked", no_mask.dump(), cwd).code == 0);
  CHECK(read_text(dir / "from-attend.png") == read_text(dir / "given.png"));
  CHECK(read_text(dir / "from-attend.png") != read_text(dir / "unmasked.png"));
  // causal comes through too.
  REQUIRE(run_cli("attend --input - --output c.json", R"({"q": [[1], [2]], "k": [[1], [2]], "v": [[1], [2]], "causal": true})",
                  cwd).code == 0);
  CHECK(Json::parse(read_text(dir / "c.json"))["causal"] == true);
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
  CHECK(io.code == 2);  // a folder the user named that cannot be written: bad input
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

TEST_CASE("cli pictures: heatmap states rows that are not softmax rows and weights clipped by --vmax") {
  TempDir dir;
  const std::string cwd = dir.path.string();
  CliResult r = run_cli("heatmap --input - --out scores", "[[2, 1], [0.5, 0.5]]", cwd);
  CAPTURE(r.err);
  CHECK(r.code == 0);  // drawn, and said
  CHECK(r.err == "warning: 1 of 2 rows does not sum to 1 (its sum 3): not softmax weights?\n");
  CHECK(fs::exists(dir.path / "scores.png"));
  r = run_cli("heatmap --input - --out clipped --vmax 0.5", "[[0.25, 0.75], [1, 0]]", cwd);
  CHECK(r.code == 0);
  CHECK(r.err == "warning: 2 of 4 cells lie above the colour scale's top 0.5 and are drawn in its highest colour\n");
  r = run_cli("heatmap --input - --out fine", "[[0.25, 0.75], [1, 0]]", cwd);
  CHECK(r.code == 0);
  CHECK(r.err.empty());
  CHECK(run_cli("heatmap --help").out.find("never silently") != std::string::npos);
}

TEST_CASE("cli pictures: mask --tiles draws the flash kernel's block mask and counts its tiles") {
  TempDir dir;
  const std::string cwd = dir.path.string();
  // Documents 0,0 | 1,1,1,1, block-causal (the kind pairs documents with causal), in 2 x 2
  // tiles (row block, key block): (0,1) (0,2) (1,0) (1,2) (2,0) hidden whole; the three on the
  // diagonal in part; (2,1) -- rows 4-5 against keys 2-3, all of document 1 and earlier -- whole.
  const CliResult r = run_cli("mask --kind document --size 6 --segments 0,0,1,1,1,1 --tiles 2 --out m", "", cwd);
  CAPTURE(r.err);
  REQUIRE(r.code == 0);
  CHECK(r.out.find("Flash tiles: 5 of 9 skipped (never read), 3 index-tested, 1 run without the mask\n") !=
        std::string::npos);
  CHECK(r.out.find("Wrote m-tiles.png\n") != std::string::npos);
  CHECK(DecodedPng::from_file(dir / "m.png").ok());
  CHECK(DecodedPng::from_file(dir / "m-tiles.png").ok());
  check_input_error(run_cli("mask --kind causal --tiles 0", "", cwd), "--tiles");
}

TEST_CASE("cli pictures: mask --kind attend draws any variant fields from attend's own parser") {
  TempDir dir;
  const std::string cwd = dir.path.string();
  // Chunks of 4, causal, 8 positions in 2 x 2 tiles: the 4 diagonal tiles are tested by index,
  // (1,0) and (3,2) -- rows 2-3 against keys 0-1, rows 6-7 against 4-5 -- lie inside one chunk
  // below the diagonal and run whole, the other 10 are hidden (above the diagonal, or across
  // the chunk boundary at 4).
  CliResult r = run_cli(R"(mask --kind attend --size 8 --variant '{"chunk": 4, "causal": true}' --tiles 2 --out c)", "", cwd);
  CAPTURE(r.err);
  REQUIRE(r.code == 0);
  CHECK(r.out.find("Flash tiles: 10 of 16 skipped (never read), 4 index-tested, 2 run without the mask\n") !=
        std::string::npos);
  CHECK(DecodedPng::from_file(dir / "c.png").ok());
  // The same fields as attend's: a window with a sink, and the warning for a field attend does not know.
  r = run_cli(R"(mask --kind attend --size 6 --variant '{"window": [1, 0], "sinks": 1, "chunky": 2}' --tiles 2 --out w)", "", cwd);
  CHECK(r.code == 0);
  CHECK(r.err == "warning: ignoring unknown field \"chunky\"\n");
  // Rows 2-3 keep key 0 (the sink) and their band: the tile of keys 0-1 is tested, not skipped.
  CHECK(r.out.find("Flash tiles: 3 of 9 skipped (never read), 6 index-tested, 0 run without the mask\n") !=
        std::string::npos);
  check_input_error(run_cli("mask --kind attend --size 4", "", cwd), "--variant");
  check_input_error(run_cli("mask --kind attend --size 4 --variant '{oops'", "", cwd), "--variant: not valid JSON");
  check_input_error(run_cli(R"(mask --kind attend --size 4 --variant '{"chunk": 0}')", "", cwd), "chunk");
  // Score modifiers leave the mask alone, and any number of ALiBi slopes is accepted.
  r = run_cli(R"(mask --kind attend --size 4 --variant '{"alibi": [0.5, 0.25, 0.1], "softcap": 5}' --out s)", "", cwd);
  CAPTURE(r.err);
  CHECK(r.code == 0);
}
