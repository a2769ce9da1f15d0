#include "attn/lessons/measure/roofline.hpp"

#include <algorithm>
#include <cmath>

#include "attn/engine/attention/flash.hpp"
#include "attn/engine/core/error.hpp"
#include "attn/lessons/measure/bench.hpp"
#include "attn/lessons/measure/bench_decode.hpp"
#include "attn/io/number_format.hpp"

namespace attn {
namespace {

constexpr double kFloat = 4;  // bytes per float32

void finish(RooflinePoint& p, const RooflineResult& r) {
  p.intensity = p.flops / p.bytes;
  p.gflops = p.flops / (p.min_ms * 1e6);
  p.roof_gflops = std::min(r.peak_gflops, r.bandwidth_gbps * p.intensity);
  p.memory_bound = p.intensity < r.ridge;
}

}  // namespace

RooflinePoint prefill_point(std::size_t n, std::size_t H, std::size_t d) {
  RooflinePoint p;
  p.kind = "prefill";
  p.label = "n = " + std::to_string(n);
  p.size = n;
  p.kv_heads = H;
  p.flops = 4.0 * double(H) * double(n) * double(n) * double(d);
  p.bytes = 4.0 * double(H) * double(n) * double(d) * kFloat;
  p.intensity = p.flops / p.bytes;
  return p;
}

RooflinePoint decode_point(std::size_t L, std::size_t H, std::size_t Hkv, std::size_t d) {
  RooflinePoint p;
  p.kind = "decode";
  p.label = "L = " + std::to_string(L) + (Hkv == H ? " MHA" : " GQA " + std::to_string(H / Hkv) + ":1");
  p.size = L;
  p.kv_heads = Hkv;
  p.flops = 4.0 * double(H) * double(L) * double(d);
  p.bytes = (2.0 * double(Hkv) * double(L) * double(d) + 2.0 * double(H) * double(d)) * kFloat;
  p.intensity = p.flops / p.bytes;
  return p;
}

double roofline_flops(const RooflineConfig& c) {
  double f = 2.0 * std::pow(double(c.sgemm_n), 3);
  // A bfloat16 point times the float32 kernel beside it again (bench --dtype bf16): 3 runs a length.
  for (std::size_t n : c.prefill_ns) f += prefill_point(n, c.heads, c.head_dim).flops * (c.bf16 ? 3 : 1);
  return f * double(c.repeat + 1);
}

void check_roofline_config(const RooflineConfig& c) {
  if (c.prefill_ns.empty() && c.kv_lens.empty()) throw InputError("--n and --kv: nothing to measure");
  for (std::size_t n : c.prefill_ns)
    if (n == 0 || n > 65536) throw InputError("--n: expected 1 to 65536, got " + std::to_string(n));
  for (std::size_t L : c.kv_lens)
    if (L == 0 || L > 1048576) throw InputError("--kv: expected 1 to 1048576, got " + std::to_string(L));
  if (c.heads == 0 || c.head_dim == 0) throw InputError("--heads and --head-dim must be at least 1");
  if (c.gqa_kv_heads == 0 || c.heads % c.gqa_kv_heads != 0) {
    throw InputError("--gqa-kv-heads: " + std::to_string(c.gqa_kv_heads) + " does not divide --heads " +
                     std::to_string(c.heads));
  }
}

RooflineResult run_roofline(const RooflineConfig& c) {
  check_roofline_config(c);
  RooflineResult r;
  r.config = c;
  auto say = [&](const std::string& what) {
    if (c.progress) c.progress(what);
  };
  say("sgemm " + std::to_string(c.sgemm_n) + "^3");
  r.peak_gflops = sgemm_rate(c.sgemm_n, c.threads, c.repeat).gflops;

  // Decode first: the largest MHA cache's streaming read is the bandwidth roof.
  std::vector<RooflinePoint> decode;
  std::vector<std::size_t> kv_heads = {c.heads};
  if (c.gqa_kv_heads != c.heads) kv_heads.push_back(c.gqa_kv_heads);
  for (std::size_t Hkv : kv_heads) {
    for (std::size_t L : c.kv_lens) {
      RooflinePoint p = decode_point(L, c.heads, Hkv, c.head_dim);
      say("decode " + p.label);
      DecodeBenchConfig dc;
      dc.kv_len = L;
      dc.heads = c.heads;
      dc.kv_heads = Hkv;
      dc.head_dim = c.head_dim;
      dc.threads = c.threads;
      dc.repeat = std::max<std::size_t>(c.repeat, 3);
      dc.check = false;
      dc.seed = c.seed;
      const DecodeBenchRun run = run_decode_bench(dc);
      p.min_ms = run.min_ms;
      if (run.kv_bytes >= r.bandwidth_bytes) {
        r.bandwidth_bytes = run.kv_bytes;
        r.bandwidth_gbps = run.stream_gbps;
      }
      decode.push_back(p);
    }
  }
  if (decode.empty()) {  // no --kv: a streaming read of 64 MiB for the bandwidth all the same
    DecodeBenchConfig dc;
    dc.kv_len = 16384;
    dc.heads = dc.kv_heads = 8;
    dc.threads = c.threads;
    dc.check = false;
    const DecodeBenchRun run = run_decode_bench(dc);
    r.bandwidth_bytes = run.kv_bytes;
    r.bandwidth_gbps = run.stream_gbps;
  }
  r.ridge = r.peak_gflops / r.bandwidth_gbps;

  std::vector<std::string> dtypes{"f32"};
  if (c.bf16) dtypes.push_back("bf16");
  for (std::size_t n : c.prefill_ns) {
    for (const std::string& dtype : dtypes) {
      RooflinePoint p = prefill_point(n, c.heads, c.head_dim);
      p.dtype = dtype;
      if (p.dtype == "bf16") p.label += " bf16";  // the same FLOPs and float32 bytes in and out
      say("prefill " + p.label);
      BenchConfig bc;
      bc.backend = "flash";
      bc.dtype = dtype;
      bc.n = n;
      bc.heads = c.heads;
      bc.head_dim = c.head_dim;
      bc.threads = c.threads;
      bc.repeat = c.repeat;
      bc.check = false;
      bc.seed = c.seed;
      p.min_ms = run_bench(bc).min_ms;
      finish(p, r);
      r.points.push_back(p);
    }
  }
  for (RooflinePoint& p : decode) {
    finish(p, r);
    r.points.push_back(p);
  }
  return r;
}

std::string roofline_caption(const RooflineResult& r) {
  // Each point's side of the ridge (its arithmetic intensity against peak / bandwidth) says which
  // roof bounds it; how far under that roof it runs says whether it reaches the wall at all.
  auto percent = [](const RooflinePoint& p) { return format_fixed(100 * p.gflops / p.roof_gflops, 0) + " %"; };
  auto side = [&](bool memory) {
    std::string list;
    for (const RooflinePoint& p : r.points) {
      if (p.memory_bound != memory) continue;
      list += (list.empty() ? "" : ", ") + std::string(p.kind == "prefill" ? "prefill " : "decode ") + p.label +
              " at " + percent(p);
    }
    return list;
  };
  std::string s = "Ridge point " + format_g(r.ridge, 3) + " FLOP/byte (sgemm " + format_g(r.peak_gflops, 3) +
                  " GFLOP/s ÷ stream " + format_g(r.bandwidth_gbps, 3) + " GB/s).";
  const std::string compute = side(false), memory = side(true);
  if (!compute.empty())
    s += " Right of it, compute-bound (roof: the sgemm's " + format_g(r.peak_gflops, 3) + " GFLOP/s): " + compute +
         " of the roof.";
  if (!memory.empty())
    s += " Left of it, memory-bound (roof: " + format_g(r.bandwidth_gbps, 3) + " GB/s × intensity): " + memory +
         " of the roof.";
  std::size_t far_below = 0, above_peak = 0, above_bandwidth = 0, bf16_above = 0;
  for (const RooflinePoint& p : r.points) {
    if (p.gflops < 0.5 * p.roof_gflops) ++far_below;
    if (p.gflops > p.roof_gflops && p.dtype == "bf16" && !p.memory_bound) ++bf16_above;
    else if (p.gflops > p.roof_gflops) (p.memory_bound ? above_bandwidth : above_peak) += 1;
  }
  if (far_below > 0) {
    s += " " + count_of(far_below, "point") +
         (far_below == 1 ? " runs under half of its roof" : " run under half of their roofs") +
         ": held back by the kernel itself, not by a wall.";
  }
  if (above_peak > 0) {
    s += " " + count_of(above_peak, "compute-bound point") + (above_peak == 1 ? " runs" : " run") +
         " above the sgemm roof: the BLAS sgemm measured here ran slower than this kernel, so it understates the "
         "CPU's peak.";
  }
  if (bf16_above > 0) {
    const bool tiles = flash_bf16_isa() == "amx-bf16";  // what bench --dtype bf16 ran here
    s += " " + count_of(bf16_above, "bfloat16 point") + (bf16_above == 1 ? " runs" : " run") +
         " above the float32 sgemm roof: " +
         (tiles ? std::string(bf16_above == 1 ? "its" : "their") +
                      " products ran on AMX tiles (tdpbf16ps: a 16 x 32 by 32 x 16 product per instruction)"
                : "bfloat16's dot-product instruction (AVX512-BF16's vdpbf16ps) does two multiply-adds per 32-bit "
                  "lane") +
         ", a rate float32 arithmetic cannot reach, so that roof does not bound " + (bf16_above == 1 ? "it." : "them.");
  }
  if (above_bandwidth > 0) {
    s += " " + count_of(above_bandwidth, "memory-bound point") + (above_bandwidth == 1 ? " runs" : " run") +
         " above the streaming read: a small cache is read from the CPU's caches, faster than main memory.";
  }
  s += " Prefill's intensity grows with n (n/4 FLOP/byte); decode reads every key and value once for 4 d FLOPs "
       "per key, whatever the cache length, so only sharing K and V (GQA) moves it right.";
  return s;
}

Json roofline_json(const RooflineResult& r) {
  Json points = Json::array();
  for (const RooflinePoint& p : r.points) {
    points.push_back({{"kind", p.kind}, {"label", p.label}, {"dtype", p.dtype}, {p.kind == "prefill" ? "n" : "kv_len", p.size},
                      {"kv_heads", p.kv_heads}, {"flops", p.flops}, {"bytes", p.bytes},
                      {"intensity_flop_per_byte", p.intensity}, {"min_ms", p.min_ms}, {"gflops", p.gflops},
                      {"roof_gflops", p.roof_gflops}, {"fraction_of_roof", p.gflops / p.roof_gflops},
                      {"wall", p.memory_bound ? "memory" : "compute"}});
  }
  const RooflineConfig& c = r.config;
  return {{"rules",
           {{"prefill", "flops = 4 H n^2 d; bytes = 4 x H n d x 4 (Q, K, V read and O written once, float32; "
                        "a bf16 point reads the same float32 inputs and rounds them once)"},
            {"decode", "flops = 4 H L d; bytes = (2 Hkv L d + 2 H d) x 4 (K and V, then q and o)"},
            {"roof", "min(peak_gflops, bandwidth_gbps x intensity); ridge = peak_gflops / bandwidth_gbps"},
            {"peak", "OpenBLAS sgemm " + std::to_string(c.sgemm_n) + "^3, best of the repeats"},
            {"bandwidth", "a plain streaming read of the largest MHA KV cache's bytes, in the same run"}}},
          {"heads", c.heads},
          {"head_dim", c.head_dim},
          {"threads", c.threads},
          {"peak_gflops", r.peak_gflops},
          {"bandwidth_gbps", r.bandwidth_gbps},
          {"bandwidth_bytes", r.bandwidth_bytes},
          {"ridge_flop_per_byte", r.ridge},
          {"caption", roofline_caption(r)},
          {"points", points}};
}

}  // namespace attn
