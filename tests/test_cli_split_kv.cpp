// explain --split-kv C end to end: the printed steps, the JSON's numbers, the picture, the errors
// (docs/flash-and-bench.md and explain --help show these commands).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "attn/lessons/concepts/explain.hpp"
#include "attn/render/views/split_kv_picture.hpp"
#include "attn/render/draw/text_table.hpp"
#include "picture_support.hpp"
#include "support.hpp"

using namespace attn;
using namespace attn::test;

namespace {
const char* kSentence = "\"The cat sat on the mat\"";  // 6 tokens
const char* kSixteen = "\"one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen\"";
}  // namespace

TEST_CASE("cli explain --split-kv prints the chunks, the merge and the computed difference") {
  const CliResult r = run_cli(std::string("explain ") + kSentence + " --split-kv 3");
  CAPTURE(r.err);
  REQUIRE(r.code == 0);
  CHECK(r.out.find("Split-KV (Flash-Decoding) on row 5 ('mat'): its 6 keys cut into 3 chunks") != std::string::npos);
  CHECK(r.out.find("exp(m_i - m)") != std::string::npos);
  CHECK(r.out.find("max |merged - one pass| = ") != std::string::npos);
  CHECK(r.out.find(": the same to the 4 decimals printed") != std::string::npos);
}

TEST_CASE("cli explain --split-kv --row 1: the chunks after the row are empty and merge without NaN") {
  const CliResult r = run_cli(std::string("explain ") + kSentence + " --split-kv 3 --row 1 --format json");
  CAPTURE(r.err);
  REQUIRE(r.code == 0);
  const Json j = Json::parse(r.out);
  const Json& s = j["split_kv"];
  CHECK(s["row"] == 1);
  CHECK(s["keys"] == 6);
  REQUIRE(s["chunks"].size() == 3);
  CHECK(s["chunks"][0]["visible"] == 2);
  for (int c : {1, 2}) {
    CHECK(s["chunks"][c]["visible"] == 0);
    CHECK(s["chunks"][c]["m"].is_null());
    CHECK(s["chunks"][c]["factor"] == 0.0);
    CHECK(s["chunks"][c]["l"] == 0.0);
  }
  // The merged row is step 6's output row, and the one-pass row the naive kernel's.
  const std::vector<double> merged = flat(s["merged"]);
  for (double x : merged) CHECK(std::isfinite(x));
  CHECK(max_abs_diff(merged, flat(j["steps"][5]["matrix"][1])) < 1e-5);
  CHECK(max_abs_diff(merged, flat(s["one_pass"])) == doctest::Approx(s["max_abs_diff"].get<double>()));
  CHECK(s["max_abs_diff"].get<double>() < 1e-5);
  const CliResult text = run_cli(std::string("explain ") + kSentence + " --split-kv 3 --row 1");
  CHECK(text.out.find("Chunk 1 has no key this row may see (causal mask)") != std::string::npos);
  CHECK(text.out.find("never exp(-inf - (-inf)) = NaN") != std::string::npos);
}

TEST_CASE("cli explain --split-kv bad values: one error line, exit 2") {
  check_input_error(run_cli(std::string("explain ") + kSentence + " --split-kv 0"), "--split-kv 0: expected 1 to 6");
  check_input_error(run_cli(std::string("explain ") + kSentence + " --split-kv 7"), "--split-kv 7: expected 1 to 6");
  check_input_error(run_cli("explain --split-kv nan"), "--split-kv");
  check_input_error(run_cli("explain --split-kv -1"), "--split-kv");
  check_input_error(run_cli("explain --split-kv 2 --row 9"), "--row 9");
}

TEST_CASE("cli explain --split-kv --plots writes explain-split-kv.png at 1, 3 and 16 chunks") {
  TempDir dir;
  for (const std::string& args : {std::string(kSentence) + " --split-kv 1", std::string(kSentence) + " --split-kv 3 --row 1",
                                  std::string(kSixteen) + " --split-kv 16"}) {
    CAPTURE(args);
    const CliResult r = run_cli("explain " + args + " --plots p", "", dir.path.string());
    CAPTURE(r.err);
    REQUIRE(r.code == 0);
    CHECK(r.out.find("Wrote p/explain-split-kv.png") != std::string::npos);
    const DecodedPng img = DecodedPng::from_file(dir / "p/explain-split-kv.png");
    REQUIRE(img.ok());
    CHECK(img.width() > 400);
  }
}

