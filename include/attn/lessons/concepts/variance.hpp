#pragma once
// Why attention divides by sqrt(d_k), measured (Vaswani et al. 2017, section 3.2.1, footnote 4).
//
// Claim: if q, k in R^{d_k} have i.i.d. N(0,1) entries, then E[q.k] = 0 and Var(q.k) = d_k, so
// q.k / sqrt(d_k) has variance 1. The experiment draws `samples` independent pairs per d_k and
// prints the sample mean and variance beside that theory, with the sampling error it should
// have (below). Then it shows what the variance does to attention: one query against a row of
// `keys` keys, softmax of the unscaled vs the scaled scores, and the row's max weight, entropy
// and Jacobian norm (softmax_stats.hpp): unscaled rows saturate and their gradient vanishes.
//
// Sampling error. z = q.k = sum_i x_i with x_i = q_i k_i i.i.d.: E x = 0, E x^2 = 1,
// E x^4 = E q^4 E k^4 = 3 * 3 = 9. Expanding (sum_i x_i)^4, only the terms x_i^4 and
// x_i^2 x_j^2 (i != j, 3 pairings) have nonzero mean:
//     mu4 = E z^4 = 9 d + 3 d (d - 1) = 3 d^2 + 6 d,     sigma^2 = d.
// For the unbiased sample variance s^2 of S i.i.d. draws (e.g. Kendall & Stuart, or
// Casella & Berger ex. 7.45):  Var(s^2) = mu4 / S - sigma^4 (S - 3) / (S (S - 1))
//                                       ~ (2 d^2 + 6 d) / S   for large S.
// The standard error of the sample mean is sqrt(d / S). The scaled values divide the mean's
// error by sqrt(d) and the variance's by d. The band printed is theory +- 3 standard errors
// (about 99.7% by the central limit theorem).
#include <cstdint>
#include <optional>
#include <functional>
#include <string>
#include <vector>

#include "attn/io/json_io.hpp"

namespace attn {

struct VarianceConfig {
  std::vector<std::size_t> d_ks = {8, 16, 32, 64, 128, 256, 512, 1024};
  std::size_t samples = 10000;  // independent (q, k) pairs per d_k
  std::size_t keys = 64;        // n, keys per softmax row; rows = max(1, samples / keys)
  std::uint64_t seed = 42;
  // Called after each d_k with (finished, total) units of work, for a progress indicator.
  std::function<void(std::size_t, std::size_t)> progress;
};

inline constexpr double kBandSigmas = 3.0;

struct VarianceRow {
  std::size_t d_k = 0, samples = 0;
  double mean_unscaled = 0, var_unscaled = 0, mean_scaled = 0, var_scaled = 0;
  // Theory and its sampling error (the header comment derives them).
  double var_unscaled_theory = 0, var_scaled_theory = 1;
  double mean_unscaled_se = 0, var_unscaled_se = 0, mean_scaled_se = 0, var_scaled_se = 0;
  bool within_band = false;  // all four estimates within kBandSigmas standard errors of theory
  // One query against `keys` keys, averaged over `softmax_rows` independent rows.
  std::size_t keys = 0, softmax_rows = 0;
  double max_weight_unscaled = 0, max_weight_scaled = 0;
  double entropy_unscaled = 0, entropy_scaled = 0;
  double jacobian_unscaled = 0, jacobian_scaled = 0;  // Frobenius norm of diag(p) - p p^T
};

struct VarianceResult {
  VarianceConfig config;
  std::vector<VarianceRow> rows;
  double entropy_uniform = 0, jacobian_uniform = 0;  // of the uniform row of `keys` keys
};

// sqrt(Var(s^2)): the standard error of the unbiased sample variance of S draws of q.k
// (header comment), exact in S.
double sample_variance_se(std::size_t d_k, std::size_t samples);

// Throws InputError for an empty sweep, d_k or keys of 0, fewer than 2 samples, or a sweep
// too large to finish in reasonable time.
void check_variance_config(const VarianceConfig& config);

// The N(0,1) numbers run_variance draws: 2 d_k per pair, and (keys + 1) d_k per softmax row.
double variance_draws(const VarianceConfig& config);

// Each d_k draws from its own generator seeded by (seed, d_k), so a row does not depend on
// which other d_k are in the sweep.
VarianceResult run_variance(const VarianceConfig& config);

// {"rows": [...], ...} as docs/contracts.md's variance contract, with the further fields above.
Json variance_json(const VarianceResult& result);

// Why the unscaled Jacobian norm first sits ABOVE the scaled one: a near-uniform row (every
// p ~ 1/n) has a small Jacobian, a row where a few keys share the weight the largest, a one-hot
// row none. When the sweep shows that rise, where it peaks and the last d_k at which the unscaled
// norm is still above the scaled one; empty when the unscaled norm never rises above the first.
struct JacobianRise {
  std::size_t peak_d_k = 0;
  double peak = 0;
  std::size_t last_above_d_k = 0;   // the largest d_k with unscaled > scaled (0: none)
  std::size_t first_below_d_k = 0;  // the next d_k of the sweep, where it is below (0: none in the sweep)
};
std::optional<JacobianRise> jacobian_rise(const VarianceResult& result);
std::string jacobian_rise_sentence(const JacobianRise& rise);

}  // namespace attn
