#include "attn/engine/positions/alibi.hpp"

#include <bit>
#include <cmath>

#include "attn/engine/core/error.hpp"

namespace attn {
namespace {

// start = 2^(-2^-(log2(n) - 3)) = 2^(-8/n); the slopes are start, start^2, ..., start^n.
std::vector<double> power_of_two_slopes(std::size_t n) {
  std::vector<double> slopes(n);
  for (std::size_t h = 0; h < n; ++h) {
    slopes[h] = std::exp2(-8.0 * static_cast<double>(h + 1) / static_cast<double>(n));
  }
  return slopes;
}

}  // namespace

std::vector<double> alibi_slopes(std::size_t H) {
  if (H == 0) throw InputError("heads: ALiBi needs at least one head");
  if (std::has_single_bit(H)) return power_of_two_slopes(H);
  // The paper's interpolation for other head counts (its reference code, verbatim in spirit):
  // closest_power_of_2 slopes, then get_slopes(2 * closest)[0::2][:H - closest].
  const std::size_t closest = std::bit_floor(H);
  std::vector<double> slopes = power_of_two_slopes(closest);
  const std::vector<double> finer = power_of_two_slopes(2 * closest);
  for (std::size_t i = 0; slopes.size() < H; i += 2) slopes.push_back(finer[i]);
  return slopes;
}

Tensor3 alibi_bias(std::span<const double> slopes, std::size_t Lq, std::size_t Lk) {
  // bias [H, Lq, Lk]
  const std::size_t H = slopes.size();
  Tensor3 bias = Tensor3::from_shape({H, Lq, Lk});
  const long offset = static_cast<long>(Lk) - static_cast<long>(Lq);
  for (std::size_t h = 0; h < H; ++h)
    for (std::size_t i = 0; i < Lq; ++i)
      for (std::size_t j = 0; j < Lk; ++j)
        bias(h, i, j) = static_cast<float>(
            alibi_bias_value(slopes[h], static_cast<long>(i) + offset, static_cast<long>(j)));
  return bias;
}

}  // namespace attn