TEST_CASE("split-kv picture: the merged and one-pass rows are drawn alike, an empty chunk's strip is not a value") {
  ExplainConfig c;
  c.sentence = "The cat sat on the mat";
  c.split_kv = 3;
  c.row = 1;
  const ExplainResult r = explain_attention(c);
  const Figure f = split_kv_figure(*r.split_kv, r.tokens, "'cat' [1]");
  REQUIRE(f.grids.size() == 3);
  const DecodedPng img = DecodedPng::from_bytes(render_png(f, 2));
  REQUIRE(img.ok());
  const CellGrid& out = f.grids[2];
  for (std::size_t x = 0; x < out.cols; ++x) {
    // A corner of each cell, away from its number: the colour of the value.
    const Rgb8 merged = img.pixel(out.cell_x(x) + 3, out.cell_y(0) + 3, 2);
    const Rgb8 one = img.pixel(out.cell_x(x) + 3, out.cell_y(1) + 3, 2);
    CAPTURE(x);
    CHECK(near(merged, one, 3));
  }
  // The cache: key 2 is masked for row 1 (hatched), key 1 is not.
  const CellGrid& cache = f.grids[0];
  CHECK(!near(img.cell_mean(cache, 0, 1, 2), img.cell_mean(cache, 0, 2, 2), 8));
  CHECK_THROWS(split_kv_figure(*r.split_kv, {"a"}, "q"));
}

TEST_CASE("split-kv picture with one token: its table says key 0, not keys 0") {
  ExplainConfig c;
  c.sentence = "cat";
  c.split_kv = 1;
  const ExplainResult r = explain_attention(c);
  const Figure f = split_kv_figure(*r.split_kv, r.tokens, "'cat' [0]");
  const std::vector<std::string> words = drawn_texts(f);
  CHECK(std::find(words.begin(), words.end(), "key") != words.end());
  CHECK(std::find(words.begin(), words.end(), "keys") == words.end());
  CHECK(std::find(words.begin(), words.end(), "all 1") == words.end());  // the merged row: key 0 as well
  // Three keys in three chunks: one key each, still "key"; in one chunk: "keys".
  c.sentence = "The cat sat";
  c.split_kv = 3;
  const ExplainResult three = explain_attention(c);
  const std::vector<std::string> each = drawn_texts(split_kv_figure(*three.split_kv, three.tokens, "q"));
  CHECK(std::find(each.begin(), each.end(), "key") != each.end());
  c.split_kv = 1;
  const ExplainResult whole = explain_attention(c);
  const std::vector<std::string> one_chunk = drawn_texts(split_kv_figure(*whole.split_kv, whole.tokens, "q"));
  CHECK(std::find(one_chunk.begin(), one_chunk.end(), "keys") != one_chunk.end());
}

// Issue 34: Chinese key labels lay on their side above a long cache. At 48 tokens they stand
// upright, stacked, and no two of them overlap.
TEST_CASE("split-kv picture: Chinese key labels stand upright over a long cache") {
  ExplainConfig c;
  c.sentence.clear();
  const std::vector<std::string> words = {"我们", "今天", "在", "北京", "学习", "自然", "语言", "处理"};
  for (std::size_t i = 0; i < 48; ++i) c.sentence += (i ? " " : "") + words[i % words.size()];
  c.max_tokens = 64;
  c.split_kv = 3;
  const ExplainResult r = explain_attention(c);
  REQUIRE(r.tokens.size() == 48);
  const Figure f = split_kv_figure(*r.split_kv, r.tokens, "q");
  std::vector<DrawnText> cjk;
  for (const DrawnText& d : drawn_boxes(f)) {
    if (display_width(d.text) == characters(d.text)) continue;  // no wide character
    CAPTURE(d.text);
    CHECK(d.angle == 0);
    cjk.push_back(d);
  }
  REQUIRE(cjk.size() >= 48);
  for (std::size_t a = 0; a < cjk.size(); ++a) {
    for (std::size_t b = a + 1; b < cjk.size(); ++b) {
      const double w = std::min(cjk[a].x + cjk[a].width, cjk[b].x + cjk[b].width) - std::max(cjk[a].x, cjk[b].x);
      const double h = std::min(cjk[a].y + cjk[a].height, cjk[b].y + cjk[b].height) - std::max(cjk[a].y, cjk[b].y);
      CHECK(!(w > 0.5 && h > 0.5));
    }
  }
}
