#!/usr/bin/python3
"""attend's variant fields against a NumPy float64 reference written from the contract's words
(docs/contracts.md, "variants"), on every CPU backend, alone and combined, in prefill (Lq = Lk)
and decode (Lq < Lk) shapes. With p = i + Lk - Lq, query i's position:

  window [l, r]  key j visible when p - l <= j <= p + r
  sinks s        keys j < s visible whatever the window says (causal and mask still apply)
  softcap c      each scaled score x becomes c tanh(x / c), before any bias and the mask
  alibi          the score gets -m_h (p - j) added, after the soft-cap (true: the paper's slopes)
  segments       query i sees key j only when their ids are equal
  prefix P       (Lq = Lk) keys j < P visible to every query, the others only when j <= i
  chunk C        key j visible when floor(p / C) = floor(j / C) (Llama 4's chunked attention)
  causal         key j visible when j <= p;  temperature T: the score divided by T

Usage: check_variants.py ATTN_CLI [--cases N] [--corrupt-reference]
--corrupt-reference measures the window one key too wide and must make the check fail.
"""
import argparse
import json
import math
import subprocess
import sys

import numpy as np

# Relative to max(1, |reference|): the JSON holds float32 values, so the float64 kernels differ
# by their final rounding; the float32 kernel by its arithmetic too.
TOLERANCE = {"naive": 1e-6, "flash": 1e-6, "flash32": 2e-4}


def difference(got, want):
    """max |got - want| / max(1, |want|), -inf (a fully masked row's lse) equal only to itself."""
    got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    if (np.isinf(got) != np.isinf(want)).any():
        return np.inf
    finite = ~np.isinf(want)
    if not finite.any():
        return 0.0
    return float((np.abs(got[finite] - want[finite]) / np.maximum(1.0, np.abs(want[finite]))).max())


def alibi_paper_slopes(n):
    """The ALiBi paper's get_slopes (ofirpress/attention_with_linear_biases)."""
    def power_of_two(k):
        start = 2 ** (-(2 ** -(math.log2(k) - 3)))
        return [start * start ** i for i in range(k)]
    if math.log2(n).is_integer():
        return power_of_two(n)
    closest = 2 ** math.floor(math.log2(n))
    return power_of_two(closest) + alibi_paper_slopes(2 * closest)[0::2][: n - closest]


