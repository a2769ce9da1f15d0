#!/usr/bin/env python3
"""attn-cli's CUDA kernels against PyTorch on the same GPU, the same shapes, in one run per row.

For each row (dtype, head dim, heads, n, causal) this times, one after the other:
  - `attn-cli bench --backend cuda --dtype D ...` (CUDA events around each launch, inputs on
    the device; its JSON gives the median),
  - PyTorch's scaled_dot_product_attention on the same shape: the flash backend for f16/bf16
    (FlashAttention-2 inside PyTorch), the memory-efficient backend for f32 (flash takes no
    float32),
and prints TFLOP/s for both by FlashAttention's rule (4*H*n*n*d, halved when causal) and the
ratio attn-cli / PyTorch. It also measures the GPU's matrix-product ceiling through cuBLAS
(torch.matmul, 8192^3; TF32 off for f32) once per dtype.

Needs python3 with torch and an NVIDIA GPU. Usage:
  scripts/bench_cuda.py --attn-cli build/attn-cli [--n 1024,4096,16384] [--quick] [--json OUT]
"""
import argparse
import json
import statistics
import subprocess
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

TORCH_DTYPE = {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32}


def time_cuda_ms(fn, repeat):
    """Median and min of `repeat` launches of fn, each between two CUDA events, after 3 warm-ups."""
    for _ in range(3):
        fn()
    times = []
    for _ in range(repeat):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop))
    return statistics.median(times), min(times)


def flops(n, heads, d, causal):
    f = 4.0 * heads * n * n * d
    return f / 2 if causal else f


def torch_sdpa_ms(n, heads, d, causal, dtype, repeat):
    shape = (1, heads, n, d)
    q, k, v = (torch.randn(shape, device="cuda", dtype=TORCH_DTYPE[dtype]) for _ in range(3))
    backend = SDPBackend.EFFICIENT_ATTENTION if dtype == "f32" else SDPBackend.FLASH_ATTENTION
    with sdpa_kernel(backend):
        return time_cuda_ms(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal), repeat)


def cublas_tflops(dtype, repeat):
    torch.backends.cuda.matmul.allow_tf32 = False
    n = 8192
    a, b = (torch.randn((n, n), device="cuda", dtype=TORCH_DTYPE[dtype]) for _ in range(2))
    median, _ = time_cuda_ms(lambda: torch.matmul(a, b), repeat)
    return 2.0 * n**3 / (median * 1e9)


def attn_cli_ms(exe, n, heads, d, causal, dtype, repeat):
    cmd = [exe, "bench", "--backend", "cuda", "--dtype", dtype, "--n", str(n), "--heads", str(heads),
           "--head-dim", str(d), "--repeat", str(repeat), "--no-check", "--json"]
    if causal:
        cmd.append("--causal")
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    run = json.loads(out)["runs"][0]
    return run["median_ms"], run["min_ms"], run.get("device", "")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--attn-cli", default="build/attn-cli")
    ap.add_argument("--n", default="1024,4096,16384")
    ap.add_argument("--dtypes", default="f16,bf16,f32")
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--json", help="also write every number to this file")
    args = ap.parse_args()
    ns = [int(x) for x in args.n.split(",")]
    rows = []
    print(f"GPU: {torch.cuda.get_device_name(0)}; PyTorch {torch.__version__}")
    ceilings = {dt: cublas_tflops(dt, 10) for dt in args.dtypes.split(",")}
    for dt, t in ceilings.items():
        print(f"cuBLAS {dt} 8192^3 matmul: {t:.1f} TFLOP/s")
    print(f"\n{'dtype':5} {'d':>4} {'H':>3} {'n':>6} {'causal':>6} {'attn-cli ms':>11} {'TFLOP/s':>8} "
          f"{'PyTorch ms':>10} {'TFLOP/s':>8} {'ratio':>6} {'x cuBLAS':>8}")
    for dt in args.dtypes.split(","):
        for d, heads in ((64, 16), (128, 8)):
            for n in ns:
                if dt == "f32" and n > 4096:
                    continue  # minutes, not seconds, for no new information
                for causal in (False, True):
                    ours, ours_min, device = attn_cli_ms(args.attn_cli, n, heads, d, causal, dt, args.repeat)
                    theirs, theirs_min = torch_sdpa_ms(n, heads, d, causal, dt, args.repeat)
                    f = flops(n, heads, d, causal)
                    row = {"dtype": dt, "head_dim": d, "heads": heads, "n": n, "causal": causal,
                           "attn_cli_median_ms": ours, "attn_cli_min_ms": ours_min,
                           "torch_median_ms": theirs, "torch_min_ms": theirs_min,
                           "attn_cli_tflops": f / (ours * 1e9), "torch_tflops": f / (theirs * 1e9),
                           "ratio": theirs / ours, "fraction_of_cublas": f / (ours * 1e9) / ceilings[dt],
                           "device": device}
                    rows.append(row)
                    print(f"{dt:5} {d:4} {heads:3} {n:6} {str(causal):>6} {ours:11.3f} {row['attn_cli_tflops']:8.1f} "
                          f"{theirs:10.3f} {row['torch_tflops']:8.1f} {row['ratio']:6.2f} {row['fraction_of_cublas']:8.2f}",
                          flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"gpu": torch.cuda.get_device_name(0), "torch": torch.__version__,
                       "cublas_tflops": ceilings, "rows": rows}, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
