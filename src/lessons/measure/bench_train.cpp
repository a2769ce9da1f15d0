// `attn-cli bench --mode train` as a library call (bench_train.hpp).
#include "attn/lessons/measure/bench_train.hpp"

#include <algorithm>
#include <vector>

namespace attn {

double train_step_flops(const ToyConfig& c, std::size_t batch) {
  const double B = double(batch), L = double(c.context), D = double(c.d_model), layers = double(c.layers);
  const double d = D / double(c.heads);
  const double matmuls = 2 * B * L * (layers * 4 * D * D + double(c.vocab) * D);
  const double attention = layers * 4 * B * double(c.heads) * L * L * d / 2;
  return 3 * matmuls + 3.5 * attention;
}

TrainBenchRun run_train_bench(const TrainBenchConfig& config) {
  TrainOptions o = config.train;
  o.log_every = o.steps;
  o.timing = true;
  std::vector<double> ms;
  for (std::size_t r = 0; r < config.repeat; ++r) {
    const TrainRun run = run_training(o);
    ms.push_back(run.points.back().seconds * 1e3 / double(o.steps));
  }
  std::sort(ms.begin(), ms.end());
  TrainBenchRun out;
  out.config = config;
  out.config.train = o;
  out.median_ms_per_step = ms[ms.size() / 2];
  out.min_ms_per_step = ms.front();
  out.steps_per_s = 1e3 / out.min_ms_per_step;
  out.flops_per_step = train_step_flops(o.config, o.batch);
  out.gflops = out.flops_per_step / (out.min_ms_per_step * 1e6);
  return out;
}

}  // namespace attn
