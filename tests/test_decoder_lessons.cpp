// The attention-sink and grouped-query lessons (lessons/models/decoder_lessons.hpp): numbers by
// hand on attention built by hand, and the sliding-window experiment's limits on a real folder.
#include <doctest/doctest.h>

#include <cmath>
#include <numbers>

#include "attn/engine/core/error.hpp"
#include "attn/io/decoder_model_file.hpp"
#include "attn/io/number_format.hpp"
#include "attn/lessons/models/decoder_lessons.hpp"
#include "picture_support.hpp"
#include "support.hpp"

using namespace attn;

TEST_CASE("decoder lessons: grouped-query divergences and cache bytes, by hand") {
  DecoderConfig c;
  c.heads = 4, c.kv_heads = 2, c.layers = 1, c.head_dim = 8;
  DecoderForward f;
  // 2 tokens. Query 0 sees only key 0 (weight 1 in every head). Query 1: heads 0 and 1 (one
  // group) put all on key 0 and all on key 1: disjoint rows, JS = ln 2; heads 2 and 3 (the other
  // group) are the same row, JS = 0; across groups, head 0 [1, 0] against heads 2, 3 [0.5, 0.5].
  Tensor3 a = Tensor3::from_shape({4, 2, 2});
  a.fill(0.0f);
  for (std::size_t h = 0; h < 4; ++h) a(h, 0, 0) = 1;
  a(0, 1, 0) = 1;
  a(1, 1, 1) = 1;
  a(2, 1, 0) = a(2, 1, 1) = a(3, 1, 0) = a(3, 1, 1) = 0.5f;
  f.attention = {a};
  const GqaLesson g = gqa_lesson(c, f);
  const double ln2 = std::numbers::ln2;
  // JS([1, 0], [0.5, 0.5]) = 0.5 ln(1 / 0.75) + 0.5 (0.5 ln(0.5 / 0.75) + 0.5 ln(0.5 / 0.25)).
  const double half_vs_one = 0.5 * std::log(1 / 0.75) + 0.25 * std::log(0.5 / 0.75) + 0.25 * std::log(2.0);
  CHECK(g.divergence[0][0][1] == doctest::Approx(ln2 / 2));  // the mean over the 2 query rows
  CHECK(g.divergence[0][1][0] == doctest::Approx(ln2 / 2));
  CHECK(g.divergence[0][2][3] == doctest::Approx(0.0));
  CHECK(g.divergence[0][0][2] == doctest::Approx(half_vs_one / 2));
  CHECK(g.within == doctest::Approx((ln2 / 2 + 0) / 2));
  CHECK(g.across == doctest::Approx((2 * half_vs_one / 2 + 2 * half_vs_one / 2) / 4));
  // K and V, 1 layer, 8 dims, 2 bytes: 32 bytes a head.
  CHECK(g.bytes_mha == 4 * 32);
  CHECK(g.bytes_gqa == 2 * 32);
  CHECK(g.bytes_mqa == 32);
  c.kv_heads = 4;  // multi-head: no pair shares a key/value head
  CHECK(std::isnan(gqa_lesson(c, f).within));
}

TEST_CASE("decoder lessons: the weight on token 0 by hand, and a window that hides nothing changes nothing") {
  const DecoderModel model = read_decoder_model(attn::test::data_path("llama_tiny"));
  const std::vector<std::int32_t> ids = {657, 279, 292, 278, 266, 32, 288, 279, 292};
  const DecoderForward full = decoder_forward(model, ids);
  const std::size_t n = ids.size();
  SinkLesson s = sink_lesson(model, ids, full, n - 1);
  REQUIRE(s.first_token.size() == model.config.layers);
  double mean = 0;
  for (std::size_t i = 1; i < n; ++i) mean += full.attention[1](2, i, 0);
  CHECK(s.first_token[1][2] == doctest::Approx(mean / double(n - 1)));
  double uniform = 0;
  for (std::size_t i = 1; i < n; ++i) uniform += 1.0 / double(i + 1);
  CHECK(s.uniform == doctest::Approx(uniform / double(n - 1)));
  // A window of n - 1 keys hides only key 0 from the last query: kept as a sink, nothing is
  // hidden from anyone, and the model is the full one; evicted, the last position changes.
  CHECK(s.window == n - 1);
  CHECK(s.kl_kept < 1e-9);
  CHECK(s.kl_evicted > 1e-6);
  // The default window: a quarter of the tokens, at least 2; a window wider than n - 1 is cut
  // to n - 1, so that key 0 always leaves the last query's window.
  CHECK(sink_lesson(model, ids, full).window == 3);
  CHECK(sink_lesson(model, ids, full, 100).window == n - 1);
  CHECK_THROWS_AS(sink_lesson(model, {657, 279}, decoder_forward(model, {657, 279})), InputError);
}

