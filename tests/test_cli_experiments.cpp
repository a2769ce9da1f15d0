// End-to-end tests of the experiment subcommands (issue 5): the binary as a user runs it.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>

#include "support.hpp"

using namespace attn;
using namespace attn::test;

namespace {

void check_input_error(const CliResult& r, const std::string& expected) {
  CAPTURE(r.err);
  CHECK(r.code == 2);
  CHECK(r.out.empty());
  CHECK(line_count(r.err) == 1);
  CHECK(r.err.rfind("error: ", 0) == 0);
  CHECK(r.err.find(expected) != std::string::npos);
}

// No printed number may be NaN or infinite ("-inf" is allowed where a masked score is shown).
void check_no_nan(const std::string& text) {
  CHECK(text.find("nan") == std::string::npos);
  CHECK(text.find("NaN") == std::string::npos);
}

}  // namespace

TEST_CASE("cli variance: JSON rows as DESIGN.md's contract, one row per --dk") {
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
  check_input_error(run_cli("temperature --t 0"), "temperature");
  check_input_error(run_cli("temperature --scores 1"), "at least 2");
}
