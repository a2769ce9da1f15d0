#include "attn/lessons/concepts/temperature.hpp"

#include <algorithm>
#include <cmath>

#include "attn/engine/core/error.hpp"
#include "attn/lessons/concepts/softmax_stats.hpp"

namespace attn {

TemperatureResult run_temperature(const std::vector<double>& scores,
                                  const std::vector<double>& temperatures) {
  if (scores.size() < 2) throw InputError("--scores: expected at least 2 scores");
  // Bounded so that s / T and Var_p(s) / T^3 stay finite in double precision: no NaN, ever.
  for (double s : scores)
    if (!(std::fabs(s) <= 1e6)) throw InputError("--scores: every score must be a number in [-1e6, 1e6]");
  if (temperatures.empty()) throw InputError("--t: expected at least one temperature");
  for (double t : temperatures)
    if (!(t >= 1e-3 && t <= 1e6)) throw InputError("--t: every temperature must be in [0.001, 1e6]");

  std::vector<double> temps = temperatures;
  std::sort(temps.begin(), temps.end());
  temps.erase(std::unique(temps.begin(), temps.end()), temps.end());

  TemperatureResult r;
  r.scores = scores;
  for (double T : temps) {
    TemperaturePoint p;
    p.temperature = T;
    p.weights = softmax_of(scores, 1.0 / T);
    p.entropy = entropy_nats(p.weights);
    p.max_weight = max_weight(p.weights);
    double mean = 0, second = 0;  // E_p[s], E_p[s^2]
    for (std::size_t j = 0; j < scores.size(); ++j) {
      mean += p.weights[j] * scores[j];
      second += p.weights[j] * scores[j] * scores[j];
    }
    p.entropy_slope = std::max(0.0, second - mean * mean) / (T * T * T);
    r.points.push_back(p);
  }
  const double top = *std::max_element(scores.begin(), scores.end());
  r.entropy_at_zero = std::log(static_cast<double>(std::count(scores.begin(), scores.end(), top)));
  r.entropy_at_infinity = std::log(static_cast<double>(scores.size()));
  r.entropy_increasing = r.max_weight_decreasing = r.points.size() > 1;
  for (std::size_t i = 1; i < r.points.size(); ++i) {
    r.entropy_increasing = r.entropy_increasing && r.points[i].entropy > r.points[i - 1].entropy;
    r.max_weight_decreasing = r.max_weight_decreasing && r.points[i].max_weight < r.points[i - 1].max_weight;
  }
  return r;
}

Json temperature_json(const TemperatureResult& r) {
  Json points = Json::array();
  for (const TemperaturePoint& p : r.points) {
    points.push_back({{"temperature", p.temperature},
                      {"weights", p.weights},
                      {"entropy", p.entropy},
                      {"max_weight", p.max_weight},
                      {"entropy_slope", p.entropy_slope}});
  }
  return {{"scores", r.scores},
          {"points", points},
          {"entropy_at_zero", r.entropy_at_zero},
          {"entropy_at_infinity", r.entropy_at_infinity},
          {"entropy_increasing", r.entropy_increasing},
          {"max_weight_decreasing", r.max_weight_decreasing},
          {"convention", "weights = softmax(scores / T); entropy in nats; entropy_slope = dH/dT = Var_p(s) / T^3"}};
}

}  // namespace attn
