#!/usr/bin/python3
"""FlashAttention's tolerance rule, checked end to end through `attn-cli attend` and `mha`.

For random cases (several heads, GQA, Lq != Lk, masks with fully masked rows, causal with
Lq != Lk, custom scales, scores in the thousands, explicit flash tiles), the output of
attn-cli (naive and flash backends) must be within 2x the error of a plain float32 NumPy
computation, both measured against a float64 NumPy reference:
    max|attn-cli - ref64| <= 2 * max|numpy_float32 - ref64|
This is how an outside checker sees the tool: JSON in, JSON out, read as float64.
The mha cases add projections with biases, GQA/MQA, RoPE in both conventions (rotate-half:
GPT-NeoX / LLaMA-HF; interleaved pairs: GPT-J / RoFormer) with explicit position ids, and
KV-cache decoding (decode_from), whose result must equal the one-shot causal run.

Usage: /usr/bin/python3 scripts/check_fa_rule.py path/to/attn-cli [--cases N] [--seed S]
Needs Debian's python3-numpy. Prints one line per failure and "N passed, M failed".
"""
import argparse
import json
import subprocess
import sys

import numpy as np


def attention(q, k, v, allowed, causal, scale, dtype):
    """Plain softmax(q k^T * scale) v in `dtype`, every intermediate kept in `dtype`."""
    q, k, v = q.astype(dtype), k.astype(dtype), v.astype(dtype)
    heads, lq, _ = q.shape
    lk = k.shape[1]
    group = heads // k.shape[0]
    k, v = np.repeat(k, group, 0), np.repeat(v, group, 0)
    s = (np.einsum("hid,hjd->hij", q, k) * dtype(scale)).astype(dtype)
    ok = np.ones(s.shape, dtype=bool)
    if allowed is not None:
        ok &= np.broadcast_to(allowed, s.shape)
    if causal:  # bottom-right aligned: query i sees keys j <= i + lk - lq
        ok &= (np.arange(lk)[None, :] <= np.arange(lq)[:, None] + lk - lq)[None]
    s = np.where(ok, s, dtype(-np.inf)).astype(dtype)
    m = s.max(-1, keepdims=True)
    dead = np.isneginf(m)  # every key masked: the row attends to nothing
    e = np.where(ok, np.exp(s - np.where(dead, dtype(0), m)), dtype(0)).astype(dtype)
    p = np.where(dead, dtype(0), e / np.where(dead, dtype(1), e.sum(-1, keepdims=True))).astype(dtype)
    return (p @ v).astype(dtype)


