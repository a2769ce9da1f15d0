#include "attn/lessons/measure/scaling.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <set>

#include "attn/engine/core/error.hpp"
#include "attn/engine/core/random.hpp"
#include "attn/engine/attention/attention.hpp"

namespace attn {

double fit_loglog_slope(const std::vector<double>& x, const std::vector<double>& y) {
  if (x.size() != y.size() || std::set<double>(x.begin(), x.end()).size() < 2) {
    throw InputError("a log-log fit needs at least two distinct points");
  }
  double mx = 0, my = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (!(x[i] > 0) || !(y[i] > 0)) throw InputError("a log-log fit needs positive values");
    mx += std::log(x[i]);
    my += std::log(y[i]);
  }
  mx /= double(x.size());
  my /= double(x.size());
  double sxy = 0, sxx = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double dx = std::log(x[i]) - mx;
    sxy += dx * (std::log(y[i]) - my);
    sxx += dx * dx;
  }
  return sxy / sxx;
}

ScalingMeasurement measure_sdpa_scaling(const std::vector<std::size_t>& ns, std::size_t head_dim,
                                        std::size_t repeats, std::uint64_t seed) {
  if (std::set<std::size_t>(ns.begin(), ns.end()).size() < 2)
    throw InputError("--measure-n: expected at least two different lengths");
  for (std::size_t n : ns)
    if (n == 0 || n > 8192) throw InputError("--measure-n: each length must be in 1..8192");
  if (head_dim == 0 || repeats == 0) throw InputError("--repeat and the head dim must be >= 1");

  ScalingMeasurement m;
  m.head_dim = head_dim;
  m.repeats = repeats;
  Rng rng(seed);
  auto random_head = [&](std::size_t n) {  // [1, n, d] with N(0,1) entries
    Tensor3 t = Tensor3::from_shape({1, n, head_dim});
    for (float& x : t) x = static_cast<float>(rng.normal());
    return t;
  };
  for (std::size_t n : ns) {
    const Tensor3 q = random_head(n), k = random_head(n), v = random_head(n);
    std::vector<double> ms;
    for (std::size_t r = 0; r < repeats; ++r) {
      const auto start = std::chrono::steady_clock::now();
      const SdpaResult out = attention(q, k, v);
      const auto stop = std::chrono::steady_clock::now();
      ms.push_back(std::chrono::duration<double, std::milli>(stop - start).count());
      if (out.output.size() == 0) throw RuntimeError("sdpa returned nothing");  // keep the call
    }
    std::sort(ms.begin(), ms.end());
    const std::size_t mid = ms.size() / 2;
    const double median = ms.size() % 2 ? ms[mid] : (ms[mid - 1] + ms[mid]) / 2;
    m.points.push_back({n, median, ms.front()});
  }
  std::vector<double> x, y;
  for (const TimingPoint& p : m.points) {
    x.push_back(double(p.n));
    y.push_back(std::max(p.min_ms, 1e-6));  // a timer tick of 0 would break the log
  }
  m.exponent = fit_loglog_slope(x, y);
  return m;
}

Json scaling_json(const ScalingMeasurement& m) {
  Json points = Json::array();
  for (const TimingPoint& p : m.points)
    points.push_back({{"n", p.n}, {"median_ms", p.median_ms}, {"min_ms", p.min_ms}});
  return {{"engine", "attn::sdpa (float64 reference, BLAS dgemm), 1 head, no mask"},
          {"head_dim", m.head_dim},
          {"repeats", m.repeats},
          {"points", points},
          {"fitted_exponent", m.exponent},
          {"predicted_exponent", m.predicted_exponent},
          {"fit", "least squares of ln(min_ms) on ln(n)"}};
}

}  // namespace attn
