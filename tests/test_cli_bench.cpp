// `attn-cli bench` (prefill): DESIGN.md's fields, the FLOP count from the shape by FlashAttention's
// rule, and the ratio against sgemm taken best run against best run.
#include <doctest/doctest.h>

#include "support.hpp"

using namespace attn;
using test::run_cli;

TEST_CASE("cli bench: every DESIGN.md field, FLOPs from the shape, flash against sgemm best against best") {
  const auto r = run_cli("bench --backend naive,flash --n 48,80 --heads 3 --head-dim 8 --threads 1,2 --repeat 3 "
                         "--sgemm 64 --json");
  CAPTURE(r.err);
  REQUIRE(r.code == 0);
  const Json out = Json::parse(r.out);
  CHECK(out["flops_convention"].get<std::string>().find("4*H*n*n*d") == 0);
  REQUIRE(out["sgemm"].size() == 2);
  REQUIRE(out["runs"].size() == 8);
  for (const Json& x : out["runs"]) {
    for (const char* field : {"backend", "n", "heads", "head_dim", "causal", "threads", "median_ms", "min_ms", "gflops",
                              "peak_rss_bytes", "max_abs_err_vs_naive", "flops", "fraction_of_sgemm"})
      CHECK_MESSAGE(x.contains(field), field);
    const double n = x["n"].get<double>();
    CHECK(x["flops"].get<double>() == 4 * 3 * n * n * 8);  // 4 H n^2 d
    const double min_ms = x["min_ms"].get<double>(), median_ms = x["median_ms"].get<double>();
    CHECK(min_ms <= median_ms);
    CHECK(x["gflops"].get<double>() == doctest::Approx(x["flops"].get<double>() / (median_ms * 1e6)));
    // sgemm's rate comes from its fastest run, so the kernel's side of the ratio does too.
    const Json& sgemm = out["sgemm"][x["threads"].get<std::size_t>() == 1 ? 0 : 1];
    REQUIRE(sgemm["threads"] == x["threads"]);
    CHECK(x["fraction_of_sgemm"].get<double>() ==
          doctest::Approx(x["flops"].get<double>() / (min_ms * 1e6) / sgemm["gflops"].get<double>()));
  }
  const auto causal = run_cli("bench --backend flash --n 40 --heads 2 --head-dim 4 --causal --repeat 1 --json");
  REQUIRE(causal.code == 0);
  CHECK(Json::parse(causal.out)["runs"][0]["flops"].get<double>() == 4 * 2 * 40 * 40 * 4 / 2);  // halved
}
