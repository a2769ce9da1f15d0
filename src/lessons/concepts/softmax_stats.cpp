#include "attn/lessons/concepts/softmax_stats.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "attn/engine/attention/softmax.hpp"

namespace attn {

double max_weight(std::span<const double> p) {
  return p.empty() ? 0.0 : *std::max_element(p.begin(), p.end());
}

double entropy_nats(std::span<const double> p) {
  double h = 0;
  for (double x : p)
    if (x > 0) h -= x * std::log(x);
  return h;
}

double softmax_jacobian_frobenius(std::span<const double> p) {
  // Written out as the matrix diag(p) - p p^T rather than a closed form, so it reads like the
  // derivation: J_ij = p_i (delta_ij - p_j).
  double sum_sq = 0;
  for (std::size_t i = 0; i < p.size(); ++i)
    for (std::size_t j = 0; j < p.size(); ++j) {
      const double J = p[i] * ((i == j ? 1.0 : 0.0) - p[j]);
      sum_sq += J * J;
    }
  return std::sqrt(sum_sq);
}

double softmax_jacobian_frobenius_of_scores(std::span<const double> scores, double factor) {
  double m = -std::numeric_limits<double>::infinity();
  for (double s : scores) m = std::max(m, s * factor);
  std::vector<double> z(scores.size());  // exp(f s - max): the largest is 1, none overflows
  double total = 0;
  for (std::size_t j = 0; j < z.size(); ++j) total += (z[j] = std::exp(scores[j] * factor - m));
  double sum_sq = 0;
  for (std::size_t i = 0; i < z.size(); ++i) {
    double others = 0;  // Z - z_i summed term by term: 1 - p_i = others / Z without cancellation
    for (std::size_t j = 0; j < z.size(); ++j)
      if (j != i) others += z[j];
    for (std::size_t j = 0; j < z.size(); ++j) {
      const double J = i == j ? (z[i] / total) * (others / total) : -(z[i] / total) * (z[j] / total);
      sum_sq += J * J;
    }
  }
  return std::sqrt(sum_sq);
}

std::vector<double> softmax_of(std::span<const double> scores, double factor) {
  std::vector<double> p(scores.size());
  std::transform(scores.begin(), scores.end(), p.begin(), [&](double s) { return s * factor; });
  softmax_row_inplace(p.data(), p.size());
  return p;
}

}  // namespace attn
