#pragma once
// Softmax temperature: p_j(T) = exp(s_j / T) / sum_k exp(s_k / T)   (Hinton et al. 2015, "Distilling the knowledge in a neural network").
//
// A common tutorial says it backwards ("T越大 ... 让高值更多权重": a larger T gives high values MORE
// weight). The truth, which this experiment computes on one row of scores:
//   T -> 0    p -> uniform over the argmax (one-hot when the max is unique), entropy -> ln(#max)
//   T = 1     plain softmax
//   T -> inf  p -> uniform, entropy -> ln n
// and in between the entropy H(T) rises strictly. With beta = 1/T, ln Z = ln sum exp(beta s):
//   H = ln Z - beta E_p[s],  dH/dbeta = -beta Var_p(s),  so  dH/dT = Var_p(s) / T^3 > 0
// unless every score is equal (then p is uniform for every T). dH/dT is reported beside H so
// the sign is a computed fact, not a reading of the table.
#include <vector>

#include "attn/io/json_io.hpp"

namespace attn {

struct TemperaturePoint {
  double temperature = 1;
  std::vector<double> weights;  // softmax(s / T)
  double entropy = 0;           // nats
  double max_weight = 0;
  double entropy_slope = 0;     // dH/dT = Var_p(s) / T^3
};

struct TemperatureResult {
  std::vector<double> scores;
  std::vector<TemperaturePoint> points;  // ascending T
  double entropy_at_zero = 0;            // limit T -> 0: ln(number of scores equal to the max)
  double entropy_at_infinity = 0;        // limit T -> inf: ln n
  bool entropy_increasing = false;       // strictly, from each T to the next
  bool max_weight_decreasing = false;    // strictly, from each T to the next
};

inline const std::vector<double> kDefaultScores = {2.0, 1.0, 0.5, 0.0, -1.0};
inline const std::vector<double> kDefaultTemperatures = {0.1, 0.25, 0.5, 1, 2, 4, 10};

// Temperatures are sorted and deduplicated. Throws InputError for fewer than 2 scores, a score
// outside [-1e6, 1e6] or a temperature outside [0.001, 1e6] (so every printed number is finite).
TemperatureResult run_temperature(const std::vector<double>& scores,
                                  const std::vector<double>& temperatures);

Json temperature_json(const TemperatureResult& result);

}  // namespace attn
