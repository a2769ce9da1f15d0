#pragma once
// Timing training (`attn-cli bench --mode train`, scripts/bench_train.sh): Adam steps of the
// `attn-cli train` model on its own batches, forward + backward + update, timed by run_training
// itself (the held-out scoring between logged points is not counted).
#include <cstddef>

#include "attn/lessons/models/train.hpp"

namespace attn {

struct TrainBenchConfig {
  TrainOptions train;  // steps, threads and backend as given; log_every is set to steps
  std::size_t repeat = 3;
};

struct TrainBenchRun {
  TrainBenchConfig config;
  double median_ms_per_step = 0, min_ms_per_step = 0;
  double steps_per_s = 0;     // from min_ms_per_step
  double flops_per_step = 0;  // train_step_flops
  double gflops = 0;          // flops_per_step / min time
};

// One training step's FLOPs (2 x multiply-adds): the forward's matmuls (every projection and the
// unembedding) and its attention (FlashAttention's rule: 4 B H L^2 d per layer, halved because
// causal), then the backward at twice the matmuls and 2.5 x the attention.
double train_step_flops(const ToyConfig& config, std::size_t batch);

TrainBenchRun run_train_bench(const TrainBenchConfig& config);

}  // namespace attn
