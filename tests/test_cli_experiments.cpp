// End-to-end tests of the experiment subcommands: the binary as a user runs it.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <regex>

#include "support.hpp"

using namespace attn;
using namespace attn::test;

namespace {

// No printed number may be NaN: printf writes "nan" or "-nan" as a word of its own (a lesson
// may say "never NaN" in prose, and "-inf" is shown on purpose for masked scores).
void check_no_nan(const std::string& text) {
  CHECK_FALSE(std::regex_search(text, std::regex(R"((^|[^A-Za-z])-?nan([^A-Za-z]|$))")));
}

}  // namespace

TEST_CASE("cli variance: JSON rows as docs/contracts.md's contract, one row per --dk") {
  const CliResult r = run_cli("variance --dk 16,128 --samples 500 --seed 3 --format json");
  REQUIRE(r.code == 0);
  check_no_nan(r.out);
  const Json j = Json::parse(r.out);
  REQUIRE(j["rows"].size() == 2);
  CHECK(j["rows"][0]["d_k"] == 16);
  CHECK(j["rows"][1]["d_k"] == 128);
  for (const Json& row : j["rows"]) {
    CHECK(row["samples"] == 500);
    const double d = row["d_k"].get<double>();
    // within 4 large-S standard errors, sqrt((2d^2 + 6d)/S)
    CHECK(std::fabs(row["var_unscaled"].get<double>() - d) <= 4 * std::sqrt((2 * d * d + 6 * d) / 500));
    CHECK(row["var_scaled"].get<double>() == doctest::Approx(row["var_unscaled"].get<double>() / d));
  }
  // The same seed gives the same bytes.
  CHECK(run_cli("variance --dk 16,128 --samples 500 --seed 3 --format json").out == r.out);
}

TEST_CASE("cli variance: text tables, --out FILE, and errors") {
  namespace fs = std::filesystem;
  const fs::path out = fs::temp_directory_path() / ("attn-variance-" + std::to_string(::getpid()) + ".json");
  const CliResult r = run_cli("variance --dk 8,64 --samples 300 --out '" + out.string() + "'");
  REQUIRE(r.code == 0);
  check_no_nan(r.out);
  CHECK(r.out.find("var q.k") != std::string::npos);
  CHECK(r.out.find("||J||F") != std::string::npos);
  CHECK(r.err.empty());  // no progress line: stderr is not a terminal here
  CHECK(read_json(out.string())["rows"].size() == 2);
  fs::remove(out);
  const CliResult csv = run_cli("variance --dk 8 --samples 300 --format csv");
  CHECK(csv.out.rfind("d_k,mean q.k,", 0) == 0);
  check_input_error(run_cli("variance --dk 0"), "d_k");
  check_input_error(run_cli("variance --samples 1"), "samples");
  check_input_error(run_cli("variance --dk 8 --format xml"), "format");
  check_input_error(run_cli("variance --dk abc"), "dk");
}

TEST_CASE("cli temperature: entropy rises with T in the JSON, errors exit 2") {
  const CliResult r = run_cli("temperature --scores 3,1,0.2 --t 2,0.5,1 --format json");
  REQUIRE(r.code == 0);
  check_no_nan(r.out);
  const Json j = Json::parse(r.out);
  REQUIRE(j["points"].size() == 3);
  CHECK(j["points"][0]["temperature"] == 0.5);
  for (std::size_t i = 1; i < 3; ++i)
    CHECK(j["points"][i]["entropy"].get<double>() > j["points"][i - 1]["entropy"].get<double>());
  CHECK(j["entropy_increasing"] == true);
  const CliResult text = run_cli("temperature");
  CHECK(text.code == 0);
  CHECK(text.out.find("Entropy rises at every step of T: yes") != std::string::npos);
  // Equal scores: uniform at every T, and the text says so instead of "Entropy rises: no".
  const CliResult equal = run_cli("temperature --scores 1,1,1");
  CHECK(equal.out.find("All 3 scores are equal") != std::string::npos);
  CHECK(equal.out.find("Entropy rises") == std::string::npos);
  CHECK(equal.out.find("the opposite") == std::string::npos);
  check_input_error(run_cli("temperature --t 0"), "temperature");
  check_input_error(run_cli("temperature --scores 1"), "at least 2");
}

