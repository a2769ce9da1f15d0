// report.html: self-contained (no URL it could fetch, pictures as data: URLs, every '<' of the
// data escaped), listed in the demo's manifest, small enough to mail, and `attn-cli report`
// for demo and train folders with one error line for anything else. The page's behaviour in a
// browser is checked by scripts/check_report_browser.py (CTest: report_browser).
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <regex>

#include "attn/lessons/demo/demo_result.hpp"
#include "attn/render/report/report_html.hpp"
#include "support.hpp"

using namespace attn;
namespace fs = std::filesystem;

namespace {

fs::path scratch(const std::string& name) {
  const fs::path p = fs::temp_directory_path() / ("attn-report-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(p);
  return p;
}

void write_text(const fs::path& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// Nothing in the page that a browser would fetch: no src/href/url() to anything but data: or a
// fragment, and no @import.
void check_self_contained(const std::string& page) {
  const std::regex fetch(R"((src|href)\s*=\s*["']?\s*(https?:|//|file:|ftp:))", std::regex::icase);
  CHECK_FALSE(std::regex_search(page, fetch));
  CHECK(page.find("@import") == std::string::npos);
  CHECK(page.find("url(http") == std::string::npos);
  CHECK(page.find("default-src 'none'") != std::string::npos);  // the policy that forbids fetching
}

}  // namespace

TEST_CASE("report: base64 as RFC 4648's test vectors") {
  CHECK(base64("") == "");
  CHECK(base64("f") == "Zg==");
  CHECK(base64("fo") == "Zm8=");
  CHECK(base64("foo") == "Zm9v");
  CHECK(base64("foob") == "Zm9vYg==");
  CHECK(base64("fooba") == "Zm9vYmE=");
  CHECK(base64("foobar") == "Zm9vYmFy");
  CHECK(base64(std::string("\xff\x00\x10", 3)) == "/wAQ");
}

TEST_CASE("report: the data cannot end the script early, and pictures travel as data: URLs") {
  ReportContent c;
  c.title = "t";
  c.manifest = {{"sentence", "</script><script>alert(1)</script> <!-- x"}, {"tokens", {"</script>"}}};
  c.pictures.push_back({"a.png", "heatmap", "A", std::string("\x89PNG\r\n", 6)});
  const std::string page = report_html(c);
  const std::string plain = report_html(ReportContent{});
  CHECK(count(page, "</script>") == count(plain, "</script>"));
  CHECK(page.find("alert(1)") != std::string::npos);  // still there, as data
  CHECK(page.find("\\u003c/script>\\u003cscript>alert(1)") != std::string::npos);
  CHECK(page.find("<!-- x") == std::string::npos);
  CHECK(page.find("data:image/png;base64,iVBORw0K") != std::string::npos);
  CHECK(page.find("{{ATTN_REPORT_DATA}}") == std::string::npos);
  check_self_contained(page);
}

TEST_CASE("report: demo stores the scaled scores the page's softmax needs, and they give the engine's weights") {
  DemoConfig config;
  config.sentence = "The cat sat on the mat";
  const DemoResult r = run_demo(config);
  const std::size_t L = r.tokens.size();
  // softmax of each row of the stored scores = the engine's weights (non-causal and causal).
  double worst = 0;
  for (bool causal : {false, true}) {
    const Tensor2& s = causal ? r.causal_scores : r.scores;
    const Tensor2& w = causal ? r.causal_weights : r.weights;
    for (std::size_t i = 0; i < L; ++i) {
      double m = -INFINITY, sum = 0;
      const std::size_t n = causal ? i + 1 : L;
      for (std::size_t j = 0; j < n; ++j) m = std::max(m, double(s(i, j)));
      for (std::size_t j = 0; j < n; ++j) sum += std::exp(double(s(i, j)) - m);
      for (std::size_t j = 0; j < n; ++j) worst = std::max(worst, std::fabs(std::exp(double(s(i, j)) - m) / sum - w(i, j)));
    }
  }
  CHECK(worst < 1e-6);
  for (std::size_t h = 0; h < r.head_scores.shape(0); ++h) {
    for (std::size_t i = 0; i < L; ++i) {
      double m = -INFINITY, sum = 0;
      for (std::size_t j = 0; j < L; ++j) m = std::max(m, double(r.head_scores(h, i, j)));
      for (std::size_t j = 0; j < L; ++j) sum += std::exp(double(r.head_scores(h, i, j)) - m);
      for (std::size_t j = 0; j < L; ++j)
        CHECK(std::exp(double(r.head_scores(h, i, j)) - m) / sum == doctest::Approx(r.head_weights(h, i, j)).epsilon(1e-5));
    }
  }
  const Json m = demo_manifest(r, {});
  CHECK(m["results"]["single_head"]["scaled_scores"].size() == L);
  CHECK(m["results"]["multi_head"]["scaled_scores"].size() == r.head_scores.shape(0));
  CHECK(m["results"]["flash"]["teaching"]["replay"]["steps"].size() == 9);  // 6 tokens: 3 x 3 tiles of 2
}

TEST_CASE("report: demo writes report.html, listed as kind report, self-contained, under 2 MiB at 12 tokens") {
  const fs::path dir = scratch("demo");
  const test::CliResult r = test::run_cli("demo \"one two three four five six seven eight nine ten eleven twelve\" --out '" +
                                          dir.string() + "'");
  REQUIRE(r.code == 0);
  CHECK(r.out.find("report.html") != std::string::npos);
  const Json m = read_json((dir / "manifest.json").string());
  REQUIRE(m["tokens"].size() == 12);
  bool listed = false;
  std::size_t pictures = 0;
  for (const Json& a : m["artifacts"]) {
    listed |= a["path"] == "report.html" && a["kind"] == "report";
    pictures += a["path"].get<std::string>().ends_with(".png");
  }
  CHECK(listed);
  const std::string page = test::read_text((dir / "report.html").string());
  CHECK(page.size() < 2u * 1024 * 1024);
  CHECK(count(page, "data:image/png;base64,") == pictures);
  check_self_contained(page);

  // attn-cli report rebuilds the same page from the folder.
  const test::CliResult again = test::run_cli("report '" + dir.string() + "' --out '" + (dir / "again.html").string() + "'");
  REQUIRE(again.code == 0);
  CHECK(test::read_text((dir / "again.html").string()) == page);
  fs::remove_all(dir);
}

TEST_CASE("report: a train folder gets the loss curve's data and its pictures") {
  const fs::path dir = scratch("train");
  REQUIRE(test::run_cli("train --steps 10 --out '" + dir.string() + "'").code == 0);
  const test::CliResult r = test::run_cli("report '" + dir.string() + "'");
  REQUIRE(r.code == 0);
  const std::string page = test::read_text((dir / "report.html").string());
  CHECK(page.find("\"uniform_loss\"") != std::string::npos);
  CHECK(page.find("\"snapshots\":{\"about\"") != std::string::npos);
  CHECK(page.find("\"tokens\":[]") == std::string::npos);  // the shown sequence, read back from the seed
  CHECK(page.find("data:image/png;base64,") != std::string::npos);
  check_self_contained(page);

  // The model folder inside it: the demo with that model, run by report itself.
  const test::CliResult m = test::run_cli("report '" + (dir / "model").string() + "' --sentence 'a b c a b c'");
  REQUIRE(m.code == 0);
  const std::string model_page = test::read_text((dir / "model" / "report.html").string());
  CHECK(model_page.find("\"scaled_scores\"") != std::string::npos);
  CHECK(model_page.find("\"replay\"") != std::string::npos);
  check_self_contained(model_page);
  fs::remove_all(dir);
}

TEST_CASE("report: a GPT-2 folder gets every layer and head of the real model, GPT-2's tokens and scores") {
  const fs::path dir = scratch("gpt2");
  fs::create_directories(dir);
  const std::string out = (dir / "report.html").string();
  const test::CliResult r = test::run_cli("report '" + test::data_path("gpt2_tiny") + "' --sentence 'the cat sat' --out '" + out + "'");
  CAPTURE(r.err);
  REQUIRE(r.code == 0);
  const std::string page = test::read_text(out);
  CHECK(page.find("\"scaled_scores\"") != std::string::npos);
  CHECK(page.find("\"head_summary\"") != std::string::npos);  // the GPT-2 heads' kinds
  CHECK(page.find("\"replay\"") != std::string::npos);
  check_self_contained(page);
  fs::remove_all(dir);
}

TEST_CASE("report: a folder that is neither a demo nor a train folder, or a broken manifest, is one error line") {
  const fs::path dir = scratch("bad");
  fs::create_directories(dir);
  test::check_input_error(test::run_cli("report '" + dir.string() + "'"), "holds neither manifest.json");
  write_text((dir / "manifest.json").string(), "{\"tokens\": [");
  test::check_input_error(test::run_cli("report '" + dir.string() + "'"), "not valid JSON");
  write_text((dir / "manifest.json").string(),
                   R"({"tokens": ["a"], "results": {}, "artifacts": [{"path": "gone.png", "kind": "heatmap"}]})");
  test::check_input_error(test::run_cli("report '" + dir.string() + "'"), "gone.png: listed in manifest.json but missing");
  write_text((dir / "manifest.json").string(),
                   R"({"tokens": ["a"], "results": {}, "artifacts": [{"path": "../../etc/x.png", "kind": "heatmap"}]})");
  test::check_input_error(test::run_cli("report '" + dir.string() + "'"), "leaves the folder");
  CHECK_FALSE(fs::exists(dir / "report.html"));
  fs::remove_all(dir);
}

TEST_CASE("report: whitespace-only tokens get the pictures' visible labels, not empty chips") {
  ReportContent c;
  c.title = "t";
  c.manifest = {{"tokens", {" ", "\n", "cat"}}, {"results", Json::object()}};
  const std::string page = report_html(c);
  CHECK(page.find(R"("token_labels":["␣","↵","cat"])") != std::string::npos);
  CHECK(page.find("const TOKENS = M ? DATA.token_labels") != std::string::npos);
}
