#!/usr/bin/python3
"""attend's "method" field against NumPy written from the contract's words (docs/contracts.md):

  linear     phi(x) = elu(x) + 1; out_i = phi(q_i)^T sum_j phi(k_j) v_j^T / phi(q_i)^T sum_j phi(k_j)
             over the visible j (all, or j <= p with causal); weights = the normalised phi(q)^T phi(k)
  performer  FAVOR+ positive random features phi(x) = exp(w . x' - |x'|^2 / 2) / sqrt(m),
             x' = sqrt(scale) x, with attn-cli's own draws w (returned as "random_features"),
             normalised as linear attention; and, with many features, close to softmax attention
  linformer  softmax(scale q (E k)^T) (F v) with attn-cli's E and F (returned as "projections")
  sparse     softmax attention where key j <= p is visible when p - j < stride or
             (p - j) mod stride = 0

Usage: check_methods.py ATTN_CLI [--cases N] [--corrupt-reference]
--corrupt-reference drops the +1 of linear attention's feature map and must make the check fail.
"""
import argparse
import json
import math
import subprocess
import sys

import numpy as np

TOLERANCE = 1e-6  # relative to max(1, |reference|): the JSON's float32 rounding


def difference(got, want):
    got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    return float((np.abs(got - want) / np.maximum(1.0, np.abs(want))).max())


def heads(case, name):
    a = np.array(case[name], dtype=np.float64)
    return a[None] if a.ndim == 2 else a


def visible(i, j, Lq, Lk, causal):
    return not causal or j <= i + Lk - Lq


def kernel_attention(fq, fk, v, causal):
    Lq, Lk = fq.shape[0], fk.shape[0]
    a = np.zeros((Lq, Lk))
    for i in range(Lq):
        for j in range(Lk):
            if visible(i, j, Lq, Lk, causal):
                a[i, j] = fq[i] @ fk[j]
        if a[i].sum() > 0:
            a[i] /= a[i].sum()
    return a, a @ v


def softmax_attention(q, k, v, scale, allowed):
    s = np.where(allowed, scale * q @ k.T, -np.inf)
    w = np.exp(s - s.max(axis=1, keepdims=True))
    w /= w.sum(axis=1, keepdims=True)
    return w, w @ v


def reference(case, got, corrupt):
    q, k, v = heads(case, "q"), heads(case, "k"), heads(case, "v")
    H, Lq, d = q.shape
    Lk, group = k.shape[1], q.shape[0] // k.shape[0]
    method, causal = case["method"], case.get("causal", False)
    scale = case.get("scale", 1 / math.sqrt(d))
    outs, weights = [], []
    for h in range(H):
        qh, kh, vh = q[h], k[h // group], v[h // group]
        if method == "linear":
            phi = (lambda x: np.where(x > 0, x, np.exp(x) - 1)) if corrupt else (lambda x: np.where(x > 0, x + 1, np.exp(x)))
            a, o = kernel_attention(phi(qh), phi(kh), vh, causal)
        elif method == "performer":
            w = np.array(got["random_features"])
            m = w.shape[0]
            phi = lambda x: np.exp((np.sqrt(scale) * x) @ w.T - scale * (x * x).sum(axis=1, keepdims=True) / 2) / math.sqrt(m)
            a, o = kernel_attention(phi(qh), phi(kh), vh, causal)
        elif method == "linformer":
            e, f = np.array(got["projections"]["E"]), np.array(got["projections"]["F"])
            a, o = softmax_attention(qh, e @ kh, f @ vh, scale, np.ones((Lq, e.shape[0]), dtype=bool))
            a = None
        else:  # sparse
            s = case["stride"]
            allowed = np.array([[j <= i + Lk - Lq and ((i + Lk - Lq - j) < s or (i + Lk - Lq - j) % s == 0)
                                 for j in range(Lk)] for i in range(Lq)])
            a, o = softmax_attention(qh, kh, vh, scale, allowed)
        outs.append(o)
        weights.append(a)
    return np.array(outs), (None if weights[0] is None else np.array(weights))


def run(cli, case):
    r = subprocess.run([cli, "attend", "--input", "-"], input=json.dumps(case), capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"check_methods: attend exited {r.returncode}: {r.stderr.strip()}")
    return json.loads(r.stdout)


def random_case(rng, n):
    method = ["linear", "performer", "linformer", "sparse"][n % 4]
    H = [1, 2][n % 2]
    Lk = int(rng.integers(2, 10))
    Lq = Lk if n % 3 else int(rng.integers(1, Lk + 1))
    d = int(rng.integers(2, 7))
    case = {"q": rng.normal(0, 0.8, (H, Lq, d)).round(4).tolist(), "k": rng.normal(0, 0.8, (H, Lk, d)).round(4).tolist(),
            "v": rng.normal(0, 1, (H, Lk, d)).round(4).tolist(), "method": method}
    if method != "linformer" and rng.random() < 0.6:
        case["causal"] = True
    if method == "performer":
        case["features"], case["seed"] = int(rng.integers(1, 64)), int(rng.integers(0, 1000))
    if method == "linformer":
        case["rank"], case["seed"] = int(rng.integers(1, Lk + 2)), int(rng.integers(0, 1000))
    if method == "sparse":
        case["stride"] = int(rng.integers(1, 4))
    return case


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("cli")
    ap.add_argument("--cases", type=int, default=32)
    ap.add_argument("--corrupt-reference", action="store_true")
    a = ap.parse_args()
    rng = np.random.default_rng(20200629)
    failures, worst = [], 0.0
    for n in range(a.cases):
        case = random_case(rng, n)
        got = run(a.cli, case)
        out, weights = reference(case, got, a.corrupt_reference)
        shape = np.array(got["output"]).shape
        diff = difference(np.array(got["output"]).reshape(out.shape), out)
        if weights is not None:
            diff = max(diff, difference(np.array(got["weights"]).reshape(weights.shape), weights))
        elif "weights" in got:
            failures.append(f"case {n} ({case['method']}): weights over keys that the method does not have")
        worst = max(worst, diff)
        if not diff <= TOLERANCE:
            failures.append(f"case {n} ({case['method']}, output {shape}): max difference {diff:.2e}")
    # FAVOR+ is an unbiased estimate of softmax attention's kernel: with many features its
    # weights come close to softmax's on the same scores.
    q, k, v = rng.normal(0, 0.5, (6, 4)), rng.normal(0, 0.5, (6, 4)), rng.normal(0, 1, (6, 4))
    many = run(a.cli, {"q": q.tolist(), "k": k.tolist(), "v": v.tolist(), "method": "performer", "features": 16384, "seed": 1})
    soft, _ = softmax_attention(q, k, v, 0.5, np.ones((6, 6), dtype=bool))
    gap = float(np.abs(np.array(many["weights"]) - soft).max())
    if not gap < 0.02:
        failures.append(f"performer with 16384 features is {gap:.3f} from softmax's weights")
    print(f"check_methods: worst {worst:.1e} over {a.cases} cases; performer (16384 features) within {gap:.4f} of softmax")
    if a.corrupt_reference:
        if not failures:
            raise SystemExit("check_methods: the corrupted reference still agrees: the check cannot fail")
        print("check_methods: the corrupted reference disagrees, as it must:", failures[0])
        return 0
    if failures:
        raise SystemExit("check_methods: " + "; ".join(failures[:5]))
    print("check_methods: every method agrees with the NumPy reference")
    return 0


if __name__ == "__main__":
    sys.exit(main())
