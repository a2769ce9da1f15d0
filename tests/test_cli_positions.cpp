// End-to-end: mha with rope / decode_from, and the rope, positional and generate subcommands.
#include <doctest/doctest.h>

#include <cmath>

#include "picture_support.hpp"
#include "support.hpp"

using namespace attn;
using namespace attn::test;

namespace {

Json run_json(const std::string& args, const std::string& input = "") {
  const CliResult r = run_cli(args, input);
  CAPTURE(args);
  CAPTURE(r.err);
  REQUIRE(r.code == 0);
  return Json::parse(r.out);
}

}  // namespace

TEST_CASE("cli positions: mha decode_from reports kv_cache_len and matches the golden one-shot reference") {
  for (const char* name : {"mha_decode_gqa_rope", "mha_decode_mqa_p0", "mha_decode_last"}) {
    CAPTURE(name);
    const Json g = load_golden(name);
    const Json out = run_json("mha --input -", g["input"].dump());
    CHECK(out["kv_cache_len"] == g["expected"]["kv_cache_len"]);
    for (const char* field : {"output", "weights", "lse"}) {
      CAPTURE(field);
      CHECK(max_abs_diff(flat(out[field]), flat(g["expected"][field])) < 1e-6);
    }
  }
}

TEST_CASE("cli positions: mha with decode_from P equals the same input without it, for several P") {
  Json in = load_golden("mha_rope_gqa_causal")["input"];  // causal, GQA, interleaved RoPE at 100..106
  const Json one_shot = run_json("mha --input -", in.dump());
  CHECK_FALSE(one_shot.contains("kv_cache_len"));
  const std::size_t L = in["query"].size();
  for (std::size_t P : {std::size_t{0}, std::size_t{1}, std::size_t{3}, L - 1, L}) {
    CAPTURE(P);
    in["decode_from"] = P;
    const Json out = run_json("mha --input -", in.dump());
    CHECK(out["kv_cache_len"] == L);
    CHECK(max_abs_diff(flat(out["output"]), flat(one_shot["output"])) < 1e-6);
    CHECK(max_abs_diff(flat(out["weights"]), flat(one_shot["weights"])) < 1e-6);
  }
}

TEST_CASE("cli positions: bad rope and decode_from fields exit 2 with one line naming the field") {
  const Json base = Json::parse(R"({"query":[[1,0,0,1],[0,1,1,0]],"num_heads":1,"causal":true,
      "w_q":[[1,0,0,0],[0,1,0,0],[0,0,1,0],[0,0,0,1]],"w_k":[[1,0,0,0],[0,1,0,0],[0,0,1,0],[0,0,0,1]],
      "w_v":[[1,0,0,0],[0,1,0,0],[0,0,1,0],[0,0,0,1]],"w_o":[[1,0,0,0],[0,1,0,0],[0,0,1,0],[0,0,0,1]]})");
  auto with = [&](const char* field, const Json& value) {
    Json in = base;
    in[field] = value;
    return run_cli("mha --input -", in.dump());
  };
  check_input_error(with("rope", {{"style", "sideways"}}), "rope.style: expected \"half\"");
  check_input_error(with("rope", {{"position_ids", {0, 1, 2}}}), "rope.position_ids: expected 2 integers");
  check_input_error(with("rope", {{"position_ids", {0, -1}}}), "rope.position_ids: expected a whole number in 0..1000000000000, got -1");
  check_input_error(with("rope", {{"position_ids", {0, 1.5}}}), "rope.position_ids: expected a whole number");
  check_input_error(with("rope", {{"base", -3}}), "rope.base");
  check_input_error(with("rope", 5), "rope: expected an object");
  check_input_error(with("decode_from", 9), "decode_from: expected 0 <= P <= Lq = 2, got 9");
  check_input_error(with("decode_from", -1), "decode_from: expected a whole number >= 0, got -1");
  Json cross = base;
  cross["key"] = cross["query"];
  cross["value"] = cross["query"];
  cross["decode_from"] = 1;
  check_input_error(run_cli("mha --input -", cross.dump()), "decode_from: KV-cache decoding is self-attention only");
  // A typo inside rope is reported, not silently ignored.
  const CliResult typo = with("rope", {{"stlye", "half"}});
  CHECK(typo.code == 0);
  CHECK(typo.err.find("rope.stlye") != std::string::npos);
}

