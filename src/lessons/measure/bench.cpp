#include "attn/lessons/measure/bench.hpp"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "attn/engine/attention/attention.hpp"
#include "attn/engine/attention/backward.hpp"
#include "attn/engine/attention/cuda.hpp"
#include "attn/engine/core/error.hpp"
#include "attn/engine/attention/flash.hpp"
#include "attn/engine/core/random.hpp"
#include "attn/engine/attention/sdpa.hpp"
#include "attn/engine/attention/softmax.hpp"
#include "attn/engine/platform/machine.hpp"
#include "attn/engine/platform/memory.hpp"
#include "bench_timing.hpp"


namespace attn {
namespace {

using namespace bench_detail;

// With c.sgemm_n, after the timed runs (so that they, their times and memory, are as without
// it): the operands, one untimed sgemm (OpenBLAS's start and buffers), then c.repeat rounds of one
// run and one sgemm, each timed: run.run_ms, run.sgemm_ms and the median of their ratios (the
// lower middle for an even count: the cautious side, as median_ms takes the slower run).
template <class F>
void time_beside_sgemm(const BenchConfig& c, F&& run_once, BenchRun& run) {
  SgemmOperands sgemm(c.sgemm_n);
  sgemm.timed_ms(c.threads);
  std::vector<double> ratios;
  for (std::size_t r = 0; r < c.repeat; ++r) {  // side by side: both see the machine as it is
    run.run_ms.push_back(time_runs(1, run_once).wall_ms[0]);
    run.sgemm_ms.push_back(sgemm.timed_ms(c.threads));
    ratios.push_back(run.sgemm_ms.back() / run.run_ms.back() * run.flops / sgemm.flops());
  }
  run.side_by_side_fraction_of_sgemm = lower_middle(ratios);
}

// One untimed warm-up (first-touch page faults, thread and CUDA start-up), then c.repeat
// timed runs: their times, the process's peak memory during them, and GFLOP/s for `flops`;
// then, with c.sgemm_n, the runs beside an sgemm (time_beside_sgemm).
template <class F>
BenchRun time_bench(const BenchConfig& c, std::size_t baseline, double flops, F&& run_once) {
  run_once();
  reset_peak_rss();
  const Timings t = time_runs(c.repeat, run_once);
  BenchRun run;
  run.config = c;
  run.flops = flops;
  run.peak_rss_bytes = rss_field("VmHWM:");
  run.baseline_rss_bytes = baseline;
  run.min_ms = t.wall_ms.front();
  run.median_ms = t.wall_ms[t.wall_ms.size() / 2];
  run.min_thread_cpu_ms = t.min_thread_cpu_ms;
  run.gflops = flops / (run.median_ms * 1e6);
  if (c.sgemm_n) time_beside_sgemm(c, run_once, run);
  return run;
}

// The backward half of run_bench: inputs and the forward are ready before the clock starts.
BenchRun run_backward_bench(const BenchConfig& c, const Tensor3& q, const Tensor3& k, const Tensor3& v,
                            Rng& rng) {
  if (c.backend != "naive" && c.backend != "flash")
    throw InputError("--backward: backend " + c.backend + " has no backward pass; use naive or flash");
  const Tensor3 dO = random_tensor(rng, c.heads, c.n, c.head_dim);
  SdpaOptions so;
  so.causal = c.causal;
  BackendOptions b;  // float64 inside, as attend's and mha's gradients
  b.backend = parse_backend(c.backend);
  b.threads = c.threads;
  b.block_q = c.block_q;
  b.block_k = c.block_k;
  b.precision = FlashPrecision::float64;
  // What each backward reads from its forward: the naive one the stored [H, n, n] weights,
  // the flash one only the output and the lse.
  const SdpaResult forward = attention(q, k, v, nullptr, so, b, /*with_weights=*/false);

  SdpaGradients g;
  const std::size_t before = baseline_rss();  // the forward's kept memory is not the backward's
  auto run_once = [&] {
    g = SdpaGradients();
    g = attention_backward(q, k, v, nullptr, forward, dO, so, b);
  };
  BenchRun run = time_bench(c, before, attention_backward_flops(c.n, c.heads, c.head_dim, c.causal), run_once);
  if (c.check) {  // the largest error of dQ, dK, dV against the naive backward
    const SdpaGradients ref = b.backend == Backend::naive ? g : attention_backward(q, k, v, nullptr, dO, so, {});
    run.max_abs_err_vs_naive = std::max({max_abs_diff(g.grad_q, ref.grad_q), max_abs_diff(g.grad_k, ref.grad_k),
                                         max_abs_diff(g.grad_v, ref.grad_v)});
  }
  return run;
}

// The cuda backend: one checked run (copies in, rounding, kernel, copies out), then c.repeat
// launches on the inputs already on the device, each timed by CUDA events. Host-side time
// would count the PCIe copies, which are larger than the kernel.
BenchRun run_cuda_bench(const BenchConfig& c, CudaDtype dtype, const Tensor3& q, const Tensor3& k, const Tensor3& v) {
  FlashOptions fo;
  fo.causal = c.causal;
  CudaOptions co;
  co.dtype = dtype;
  co.timed_runs = c.repeat;
  std::vector<double> ms;
  const std::size_t before = baseline_rss();
  const FlashResult f = flash_attention_cuda(q, k, v, nullptr, fo, co, &ms);
  std::sort(ms.begin(), ms.end());
  BenchRun run;
  run.config = c;
  run.min_ms = ms.front();
  run.median_ms = ms[ms.size() / 2];
  run.flops = attention_flops(c.n, c.heads, c.head_dim, c.causal);
  run.gflops = run.flops / (run.median_ms * 1e6);
  run.peak_rss_bytes = rss_field("VmHWM:");
  run.baseline_rss_bytes = before;
  if (c.check) {
    SdpaOptions so;
    so.causal = c.causal;
    run.max_abs_err_vs_naive = max_abs_diff(f.output, attention(q, k, v, nullptr, so).output);
  }
  return run;
}

// flash in bfloat16 (FlashPrecision::bfloat16) against flash in float32, in one run: a warm-up of
// each, then c.repeat rounds of one float32 run and one bfloat16 run, so that both see the same
// machine (another process, the clock) and their ratio is fair. The run's figures are the bf16
// kernel's; f32_median_ms the float32 one's.
BenchRun run_flash_bf16_bench(const BenchConfig& c, const Tensor3& q, const Tensor3& k, const Tensor3& v) {
  BackendOptions bf16;
  bf16.backend = Backend::flash;
  bf16.precision = FlashPrecision::bfloat16;
  bf16.threads = c.threads;
  bf16.block_q = c.block_q;
  bf16.block_k = c.block_k;
  BackendOptions f32 = bf16;
  f32.precision = FlashPrecision::float32;
  SdpaOptions so;
  so.causal = c.causal;
  Tensor3 output;
  auto run_once = [&](const BackendOptions& b) {
    output = Tensor3();
    output = attention(q, k, v, nullptr, so, b, /*with_weights=*/false).output;
  };
  const std::size_t before = baseline_rss();
  run_once(f32);
  run_once(bf16);
  reset_peak_rss();
  std::vector<double> f32_ms, bf16_ms;
  double cpu_ms = INFINITY, f32_cpu_ms = INFINITY;
  for (std::size_t i = 0; i < c.repeat; ++i) {
    const Timings t32 = time_runs(1, [&] { run_once(f32); });
    f32_ms.push_back(t32.wall_ms.front());
    f32_cpu_ms = std::min(f32_cpu_ms, t32.min_thread_cpu_ms);
    const Timings t = time_runs(1, [&] { run_once(bf16); });
    bf16_ms.push_back(t.wall_ms.front());
    cpu_ms = std::min(cpu_ms, t.min_thread_cpu_ms);
  }
  std::sort(f32_ms.begin(), f32_ms.end());
  std::sort(bf16_ms.begin(), bf16_ms.end());
  BenchRun run;
  run.config = c;
  run.flops = attention_flops(c.n, c.heads, c.head_dim, c.causal);
  run.min_ms = bf16_ms.front();
  run.median_ms = bf16_ms[bf16_ms.size() / 2];
  run.gflops = run.flops / (run.median_ms * 1e6);
  run.min_thread_cpu_ms = cpu_ms;
  run.peak_rss_bytes = rss_field("VmHWM:");
  run.baseline_rss_bytes = before;
  run.f32_median_ms = f32_ms[f32_ms.size() / 2];
  run.f32_min_thread_cpu_ms = f32_cpu_ms;
  if (c.check) {  // the rule's two errors against the float64 oracle
    const Tensor3 ref = attention(q, k, v, nullptr, so).output;
    run.max_abs_err_vs_naive = max_abs_diff(output, ref);
    run.bf16_reference_err = max_abs_diff(sdpa_bf16_reference(q, k, v, nullptr, c.causal), ref);
  }
  return run;
}

// The parts of one tile of the run, rounds of scores, softmax and accumulate from a restart,
// each part timed alone, in the order the tile loop runs them, so that each finds the caches as
// the one before left them. Each part's median over the rounds, not its fastest: the run's
// tiles meet the caches as a typical round does (on a Zen 3 EPYC, Q K^T took 0.207 ms in half
// the rounds and 0.22-0.25 ms in the others, and the sum of the fastest rounds sat 4 % under
// the fastest run's tiles).
FlashPartsTiming time_flash_parts(const BenchConfig& c) {
  FlashOptions fo;
  fo.block_q = c.block_q, fo.block_k = c.block_k;
  FlashTileParts tile(c.n, c.head_dim, fo);
  FlashPartsTiming t;
  t.rows = tile.rows(), t.keys = tile.keys(), t.rounds = c.parts_rounds;
  std::vector<double> qk, softmax, pv;
  auto ms = [](auto&& part) {  // wall time alone: a few microseconds matter for small tiles
    const auto t0 = Clock::now();
    part();
    return ms_since(t0);
  };
  for (std::size_t r = 0; r < c.parts_rounds; ++r) {
    tile.restart();
    qk.push_back(ms([&] { tile.scores(); }));
    softmax.push_back(ms([&] { tile.softmax(); }));
    pv.push_back(ms([&] { tile.accumulate(); }));
  }
  t.qk_ms = median_of(qk), t.softmax_ms = median_of(softmax), t.pv_ms = median_of(pv);
  const double scores = double(t.rows) * double(t.keys), products = 2 * scores * double(c.head_dim);
  t.qk_gflops = products / (t.qk_ms * 1e6);
  t.pv_gflops = products / (t.pv_ms * 1e6);
  const double tile_ms = t.qk_ms + t.softmax_ms + t.pv_ms;
  t.predicted_ms = tile_ms * double(c.heads) * double(c.n) * double(c.n) / scores / double(c.threads);
  t.softmax_share = t.softmax_ms / tile_ms;
  t.softmax_cost_in_multiply_adds = t.softmax_ms / (t.qk_ms + t.pv_ms) * 2 * double(c.head_dim);
  return t;
}

}  // namespace

double attention_backward_flops(std::size_t n, std::size_t heads, std::size_t head_dim, bool causal) {
  return 2.5 * attention_flops(n, heads, head_dim, causal);
}

double attention_flops(std::size_t n, std::size_t heads, std::size_t head_dim, bool causal) {
  const double f = 4.0 * double(heads) * double(n) * double(n) * double(head_dim);
  return causal ? f / 2 : f;
}

BenchRun run_bench(const BenchConfig& c) {
  if (c.backend != "naive" && c.backend != "flash" && c.backend != "blas" && c.backend != "cuda")
    throw InputError("--backend: expected naive, flash, blas or cuda, got " + c.backend);
  std::string why;
  if (c.backend == "cuda" && !cuda_usable(&why)) throw InputError("--backend cuda: " + why);
  if (c.n == 0 || c.heads == 0 || c.head_dim == 0 || c.repeat == 0 || c.threads == 0)
    throw InputError("--n, --heads, --head-dim, --repeat and --threads must be >= 1");
  const bool flash_bf16 = c.backend == "flash" && c.dtype == "bf16";
  if (c.dtype != "f32" && c.backend != "cuda" && !flash_bf16)
    throw InputError("--dtype " + c.dtype + ": on the CPU only the flash backend computes in bf16 (the cuda backend in " +
                     "f16 and bf16); use --dtype f32 or --backend flash");
  if (flash_bf16 && c.backward) throw InputError("--dtype bf16: the flash backend times the forward pass only in bf16");
  if (c.parts && (c.backend != "flash" || c.dtype != "f32" || c.causal || c.backward))
    throw InputError("--parts: times the tiles of float32 flash's forward pass without a causal mask; use it with "
                     "--backend flash and --dtype f32, without --causal or --backward");
  if (c.parts && c.parts_rounds == 0) throw InputError("--parts: expected at least one round");
  const CudaDtype cuda_dtype = parse_cuda_dtype(c.dtype);
  Rng rng(c.seed);
  const Tensor3 q = random_tensor(rng, c.heads, c.n, c.head_dim), k = random_tensor(rng, c.heads, c.n, c.head_dim),
                v = random_tensor(rng, c.heads, c.n, c.head_dim);
  set_openblas_threads(c.threads);  // its workers stay stopped until a BLAS call needs them
  if (c.backward) return run_backward_bench(c, q, k, v, rng);
  if (c.backend == "cuda") return run_cuda_bench(c, cuda_dtype, q, k, v);
  if (flash_bf16) return run_flash_bf16_bench(c, q, k, v);
  BackendOptions backend;  // the kernel bench times: float32, no weights recomputed
  if (c.backend != "blas") backend.backend = parse_backend(c.backend);
  backend.precision = FlashPrecision::float32;
  backend.threads = c.threads;
  backend.block_q = c.block_q;
  backend.block_k = c.block_k;
  SdpaOptions so;
  so.causal = c.causal;

  Tensor3 output;
  const std::size_t before = baseline_rss();  // the process with its inputs, before any run
  auto run_once = [&] {
    output = Tensor3();  // free the previous run's output first: peak memory is one run's
    if (c.backend == "blas") {
      output = blas_attention(q, k, v, c.causal);
    } else {
      output = attention(q, k, v, nullptr, so, backend, /*with_weights=*/false).output;
    }
  };
  BenchRun run = time_bench(c, before, attention_flops(c.n, c.heads, c.head_dim, c.causal), run_once);
  if (c.check) {
    const Tensor3 ref = c.backend == "naive" ? output : attention(q, k, v, nullptr, so).output;
    run.max_abs_err_vs_naive = max_abs_diff(output, ref);
  }
  if (c.parts) run.parts = time_flash_parts(c);
  return run;
}

// On 2 MiB pages where Linux offers them, as flash's inputs are (random_tensor).
SgemmOperands::SgemmOperands(std::size_t n)
    : n_(n), a_(huge_page_vector<float>(n * n)), b_(huge_page_vector<float>(n * n)),
      out_(huge_page_vector<float>(n * n)) {
  Rng rng(1);
  for (float& x : a_) x = float(rng.normal());
  for (float& x : b_) x = float(rng.normal());
}

void SgemmOperands::multiply() {
  const int N = int(n_);
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, N, N, 1.0f, a_.data(), N, b_.data(), N, 0.0f,
              out_.data(), N);
}

