// `attn-cli bench --mode decode`: docs/contracts.md's fields, bytes counted from the shapes (an eighth for
// GQA 8:1), errors against naive, and refusals.
#include <doctest/doctest.h>

#include <algorithm>
#include <vector>

#include "support.hpp"

using namespace attn;
using test::run_cli;

TEST_CASE("cli bench decode: every docs/contracts.md field, K/V bytes from the shapes, GQA reads an eighth") {
  const auto r = run_cli("bench --mode decode --kv 300,700 --heads 8 --kv-heads 1,8 --repeat 1 --json");
  // --kv-heads takes one number: the list above is refused, the real run is below.
  CHECK(r.code == 2);
  for (std::size_t kv_heads : {1, 8}) {
    const auto run = run_cli("bench --mode decode --kv 300,700 --heads 8 --kv-heads " + std::to_string(kv_heads) +
                             " --head-dim 32 --queries 2 --threads 1,2 --repeat 2 --json");
    REQUIRE(run.code == 0);
    const Json out = Json::parse(run.out);
    REQUIRE(out["runs"].size() == 4);
    for (const Json& x : out["runs"]) {
      for (const char* field : {"mode", "backend", "queries", "kv_len", "heads", "kv_heads", "head_dim", "kv_dtype",
                                "threads", "median_ms", "min_ms", "kv_bytes", "kv_gbps", "stream_gbps",
                                "peak_rss_bytes", "kv_huge_page_bytes", "max_abs_err_vs_naive", "run_ms_by_round",
                                "stream_ms_by_round", "side_by_side_fraction_of_stream"})
        CHECK_MESSAGE(x.contains(field), field);
      // Whole 2 MiB pages, and never more than K and V hold (these caches are too small for any).
      CHECK(x["kv_huge_page_bytes"].get<std::size_t>() % (2u << 20) == 0);
      CHECK(x["kv_huge_page_bytes"].get<std::size_t>() <= x["kv_bytes"].get<std::size_t>());
      CHECK(x["mode"] == "decode");
      CHECK(x["kv_dtype"] == "f32");
      CHECK(x["queries"] == 2);
      const std::size_t L = x["kv_len"];
      CHECK(x["kv_bytes"] == 2 * kv_heads * L * 32 * 4);
      CHECK(x["kv_gbps"].get<double>() == doctest::Approx(x["kv_bytes"].get<double>() / (x["min_ms"].get<double>() * 1e6)));
      CHECK(x["min_ms"].get<double>() <= x["median_ms"].get<double>());
      CHECK(x["stream_gbps"].get<double>() > 0);
      CHECK(x["max_abs_err_vs_naive"].get<double>() < 1e-5);  // float32 decode vs the float64 oracle
      // The repeats as they ran, each decode run and the read after it: the best of each side gives
      // min_ms and stream_gbps, and the pairs' ratios (read over run) their lower middle.
      const auto runs = x["run_ms_by_round"].get<std::vector<double>>();
      const auto reads = x["stream_ms_by_round"].get<std::vector<double>>();
      REQUIRE(runs.size() == 2);
      REQUIRE(reads.size() == 2);
      CHECK(x["min_ms"].get<double>() == *std::min_element(runs.begin(), runs.end()));
      CHECK(x["stream_gbps"].get<double>() ==
            doctest::Approx(x["kv_bytes"].get<double>() / (*std::min_element(reads.begin(), reads.end()) * 1e6)));
      CHECK(x["side_by_side_fraction_of_stream"].get<double>() ==
            doctest::Approx(std::min(reads[0] / runs[0], reads[1] / runs[1])));
      CHECK(x["median_ms"].get<double>() == std::max(runs[0], runs[1]));  // the slower of two middle runs
    }
    CHECK(out["machine"]["blas"].contains("core"));
  }
}

TEST_CASE("cli bench decode: beside is the lower middle of each read over the run just before it") {
  const auto run = run_cli("bench --mode decode --kv 400 --heads 2 --head-dim 16 --repeat 4 --no-check --json");
  REQUIRE(run.code == 0);
  const Json out = Json::parse(run.out);
  CHECK(out["timing"].get<std::string>().find("side_by_side_fraction_of_stream") != std::string::npos);
  const Json& x = out["runs"][0];
  const auto runs = x["run_ms_by_round"].get<std::vector<double>>();
  const auto reads = x["stream_ms_by_round"].get<std::vector<double>>();
  REQUIRE(runs.size() == 4);
  REQUIRE(reads.size() == 4);
  std::vector<double> ratios;  // pair by pair, as they ran: a read with the run before it
  for (std::size_t r = 0; r < 4; ++r) ratios.push_back(reads[r] / runs[r]);
  std::sort(ratios.begin(), ratios.end());
  CHECK(x["side_by_side_fraction_of_stream"].get<double>() == doctest::Approx(ratios[1]));  // not [2]
  const auto text = run_cli("bench --mode decode --kv 400 --heads 2 --head-dim 16 --repeat 2 --no-check");
  REQUIRE(text.code == 0);
  CHECK(text.out.find("ratio  beside") != std::string::npos);
}

TEST_CASE("cli bench decode: refusals are one line, exit 2") {
  test::check_input_error(run_cli("bench --mode decode --kv 1000 --kv-dtype bf16 --backend naive"), "bf16");
  test::check_input_error(run_cli("bench --mode decode --kv 1000 --kv-dtype int8"), "--kv-dtype");
  test::check_input_error(run_cli("bench --mode decode --kv 1000 --heads 8 --kv-heads 3"), "multiple of --kv-heads");
  test::check_input_error(run_cli("bench --mode decode --kv 4 --queries 5"), "--queries 5");
  test::check_input_error(run_cli("bench --mode decode --kv 100 --backend blas"), "flash or naive");
  test::check_input_error(run_cli("bench --mode sideways"), "--mode");
}

TEST_CASE("cli bench decode: a bf16 cache reads half the bytes, and its rounding shows in the error") {
  const auto run = run_cli("bench --mode decode --kv 600,2000 --heads 4 --kv-heads 2 --head-dim 32 --kv-dtype bf16 "
                           "--threads 1,2 --repeat 1 --json");
  REQUIRE(run.code == 0);
  const Json out = Json::parse(run.out);
  REQUIRE(out["runs"].size() == 4);
  for (const Json& x : out["runs"]) {
    CHECK(x["kv_dtype"] == "bf16");
    CHECK(x["kv_bytes"] == 2 * 2 * x["kv_len"].get<std::size_t>() * 32 * 2);  // 2 bytes a value
    // The kernel on the rounded cache is float32-exact; the rounding itself (2^-8 relative) is
    // what a bf16 cache costs against float64 on the float32 inputs, and it must be visible.
    CHECK(x["kernel_err_on_bf16_kv"].get<double>() < 1e-5);
    CHECK(x["max_abs_err_vs_naive"].get<double>() > 1e-4);
    CHECK(x["max_abs_err_vs_naive"].get<double>() < 2e-2);
  }
  const auto text = run_cli("bench --mode decode --kv 600 --kv-dtype bf16 --repeat 1");
  REQUIRE(text.code == 0);
  CHECK(text.out.find("KV cache bfloat16") != std::string::npos);
}
