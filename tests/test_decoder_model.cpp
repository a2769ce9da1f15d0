// The Llama-family decoder's pieces that a folder check cannot isolate (engine/models/
// decoder_model.hpp): RoPE's scaled frequencies by hand, and RoPE with given frequencies against
// the base form. The whole forward pass is checked against a float64 NumPy decoder by
// scripts/check_decoder_forward.py (tests/CMakeLists.txt).
#include <doctest/doctest.h>

#include <cmath>
#include <numbers>

#include "attn/engine/core/error.hpp"
#include "attn/engine/models/decoder_model.hpp"
#include "attn/engine/positions/rope.hpp"

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