double SgemmOperands::timed_ms(std::size_t threads) {
  set_openblas_threads(threads);
  const double ms = time_runs(1, [&] { multiply(); }).wall_ms[0];
  rest_openblas_threads();
  return ms;
}

SgemmRate sgemm_rate(std::size_t n, std::size_t threads, std::size_t repeat) {
  SgemmOperands operands(n);
  set_openblas_threads(threads);  // its workers stay stopped until a BLAS call needs them
  const Timings t = time_runs(repeat + 1, [&] { operands.multiply(); });
  rest_openblas_threads();  // idle, its workers would spin beside whatever is timed next
  return {operands.flops() / (t.wall_ms.front() * 1e6), operands.flops() / (t.min_thread_cpu_ms * 1e6)};
}

Tensor3 blas_attention(const Tensor3& q, const Tensor3& k, const Tensor3& v, bool causal) {
  const std::size_t H = q.shape(0), n = q.shape(1), d = q.shape(2);
  const int N = int(n), D = int(d);
  const float scale = float(resolved_scale(std::nullopt, d));
  std::vector<float> s(n * n);
  Tensor3 o = Tensor3::from_shape({H, n, d});
  for (std::size_t h = 0; h < H; ++h) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, N, N, D, scale, q.data() + h * n * d, D,
                k.data() + h * n * d, D, 0.0f, s.data(), N);
    for (std::size_t i = 0; i < n; ++i) {
      if (causal) std::fill(s.data() + i * n + i + 1, s.data() + (i + 1) * n, -INFINITY);
      softmax_row_inplace(s.data() + i * n, n);
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, D, N, 1.0f, s.data(), N, v.data() + h * n * d, D,
                0.0f, o.data() + h * n * d, D);
  }
  return o;
}

}  // namespace attn