TEST_CASE("cli forward on a Llama folder --out: sinks.png, gqa.png and lessons.json at 1, 2, 3 and 48 tokens") {
  attn::test::TempDir dir;
  const std::string model = "'" + attn::test::data_path("llama_tiny") + "'";
  struct Case {
    const char* input;
    bool gqa, sinks;
  };
  // --tokens 657: BOS alone; "x": BOS and x; "a b": the 3 tokens the sink lesson needs at least.
  int n = 0;
  for (const Case c : {Case{"--tokens 657", false, false}, Case{"'x'", true, false}, Case{"'a b'", true, true},
                       Case{"'The cat sat on the mat, and the dog sat on the log by the door today'", true, true}}) {
    CAPTURE(c.input);
    const std::string out = dir / ("v" + std::to_string(n++));
    const attn::test::CliResult r = attn::test::run_cli("forward --model " + model + " " + c.input + " --out '" + out + "'");
    REQUIRE(r.code == 0);
    CHECK(std::filesystem::exists(out + "/heads.png"));
    CHECK(std::filesystem::exists(out + "/gqa.png") == c.gqa);
    CHECK(std::filesystem::exists(out + "/sinks.png") == c.sinks);
    CHECK(std::filesystem::exists(out + "/lessons.json") == c.gqa);
    CHECK(std::filesystem::exists(out + "/rope_bands.png") == c.gqa);
    CHECK(std::filesystem::exists(out + "/rope_distance.png") == c.gqa);
    for (const char* png : {"/gqa.png", "/sinks.png", "/rope_bands.png", "/rope_distance.png"}) {
      if (!std::filesystem::exists(out + png)) continue;
      const attn::test::DecodedPng p = attn::test::DecodedPng::from_file(out + png);
      REQUIRE(p.ok());
      CHECK(p.ink_on_border(3) == 0);
    }
    if (!c.gqa) continue;
    const Json j = read_json(out + "/lessons.json");
    CHECK(j.contains("grouped_query"));
    CHECK(j.contains("rope"));
    CHECK(j.contains("attention_sinks") == c.sinks);
    if (c.sinks) CHECK(r.out.find("Attention sinks: layer") != std::string::npos);
  }
}

TEST_CASE("decoder lessons: the keys each layer sees, causal below the window's first layer, a band above") {
  DecoderConfig c;
  c.sliding_window = 3, c.window_first_layer = 1;
  const Mask2 below = decoder_visible(c, 0, 5), above = decoder_visible(c, 1, 5);
  for (std::size_t i = 0; i < 5; ++i)
    for (std::size_t j = 0; j < 5; ++j) {
      CAPTURE(i);
      CAPTURE(j);
      CHECK(below(i, j) == (j <= i));
      CHECK(above(i, j) == (j <= i && i - j < 3));  // the query and the 2 keys before it
    }
  c.attention_sinks = 1;  // StreamingLLM's sink: key 0 stays in sight
  const Mask2 sink = decoder_visible(c, 1, 5);
  CHECK(sink(4, 0));
  CHECK_FALSE(sink(4, 1));
  CHECK_FALSE(sink(0, 1));  // and causality still holds
}

TEST_CASE("cli demo and report --model on a Llama folder: its tokenizer's tokens, its attention, the checks") {
  attn::test::TempDir dir;
  const std::string model = "'" + attn::test::data_path("llama_tiny") + "'";
  const attn::test::CliResult r = attn::test::run_cli("demo --model " + model + " --out '" + dir / "d" + "'");
  REQUIRE(r.code == 0);
  CHECK(r.out.find("llama model") != std::string::npos);
  const Json m = read_json(dir / "d/manifest.json");
  CHECK(m["config"]["model"]["architecture"] == "llama");
  // The demo's tokens are tokenize's (<|begin_of_text|> first), its attention forward's.
  const char* sentence = "'the cat sat on the mat . the cat sat on the mat'";
  const Json ids = Json::parse(attn::test::run_cli("tokenize --model " + model + " " + sentence + " --json").out);
  REQUIRE(m["tokens"].size() == ids["tokens"].size());
  CHECK(m["tokens"][0] == "<|begin_of_text|>");
  const Json f = Json::parse(attn::test::run_cli("forward --model " + model + " " + sentence + " --json").out);
  const Json& a = m["results"]["model"]["attention"];
  REQUIRE(a.size() == 2);
  for (std::size_t h = 0; h < 4; ++h)
    for (std::size_t i = 0; i < a[1][h].size(); ++i)
      for (std::size_t j = 0; j <= i; ++j)
        CHECK(a[1][h][i][j].get<double>() == doctest::Approx(f["attention"][1][h][i][j].get<double>()).epsilon(1e-5));
  CHECK(m["results"]["model"]["head_summary"]["heads"].size() == 8);
  // Layer 0 through a KV cache (grouped heads, RoPE at the model's frequencies) against one pass.
  CHECK(m["results"]["decode"]["max_abs_diff_output"].get<double>() < 1e-4);
  for (const char* png : {"d/heads.png", "d/attention.png"}) {
    CAPTURE(png);
    const attn::test::DecodedPng p = attn::test::DecodedPng::from_file(dir / png);
    REQUIRE(p.ok());
  }
  const attn::test::CliResult page = attn::test::run_cli("report " + model + " --out '" + dir / "r.html" + "'");
  REQUIRE(page.code == 0);
  CHECK(std::filesystem::file_size(dir / "r.html") > 10000);
}

