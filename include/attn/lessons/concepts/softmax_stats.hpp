#pragma once
// What a softmax row p (p_j >= 0, sum 1) looks like, in the three numbers the saturation
// argument needs (the vanishing-gradient argument for 1/sqrt(d_k)):
//
//   max weight   max_j p_j                 1/n when uniform, -> 1 when saturated (one-hot)
//   entropy      H(p) = -sum_j p_j ln p_j  in nats; ln n when uniform, -> 0 when one-hot
//   Jacobian     J = d softmax / d s = diag(p) - p p^T   (n x n, symmetric)
//                ||J||_F, the Frobenius norm: sqrt(n-1)/n when uniform, -> 0 when one-hot,
//                which is the "vanishing gradient": every gradient through the row is J^T g.
//                (||J||_2 <= ||J||_F, so a small Frobenius norm bounds the spectral one too.)
#include <span>
#include <vector>

namespace attn {

double max_weight(std::span<const double> p);
double entropy_nats(std::span<const double> p);   // 0 ln 0 taken as 0
double softmax_jacobian_frobenius(std::span<const double> p);
// The same norm for p = softmax(factor * scores), computed from the scores so that it stays exact
// when the largest weight rounds to 1: there 1 - p_i is taken as the sum of the other weights.
double softmax_jacobian_frobenius_of_scores(std::span<const double> scores, double factor = 1.0);

// Softmax of scores * factor in double precision (no masking): the row every experiment
// examines. factor = 1/sqrt(d_k) scales, factor = 1/T applies a temperature T.
std::vector<double> softmax_of(std::span<const double> scores, double factor = 1.0);

}  // namespace attn
