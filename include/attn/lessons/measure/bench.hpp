#pragma once
// Timing the engine (`attn-cli bench`, scripts/bench.sh). Inputs are seeded random Q, K, V
// built before the clock starts: no JSON parsing inside the timed region.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "attn/engine/core/tensor.hpp"

namespace attn {

struct BenchConfig {
  std::string backend = "flash";  // "naive" | "flash" | "blas" | "cuda"
  // "f32"; for cuda also "f16" or "bf16" (the tensor-core kernel). The cuda backend is timed by
  // CUDA events around each launch, on inputs already on the device. For flash also "bf16"
  // (FlashPrecision::bfloat16), timed alternating with the float32 flash kernel.
  std::string dtype = "f32";
  std::size_t n = 1024, heads = 8, head_dim = 64;
  bool causal = false;
  std::size_t threads = 1;
  std::size_t repeat = 3;
  bool check = true;  // also run naive on the same inputs and report the max abs error
  std::size_t block_q = 0, block_k = 0;
  std::uint64_t seed = 42;
  // > 0: after the timed runs, `repeat` more, each followed by one sgemm sgemm_n^3 on the same
  // threads (SgemmOperands::timed_ms): BenchRun::run_ms and sgemm_ms. Not for the cuda backend or
  // flash in bf16 (timed their own way).
  std::size_t sgemm_n = 0;
  // Time the backward pass instead (naive or flash, float64): dQ, dK, dV for a random dO from
  // a forward run before the clock starts (naive: its weights; flash: its output and lse).
  bool backward = false;
  // flash, float32, not causal: also time the three parts of one of the run's tiles alone
  // (FlashTileParts), `parts_rounds` rounds, and BenchRun::parts.
  bool parts = false;
  std::size_t parts_rounds = 20;
};

// One tile's parts, each the median of its rounds (FlashTileParts; one thread), and what they
// predict for the run: every score of every head costs what a score of the tile did.
struct FlashPartsTiming {
  std::size_t rows = 0, keys = 0, rounds = 0;  // the tile: query rows x keys
  double qk_ms = 0, softmax_ms = 0, pv_ms = 0;
  double qk_gflops = 0, pv_gflops = 0;  // 2 rows keys d FLOPs each
  double predicted_ms = 0;  // (qk + softmax + pv) x H n^2 / (rows keys), over the run's threads
  // The softmax's share of the tile's time, and one score's softmax in multiply-adds of the
  // products (each score takes d + d_v of them) done in the same time.
  double softmax_share = 0, softmax_cost_in_multiply_adds = 0;
};

struct BenchRun {
  BenchConfig config;
  double median_ms = 0, min_ms = 0;
  double flops = 0;   // one run's count by the flops convention (attention_flops, or the backward's)
  double gflops = 0;  // flops / median time
  double min_thread_cpu_ms = 0;  // CPU time of the calling thread (with 1 thread: the work itself)
  std::size_t peak_rss_bytes = 0;      // process peak during the timed runs
  std::size_t baseline_rss_bytes = 0;  // process size with its inputs, before the runs
  std::optional<double> max_abs_err_vs_naive;  // null with check = false
  // flash with dtype bf16 only: the float32 flash kernel's median, timed in the same run with each
  // of its runs before one of the bf16 kernel's; and, with check, the error of the plain bf16
  // computation (sdpa_bf16_reference) against naive: FlashAttention's rule allows the kernel 2x it.
  std::optional<double> f32_median_ms;
  double f32_min_thread_cpu_ms = 0;  // as min_thread_cpu_ms, for that float32 kernel
  std::optional<double> bf16_reference_err;
  // With config.sgemm_n: the runs beside an sgemm, in order, the sgemm timed right after each, and
  // the median over them of run rate / that sgemm's rate, the lower middle for an even count (both
  // sides of each ratio see the same moment of the machine, where best against best may not).
  std::vector<double> run_ms, sgemm_ms;
  std::optional<double> side_by_side_fraction_of_sgemm;
  std::optional<FlashPartsTiming> parts;  // with config.parts
};

// FlashAttention's benchmark rule: 4 * H * n^2 * d, halved when causal.
double attention_flops(std::size_t n, std::size_t heads, std::size_t head_dim, bool causal);

// FlashAttention's rule for the backward pass: 2.5 x the forward's FLOPs (five matmuls of the
// forward's size against two, less the recomputed scores FlashAttention does not count).
double attention_backward_flops(std::size_t n, std::size_t heads, std::size_t head_dim, bool causal);

BenchRun run_bench(const BenchConfig& config);

// OpenBLAS's own sgemm throughput on n x n x n with the given threads (the best of repeat + 1
// runs; the first also warms up):
// the yardstick for the kernel's GFLOP/s.
struct SgemmRate {
  double gflops;             // from the best wall-clock time
  double gflops_thread_cpu;  // from the calling thread's CPU time (1 thread only)
};
SgemmRate sgemm_rate(std::size_t n, std::size_t threads, std::size_t repeat);

// sgemm's seeded n x n operands, kept for repeated products: sgemm_rate's, and the yardstick
// that `bench --mode forward` times between a model's passes.
class SgemmOperands {
 public:
  explicit SgemmOperands(std::size_t n);
  void multiply();  // out = a b, on the threads OpenBLAS was last set to (set_openblas_threads)
  // One product on `threads`, timed (ms). OpenBLAS's workers are stopped after it (idle, they
  // would spin beside whatever is timed next), so it starts them again inside the clock: within
  // the noise of a 2048^3 product. The yardstick timed beside a kernel's runs (`bench --sgemm`,
  // `bench --mode forward`), so that both sides of a ratio see the machine as it is.
  double timed_ms(std::size_t threads);
  double flops() const { return 2.0 * double(n_) * double(n_) * double(n_); }

 private:
  std::size_t n_;
  std::vector<float> a_, b_, out_;
};

// Backend "blas": a float32 matmul - softmax - matmul on BLAS (sgemm, row softmax, sgemm),
// what "naive attention" means in most frameworks, with the full [n, n] scores per head. The
// naive backend is the same computation in float64 (the oracle); this row shows its price.
Tensor3 blas_attention(const Tensor3& q, const Tensor3& k, const Tensor3& v, bool causal);

}  // namespace attn