TEST_CASE("decoder lessons: RoPE's score by distance and band shares, by hand") {
  DecoderConfig c;
  c.layers = 1, c.heads = 1, c.kv_heads = 1, c.head_dim = 2, c.rope_theta = 10000;  // one pair, theta_0 = 1
  const std::size_t n = 5;
  DecoderForward f;
  Tensor3 raw = Tensor3::from_shape({1, n, 2}), rotated = Tensor3::from_shape({1, n, 2});
  for (std::size_t i = 0; i < n; ++i) {
    raw(0, i, 0) = 1, raw(0, i, 1) = 0;
    rotated(0, i, 0) = float(std::cos(double(i))), rotated(0, i, 1) = float(std::sin(double(i)));
  }
  f.q = f.k = {rotated};
  f.q_raw = f.k_raw = {raw};
  const ModelRopeLesson r = model_rope_lesson(c, f);
  REQUIRE(r.frequencies.size() == 1);
  CHECK(r.frequencies[0] == doctest::Approx(1.0));
  for (std::size_t d = 0; d < n; ++d) {
    CAPTURE(d);
    // (cos i, sin i) . (cos j, sin j) = cos(i - j), the same at every pair d apart.
    CHECK(r.score_rotated[0][0][d] == doctest::Approx(std::cos(double(d)) / std::sqrt(2.0)).epsilon(1e-6));
    CHECK(r.score_raw[0][0][d] == doctest::Approx(1 / std::sqrt(2.0)));
  }
  CHECK(r.band_share[0][0][0] == doctest::Approx(1.0));
  // Two pairs, (dims 0, 2) and (1, 3): q = (3, 1, 4, 0) has lengths 5 and 1, k = (1, 1, 0, 0) 1 and 1.
  c.head_dim = 4;
  Tensor3 q = Tensor3::from_shape({1, 1, 4}), k = Tensor3::from_shape({1, 1, 4});
  q(0, 0, 0) = 3, q(0, 0, 1) = 1, q(0, 0, 2) = 4, q(0, 0, 3) = 0;
  k(0, 0, 0) = 1, k(0, 0, 1) = 1, k(0, 0, 2) = 0, k(0, 0, 3) = 0;
  f.q = f.q_raw = {q};
  f.k = f.k_raw = {k};
  const ModelRopeLesson two = model_rope_lesson(c, f);
  CHECK(two.band_share[0][0][0] == doctest::Approx(5.0 / 6));
  CHECK(two.band_share[0][0][1] == doctest::Approx(1.0 / 6));
  CHECK_THROWS_AS(model_rope_lesson(c, DecoderForward{}), InputError);
}

TEST_CASE("cli generate --model: tokens per second against a streaming read of the same weights, terminal only") {
  const std::string model = "'" + attn::test::data_path("llama_tiny") + "'";
  const attn::test::CliResult r = attn::test::run_cli("generate --model " + model + " 'The cat sat' --tokens 4");
  REQUIRE(r.code == 0);
  const std::size_t at = r.out.find("Speed: ");
  REQUIRE(at != std::string::npos);
  // "Speed: X tokens/s after the prompt (median of 3 steps, ...). A step reads B MB of weights
  // once: G GB/s, F of a streaming read of the same bytes here (S GB/s, measured now)."
  CHECK(r.out.find("median of 3 steps", at) != std::string::npos);
  CHECK(r.out.find("of a streaming read of the same bytes here", at) != std::string::npos);
  // The weights a step reads: 2 layers of q, k, v, o, gate, up, down and lm_head, BF16.
  const DecoderModel m = read_decoder_model(attn::test::data_path("llama_tiny"));
  const DecoderConfig& c = m.config;
  const double bytes = 2.0 * (c.layers * (2 * c.hidden * c.heads * c.head_dim + 2 * c.hidden * c.kv_heads * c.head_dim +
                                          3 * c.hidden * c.intermediate) +
                              c.vocab * c.hidden);
  CHECK(r.out.find("reads " + format_g(bytes / 1e6, 3) + " MB", at) != std::string::npos);
  const attn::test::CliResult j = attn::test::run_cli("generate --model " + model + " 'The cat sat' --tokens 4 --json");
  REQUIRE(j.code == 0);
  CHECK(j.out.find("Speed") == std::string::npos);  // times never reach the JSON
  CHECK(j.out.find("seconds") == std::string::npos);
}
