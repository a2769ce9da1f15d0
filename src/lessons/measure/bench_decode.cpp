#include "attn/lessons/measure/bench_decode.hpp"

#include <algorithm>
#include <functional>
#include <vector>

#include "attn/engine/attention/attention.hpp"
#include "attn/engine/core/bf16.hpp"
#include "attn/engine/core/error.hpp"
#include "attn/engine/attention/flash.hpp"
#include "attn/engine/platform/machine.hpp"
#include "attn/engine/platform/memory.hpp"
#include "bench_timing.hpp"


namespace attn {

using namespace bench_detail;

namespace {

// InputError for a shape, type or count bench --mode decode cannot run.
void check_decode_bench_config(const DecodeBenchConfig& c) {
  if (c.backend != "flash" && c.backend != "naive")
    throw InputError("--mode decode: --backend must be flash or naive, got " + c.backend);
  if (c.kv_len == 0 || c.queries == 0 || c.heads == 0 || c.kv_heads == 0 || c.head_dim == 0 || c.repeat == 0)
    throw InputError("--kv, --queries, --heads, --kv-heads, --head-dim and --repeat must be >= 1");
  if (c.heads % c.kv_heads != 0)
    throw InputError("--heads " + std::to_string(c.heads) + " must be a multiple of --kv-heads " +
                     std::to_string(c.kv_heads));
  if (c.kv_dtype != "f32" && c.kv_dtype != "bf16") throw InputError("--kv-dtype: expected f32 or bf16, got " + c.kv_dtype);
  if (c.kv_dtype == "bf16" && c.backend != "flash")
    throw InputError("--kv-dtype bf16: only the flash decode path keeps a bfloat16 cache; drop --backend " + c.backend);
  if (c.queries > c.kv_len)
    throw InputError("--queries " + std::to_string(c.queries) + " must be at most the cache length " +
                     std::to_string(c.kv_len));
}

}  // namespace

DecodeBenchRun run_decode_bench(const DecodeBenchConfig& c) {
  check_decode_bench_config(c);
  hand_back_kept_memory();  // the peak below is this run's, not an earlier run's freed cache
  Rng rng(c.seed);
  const Tensor3 q = random_tensor(rng, c.heads, c.queries, c.head_dim),
                k = random_tensor(rng, c.kv_heads, c.kv_len, c.head_dim),
                v = random_tensor(rng, c.kv_heads, c.kv_len, c.head_dim);
  const bool bf16 = c.kv_dtype == "bf16";
  const Bf16Tensor3 k16 = bf16 ? to_bf16(k) : Bf16Tensor3{}, v16 = bf16 ? to_bf16(v) : Bf16Tensor3{};
  set_openblas_threads(c.threads);  // its workers stay stopped until a BLAS call needs them
  BackendOptions backend;
  backend.backend = parse_backend(c.backend);
  backend.precision = FlashPrecision::float32;
  backend.threads = c.threads;
  FlashOptions flash;
  flash.threads = c.threads;
  Tensor3 output;
  auto run_with = [&](const BackendOptions& b) {
    return [&, b] { output = attention(q, k, v, nullptr, SdpaOptions{}, b, /*with_weights=*/false).output; };
  };
  auto run_bf16 = [&] { output = flash_decode_bf16(q, k16, v16, nullptr, flash).output; };
  std::function<void()> run_kernel = bf16 ? std::function<void()>(run_bf16) : std::function<void()>(run_with(backend));
  volatile double sink = 0;  // the read's sum is kept, so it cannot be optimised away
  // The same bytes the kernel reads: for bf16, its 2-byte values read as 4-byte floats.
  const float* ka = bf16 ? reinterpret_cast<const float*>(k16.bits.data()) : k.data();
  const float* va = bf16 ? reinterpret_cast<const float*>(v16.bits.data()) : v.data();
  const std::size_t kn = bf16 ? k16.bits.size() / 2 : k.size(), vn = bf16 ? v16.bits.size() / 2 : v.size();
  auto stream = [&] { sink = sink + stream_read(ka, kn, va, vn, c.threads); };

  DecodeBenchRun run;
  run.config = c;
  run.kv_bytes = bf16 ? (k16.bits.size() + v16.bits.size()) * 2 : (k.size() + v.size()) * sizeof(float);
  // Interleaved, one untimed warm-up each: the kernel and the read see the same caches.
  run_kernel();
  stream();
  reset_peak_rss();
  for (std::size_t r = 0; r < c.repeat; ++r) {
    run.run_ms_by_round.push_back(time_runs(1, run_kernel).wall_ms[0]);
    run.stream_ms_by_round.push_back(time_runs(1, stream).wall_ms[0]);
  }
  run.peak_rss_bytes = rss_field("VmHWM:");
  run.kv_huge_page_bytes = huge_page_bytes(ka, kn * sizeof(float)) + huge_page_bytes(va, vn * sizeof(float));
  std::vector<double> beside;  // each read's time over the run's just before it: the same bytes
  for (std::size_t r = 0; r < c.repeat; ++r) beside.push_back(run.stream_ms_by_round[r] / run.run_ms_by_round[r]);
  run.side_by_side_fraction_of_stream = lower_middle(beside);
  run.min_ms = *std::min_element(run.run_ms_by_round.begin(), run.run_ms_by_round.end());
  run.median_ms = median_of(run.run_ms_by_round);
  run.kv_gbps = double(run.kv_bytes) / (run.min_ms * 1e6);
  const double best_read_ms = *std::min_element(run.stream_ms_by_round.begin(), run.stream_ms_by_round.end());
  run.stream_gbps = double(run.kv_bytes) / (best_read_ms * 1e6);
  const Tensor3 result = output;
  if (c.backend == "flash") {  // the tiled kernel on the same inputs: explicit tiles keep it
    BackendOptions tiled = backend;
    tiled.block_q = flash_default_block_q();
    tiled.block_k = flash_default_block_k();
    run.tiled_min_ms = time_runs(c.repeat, run_with(tiled)).wall_ms.front();
  }
  if (c.check) {
    const Tensor3 ref = attention(q, k, v, nullptr, SdpaOptions{}, BackendOptions{}, false).output;
    run.max_abs_err_vs_naive = max_abs_diff(result, ref);
    if (bf16) {
      const Tensor3 ref16 = attention(q, from_bf16(k16), from_bf16(v16), nullptr, {}, BackendOptions{}, false).output;
      run.kernel_err_on_bf16_kv = max_abs_diff(result, ref16);
    }
  }
  return run;
}

}  // namespace attn
