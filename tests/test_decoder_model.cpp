// The Llama-family decoder's pieces that a folder check cannot isolate (engine/models/
// decoder_model.hpp): RoPE's scaled frequencies by hand, and RoPE with given frequencies against
// the base form. The whole forward pass is checked against a float64 NumPy decoder by
// scripts/check_decoder_forward.py (tests/CMakeLists.txt).
#include <doctest/doctest.h>

#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <numbers>

#include "attn/engine/core/error.hpp"
#include "attn/engine/models/decoder_model.hpp"
#include "attn/engine/positions/rope.hpp"
#include "attn/io/decoder_model_file.hpp"
#include "attn/lessons/models/gpt2_generate.hpp"
#include "support.hpp"

using namespace attn;

namespace {

DecoderConfig rope_config(const std::string& type) {
  DecoderConfig c;
  c.head_dim = 8;  // theta = 1, 0.1, 0.01, 0.001 at base 10000
  c.rope_theta = 10000;
  c.rope_scaling.type = type;
  c.rope_scaling.factor = 8;
  c.rope_scaling.low_freq_factor = 1;
  c.rope_scaling.high_freq_factor = 4;
  c.rope_scaling.original_max_positions = 16;
  return c;
}

}  // namespace

TEST_CASE("decoder: RoPE frequencies, plain, linear and llama3, by hand") {
  const std::vector<double> plain = decoder_rope_frequencies(rope_config("default"));
  REQUIRE(plain.size() == 4);
  CHECK(plain[0] == doctest::Approx(1.0));
  CHECK(plain[1] == doctest::Approx(0.1));
  CHECK(plain[3] == doctest::Approx(0.001));
  const std::vector<double> linear = decoder_rope_frequencies(rope_config("linear"));
  CHECK(linear[1] == doctest::Approx(0.1 / 8));
  // llama3 with an old context of 16: wavelengths 2 pi / theta = 6.28, 62.8, 628, 6283. Past
  // 16 / low_freq_factor = 16 they are divided by 8; under 16 / high_freq_factor = 4 kept; 6.28
  // is between: smooth = (16 / 6.283 - 1) / (4 - 1) = 0.5154, theta = (1 - s) / 8 + s = 0.5760.
  const std::vector<double> l3 = decoder_rope_frequencies(rope_config("llama3"));
  const double s = (16 / (2 * std::numbers::pi) - 1) / 3;
  CHECK(s == doctest::Approx(0.5154).epsilon(1e-3));
  CHECK(l3[0] == doctest::Approx((1 - s) / 8 + s));
  CHECK(l3[0] == doctest::Approx(0.5760).epsilon(1e-3));
  CHECK(l3[1] == doctest::Approx(0.1 / 8));
  CHECK(l3[3] == doctest::Approx(0.001 / 8));
  // With an old context of 32, the wavelength 6.28 is under 32 / 4 = 8: kept as it is.
  DecoderConfig longer = rope_config("llama3");
  longer.rope_scaling.original_max_positions = 32;
  CHECK(decoder_rope_frequencies(longer)[0] == 1.0);
}

TEST_CASE("rope: given frequencies equal to the base's give the same rotation, and are checked") {
  Tensor3 x = Tensor3::from_shape({2, 3, 8});
  for (std::size_t i = 0; i < x.size(); ++i) x.data()[i] = float(std::sin(double(i) * 0.7));
  const std::vector<std::int64_t> positions{0, 5, 11};
  RopeOptions base;
  RopeOptions given = base;
  given.frequencies = rope_frequencies(8, 10000);
  const Tensor3 a = apply_rope(x, positions, base), b = apply_rope(x, positions, given);
  for (std::size_t i = 0; i < a.size(); ++i) CHECK(a.data()[i] == b.data()[i]);
  given.frequencies[1] *= 2;  // another frequency: another rotation from position 1 on
  CHECK(apply_rope(x, positions, given)(0, 1, 1) != a(0, 1, 1));
  given.frequencies.pop_back();
  CHECK_THROWS_AS(apply_rope(x, positions, given), InputError);
  given.frequencies = {1, 0.1, -0.01, 0.001};
  CHECK_THROWS_AS(apply_rope(x, positions, given), InputError);
}

TEST_CASE("decoder: the forward pass's FLOPs, by hand") {
  DecoderConfig c;
  c.hidden = 8, c.intermediate = 12, c.layers = 2, c.heads = 4, c.kv_heads = 2, c.head_dim = 2, c.vocab = 10;
  // A token of a layer: q 8x8, k 8x4, v 8x4, o 8x8 = 192 multiply-adds; the MLP 3 x 8 x 12 = 288;
  // 2 x 480 = 960 FLOPs. 3 tokens: 6 visible pairs, 4 x 4 x 2 = 32 FLOPs each = 192. Logits: 2 x 8 x 10 a token.
  CHECK(decoder_forward_flops(c, 3) == doctest::Approx(2 * (3 * 960 + 192) + 3 * 160));
}

