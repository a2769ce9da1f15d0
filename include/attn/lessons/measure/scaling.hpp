#pragma once
// Measured, not predicted: time the reference engine (attn::sdpa, sdpa.hpp) on seeded random
// Q, K, V of one head over a list of sequence lengths, and fit the exponent p of time ~ c n^p
// by least squares on log-log axes. The counts in complexity.hpp predict p -> 2 for large n
// (the n^2 d products and the n^2 softmax dominate); for small n the O(n d) parts and fixed
// overheads pull the fit below 2.
#include <cstdint>
#include <vector>

#include "attn/io/json_io.hpp"

namespace attn {

struct TimingPoint {
  std::size_t n = 0;
  double median_ms = 0, min_ms = 0;
};

struct ScalingMeasurement {
  std::size_t head_dim = 0, repeats = 0;
  std::vector<TimingPoint> points;
  double exponent = 0;           // fitted on the fastest run per n: other processes on the
                                 // machine only ever add time, so the minimum is the least noisy
  double predicted_exponent = 2;
};

// Slope of the least-squares line through (ln x, ln y). Throws InputError with fewer than two
// distinct x or a value <= 0.
double fit_loglog_slope(const std::vector<double>& x, const std::vector<double>& y);

// Throws InputError for fewer than two lengths, n > 8192 (the reference stores n^2 doubles),
// head_dim or repeats of 0.
ScalingMeasurement measure_sdpa_scaling(const std::vector<std::size_t>& ns, std::size_t head_dim,
                                        std::size_t repeats, std::uint64_t seed);

Json scaling_json(const ScalingMeasurement& m);

}  // namespace attn
