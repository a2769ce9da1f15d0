#pragma once
// The roofline model (Williams, Waterman and Patterson 2009) measured on this machine: a kernel
// that does F FLOPs while moving B bytes has arithmetic intensity I = F / B, and can run no
// faster than min(peak, bandwidth x I). Below the ridge point I* = peak / bandwidth it waits on
// memory; above it, on the arithmetic units.
//
// Both ceilings are measured in this run: the peak is OpenBLAS's sgemm (2048^3, bench.hpp), the
// bandwidth a plain streaming read of the largest KV cache (bench_decode.hpp). The points are
// the engine's own float32 flash kernel (and, asked for, its bfloat16 one): prefill (n queries against n keys: I grows with n, so
// it is compute-bound) and decode (one query against a KV cache of L positions: every key and
// value is read for 4 d FLOPs, I = 0.5 FLOP/byte for MHA, and GQA's shared K/V multiply it by
// the query heads per KV head -- fewer bytes, not fewer FLOPs).
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "attn/io/json_io.hpp"

namespace attn {

struct RooflineConfig {
  std::vector<std::size_t> prefill_ns = {512, 1024, 2048, 4096};
  std::vector<std::size_t> kv_lens = {1024, 4096, 16384};
  std::size_t heads = 8, head_dim = 64, gqa_kv_heads = 1;  // decode runs MHA and GQA heads:gqa_kv_heads
  std::size_t sgemm_n = 2048;
  std::size_t threads = 1, repeat = 3;
  bool bf16 = false;  // also each prefill length with bfloat16 products (bench --dtype bf16)
  std::uint64_t seed = 42;
  std::function<void(const std::string&)> progress;  // called before each measurement
};

struct RooflinePoint {
  std::string kind;   // "prefill" | "decode"
  std::string label;  // "n = 512", "n = 512 bf16", "L = 4096 MHA", "L = 4096 GQA 8:1"
  std::string dtype = "f32";  // the products' type: "f32", or "bf16" (prefill with --bf16)
  std::size_t size = 0, kv_heads = 0;
  double flops = 0, bytes = 0, intensity = 0;  // FLOP, byte, FLOP/byte
  double min_ms = 0, gflops = 0;
  double roof_gflops = 0;  // min(peak, bandwidth x intensity)
  bool memory_bound = false;  // intensity below the ridge point
};

struct RooflineResult {
  RooflineConfig config;
  double peak_gflops = 0;  // sgemm
  double bandwidth_gbps = 0;  // streaming read of the largest cache (GB/s = 1e9 bytes/s)
  std::size_t bandwidth_bytes = 0;  // how many bytes that read streamed
  double ridge = 0;  // FLOP/byte where the two roofs meet
  std::vector<RooflinePoint> points;
};

// FLOPs and bytes of one point, the rules RooflineResult's JSON states: prefill F = 4 H n^2 d,
// B = 4 x H n d x 4 (Q, K, V read and O written once); decode F = 4 H L d, B = 2 Hkv L d x 4
// (K and V) + 2 H d x 4 (q and o).
RooflinePoint prefill_point(std::size_t n, std::size_t heads, std::size_t head_dim);
RooflinePoint decode_point(std::size_t kv_len, std::size_t heads, std::size_t kv_heads, std::size_t head_dim);

// Seconds the measurements take at least, at kFlopsPerSecond-like conservative rates (for the
// time budget): the sgemm and every prefill point's FLOPs, repeat + 1 times each.
double roofline_flops(const RooflineConfig& config);

void check_roofline_config(const RooflineConfig& config);
RooflineResult run_roofline(const RooflineConfig& config);

// Per point, computed: which side of the ridge its intensity lies on (compute- or memory-bound),
// and what fraction of that roof it reaches; points under half their roof are said to be held
// back by the kernel, not by a wall.
std::string roofline_caption(const RooflineResult& result);

Json roofline_json(const RooflineResult& result);

}  // namespace attn
