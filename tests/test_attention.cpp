// attention(): the one door every caller goes through. The backends agree, the temperature fold
// for the tiled kernels matches the reference's division of the scores, and what a tiled
// kernel cannot do is refused by name.
#include <doctest/doctest.h>

#include <cmath>

#include "attn/engine/attention/attention.hpp"
#include "attn/engine/attention/cuda.hpp"
#include "attn/engine/core/error.hpp"
#include "attn/engine/core/random.hpp"
#include "support.hpp"

using namespace attn;
using test::randn;

namespace {

}  // namespace

TEST_CASE("attention: the flash backend equals the naive one, temperature and scale folded in one place") {
  Rng rng(11);
  const Tensor3 q = randn(rng, 4, 9, 8), k = randn(rng, 2, 13, 8), v = randn(rng, 2, 13, 5);  // GQA
  for (double temperature : {1.0, 0.5, 3.0}) {
    for (bool causal : {false, true}) {
      CAPTURE(temperature);
      CAPTURE(causal);
      SdpaOptions o;
      o.causal = causal;
      o.temperature = temperature;
      o.scale = 0.7;
      const SdpaResult naive = attention(q, k, v, nullptr, o, {});
      BackendOptions flash;
      flash.backend = Backend::flash;
      flash.block_q = flash.block_k = 3;
      const SdpaResult tiled = attention(q, k, v, nullptr, o, flash);
      // float64 inside both: they differ by at most one float32 rounding.
      CHECK(test::max_abs_diff(test::flat_tensor(tiled.output), test::flat_tensor(naive.output)) < 1e-6);
      CHECK(test::max_abs_diff(test::flat_tensor(tiled.weights), test::flat_tensor(naive.weights)) < 1e-6);
      CHECK(test::max_abs_diff(test::flat_tensor(tiled.lse), test::flat_tensor(naive.lse)) < 1e-5);
      // without weights the tiled kernel leaves them out; the output is the same
      const SdpaResult bare = attention(q, k, v, nullptr, o, flash, /*with_weights=*/false);
      CHECK(bare.weights.size() == 0);
      CHECK(test::max_abs_diff(test::flat_tensor(bare.output), test::flat_tensor(tiled.output)) == 0);
    }
  }
}

TEST_CASE("attention: the temperature fold is scale / T") {
  SdpaOptions o;
  o.temperature = 4.0;
  const FlashOptions fo = tiled_options(o, BackendOptions{Backend::flash}, 16);
  REQUIRE(fo.scale.has_value());
  CHECK(*fo.scale == doctest::Approx(1.0 / (4.0 * 4.0)));  // 1/sqrt(16) / 4
  CHECK(resolved_scale(std::nullopt, 64) == 0.125);
  CHECK(resolved_scale(0.3, 64) == 0.3);
}

TEST_CASE("attention: what the tiled kernels cannot do is refused by name, backend names parse") {
  SdpaOptions dropout;
  dropout.dropout_p = 0.1;
  CHECK_THROWS_WITH_AS(tiled_options(dropout, {Backend::flash}, 8), "dropout: not supported by backend \"flash\"",
                       InputError);
  CHECK_THROWS_WITH_AS(tiled_options(dropout, {Backend::cuda}, 8), "dropout: not supported by backend \"cuda\"",
                       InputError);
  // Every tiled backend takes the score modifiers, CUDA too (tests/cuda/ and the GPU check kit
  // run them there), with the temperature they must undo.
  SdpaOptions softcap;
  softcap.score_mod.softcap = variants::SoftCap{5.0};
  softcap.temperature = 2.0;
  const FlashOptions fo = tiled_options(softcap, {Backend::cuda}, 16);
  CHECK(fo.score_mod == &softcap.score_mod);
  CHECK(fo.temperature == 2.0);
  CHECK(parse_backend("flash") == Backend::flash);
  CHECK(std::string(backend_name(Backend::cuda)) == "cuda");
  CHECK_THROWS_AS(parse_backend("fast"), InputError);
}

TEST_CASE("cli: mha takes backend cuda like attend (the same answer on a machine without a device)") {
  const std::string q = R"("query": [[1, 0], [0, 1]], "num_heads": 1, "w_q": [[1, 0], [0, 1]],
      "w_k": [[1, 0], [0, 1]], "w_v": [[1, 0], [0, 1]], "w_o": [[1, 0], [0, 1]], "backend": "cuda")";
  const test::CliResult m = test::run_cli("mha --input -", "{" + q + "}");
  const test::CliResult a =
      test::run_cli("attend --input -", R"({"q": [[1, 0]], "k": [[1, 0]], "v": [[1, 0]], "backend": "cuda"})");
  if (cuda_usable()) {
    CHECK(m.code == 0);
    CHECK(a.code == 0);
  } else {
    CHECK(m.code == 2);
    CHECK(m.err == a.err);  // "error: backend: "cuda": <why>" from the one place that checks it
    CHECK(m.err.find("attend only") == std::string::npos);
  }
}