def reference(case, corrupt):
    q, k, v = (np.array(case[x], dtype=np.float64) for x in ("q", "k", "v"))
    if q.ndim == 2:
        q, k, v = q[None], k[None], v[None]
    H, Lq, d = q.shape
    Hkv, Lk = k.shape[0], k.shape[1]
    scale = case.get("scale", 1 / math.sqrt(d))
    T = case.get("temperature", 1.0)
    slopes = None
    if "alibi" in case:
        slopes = alibi_paper_slopes(H) if case["alibi"] is True else case["alibi"]
    out = np.zeros((H, Lq, v.shape[2]))
    weights = np.zeros((H, Lq, Lk))
    lse = np.full((H, Lq), -np.inf)
    for h in range(H):
        for i in range(Lq):
            p = i + Lk - Lq
            s = np.empty(Lk)
            for j in range(Lk):
                x = scale * float(q[h, i] @ k[h // (H // Hkv), j])
                if "softcap" in case:
                    c = case["softcap"]
                    x = c * math.tanh(x / c)
                if slopes is not None:
                    x -= slopes[h] * (p - j)
                x /= T
                visible = True
                if "window" in case:
                    left, right = case["window"]
                    left += 1 if corrupt else 0
                    visible = p - left <= j <= p + right
                if j < case.get("sinks", 0):
                    visible = True
                if "segments" in case:
                    visible = visible and case["segments"]["q"][i] == case["segments"]["k"][j]
                if "prefix" in case:
                    visible = visible and (j < case["prefix"] or j <= i)
                if "chunk" in case:
                    visible = visible and p // case["chunk"] == j // case["chunk"]
                if case.get("causal"):
                    visible = visible and j <= p
                s[j] = x if visible else -np.inf
            if np.isinf(s).all():
                continue
            m = s.max()
            e = np.exp(s - m)
            weights[h, i] = e / e.sum()
            lse[h, i] = m + math.log(e.sum())
            out[h, i] = weights[h, i] @ v[h // (H // Hkv)]
    return out, weights, lse


def random_case(rng, n):
    heads = [1, 2, 4][n % 3]
    kv_heads = heads if n % 4 else max(1, heads // 2)  # GQA every fourth case
    Lk = int(rng.integers(3, 12))
    Lq = Lk if n % 2 == 0 or n % 5 == 0 else int(rng.integers(1, Lk))  # prefill, or decode shapes
    d = int(rng.integers(2, 9))
    case = {"q": rng.normal(0, 1.2, (heads, Lq, d)).round(4).tolist(),
            "k": rng.normal(0, 1.2, (kv_heads, Lk, d)).round(4).tolist(),
            "v": rng.normal(0, 1, (kv_heads, Lk, d)).round(4).tolist()}
    # Every variant alone (cases 0-5), then random combinations.
    names = ["window", "sinks", "softcap", "alibi", "segments", "prefix", "chunk"]
    chosen = [names[n]] if n < len(names) else [x for x in names if rng.random() < 0.45]
    if "prefix" in chosen and Lq != Lk:
        chosen.remove("prefix")
    for name in chosen:
        if name == "window":
            case["window"] = [int(rng.integers(0, 4)), int(rng.integers(0, 3))]
        elif name == "sinks":
            case["sinks"] = int(rng.integers(0, 3))
        elif name == "softcap":
            case["softcap"] = float(rng.choice([0.5, 2.0, 30.0]))
        elif name == "alibi":
            case["alibi"] = True if rng.random() < 0.5 else rng.uniform(0.05, 1.0, heads).round(3).tolist()
        elif name == "segments":
            case["segments"] = {"q": sorted(rng.integers(0, 3, Lq).tolist()), "k": sorted(rng.integers(0, 3, Lk).tolist())}
            if Lq == Lk:
                case["segments"]["k"] = case["segments"]["q"]
        elif name == "prefix":
            case["prefix"] = int(rng.integers(0, Lq + 1))
        elif name == "chunk":
            case["chunk"] = int(rng.integers(1, 5))
    if rng.random() < 0.5 and "prefix" not in case:
        case["causal"] = True
    if rng.random() < 0.3:
        case["temperature"] = float(rng.choice([0.5, 2.0]))
    return case


def run(cli, case, backend):
    c = dict(case)
    if backend != "naive":
        c["backend"] = "flash"
    if backend == "flash32":
        c["precision"] = "float32"
    r = subprocess.run([cli, "attend", "--input", "-"], input=json.dumps(c), capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"check_variants: attend exited {r.returncode} on {backend}: {r.stderr.strip()}")
    return json.loads(r.stdout)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("cli")
    ap.add_argument("--cases", type=int, default=24)
    ap.add_argument("--corrupt-reference", action="store_true")
    a = ap.parse_args()
    rng = np.random.default_rng(20240711)
    failures, worst = [], {b: 0.0 for b in TOLERANCE}
    for n in range(a.cases):
        case = random_case(rng, n)
        out, weights, lse = reference(case, a.corrupt_reference)
        fields = sorted(set(case) - {"q", "k", "v"})
        for backend, tol in TOLERANCE.items():
            got = run(a.cli, case, backend)
            go, gw = np.array(got["output"]), np.array(got["weights"])
            gl = np.array([[np.inf if x is None else x for x in row] for row in got["lse"]])
            gl = np.where(np.isinf(gl), -np.inf, gl)
            diff = max(difference(go, out), difference(gw, weights), difference(gl, lse))
            worst[backend] = max(worst[backend], diff)
            if not diff <= tol:
                failures.append(f"case {n} ({', '.join(fields)}), {backend}: max difference {diff:.2e} > {tol:.0e}")
    print("check_variants: " + ", ".join(f"{b} worst {w:.1e}" for b, w in worst.items()) + f" over {a.cases} cases")
    if a.corrupt_reference:
        if not failures:
            raise SystemExit("check_variants: the corrupted reference still agrees: the check cannot fail")
        print("check_variants: the corrupted reference disagrees, as it must:", failures[0])
        return 0
    if failures:
        raise SystemExit("check_variants: " + "; ".join(failures[:5]))
    print("check_variants: every variant agrees with the float64 reference on every CPU backend")
    return 0


if __name__ == "__main__":
    sys.exit(main())