TEST_CASE("cli complexity: JSON as docs/contracts.md's contract, numbers equal the closed forms") {
  const CliResult r = run_cli("complexity --n 128,1000 --d-model 768 --heads 12 --causal --dtype-bytes 2 --format json");
  REQUIRE(r.code == 0);
  const Json j = Json::parse(r.out);
  CHECK(j["convention"].get<std::string>().find("FLOPs = 2 x multiply-adds") == 0);
  CHECK(j["convention"].get<std::string>().find("softmax IS counted") != std::string::npos);
  CHECK(j["convention"].get<std::string>().find("causal") != std::string::npos);
  REQUIRE(j["rows"].size() == 2);
  for (const Json& row : j["rows"]) {
    const std::uint64_t n = row["n"], D = 768, H = 12;
    CAPTURE(n);
    CHECK(row["d_model"] == D);
    CHECK(row["heads"] == H);
    CHECK(row["causal"] == true);
    CHECK(row["dtype_bytes"] == 2);
    const Json& f = row["flops"];
    CHECK(f["qkv_proj"] == 6 * n * D * D);
    CHECK(f["out_proj"] == 2 * n * D * D);
    CHECK(f["scores"] == n * n * D);  // 2 n^2 D, halved when causal
    CHECK(f["weighted_sum"] == n * n * D);
    CHECK(f["total"] == f["qkv_proj"].get<std::uint64_t>() + f["scores"].get<std::uint64_t>() +
                            f["softmax"].get<std::uint64_t>() + f["weighted_sum"].get<std::uint64_t>() +
                            f["out_proj"].get<std::uint64_t>());
    CHECK(row["memory_bytes"]["scores_naive"] == H * n * n * 2);
    CHECK(row["memory_bytes"].contains("tiled_extra"));
  }
  REQUIRE(j["kv_cache"].size() == 6);
  for (const Json& kv : j["kv_cache"]) {
    CHECK(kv["bytes"] == 2 * kv["layers"].get<std::uint64_t>() * kv["kv_heads"].get<std::uint64_t>() *
                             kv["head_dim"].get<std::uint64_t>() * kv["tokens"].get<std::uint64_t>() *
                             kv["dtype_bytes"].get<std::uint64_t>());
  }
  CHECK(j["kv_cache"][2]["model"] == "llama-7b");
  CHECK(j["kv_cache"][2]["layers"] == 32);
}

TEST_CASE("cli complexity: the crossover is a whole number of tokens, 2 D for the matmuls") {
  const CliResult r = run_cli("complexity --n 128 --d-model 8192 --heads 64");
  REQUIRE(r.code == 0);
  CHECK(r.out.find("projections at n = 16384 (") != std::string::npos);  // 2 x 8192
  CHECK(r.out.find("e+0") == std::string::npos);
}

TEST_CASE("cli complexity: formats, custom KV model, --measure, errors") {
  const CliResult md = run_cli("complexity --n 512 --format markdown");
  REQUIRE(md.code == 0);
  CHECK(md.out.find("| n ") != std::string::npos);
  CHECK(md.out.find("| :-") != std::string::npos);
  const CliResult csv = run_cli("complexity --n 512 --d-model 512 --heads 8 --format csv");
  REQUIRE(csv.code == 0);
  CHECK(csv.out.find("512,2097152,805306368,268435456,6291456,") != std::string::npos);  // exact integers
  const CliResult custom = run_cli("complexity --n 64 --model mistral-7b --layers 80 --kv-heads 8 --head-dim 128 "
                                   "--tokens 1000 --dtype-bytes 2 --format json");
  REQUIRE(custom.code == 0);
  const Json kv = Json::parse(custom.out)["kv_cache"];
  REQUIRE(kv.size() == 2);
  CHECK(kv[1]["model"] == "custom");
  CHECK(kv[1]["bytes"] == 2ull * 80 * 8 * 128 * 1000 * 2);
  const CliResult m = run_cli("complexity --n 64 --measure --measure-n 32,64 --repeat 1 --format json");
  REQUIRE(m.code == 0);
  CHECK(Json::parse(m.out)["measure"]["points"].size() == 2);
  check_input_error(run_cli("complexity --heads 3"), "does not divide");
  check_input_error(run_cli("complexity --model gpt-5"), "gpt-5");
  check_input_error(run_cli("complexity --layers 4"), "go together");
  check_input_error(run_cli("complexity --n 0"), "--n");
  check_input_error(run_cli("complexity --measure --measure-n 64"), "measure-n");
}