def rope(x, positions, base, style, dtype):
    """x [H, L, d] rotated per position: angle pos * base^(-2i/d) for pair i."""
    d = x.shape[-1]
    theta = (dtype(base) ** (-np.arange(0, d, 2, dtype=dtype) / dtype(d))).astype(dtype)
    angle = (np.asarray(positions, dtype=dtype)[:, None] * theta[None, :]).astype(dtype)  # [L, d/2]
    cos, sin = np.cos(angle).astype(dtype), np.sin(angle).astype(dtype)
    if style == "half":  # pairs (i, i + d/2)
        x1, x2 = x[..., : d // 2], x[..., d // 2:]
        return np.concatenate([x1 * cos - x2 * sin, x1 * sin + x2 * cos], -1).astype(dtype)
    out = np.empty_like(x)  # "interleaved": pairs (2i, 2i + 1)
    out[..., 0::2] = x[..., 0::2] * cos - x[..., 1::2] * sin
    out[..., 1::2] = x[..., 0::2] * sin + x[..., 1::2] * cos
    return out.astype(dtype)


def mha(case, dtype):
    """Multi-head self-attention from the published equations, every step in `dtype`."""
    f = lambda name: np.asarray(case[name], dtype=np.float32).astype(dtype)
    x = f("query")
    heads, kv_heads = case["num_heads"], case["num_kv_heads"]
    d = x.shape[1] // heads
    lin = lambda w, b: (x @ f(w).T + (f(b) if b in case else dtype(0))).astype(dtype)
    split = lambda y, h: y.reshape(-1, h, d).transpose(1, 0, 2)
    q, k, v = split(lin("w_q", "b_q"), heads), split(lin("w_k", "b_k"), kv_heads), split(lin("w_v", "b_v"), kv_heads)
    if "rope" in case:
        pos = case["rope"].get("position_ids", list(range(x.shape[0])))
        q = rope(q, pos, case["rope"]["base"], case["rope"]["style"], dtype)
        k = rope(k, pos, case["rope"]["base"], case["rope"]["style"], dtype)
    o = attention(q, k, v, None, case.get("causal", False), 1 / np.sqrt(d), dtype)
    return (o.transpose(1, 0, 2).reshape(x.shape[0], -1) @ f("w_o").T + f("b_o")).astype(dtype)


def random_mha_case(rng, t):
    heads = [1, 2, 4][t % 3]
    kv_heads = [heads, 1, max(1, heads // 2)][(t // 3) % 3]
    d = 2 * int(rng.integers(1, 5))
    D, L = heads * d, int(rng.integers(1, 12))
    Dkv = kv_heads * d
    u = lambda *shape: (rng.uniform(-1, 1, shape) / np.sqrt(D)).astype(np.float32).tolist()
    case = {"query": rng.standard_normal((L, D)).astype(np.float32).tolist(), "num_heads": heads,
            "num_kv_heads": kv_heads, "w_q": u(D, D), "w_k": u(Dkv, D), "w_v": u(Dkv, D), "w_o": u(D, D),
            "b_q": u(D), "b_k": u(Dkv), "b_v": u(Dkv), "b_o": u(D), "causal": bool(t % 2 or t % 5 == 0)}
    if t % 4:
        case["rope"] = {"base": [10000, 500][t % 2], "style": ["half", "interleaved"][(t // 2) % 2]}
        if t % 3 == 0:
            case["rope"]["position_ids"] = sorted(int(p) for p in rng.integers(0, 50, L))
    if case["causal"] and t % 5 == 0:
        case["decode_from"] = int(rng.integers(0, L + 1))
    return case


def random_case(rng, t):
    heads = int(rng.integers(1, 5))
    kv_heads = heads if t % 3 else 1
    lq, lk = int(rng.integers(1, 24)), int(rng.integers(1, 24))
    d, dv = int(rng.integers(1, 40)), int(rng.integers(1, 10))
    magnitude = [1.0, 8.0, 40.0][t % 3]  # the last gives scores in the thousands
    q = (rng.standard_normal((heads, lq, d)) * magnitude).astype(np.float32)
    k = (rng.standard_normal((kv_heads, lk, d)) * magnitude).astype(np.float32)
    v = rng.standard_normal((kv_heads, lk, dv)).astype(np.float32)
    case = {"q": q.tolist(), "k": k.tolist(), "v": v.tolist(), "causal": bool(t % 2)}
    scale = float(1 / np.sqrt(d)) if t % 5 else 0.37
    case["scale"] = scale
    allowed = None
    if t % 4 == 0:
        allowed = rng.random((heads, lq, lk)) < 0.6
        allowed[0, 0, :] = False  # a fully masked row
        case["mask"] = allowed.astype(int).tolist()
    return case, q, k, v, allowed, scale


def check(cli, subcommand, run, ref, err32, label):
    """Runs one case through attn-cli; True when its output meets the 2x rule."""
    out = subprocess.run([cli, subcommand, "--input", "-", "--no-weights"], input=json.dumps(run),
                         capture_output=True, text=True)
    if out.returncode != 0:
        print(f"{label}: exit {out.returncode}: {out.stderr.strip()}")
        return False
    err = np.abs(np.array(json.loads(out.stdout)["output"]) - ref).max()
    if err > 2 * err32:
        print(f"{label}: error {err:.3g} > 2 x float32's {err32:.3g}")
        return False
    return True


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("cli")
    ap.add_argument("--cases", type=int, default=100)
    ap.add_argument("--seed", type=int, default=2205)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    results = []
    for t in range(args.cases):
        case, q, k, v, allowed, scale = random_case(rng, t)
        ref = attention(q, k, v, allowed, case["causal"], scale, np.float64)
        err32 = np.abs(attention(q, k, v, allowed, case["causal"], scale, np.float32) - ref).max()
        for backend in ("naive", "flash"):
            run = dict(case, backend=backend)
            if backend == "flash" and t % 2:
                run["block_size"] = int(rng.integers(1, 9))
            results.append(check(args.cli, "attend", run, ref, err32, f"attend case {t} {backend}"))
    for t in range(args.cases):
        case = random_mha_case(rng, t)
        ref = mha(case, np.float64)
        err32 = np.abs(mha(case, np.float32) - ref).max()
        for backend in ("naive", "flash"):
            results.append(check(args.cli, "mha", dict(case, backend=backend), ref, err32, f"mha case {t} {backend}"))
    passed, failed = sum(results), len(results) - sum(results)
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
