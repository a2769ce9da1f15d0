// End-to-end tests of the backward pass in the tensor contract: `grad_output` in attend and mha
// adds the gradients, in the shapes of the inputs; bad shapes are one error line and exit 2.
#include <doctest/doctest.h>

#include "attn/engine/attention/attention.hpp"
#include "support.hpp"

using namespace attn;
using namespace attn::test;

namespace {

Shape json_shape(const Json& j) {
  Shape s;
  for (const Json* x = &j; x->is_array(); x = &(*x)[0]) s.push_back(x->size());
  return s;
}

Json run_ok(const std::string& args, const Json& input) {
  const CliResult r = run_cli(args, input.dump());
  CAPTURE(r.err);
  REQUIRE(r.code == 0);
  return Json::parse(r.out);
}

const Json kAttend = Json::parse(R"({
  "q": [[1, 0], [0, 1], [1, 1]], "k": [[1, 0], [0, 1], [0.5, 0.5], [1, -1]],
  "v": [[1, 2, 3], [4, 5, 6], [7, 8, 9], [0, 1, 0]], "causal": true,
  "grad_output": [[1, 0, 0], [0, 1, 0], [0, 0, 1]]})");

Json mha_input(bool cross) {
  Json in = Json::parse(R"({
    "query": [[1, 0, 0, 1], [0, 1, 1, 0], [1, 1, 0, 0]], "num_heads": 2, "num_kv_heads": 1,
    "w_q": [[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]],
    "w_k": [[0.5, 0.5, 0, 0], [0, 0, 0.5, 0.5]], "w_v": [[1, 0, 0, 0], [0, 0, 0, 1]],
    "w_o": [[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]],
    "b_k": [0.1, -0.1], "b_o": [0, 0, 0, 0.1], "rope": {"style": "interleaved"},
    "grad_output": [[1, 0, 0, 0], [0, 1, 0, -1], [0.5, 0.5, 0.5, 0.5]]})");
  if (cross) {
    in["key"] = Json::parse("[[1, 2, 0, 0], [0, 0, 1, 1], [1, 0, 1, 0], [0, 1, 0, 1], [2, 0, 0, 1]]");
    in["value"] = Json::parse("[[0, 1, 0, 1], [1, 0, 1, 0], [1, 1, 0, 0], [0, 0, 1, 1], [1, 0, 0, 1]]");
  }
  return in;
}

}  // namespace

TEST_CASE("cli backward: attend adds grad_q, grad_k, grad_v in the rank it was asked (2 in, 2 out)") {
  for (const char* backend : {"naive", "flash"}) {
    CAPTURE(backend);
    Json in = kAttend;
    in["backend"] = backend;
    const Json out = run_ok("attend --input -", in);
    CHECK(json_shape(out["grad_q"]) == Shape{3, 2});
    CHECK(json_shape(out["grad_k"]) == Shape{4, 2});
    CHECK(json_shape(out["grad_v"]) == Shape{4, 3});
    // The same numbers as the library's door, read back exactly (JSON holds each float32's value).
    const auto t = [](const Json& j) {  // a [L, x] JSON matrix as a [1, L, x] tensor
      const Shape s = json_shape(j);
      Tensor3 x = Tensor3::from_shape({std::size_t(1), s[0], s[1]});
      const std::vector<double> f = flat(j);
      std::copy(f.begin(), f.end(), x.begin());
      return x;
    };
    SdpaOptions so;
    so.causal = true;
    BackendOptions bo;
    bo.backend = parse_backend(backend);
    const SdpaGradients g = attention_backward(t(in["q"]), t(in["k"]), t(in["v"]), nullptr, t(in["grad_output"]), so, bo);
    CHECK(flat(out["grad_q"]) == flat_tensor(g.grad_q));
    CHECK(flat(out["grad_k"]) == flat_tensor(g.grad_k));
    CHECK(flat(out["grad_v"]) == flat_tensor(g.grad_v));
  }
}

TEST_CASE("cli backward: attend with heads and GQA gives grad_k, grad_v the key/value heads' shape") {
  const Json in = Json::parse(R"({
    "q": [[[1, 0]], [[0, 1]], [[1, 1]], [[0, 2]]], "k": [[[1, 0], [0, 1]], [[1, 1], [0, 1]]],
    "v": [[[1], [2]], [[3], [4]]], "grad_output": [[[1]], [[1]], [[-1]], [[2]]], "backend": "flash"})");
  const Json out = run_ok("attend --input - --no-weights", in);
  CHECK(json_shape(out["grad_q"]) == Shape{4, 1, 2});
  CHECK(json_shape(out["grad_k"]) == Shape{2, 2, 2});
  CHECK(json_shape(out["grad_v"]) == Shape{2, 2, 1});
  // One query row per head, two keys: dv = P^T dO summed over the 2 heads of each group.
  const std::vector<double> dv = flat(out["grad_v"]);
  CHECK(dv[0] + dv[1] == doctest::Approx(2.0));   // group 0: dO = 1 and 1, weights sum to 1
  CHECK(dv[2] + dv[3] == doctest::Approx(1.0));   // group 1: dO = -1 and 2
}