TEST_CASE("decoder: generation through Hkv-head KV caches equals full forwards, with and without a window") {
  const DecoderModel model = read_decoder_model(attn::test::data_path("llama_tiny"));
  const DecoderConfig& c = model.config;
  REQUIRE(c.kv_heads < c.heads);  // grouped-query heads: the cache holds Hkv of them
  Gpt2GenerateConfig g;
  g.prompt = {1, 5, 9, 3, 1};
  g.new_tokens = 6;
  g.check_every_step = true;
  const Gpt2Generation plain = decoder_generate(model, g);
  REQUIRE(plain.steps.size() == 6);
  for (std::size_t n = 0; n < plain.steps.size(); ++n) {
    const Gpt2GenerateStep& s = plain.steps[n];
    CHECK(*s.max_diff_vs_full <= 1e-4 * s.logit_scale);
    // K and V of every layer, Hkv heads of head_dim float64 values per token: H / Hkv times less
    // than a cache of every query head.
    CHECK(s.cache_len == 5 + n);
    CHECK(s.cache_bytes == c.layers * 2 * c.kv_heads * c.head_dim * s.cache_len * 8);
  }
  // A sliding window of 3 keys (Mistral's), past which the prefix runs: the cached steps apply
  // it as the full forward does, and it changes what the model writes.
  DecoderModel windowed = model;
  windowed.config.sliding_window = 3;
  const Gpt2Generation w = decoder_generate(windowed, g);
  bool changed = false;
  for (std::size_t n = 0; n < w.steps.size(); ++n) {
    CHECK(*w.steps[n].max_diff_vs_full <= 1e-4 * w.steps[n].logit_scale);
    // Mistral's rolling buffer: each layer keeps the last 3 tokens' K and V, however long the text.
    CHECK(w.steps[n].cache_len == 5 + n);
    CHECK(w.steps[n].cache_bytes == c.layers * 2 * c.kv_heads * c.head_dim * 3 * 8);
    changed = changed || w.steps[n].id != plain.steps[n].id || w.steps[n].probability != plain.steps[n].probability;
  }
  CHECK(changed);
  // With sinks the first keys stay visible forever: no layer may drop them.
  windowed.config.attention_sinks = 1;
  const Gpt2Generation sunk = decoder_generate(windowed, g);
  for (const Gpt2GenerateStep& s : sunk.steps) {
    CHECK(*s.max_diff_vs_full <= 1e-4 * s.logit_scale);
    CHECK(s.cache_bytes == c.layers * 2 * c.kv_heads * c.head_dim * s.cache_len * 8);
  }
  // A bfloat16 cache: a quarter of the bytes, and only its rounding away from the full forward.
  g.kv_dtype = KvDtype::bfloat16;
  const Gpt2Generation half = decoder_generate(model, g);
  CHECK(half.steps[0].cache_bytes * 4 == plain.steps[0].cache_bytes);
  CHECK(*half.steps[0].max_diff_vs_full > 0);
  CHECK(*half.steps[0].max_diff_vs_full < 0.05 * half.steps[0].logit_scale);
  // Past max_position_embeddings: refused before anything runs.
  g.new_tokens = c.max_positions;
  CHECK_THROWS_AS(decoder_generate(model, g), InputError);
}

namespace {

// data/llama_tiny copied to a temporary folder, with one bfloat16 weight of `tensor` set to a
// NaN's bits (element `at` of its values).
std::string poisoned_llama_tiny(const std::string& tensor, std::size_t at) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("attn-cli-llama-nan-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::copy(attn::test::data_path("llama_tiny"), dir, fs::copy_options::recursive);
  std::string bytes = attn::test::read_text((dir / "model.safetensors").string());
  std::uint64_t n;
  std::memcpy(&n, bytes.data(), 8);
  const Json header = Json::parse(bytes.substr(8, n));
  REQUIRE(header.at(tensor).at("dtype") == "BF16");
  const std::size_t offset = 8 + n + header.at(tensor).at("data_offsets")[0].get<std::size_t>() + 2 * at;
  const std::uint16_t nan = 0x7fc0;
  std::memcpy(bytes.data() + offset, &nan, 2);
  std::ofstream((dir / "model.safetensors").string(), std::ios::binary) << bytes;
  return dir.string();
}

}  // namespace

TEST_CASE("decoder: a weight that is not finite is named, by a prompt's products and by a decode step's") {
  const std::vector<std::int32_t> prompt{5, 9, 1, 3, 7, 2, 8, 4, 6, 10, 11, 12}, step{5, 9, 1};  // 12 rows, 3 rows
  for (const char* tensor : {"model.layers.1.mlp.down_proj.weight", "model.layers.0.self_attn.k_proj.weight",
                             "lm_head.weight"}) {
    const std::string dir = poisoned_llama_tiny(tensor, 37);
    const std::string expected = std::string("tensor \"") + tensor + "\" holds a non-finite value";
    CAPTURE(tensor);
    // Read again for each pass: a layer that passed its check is not read again.
    CHECK_THROWS_WITH_AS(decoder_forward(read_decoder_model(dir), prompt, 2), doctest::Contains(expected.c_str()), InputError);
    CHECK_THROWS_WITH_AS(decoder_forward(read_decoder_model(dir), step, 2), doctest::Contains(expected.c_str()), InputError);
    std::filesystem::remove_all(dir);
  }
}
