// `attn-cli train` and `attn-cli forward` end to end: refused options and model folders (exit 2,
// one line), byte-identical reruns, --resume equal to an uninterrupted run, forward --json on a
// hand-made model against the numbers worked out by hand.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

#include "attn/io/json_io.hpp"
#include "attn/io/toy_model_file.hpp"
#include "support.hpp"

using namespace attn;
using namespace attn::test;
namespace fs = std::filesystem;

namespace {

const std::string kQuick = "--steps 12 --batch 4 --vocab 8 --d-model 16 --heads 2 --context 8 --log-every 4 "
                           "--threads 1 --no-timing";

std::string scratch_dir(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("attn-cli-train-" + std::to_string(::getpid()) + "-" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir.string();
}

// vocab 2, D 2, one head: embed = unembed = W_v = W_o = I, W_q = W_k = 0, pos = 0. Tokens 0, 1:
// attention [[1, 0], [0.5, 0.5]]; logits [[2, 0], [0.5, 1.5]] (test_train.cpp works it out).
void write_hand_model(const std::string& dir) {
  ToyModel m = zero_toy_model({2, 2, 1, 1, 2});
  m.embed = m.unembed = m.layers[0].w_v = m.layers[0].w_o = xt::eye<float>(2);
  write_toy_model(dir, m, {});
}

}  // namespace

TEST_CASE("cli train: options out of range are refused with one line") {
  check_input_error(run_cli("train --steps 0"), "steps");
  check_input_error(run_cli("train --lr nan"), "lr");
  check_input_error(run_cli("train --lr 0"), "lr");
  check_input_error(run_cli("train --context 7"), "context");
  check_input_error(run_cli("train --heads 3"), "d_model");
  check_input_error(run_cli("train --task copy"), "task");
  check_input_error(run_cli("train --backend cuda"), "backend");
  check_input_error(run_cli("train --batch 0"), "batch");
  check_input_error(run_cli("train --resume /nonexistent-run"), "nonexistent-run");
  // 32 held-out sequences x 4 heads x 8192^2 float64 scores would be tens of GiB: refused up front.
  check_input_error(run_cli("train --context 8192 --steps 1 --batch 1"), "lower --context");
  check_input_error(run_cli("train --resume x --lr 0.01"), "--lr");
}

TEST_CASE("cli train: a rerun gives the same bytes, --resume equals the uninterrupted run") {
  const std::string dir = scratch_dir("runs");
  REQUIRE(run_cli("train " + kQuick + " --out a", "", dir).code == 0);
  const CliResult b = run_cli("train " + kQuick + " --out b", "", dir);
  REQUIRE(b.code == 0);
  for (const char* file : {"train.json", "model/model.safetensors", "model/config.json", "curves.png",
                           "heads_after.png", "checkpoint.safetensors"})
    CHECK(read_text(dir + "/a/" + file) == read_text(dir + "/b/" + file));
  CHECK(b.out.find("layer") != std::string::npos);  // the per-head table
  const Json j = read_json(dir + "/a/train.json");
  CHECK(j["steps"].size() == 4);  // 0, 4, 8, 12
  CHECK(j["final"].size() == 4);  // 2 layers x 2 heads
  CHECK(j["uniform_loss"].get<double>() == doctest::Approx(std::log(8.0)));

  // 6 steps, then continued to 12 (6 is not a logging step: its point is dropped and redone).
  REQUIRE(run_cli("train --steps 6" + kQuick.substr(kQuick.find(" --batch")) + " --out c", "", dir).code == 0);
  const CliResult resumed = run_cli("train --resume c --steps 12 --threads 1 --no-timing", "", dir);
  CAPTURE(resumed.err);
  REQUIRE(resumed.code == 0);
  CHECK(read_text(dir + "/c/train.json") == read_text(dir + "/a/train.json"));
  CHECK(read_text(dir + "/c/model/model.safetensors") == read_text(dir + "/a/model/model.safetensors"));
  check_input_error(run_cli("train --resume c --steps 12 --threads 1", "", dir), "steps");
  fs::remove_all(dir);
}

TEST_CASE("cli forward: a hand-made model, and model folders that are wrong") {
  const std::string dir = scratch_dir("forward");
  write_hand_model(dir + "/hand");
  const CliResult r = run_cli("forward --model hand --tokens 0,1 --json", "", dir);
  REQUIRE(r.code == 0);
  const Json j = Json::parse(r.out);
  CHECK(j["attention"] == Json::parse("[[[[1.0, 0.0], [0.5, 0.5]]]]"));
  CHECK(j["logits"] == Json::parse("[[2.0, 0.0], [0.5, 1.5]]"));
  CHECK(j["tokens"][1]["id"] == 1);
  const CliResult text = run_cli("forward --model hand 'cat mat' --out pics", "", dir);
  CHECK(text.code == 0);
  CHECK(fs::exists(dir + "/pics/heads.png"));
  // Query 1 splits 0.5 / 0.5 over its two keys: a previous-token score of 0.5, over the fixed
  // 0.4, is exactly what a head spreading its weight evenly gets at 2 tokens. Its bar is
  // 0.5 + 0.25 x (1 - 0.5) = 0.625; the head is broad (entropy ln 2 / ln 2 = 1).
  const Json summary = Json::parse(read_text(dir + "/pics/head_summary.json"));
  CHECK(summary["heads"][0]["previous_token"] == 0.5);
  CHECK(summary["bars"]["previous_token"]["bar"].get<double>() == doctest::Approx(0.625));
  CHECK(summary["heads"][0]["kind"] == "broad");
  // One token: head_summary.json is written as --help says, every head untested.
  REQUIRE(run_cli("forward --model hand --tokens 1 --out one", "", dir).code == 0);
  const Json one = Json::parse(read_text(dir + "/one/head_summary.json"));
  CHECK(one["heads"][0]["kind"] == "untested");
  CHECK(one["heads"][0]["previous_token"].is_null());

  check_input_error(run_cli("forward --model hand --tokens 0,2", "", dir), "out of range");
  check_input_error(run_cli("forward --model hand --tokens 0,1,0", "", dir), "context");
  check_input_error(run_cli("forward --model hand 'a b c'", "", dir), "vocabulary");
  check_input_error(run_cli("forward --model hand", "", dir), "--tokens");
  check_input_error(run_cli("forward --model nowhere --tokens 0", "", dir), "nowhere");
  const std::string bytes = read_text(dir + "/hand/model.safetensors");
  std::ofstream(dir + "/hand/model.safetensors", std::ios::binary) << bytes.substr(0, bytes.size() - 3);
  check_input_error(run_cli("forward --model hand --tokens 0", "", dir), "model.safetensors");
  std::string lying = bytes;
  lying[0] = char(0x7f);  // a header length far past the end of the file
  std::ofstream(dir + "/hand/model.safetensors", std::ios::binary) << lying;
  check_input_error(run_cli("forward --model hand --tokens 0", "", dir), "model.safetensors");
  fs::remove(dir + "/hand/model.safetensors");
  check_input_error(run_cli("forward --model hand --tokens 0", "", dir), "model.safetensors");
  fs::remove_all(dir);
}

TEST_CASE("cli demo --model: a hand-made model's heads are the demo's pictures and numbers") {
  // The hand-made model: on 'cat mat' its one head gives [[1, 0], [0.5, 0.5]].
  const std::string dir = scratch_dir("demo-model");
  write_hand_model(dir + "/hand");
  const CliResult r = run_cli("demo 'cat mat' --model hand --out d --no-color", "", dir);
  REQUIRE(r.code == 0);
  // Nothing can be called an induction head here (the sentence twice does not fit the model's 2
  // positions): the terminal says candidate, as the picture does.
  CHECK(r.out.find("<- the best induction candidate") != std::string::npos);
  const Json j = Json::parse(read_text(dir + "/d/manifest.json"));
  const Json expected = Json::parse("[[1.0, 0.0], [0.5, 0.5]]");
  CHECK(j["results"]["model"]["attention"] == Json::array({Json::array({expected})}));
  CHECK(j["results"]["model"]["ids"] == Json::parse("[0, 1]"));
  CHECK(j["results"]["single_head"]["weights"] == expected);
  CHECK(j["results"]["causal"]["weights"] == expected);
  CHECK(j["results"]["single_head"]["induction_score"].is_null());  // the sentence twice does not fit
  CHECK(j["results"]["causal"]["prev_token_score"] == 0.5);
  CHECK(j["results"]["causal"]["kind"] == j["results"]["model"]["head_summary"]["heads"][0]["kind"]);
  CHECK(j["config"]["model"]["layers"] == 1);
  CHECK(j["results"]["decode"]["max_abs_diff_output"].get<double>() < 1e-6);
  CHECK(j["results"]["flash"]["teaching"]["causal"]["max_abs_diff_output"].get<double>() < 1e-12);
  for (const char* png : {"attention.png", "attention_causal.png", "heads.png", "flash_tiles.png"})
    CHECK(fs::exists(dir + "/d/" + png));
  // A head is named for a pattern only when heads.png's rule names it so: 'cat mat' twice is 4
  // tokens, past the model's 2 positions, and a previous-token score of 0.5 at 2 tokens is what
  // an even split gives (the bar is 0.625).
  CHECK(j["artifacts"][0]["title"].get<std::string>().rfind("Candidate induction head (not measured", 0) == 0);
  CHECK(j["artifacts"][1]["title"].get<std::string>().rfind("Best previous-token candidate, not formed yet (layer 0", 0) == 0);
  // One token has no token before it: not a head "not formed yet", a pattern that cannot be tested.
  REQUIRE(run_cli("demo 'cat' --model hand --out one", "", dir).code == 0);
  const Json one = Json::parse(read_text(dir + "/one/manifest.json"));
  CHECK(one["artifacts"][1]["title"].get<std::string>().rfind("Candidate previous-token head (one token", 0) == 0);

  check_input_error(run_cli("demo 'a b a' --model hand --out e", "", dir), "context");
  check_input_error(run_cli("demo --model hand --rope half --out e", "", dir), "--rope");
  check_input_error(run_cli("demo 'a b' --model hand --heads 2 --out e", "", dir), "--heads");
  check_input_error(run_cli("demo --model nowhere --out e", "", dir), "nowhere");
  CHECK_FALSE(fs::exists(dir + "/e"));
  fs::remove_all(dir);
}

TEST_CASE("cli bench --mode train: steps per second of the default model, FLOPs worked out by hand") {
  const CliResult r = run_cli("bench --mode train --steps 3 --repeat 2 --threads 1 --json");
  REQUIRE(r.code == 0);
  const Json j = Json::parse(r.out);
  REQUIRE(j["runs"].size() == 1);
  const Json& run = j["runs"][0];
  CHECK(run["mode"] == "train");
  CHECK(run["backend"] == "flash");
  CHECK(run["steps"] == 3);
  CHECK(run["batch"] == 64);
  CHECK(run["model"]["layers"] == 2);
  // 3 x matmuls 2 B L (layers 4 D^2 + V D) + 3.5 x attention layers 4 B H L^2 d / 2, with
  // B 64, L 32, D 64, V 64, H 4, d 16, 2 layers: 3 x 150994944 + 3.5 x 16777216.
  CHECK(run["flops_per_step"].get<double>() == 511705088.0);
  const double min_ms = run["min_ms_per_step"];
  CHECK(min_ms > 0);
  CHECK(min_ms <= run["median_ms_per_step"].get<double>());
  CHECK(run["steps_per_s"].get<double>() == doctest::Approx(1e3 / min_ms));
  CHECK(run["gflops"].get<double>() == doctest::Approx(511705088.0 / (min_ms * 1e6)));
  check_input_error(run_cli("bench --mode train --steps 3 --backend blas"), "flash or naive");
  check_input_error(run_cli("bench --mode train --steps 0"), "--steps");
}