TEST_CASE("cli explain: six labelled steps, row sums, the sdpa check - --input - errors") {
  const CliResult r = run_cli("explain");
  REQUIRE(r.code == 0);
  check_no_nan(r.out);
  for (const char* s : {"Step 1.", "Step 2.", "Step 3.", "Step 4.", "row max", "Step 5.", "Step 6.", "row sum", "喜欢",
                        "attn::sdpa"})
    CHECK(r.out.find(s) != std::string::npos);
  CHECK(r.out.find("Online softmax") == std::string::npos);  // the extra lessons only when asked
  const CliResult more = run_cli("explain 'The cat sat on the mat' --online --row 2 --jacobian --symmetry");
  CAPTURE(more.err);
  REQUIRE(more.code == 0);
  check_no_nan(more.out);
  for (const char* s : {"Online softmax on row 2 ('sat')", "rescale", "(masked)", "Softmax Jacobian of row 2",
                        "p - onehot(y)", "max |S - S^T| = 0 (exactly 0)"})
    CHECK(more.out.find(s) != std::string::npos);
  check_input_error(run_cli("explain --online --row 4"), "--row 4");
  check_input_error(run_cli("explain --jacobian --row 1 --target 3"), "--target 3");
  const CliResult j = run_cli("explain --input - --format json --mask none", "Thinking strictly is hard\n");
  REQUIRE(j.code == 0);
  const Json out = Json::parse(j.out);
  CHECK(out["sentence"] == "Thinking strictly is hard");
  CHECK(out["tokens"].size() == 4);
  CHECK(out["causal"] == false);
  CHECK(out["check"]["max_abs_diff"].get<double>() <= 1e-6);
  check_input_error(run_cli("explain 'a b' --input x.txt"), "not both");
  check_input_error(run_cli("explain ''"), "");
  check_input_error(run_cli("explain --mask upper"), "mask");
  check_input_error(run_cli("explain --input /nonexistent/s.txt"), "cannot read /nonexistent/s.txt");  // docs/contracts.md: exit 2
}

TEST_CASE("cli pitfalls: fourteen lessons, one by id, JSON, errors") {
  const CliResult r = run_cli("pitfalls");
  REQUIRE(r.code == 0);
  check_no_nan(r.out);
  std::size_t lessons = 0;
  for (std::size_t at = r.out.find("Lesson:"); at != std::string::npos; at = r.out.find("Lesson:", at + 1)) ++lessons;
  CHECK(lessons == 14);
  const CliResult one = run_cli("pitfalls causal-alignment --format json");
  REQUIRE(one.code == 0);
  const Json j = Json::parse(one.out);
  REQUIRE(j["pitfalls"].size() == 1);
  CHECK(j["pitfalls"][0]["tables"][0]["right"][1][3] == 0.25);  // the last query sees all 4 keys
  check_input_error(run_cli("pitfalls nope"), "unknown pitfall");
}

TEST_CASE("cli: the experiment subcommands are listed in --help") {
  const CliResult h = run_cli("--help");
  for (const char* sub : {"variance", "temperature", "complexity", "explain", "pitfalls"})
    CHECK(h.out.find(sub) != std::string::npos);
}
