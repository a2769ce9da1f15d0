#pragma once
// Timing decode (`attn-cli bench --mode decode`, scripts/bench_decode.sh): q query rows against
// a KV cache of kv_len positions, beside a plain streaming read of the same K and V bytes in
// the same process -- decode is memory-bound, so the read is its ceiling.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace attn {

struct DecodeBenchConfig {
  std::string backend = "flash";  // "flash" (the engine picks its decode path) or "naive"
  std::string kv_dtype = "f32";   // "f32" or "bf16" (flash only: K and V stored as bfloat16)
  std::size_t kv_len = 4096, queries = 1, heads = 8, kv_heads = 8, head_dim = 64;
  std::size_t threads = 1, repeat = 5;
  bool check = true;  // also run naive on the same inputs and report the max abs error
  std::uint64_t seed = 42;
};

struct DecodeBenchRun {
  DecodeBenchConfig config;
  double median_ms = 0, min_ms = 0;
  std::size_t kv_bytes = 0;      // bytes of K and V read: 2 * kv_heads * kv_len * head_dim * (4 or 2)
  double kv_gbps = 0;            // kv_bytes / min_ms
  double stream_gbps = 0;        // a streaming read of the same K and V, best of the same repeats
  // The repeats in the order they ran, each kernel run followed by a read: their times, and the
  // median (the lower middle) of each read's time over the kernel run's just before it. Best
  // against best (kv_gbps / stream_gbps) can pair one side's fast moment of a shared machine
  // with the other's slow one; each pair sees the same moment (as bench's runs beside an sgemm).
  std::vector<double> run_ms_by_round, stream_ms_by_round;
  double side_by_side_fraction_of_stream = 0;
  double tiled_min_ms = 0;       // flash's tiled (prefill) kernel on the same inputs
  std::size_t peak_rss_bytes = 0;
  std::size_t kv_huge_page_bytes = 0;  // of kv_bytes, those on 2 MiB pages (platform/memory.hpp)
  // Against float64 on the float32 inputs: for a bf16 cache, its rounding and the kernel's.
  std::optional<double> max_abs_err_vs_naive;
  // bf16 only: against float64 on the bf16-rounded K and V, the kernel's arithmetic alone.
  std::optional<double> kernel_err_on_bf16_kv;
};

DecodeBenchRun run_decode_bench(const DecodeBenchConfig& config);

}  // namespace attn
