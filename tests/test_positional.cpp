// Sinusoidal positional encoding (Vaswani et al. 2017, section 3.5) and the sqrt(d_model) scale.
#include <doctest/doctest.h>

#include <cmath>

#include "attn/engine/core/error.hpp"
#include "attn/engine/positions/positional.hpp"

using namespace attn;

TEST_CASE("positional: PE[pos, 2i] = sin(pos / 10000^(2i/d)), PE[pos, 2i+1] = cos(...) at a few entries") {
  const Tensor2 pe = sinusoidal_encoding(6, 4);
  CHECK(pe.shape(0) == 6);
  CHECK(pe.shape(1) == 4);
  for (std::size_t c = 0; c < 4; ++c) CHECK(pe(0, c) == (c % 2 == 0 ? 0.0f : 1.0f));  // sin 0, cos 0
  // d = 4: pair 0 has frequency 1, pair 1 has 10000^(-2/4) = 1/100.
  CHECK(pe(1, 0) == doctest::Approx(std::sin(1.0)).epsilon(1e-7));
  CHECK(pe(1, 1) == doctest::Approx(std::cos(1.0)).epsilon(1e-7));
  CHECK(pe(5, 1) == doctest::Approx(std::cos(5.0)).epsilon(1e-7));
  CHECK(pe(2, 2) == doctest::Approx(std::sin(0.02)).epsilon(1e-7));
  CHECK(pe(3, 3) == doctest::Approx(std::cos(0.03)).epsilon(1e-7));
  // An odd width ends with a sin column: d = 3, column 2 is pair 1, 10000^(-2/3).
  const Tensor2 odd = sinusoidal_encoding(3, 3);
  CHECK(odd(2, 2) == doctest::Approx(std::sin(2.0 * std::pow(10000.0, -2.0 / 3.0))).epsilon(1e-7));
}

TEST_CASE("positional: PE[pos + k] is a fixed rotation of PE[pos], pair by pair") {
  const std::size_t d = 8, k = 3;
  const Tensor2 pe = sinusoidal_encoding(20, d);
  for (std::size_t i = 0; i < d / 2; ++i) {
    const double w = std::pow(10000.0, -2.0 * static_cast<double>(i) / d);
    const double c = std::cos(w * k), s = std::sin(w * k);
    for (std::size_t pos : {0u, 4u, 16u}) {
      // sin(a + b) = sin a cos b + cos a sin b;  cos(a + b) = cos a cos b - sin a sin b
      CHECK(pe(pos + k, 2 * i) == doctest::Approx(pe(pos, 2 * i) * c + pe(pos, 2 * i + 1) * s).epsilon(1e-5));
      CHECK(pe(pos + k, 2 * i + 1) == doctest::Approx(pe(pos, 2 * i + 1) * c - pe(pos, 2 * i) * s).epsilon(1e-5));
    }
  }
}

TEST_CASE("positional: embeddings are multiplied by sqrt(d_model) before PE is added") {
  CHECK(embedding_scale(512) == doctest::Approx(22.627417).epsilon(1e-7));
  const Tensor2 x = xt::ones<float>({3, 4});
  const Tensor2 y = add_sinusoidal_encoding(x);
  const Tensor2 pe = sinusoidal_encoding(3, 4);
  for (std::size_t i = 0; i < 3; ++i)
    for (std::size_t c = 0; c < 4; ++c) CHECK(y(i, c) == doctest::Approx(2.0 + pe(i, c)).epsilon(1e-6));
}

TEST_CASE("positional: bad sizes are input errors") {
  CHECK_THROWS_WITH_AS(sinusoidal_encoding(3, 0), doctest::Contains("d_model"), InputError);
  CHECK_THROWS_WITH_AS(sinusoidal_encoding(3, 4, 0.0), doctest::Contains("base"), InputError);
}
