// `attn-cli bench --mode forward`: a model folder's pass timed beside sgemm. The FLOP counts are
// derived here by hand from the committed tiny folders' shapes (not from the program's own
// formula), the rates from the times, and the refusals are one line, exit 2.
#include <doctest/doctest.h>

#include <algorithm>
#include <regex>
#include <vector>

#include "support.hpp"

using namespace attn;
using test::run_cli;

namespace {

// data/gpt2_tiny: 2 layers, n_embd 16, vocab 275. Per token c_attn 3 D^2, c_proj D^2 and the MLP
// 8 D^2 a layer, the logits vocab D, all 2 FLOPs a multiply-add; causal attention 2 n^2 D a layer.
double gpt2_tiny_flops(double n) { return 2 * n * (2 * 12 * 16.0 * 16 + 275 * 16.0) + 2 * (2 * n * n * 16); }

// data/llama_tiny: 2 layers, hidden 32, 4 query heads and 2 KV heads of 8, intermediate 48, vocab
// 661. Per token and layer q, k, v, o: 2 x 32 x (4 x 8 + 2 x 8 + 2 x 8 + 4 x 8) = 6144; the
// SwiGLU MLP 2 x 3 x 32 x 48 = 9216; the logits 2 x 32 x 661 = 42304 a token; attention 4 H d
// = 128 FLOPs for each of the n (n + 1) / 2 visible pairs, a layer.
double llama_tiny_flops(double n) { return n * (2 * (6144 + 9216) + 42304) + 2 * 128 * n * (n + 1) / 2; }

}  // namespace

TEST_CASE("cli bench forward: GPT-2 and Llama folders, FLOPs from their shapes, rates from the times") {
  struct Folder {
    std::string dir;
    const char* family;
    std::size_t layers, width, vocab;
    double (*flops)(double);
  };
  const Folder folders[] = {{ATTN_DATA_DIR "/gpt2_tiny", "GPT-2", 2, 16, 275, gpt2_tiny_flops},
                            {ATTN_DATA_DIR "/llama_tiny", "llama", 2, 32, 661, llama_tiny_flops}};
  for (const Folder& f : folders) {
    CAPTURE(f.dir);
    const auto r = run_cli("bench --mode forward --model " + f.dir + " --n 3,17 --threads 1,2 --repeat 3 --sgemm 64 --json");
    REQUIRE(r.code == 0);
    const Json out = Json::parse(r.out);
    CHECK(out["mode"] == "forward");
    CHECK(out["model"]["family"] == f.family);
    CHECK(out["model"]["layers"] == f.layers);
    CHECK(out["model"]["width"] == f.width);
    CHECK(out["model"]["vocab"] == f.vocab);
    REQUIRE(out["runs"].size() == 4);
    std::size_t i = 0;
    for (std::size_t n : {3, 17})
      for (std::size_t t : {1, 2}) {
        const Json& x = out["runs"][i++];
        CHECK(x["tokens"] == n);
        CHECK(x["threads"] == t);
        CHECK(x["flops"].get<double>() == doctest::Approx(f.flops(double(n))));
        // The medians and ratios from the rounds' times, as the help text defines them: the
        // median of 3 rounds is the middle one; pass/sgemm is the median of the rounds' ratios.
        const std::vector<double> pass = x["pass_ms_by_round"], sgemm = x["sgemm_ms_by_round"];
        REQUIRE(pass.size() == 3);
        REQUIRE(sgemm.size() == 3);
        const double pass_flops = f.flops(double(n)), sgemm_flops = 2.0 * 64 * 64 * 64;
        std::vector<double> sorted = pass, ratios;
        std::sort(sorted.begin(), sorted.end());
        CHECK(x["min_ms"] == sorted[0]);
        CHECK(x["median_ms"] == sorted[1]);
        CHECK(x["gflops"].get<double>() == doctest::Approx(pass_flops / (sorted[1] * 1e6)));
        sorted = sgemm;
        std::sort(sorted.begin(), sorted.end());
        CHECK(x["sgemm"]["n"] == 64);
        CHECK(x["sgemm"]["median_ms"] == sorted[1]);
        const double sgemm_gflops = sgemm_flops / (sorted[1] * 1e6);
        CHECK(x["sgemm"]["gflops"].get<double>() == doctest::Approx(sgemm_gflops));
        for (std::size_t k = 0; k < 3; ++k) ratios.push_back(pass_flops / pass[k] / (sgemm_flops / sgemm[k]));
        std::sort(ratios.begin(), ratios.end());
        CHECK(x["fraction_of_sgemm"].get<double>() == doctest::Approx(ratios[1]));
        CHECK(x["first_pass_ms"].get<double>() > 0);
        CHECK(x["first_pass_fraction_of_sgemm"].get<double>() ==
              doctest::Approx(pass_flops / (x["first_pass_ms"].get<double>() * 1e6) / sgemm_gflops));
        CHECK(x["first_pass_minor_faults"].get<long>() >= 0);
        CHECK(x["minor_faults_per_pass"].get<double>() >= 0);
      }
  }
}

TEST_CASE("cli bench forward: the table, without a yardstick, and the defaults") {
  const auto r = run_cli("bench --mode forward --model " ATTN_DATA_DIR "/gpt2_tiny --n 5 --sgemm 0 --repeat 1");
  REQUIRE(r.code == 0);
  CHECK(r.out.find("GPT-2, 2 layers, width 16, vocab 275") != std::string::npos);
  CHECK(r.out.find("1 rounds of one pass.") != std::string::npos);  // no sgemm named
  CHECK(std::regex_search(r.out, std::regex(R"(\n +5 +1 [|] +[0-9.]+ +[0-9]+ +- [|] +[0-9.]+ +[0-9.]+ +[0-9.]+ [|] +- +-\n)")));
  const auto json = run_cli("bench --mode forward --model " ATTN_DATA_DIR "/gpt2_tiny --repeat 1 --json");
  REQUIRE(json.code == 0);
  const Json out = Json::parse(json.out);
  REQUIRE(out["runs"].size() == 1);
  CHECK(out["runs"][0]["tokens"] == 32);  // 64 by default, capped at the folder's 32 positions
  CHECK(out["runs"][0]["threads"] == 1);
  CHECK(out["runs"][0]["sgemm"]["n"] == 2048);
  CHECK(out["model"]["heads"] == 2);
}

TEST_CASE("cli bench forward: refusals are one line, exit 2") {
  const std::string tiny = ATTN_DATA_DIR "/gpt2_tiny";
  test::check_input_error(run_cli("bench --mode forward --n 8"), "--model");
  test::check_input_error(run_cli("bench --model " + tiny + " --n 8"), "only with --mode forward");
  test::check_input_error(run_cli("bench --mode forward --model " + tiny + " --n 8,33"), "32 positions");
  test::check_input_error(run_cli("bench --mode forward --model " ATTN_DATA_DIR "/golden"), "config.json");
  test::check_input_error(run_cli("bench --mode forward --model " + tiny + " --n 8 --repeat 1000 --max-seconds 1"),
                          "time budget");
  test::check_input_error(run_cli("bench --mode forward --model " + tiny + " --n 8 --sgemm 16384 --max-memory 1G"),
                          "sgemm operands");
}