TEST_CASE("cli positions: rope --json shows constant diagonals, the frequencies and the permutation") {
  const Json r = run_json("rope --json --head-dim 8 --positions 6 --base 100");
  // theta_i = 100^(-2i/8), computed here from the formula.
  for (std::size_t i = 0; i < 4; ++i) {
    CHECK(r["frequencies"][i]["theta"].get<double>() == doctest::Approx(std::pow(100.0, -2.0 * i / 8)).epsilon(1e-12));
  }
  CHECK(r["frequencies"][1]["half_dims"] == Json::parse("[1, 5]"));
  CHECK(r["frequencies"][1]["interleaved_dims"] == Json::parse("[2, 3]"));
  const Json& m = r["scores"]["matrix"];
  CHECK(m[4][1].get<double>() == doctest::Approx(m[3][0].get<double>()).epsilon(1e-12));
  CHECK(m[1][4].get<double>() == doctest::Approx(m[2][5].get<double>()).epsilon(1e-12));
  CHECK(std::fabs(m[1][0].get<double>() - m[0][0].get<double>()) > 1e-3);
  CHECK(r["scores"]["max_spread"].get<double>() < 1e-12);
  CHECK(r["styles"]["permutation"] == Json::parse("[0, 2, 4, 6, 1, 3, 5, 7]"));
  CHECK(r["styles"]["permutation_max_diff"].get<double>() < 1e-12);
  for (const Json& p : r["rotation"]["points"]) {  // pair 0 turns 1 rad per token
    CHECK(p["x"].get<double>() == doctest::Approx(std::cos(p["position"].get<double>())).epsilon(1e-12));
  }
  const CliResult text = run_cli("rope");
  CHECK(text.code == 0);
  CHECK(text.out.find("the score depends on i - j only") != std::string::npos);
  CHECK(text.out.find("perm = (0 2 4 6 1 3 5 7)") != std::string::npos);
}

TEST_CASE("cli positions: positional --json gives the sinusoid and the ALiBi slopes and biases") {
  const Json r = run_json("positional --json --length 5 --d-model 4 --heads 8");
  const Json& pe = r["sinusoidal"]["pe"];
  CHECK(pe.size() == 5);
  CHECK(pe[3][0].get<double>() == doctest::Approx(std::sin(3.0)).epsilon(1e-7));
  CHECK(pe[3][3].get<double>() == doctest::Approx(std::cos(0.03)).epsilon(1e-7));
  CHECK(r["sinusoidal"]["embedding_scale"].get<double>() == 2.0);
  for (int h = 0; h < 8; ++h) CHECK(r["alibi"]["slopes"][h].get<double>() == std::ldexp(1.0, -(h + 1)));
  CHECK(r["alibi"]["bias"][2][4][1].get<double>() == -3.0 / 8);
  const Json six = run_json("positional --json --heads 6");
  CHECK(six["alibi"]["slopes"] == Json::parse("[0.25, 0.0625, 0.015625, 0.00390625, 0.5, 0.125]"));
}

TEST_CASE("cli positions: generate --json decodes step by step and matches full recomputation") {
  const Json r = run_json("generate 'The cat sat on the mat' --prefill 2 --heads 4 --kv-heads 2 --rope half --json");
  CHECK(r["tokens"].size() == 6);
  const Json& steps = r["steps"];
  REQUIRE(steps.size() == 5);  // the prefill of 2, then 4 single tokens
  CHECK(steps[0]["kind"] == "prefill");
  CHECK(steps[0]["count"] == 2);
  for (std::size_t s = 0; s < steps.size(); ++s) {
    const std::size_t len = s + 2, d = 16 / 4;
    CHECK(steps[s]["cache_len"] == len);
    CHECK(steps[s]["cache_bytes"] == 2 * 2 * len * d * 8);
    CHECK(steps[s]["max_abs_diff_vs_full"].get<double>() < 1e-6);
    for (const Json& head : steps[s]["weights"]) {
      const std::vector<double> row = head.back().get<std::vector<double>>();
      double sum = 0;
      for (std::size_t j = 0; j < row.size(); ++j) {
        sum += row[j];
        if (j >= len) CHECK(row[j] == 0.0);  // keys not generated yet
      }
      CHECK(sum == doctest::Approx(1.0).epsilon(1e-5));
    }
  }
  CHECK(r["kv_cache_len"] == 6);
  const Json w = run_json("generate 'a b c d e f' --prefill 0 --window 2 --alibi --json");
  for (const Json& s : w["steps"]) CHECK(s["cache_len"].get<int>() <= 2);
  CHECK(w["kv_cache_len"] == 2);
  CHECK(w["max_abs_diff_vs_full"].get<double>() < 1e-6);
  const CliResult text = run_cli("generate");
  CHECK(text.code == 0);
  CHECK(text.out.find("max |decoded - full recomputation|") != std::string::npos);
  // The cache's saving in FLOPs, and the window's evictions named as they happen.
  const CliResult win = run_cli("generate 'a b c d e f' --prefill 0 --window 2");
  CHECK(win.code == 0);
  CHECK(win.out.find("step 2: 'c' -> cache 2 tokens, ") != std::string::npos);
  CHECK(win.out.find("bytes (evicted 'a': outside the window)") != std::string::npos);
  CHECK(win.out.find("evicted 'b'") != std::string::npos);
  CHECK(win.out.find("FLOPs over the whole run") != std::string::npos);
  CHECK(win.out.find("the window caps the cache at 2 tokens, so its attention grew from") != std::string::npos);
  CHECK(w["flops"]["recompute"]["total"].get<double>() > w["flops"]["with_cache"]["total"].get<double>());
}