TEST_CASE("cli backward: mha adds the gradients of the input, weights and given biases") {
  const Json self = run_ok("mha --input - --no-weights", mha_input(false));
  CHECK(json_shape(self["grad_query"]) == Shape{3, 4});
  CHECK(json_shape(self["grad_w_q"]) == Shape{4, 4});
  CHECK(json_shape(self["grad_w_k"]) == Shape{2, 4});
  CHECK(json_shape(self["grad_w_v"]) == Shape{2, 4});
  CHECK(json_shape(self["grad_w_o"]) == Shape{4, 4});
  CHECK(json_shape(self["grad_b_k"]) == Shape{2});
  CHECK(json_shape(self["grad_b_o"]) == Shape{4});
  CHECK_FALSE(self.contains("grad_b_q"));  // no bias given, no gradient reported
  CHECK_FALSE(self.contains("grad_key"));  // self-attention: grad_query is the whole gradient
  // b_o's gradient is the column sum of grad_output: a check anyone can do by hand.
  CHECK(flat(self["grad_b_o"]) == std::vector<double>{1.5, 1.5, 0.5, -0.5});

  Json in = mha_input(true);
  in["backend"] = "flash";
  in["block_size"] = 2;
  const Json cross = run_ok("mha --input - --no-weights", in);
  CHECK(json_shape(cross["grad_query"]) == Shape{3, 4});
  CHECK(json_shape(cross["grad_key"]) == Shape{5, 4});
  CHECK(json_shape(cross["grad_value"]) == Shape{5, 4});
  in["backend"] = "naive";
  in.erase("block_size");
  const Json naive = run_ok("mha --input - --no-weights", in);
  CHECK(max_abs_diff(flat(cross["grad_key"]), flat(naive["grad_key"])) < 1e-6);
  CHECK(max_abs_diff(flat(cross["grad_w_q"]), flat(naive["grad_w_q"])) < 1e-6);
}

TEST_CASE("cli backward: a wrong grad_output is exit 2 with one error line naming both shapes") {
  Json in = kAttend;
  in["grad_output"] = Json::parse("[[1, 0], [0, 1], [1, 1]]");
  check_input_error(run_cli("attend --input -", in.dump()), "error: grad_output: expected shape [3, 3], got [3, 2]");
  in["grad_output"] = Json::parse("[[[1, 0, 0], [0, 1, 0], [0, 0, 1]]]");  // rank 3 for rank-2 q
  check_input_error(run_cli("attend --input -", in.dump()), "grad_output: expected shape [3, 3], got [1, 3, 3]");
  in["grad_output"] = "x";
  check_input_error(run_cli("attend --input -", in.dump()), "grad_output: expected a nested array");

  Json m = mha_input(false);
  m["grad_output"] = Json::parse("[[1, 0, 0, 0], [0, 1, 0, -1]]");
  check_input_error(run_cli("mha --input -", m.dump()), "error: grad_output: expected shape [3, 4], got [2, 4]");
  m = mha_input(false);
  m["causal"] = true;
  m["decode_from"] = 1;
  check_input_error(run_cli("mha --input -", m.dump()), "grad_output: not supported with decode_from");
  m = mha_input(false);
  m["dropout"] = 0.1;
  check_input_error(run_cli("mha --input -", m.dump()), "grad_output: the backward pass does not support dropout");
}

TEST_CASE("cli backward: the --help examples run and answer with gradients") {
  const std::string data = ATTN_DATA_DIR;
  const CliResult a = run_cli("attend --input '" + data + "/examples/attend_backward.json' --no-weights");
  REQUIRE(a.code == 0);
  const Json ja = Json::parse(a.out);
  CHECK(json_shape(ja["grad_q"]) == Shape{5, 4});
  CHECK(json_shape(ja["grad_v"]) == Shape{5, 2});
  CHECK(run_cli("attend --help").out.find("attend_backward.json") != std::string::npos);
  const CliResult m = run_cli("mha --input '" + data + "/examples/mha_backward.json' --no-weights");
  REQUIRE(m.code == 0);
  const Json jm = Json::parse(m.out);
  CHECK(json_shape(jm["grad_query"]) == Shape{3, 4});
  CHECK(jm.contains("grad_b_q"));
  CHECK(run_cli("mha --help").out.find("mha_backward.json") != std::string::npos);
}

TEST_CASE("cli backward: bench --backward times flash against naive with FlashAttention's 2.5x rule") {
  const CliResult r = run_cli("bench --backward --n 40,70 --heads 2 --head-dim 8 --causal --repeat 1 --block-q 16 --block-k 16 --json");
  CAPTURE(r.err);
  REQUIRE(r.code == 0);
  const Json out = Json::parse(r.out);
  CHECK(out["flops_convention"].get<std::string>().find("2.5 x") == 0);
  REQUIRE(out["runs"].size() == 4);
  for (const Json& run : out["runs"]) {
    CHECK(run["pass"] == "backward");
    CHECK(run["gflops"].get<double>() > 0);
    CHECK(run["max_abs_err_vs_naive"].get<double>() < 1e-5);  // float64 inside, float32 out
  }
  check_input_error(run_cli("bench --backward --backend blas --n 8 --repeat 1"),
                    "--backward: backend blas has no backward pass");
}
