// `attn-cli rank-collapse` end to end: docs/contracts.md's JSON contract, the text's verdicts, --model on
// a toy model folder, the picture, and refused input (exit 2, one line).
#include <doctest/doctest.h>

#include <filesystem>

#include "attn/engine/models/toy_model.hpp"
#include "attn/io/toy_model_file.hpp"
#include "support.hpp"

using namespace attn;
using namespace attn::test;

TEST_CASE("cli rank-collapse --json: docs/contracts.md's contract, r_l for l = 0..L in four settings") {
  const CliResult r = run_cli("rank-collapse --layers 6 --tokens 16 --d-model 32 --heads 4 --seed 5 --json");
  REQUIRE(r.code == 0);
  const Json j = Json::parse(r.out);
  CHECK(j["residual_definition"].get<std::string>().find("||X_l - 1 xbar_l^T||_F / ||X_l||_F") != std::string::npos);
  for (const char* s : {"attention_only", "skip", "mlp", "skip_mlp"}) {
    CAPTURE(s);
    REQUIRE(j["settings"][s].size() == 7);
    CHECK(j["settings"][s][0] == j["settings"]["attention_only"][0]);
    for (const Json& v : j["settings"][s]) CHECK((v.get<double>() >= 0 && v.get<double>() <= 1));
  }
  CHECK_FALSE(j.contains("model"));
  CHECK(j["pure_attention_doubly_exponential"] == true);
  CHECK(j["skip_keeps_rank"] == true);
  // --json is --format json; the same seed gives the same bytes
  CHECK(run_cli("rank-collapse --layers 6 --tokens 16 --d-model 32 --heads 4 --seed 5 --format json").out == r.out);
}

TEST_CASE("cli rank-collapse: the text table and its verdicts, csv") {
  const CliResult r = run_cli("rank-collapse --layers 6");
  REQUIRE(r.code == 0);
  CHECK(r.out.find("attention only") != std::string::npos);
  CHECK(r.out.find("Doubly exponential (>= 3 layers, growth > 1.5, every layer's fall > 1.5x the last; exponential: 1x): yes") !=
        std::string::npos);
  CHECK(r.out.find("Skips keep the rank (every r_l >= 0.001): yes") != std::string::npos);
  CHECK(r.out.find("nan") == std::string::npos);
  const CliResult csv = run_cli("rank-collapse --layers 3 --format csv");
  CHECK(csv.out.rfind("layer,attention only,skip,mlp,skip + mlp\n", 0) == 0);
  CHECK(line_count(csv.out) == 5);
}

TEST_CASE("cli rank-collapse --model: the toy model's residual stream") {
  TempDir dir;
  write_toy_model(dir / "m", init_toy_model({12, 16, 2, 3, 10}, 8), {});
  const CliResult r = run_cli("rank-collapse --layers 4 --tokens 32 --json --model '" + (dir / "m") + "'");
  REQUIRE(r.code == 0);
  const Json j = Json::parse(r.out);
  REQUIRE(j["model"].size() == 4);  // the model's 3 layers, whatever --layers says
  CHECK(j["model_info"]["tokens"] == 10);  // capped at its context
  CHECK(j["model_info"]["token_ids"].size() == 10);
  CHECK(j["settings"]["skip"].size() == 5);
  check_input_error(run_cli("rank-collapse --model '" + (dir / "absent") + "'"), "absent");
}

TEST_CASE("cli rank-collapse --plots: one picture, written as a whole") {
  TempDir dir;
  const CliResult r = run_cli("rank-collapse --layers 5 --plots '" + (dir / "p") + "'");
  REQUIRE(r.code == 0);
  CHECK(std::filesystem::file_size(dir / "p/rank_collapse.png") > 10000);
}

TEST_CASE("cli rank-collapse: refused sizes and flags exit 2 with one line") {
  check_input_error(run_cli("rank-collapse --layers 0"), "--layers");
  check_input_error(run_cli("rank-collapse --tokens 1"), "--tokens");
  check_input_error(run_cli("rank-collapse --d-model 64 --heads 5"), "multiple");
  check_input_error(run_cli("rank-collapse --tokens 100000000"), "--tokens");
  check_input_error(run_cli("rank-collapse --layers 256 --tokens 4096 --d-model 2048 --heads 16"), "rank-collapse");
  check_input_error(run_cli("rank-collapse --layers abc"), "layers");
}
