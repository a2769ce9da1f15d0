#!/usr/bin/env python3
"""attn-cli's CUDA kernels against PyTorch on the same GPU, the same shapes, in one run per row.

For each row (dtype, head dim, heads, n, causal) this times:
  - attn-cli's kernel: CUDA events around each launch, inputs already on the device, median of
    --repeat launches. From the GPU check kit's driver (--kit-driver, all rows in one process:
    what scripts/gpu_check.sh runs on a bare GPU machine), or from `attn-cli bench --backend
    cuda --dtype D ...` (--attn-cli, one process per row: a full build on the GPU machine);
  - PyTorch's scaled_dot_product_attention on the same shape: the flash backend for f16/bf16
    (FlashAttention-2 inside PyTorch), the memory-efficient backend for f32 (flash takes no
    float32);
  - cuBLAS on the same FLOPs: the two batched matrix products attention is made of, S = Q K^T
    and S V (torch.bmm, TF32 off), with nothing between them;
and prints TFLOP/s by FlashAttention's rule (4*H*n*n*d, halved when causal), the ratio attn-cli /
PyTorch, and attn-cli's rate as a fraction of the cuBLAS pair's.

Needs python3 with torch and an NVIDIA GPU. Usage:
  scripts/bench_cuda.py --kit-driver .gpu-kit/build/kit_driver [--n 1024,4096,16384] [--json OUT]
  scripts/bench_cuda.py --attn-cli build/attn-cli [--n 1024,4096,16384] [--json OUT]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

TORCH_DTYPE = {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32}
SHAPES = ((64, 16), (128, 8))  # (head dim, heads): the same work per row


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


def qkv(n, heads, d, dtype):
    return (torch.randn((heads, n, d), device="cuda", dtype=TORCH_DTYPE[dtype]) for _ in range(3))


def torch_sdpa_ms(n, heads, d, causal, dtype, repeat):
    q, k, v = (x.unsqueeze(0) for x in qkv(n, heads, d, dtype))
    backend = SDPBackend.EFFICIENT_ATTENTION if dtype == "f32" else SDPBackend.FLASH_ATTENTION
    with sdpa_kernel(backend):
        return time_cuda_ms(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal), repeat)


def cublas_pair_ms(n, heads, d, dtype, repeat):
    """S = Q K^T, then S V: attention's two products at full size (4 H n^2 d FLOPs)."""
    torch.backends.cuda.matmul.allow_tf32 = False
    q, k, v = qkv(n, heads, d, dtype)
    kt = k.transpose(1, 2)
    s = torch.empty((heads, n, n), device="cuda", dtype=TORCH_DTYPE[dtype])
    o = torch.empty((heads, n, d), device="cuda", dtype=TORCH_DTYPE[dtype])

    def pair():
        torch.bmm(q, kt, out=s)
        torch.bmm(s, v, out=o)

    median, _ = time_cuda_ms(pair, repeat)
    del s
    return median


def grid(args):
    for dt in args.dtypes.split(","):
        for d, heads in SHAPES:
            for n in args.n_list:
                for causal in (False, True):
                    yield dt, d, heads, n, causal


def kit_driver_rows(args):
    """All rows from one run of the kit's driver: {(dtype, d, H, n, causal): (median, min)}."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "kernel.json")
        shapes = ",".join(f"{d}x{h}" for d, h in SHAPES)
        subprocess.run([args.kit_driver, "bench", "--dtypes", args.dtypes, "--n", args.n, "--shapes", shapes,
                        "--causal", "no,yes", "--repeat", str(args.repeat), "--json", path], check=True)
        with open(path) as f:
            doc = json.load(f)
    return doc["device"], {(r["dtype"], r["head_dim"], r["heads"], r["n"], r["causal"]): (r["median_ms"], r["min_ms"])
                           for r in doc["rows"]}


def attn_cli_ms(exe, n, heads, d, causal, dtype, repeat):
    cmd = [exe, "bench", "--backend", "cuda", "--dtype", dtype, "--n", str(n), "--heads", str(heads),
           "--head-dim", str(d), "--repeat", str(repeat), "--no-check", "--json"]
    if causal:
        cmd.append("--causal")
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    run = json.loads(out)["runs"][0]
    return run["median_ms"], run["min_ms"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--kit-driver", help="the GPU check kit's driver (scripts/gpu_check.sh builds it)")
    src.add_argument("--attn-cli", help="an attn-cli built with CUDA")
    ap.add_argument("--n", default="1024,4096,16384")
    ap.add_argument("--dtypes", default="f16,bf16,f32")
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--json", help="also write every number to this file")
    args = ap.parse_args()
    args.n_list = [int(x) for x in args.n.split(",")]
    gpu = torch.cuda.get_device_name(0)
    print(f"GPU: {gpu}; PyTorch {torch.__version__}", flush=True)
    kernel = kit_driver_rows(args)[1] if args.kit_driver else None
    rows = []
    print(f"\n{'dtype':5} {'d':>4} {'H':>3} {'n':>6} {'causal':>6} {'attn-cli ms':>11} {'TFLOP/s':>8} "
          f"{'PyTorch ms':>10} {'TFLOP/s':>8} {'ratio':>6} {'cuBLAS pair ms':>14} {'x cuBLAS':>8}")
    for dt, d, heads, n, causal in grid(args):
        if kernel is not None:
            ours, ours_min = kernel[(dt, d, heads, n, causal)]
        else:
            ours, ours_min = attn_cli_ms(args.attn_cli, n, heads, d, causal, dt, args.repeat)
        theirs, theirs_min = torch_sdpa_ms(n, heads, d, causal, dt, args.repeat)
        gemm = cublas_pair_ms(n, heads, d, dt, args.repeat)
        f = flops(n, heads, d, causal)
        row = {"dtype": dt, "head_dim": d, "heads": heads, "n": n, "causal": causal,
               "attn_cli_median_ms": ours, "attn_cli_min_ms": ours_min,
               "torch_median_ms": theirs, "torch_min_ms": theirs_min, "cublas_pair_median_ms": gemm,
               "attn_cli_tflops": f / (ours * 1e9), "torch_tflops": f / (theirs * 1e9),
               "cublas_pair_tflops": flops(n, heads, d, False) / (gemm * 1e9),
               "ratio": theirs / ours}
        row["fraction_of_cublas"] = row["attn_cli_tflops"] / row["cublas_pair_tflops"]
        rows.append(row)
        print(f"{dt:5} {d:4} {heads:3} {n:6} {str(causal):>6} {ours:11.3f} {row['attn_cli_tflops']:8.1f} "
              f"{theirs:10.3f} {row['torch_tflops']:8.1f} {row['ratio']:6.2f} {gemm:14.3f} "
              f"{row['fraction_of_cublas']:8.2f}", flush=True)
        torch.cuda.empty_cache()
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"gpu": gpu, "torch": torch.__version__, "repeat": args.repeat,
                       "attn_cli_source": "kit driver" if args.kit_driver else "attn-cli bench", "rows": rows}, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
