#include "attn/engine/positions/positional.hpp"

#include <cmath>

#include "attn/engine/core/error.hpp"

namespace attn {

Tensor2 sinusoidal_encoding(std::size_t L, std::size_t d_model, double base) {
  // PE [L, d_model]
  if (d_model == 0) throw InputError("d_model: expected an integer >= 1, got 0");
  if (!(base > 0.0) || !std::isfinite(base)) throw InputError("base: expected a finite number > 0");
  Tensor2 pe = Tensor2::from_shape({L, d_model});
  for (std::size_t pos = 0; pos < L; ++pos) {
    for (std::size_t c = 0; c < d_model; ++c) {
      const std::size_t i = c / 2;  // columns 2i and 2i+1 share one frequency
      const double angle = static_cast<double>(pos) /
                           std::pow(base, 2.0 * static_cast<double>(i) / static_cast<double>(d_model));
      pe(pos, c) = static_cast<float>(c % 2 == 0 ? std::sin(angle) : std::cos(angle));
    }
  }
  return pe;
}

double embedding_scale(std::size_t d_model) { return std::sqrt(static_cast<double>(d_model)); }

Tensor2 add_sinusoidal_encoding(const Tensor2& x, double base) {
  const std::size_t L = x.shape(0), D = x.shape(1);
  const Tensor2 pe = sinusoidal_encoding(L, D, base);
  const double scale = embedding_scale(D);
  Tensor2 y = Tensor2::from_shape({L, D});
  for (std::size_t i = 0; i < L; ++i)
    for (std::size_t c = 0; c < D; ++c)
      y(i, c) = static_cast<float>(static_cast<double>(x(i, c)) * scale + static_cast<double>(pe(i, c)));
  return y;
}

}  // namespace attn