TEST_CASE("cli positions: bad options of rope, positional and generate exit 2 with one error line") {
  check_input_error(run_cli("generate 'a b c' --prefill 4"), "--prefill: expected 0 <= P <= 3");
  check_input_error(run_cli("generate --rope sideways"), "--rope: expected \"half\"");
  check_input_error(run_cli("generate --heads 3"), "num_heads: 3 does not divide");
  check_input_error(run_cli("generate --window 0"), "--window");
  check_input_error(run_cli("rope --pair 9"), "--pair: expected 0 <= pair < d/2 = 4, got 9");
  check_input_error(run_cli("rope --head-dim 5"), "--head-dim: expected an even integer");
  check_input_error(run_cli("rope --style sideways"), "--style");
  check_input_error(run_cli("positional --heads 0"), "--heads");
}

TEST_CASE("cli positions: demo shows permutation equivariance and --positions changes the pictures' rows") {
  const TempDir tmp;
  const std::string dir = tmp.path.string();
  const CliResult none = run_cli("demo 'the cat saw the dog' --verbose --out " + dir + "/none");
  REQUIRE(none.code == 0);
  // Without --verbose, one line says the same.
  const CliResult short_run = run_cli("demo 'the cat saw the dog' --out " + dir + "/short");
  CHECK(short_run.out.find("Positions: without them 'the' [0] and [3] get identical rows") != std::string::npos);
  CHECK(none.out.find("'the' [0] and [3] compared") != std::string::npos);
  CHECK(none.out.find("none       identical rows") != std::string::npos);
  CHECK(none.out.find("sinusoidal rows differ by up to") != std::string::npos);
  CHECK(none.out.find("rope       rows differ by up to") != std::string::npos);
  const CliResult pe = run_cli("demo 'the cat saw the dog' --positions sinusoidal --out " + dir + "/pe");
  REQUIRE(pe.code == 0);
  auto rows_differ = [](const Json& m) {
    const Json& w = m["results"]["single_head"]["weights"];
    double d = 0;
    for (std::size_t j = 0; j < 5; ++j) d = std::max(d, std::fabs(w[0][j].get<double>() - w[3][j].get<double>()));
    return d;
  };
  const Json mn = Json::parse(read_text(dir + "/none/manifest.json"));
  const Json mp = Json::parse(read_text(dir + "/pe/manifest.json"));
  CHECK(rows_differ(mn) <= 1e-6);
  CHECK(rows_differ(mp) > 1e-3);
  CHECK(mn["config"]["positions"] == "none");
  CHECK(mp["config"]["positions"] == "sinusoidal");
  CHECK(mp["results"]["positions"]["used"] == "sinusoidal");
  const CliResult rope = run_cli("demo 'the cat saw the dog' --positions rope --out " + dir + "/rope");
  REQUIRE(rope.code == 0);
  CHECK(Json::parse(read_text(dir + "/rope/manifest.json"))["config"]["rope"] == "half");
  check_input_error(run_cli("demo --positions learned --out " + dir + "/x"), "--positions: expected \"none\"");
  check_input_error(run_cli("demo --positions none --rope half --out " + dir + "/x"), "--positions none contradicts");
}
