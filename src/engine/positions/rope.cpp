#include "attn/engine/positions/rope.hpp"

#include <cmath>
#include <utility>
#include <vector>

#include "attn/engine/core/error.hpp"

namespace attn {

RopeStyle parse_rope_style(std::string_view name, const std::string& field) {
  if (name == "half") return RopeStyle::Half;
  if (name == "interleaved") return RopeStyle::Interleaved;
  throw InputError(field + ": expected \"half\" (rotate_half: GPT-NeoX, LLaMA-HF) or "
                   "\"interleaved\" (GPT-J, RoFormer, Meta's llama), got \"" + std::string(name) +
                   "\"");
}

std::string rope_style_name(RopeStyle style) {
  return style == RopeStyle::Half ? "half" : "interleaved";
}

std::vector<double> rope_frequencies(std::size_t d, double base) {
  if (!(base >= kRopeBaseMin && base <= kRopeBaseMax)) {  // NaN fails both comparisons
    throw InputError("rope base: expected a number in [1, 1e12], got " + std::to_string(base));
  }
  // HF: inv_freq = 1 / base^(arange(0, d, 2) / d); RoFormer eq. 15: theta_i = 10000^(-2(i-1)/d).
  std::vector<double> theta(d / 2);
  for (std::size_t i = 0; i < d / 2; ++i) {
    theta[i] = std::pow(base, -2.0 * static_cast<double>(i) / static_cast<double>(d));
  }
  return theta;
}

std::pair<std::size_t, std::size_t> rope_pair(RopeStyle style, std::size_t i, std::size_t d) {
  return style == RopeStyle::Half ? std::pair{i, i + d / 2} : std::pair{2 * i, 2 * i + 1};
}

std::vector<std::size_t> interleaved_to_half_permutation(std::size_t d) {
  // Half-layout pair i is (i, i + d/2); interleaved pair i is (2i, 2i + 1).
  std::vector<std::size_t> perm(d);
  for (std::size_t i = 0; i < d / 2; ++i) {
    perm[i] = 2 * i;
    perm[i + d / 2] = 2 * i + 1;
  }
  return perm;
}

namespace {

// cos and sin of direction * positions[l] * theta_i, row-major [L][d / 2] for the first d / 2
// frequencies: what pair i of row l turns by, in every head (computed once, not once a head).
std::vector<std::pair<double, double>> rope_turns(std::span<const std::int64_t> positions,
                                                  std::span<const double> theta, std::size_t d, double direction) {
  if (theta.size() < d / 2) {
    throw InputError("rope: expected d / 2 = " + std::to_string(d / 2) + " frequencies, got " +
                     std::to_string(theta.size()));
  }
  std::vector<std::pair<double, double>> turns;
  turns.reserve(positions.size() * (d / 2));
  for (const std::int64_t p : positions) {
    const double pos = static_cast<double>(p);
    for (std::size_t i = 0; i < d / 2; ++i) {
      const double angle = direction * pos * theta[i];
      turns.emplace_back(std::cos(angle), std::sin(angle));
    }
  }
  return turns;
}

// Turns the rows of x [heads, L, d] (L rows of turns, heads = x.size() / (L d)): row l of every
// head by row l of the turns.
void rotate_rows(std::span<double> x, std::size_t d, std::span<const std::pair<double, double>> turns,
                 RopeStyle style) {
  // Pair (a, b) of a row turns by angle positions[l] * theta_i:
  //   x_a' = x_a cos - x_b sin,   x_b' = x_b cos + x_a sin
  // which is HF's q * cos + rotate_half(q) * sin for the half layout, and the complex product
  // (x_a + i x_b) e^{i angle} of Meta's reference for the interleaved layout.
  const std::size_t half = d / 2;
  if (half == 0 || turns.empty()) return;
  const std::size_t L = turns.size() / half;
  for (std::size_t r = 0; r < x.size() / d; ++r) {
    double* row = x.data() + r * d;
    const std::pair<double, double>* turn = turns.data() + r % L * half;
    for (std::size_t i = 0; i < half; ++i) {
      const auto [c, s] = turn[i];
      const auto [a, b] = rope_pair(style, i, d);
      const double xa = row[a], xb = row[b];
      row[a] = xa * c - xb * s;
      row[b] = xb * c + xa * s;
    }
  }
}

}  // namespace

void apply_rope_inplace(std::span<double> x, std::size_t d, std::span<const std::int64_t> positions,
                        double base, RopeStyle style) {
  rotate_rows(x, d, rope_turns(positions, rope_frequencies(d, base), d, 1.0), style);
}

void apply_rope_inplace(std::span<double> x, std::size_t d, std::span<const std::int64_t> positions,
                        std::span<const double> theta, RopeStyle style) {
  rotate_rows(x, d, rope_turns(positions, theta, d, 1.0), style);
}

void apply_rope_inverse_inplace(std::span<double> x, std::size_t d,
                                std::span<const std::int64_t> positions, double base, RopeStyle style) {
  rotate_rows(x, d, rope_turns(positions, rope_frequencies(d, base), d, -1.0), style);
}

void apply_rope_inverse_inplace(std::span<double> x, std::size_t d, std::span<const std::int64_t> positions,
                                std::span<const double> theta, RopeStyle style) {
  rotate_rows(x, d, rope_turns(positions, theta, d, -1.0), style);
}

std::vector<double> rope_rotated(std::vector<double> x, std::int64_t pos, double base, RopeStyle style) {
  apply_rope_inplace(x, x.size(), std::span(&pos, 1), base, style);
  return x;
}

Tensor3 apply_rope(const Tensor3& x, std::span<const std::int64_t> positions,
                   const RopeOptions& options) {
  const std::size_t H = x.shape(0), L = x.shape(1), d = x.shape(2);
  RopeOptions o = options;
  o.position_ids.assign(positions.begin(), positions.end());
  o.key_position_ids.clear();
  check_rope(o, d, L, L);
  xt::xtensor<double, 3> y = xt::cast<double>(x);
  const std::span<double> rows(y.data(), H * L * d);
  if (o.frequencies.empty()) apply_rope_inplace(rows, d, positions, o.base, o.style);
  else apply_rope_inplace(rows, d, positions, o.frequencies, o.style);
  return xt::cast<float>(y);
}

namespace {

void check_positions(const std::vector<std::int64_t>& ids, std::size_t expected,
                     const std::string& field, const char* what) {
  if (ids.empty()) return;
  if (ids.size() != expected) {
    throw InputError(field + ": expected " + std::to_string(expected) + " integers (one per " +
                     what + "), got " + std::to_string(ids.size()));
  }
  for (std::int64_t p : ids) {
    if (p < 0) throw InputError(field + ": expected integers >= 0, got " + std::to_string(p));
  }
}

std::vector<std::int64_t> iota_positions(std::size_t n) {
  std::vector<std::int64_t> p(n);
  for (std::size_t i = 0; i < n; ++i) p[i] = static_cast<std::int64_t>(i);
  return p;
}

}  // namespace

void check_rope(const RopeOptions& o, std::size_t d, std::size_t Lq, std::size_t Lk) {
  if (d % 2 != 0) {
    throw InputError("rope: head dim d = " + std::to_string(d) +
                     " is odd; RoPE rotates pairs of dims, so D / num_heads must be even");
  }
  if (!(o.base > 0.0) || !std::isfinite(o.base)) {
    throw InputError("rope.base: expected a finite number > 0 (10000 in RoFormer and LLaMA)");
  }
  check_positions(o.position_ids, Lq, "rope.position_ids", "query, Lq");
  check_positions(o.key_position_ids, Lk, "rope.key_position_ids", "key, Lk");
  if (!o.frequencies.empty() && o.frequencies.size() != d / 2)
    throw InputError("rope.frequencies: expected d / 2 = " + std::to_string(d / 2) + " of them, got " +
                     std::to_string(o.frequencies.size()));
  for (double theta : o.frequencies)
    if (!std::isfinite(theta) || theta <= 0) throw InputError("rope.frequencies: expected finite numbers > 0");
}

std::vector<std::int64_t> rope_query_positions(const RopeOptions& o, std::size_t Lq) {
  return o.position_ids.empty() ? iota_positions(Lq) : o.position_ids;
}

std::vector<std::int64_t> rope_key_positions(const RopeOptions& o, std::size_t Lq,
                                             std::size_t Lk) {
  if (!o.key_position_ids.empty()) return o.key_position_ids;
  return Lk == Lq ? rope_query_positions(o, Lq) : iota_positions(Lk);
}

}  // namespace attn
