#!/usr/bin/python3
"""Checks the head summary of `attn-cli forward --model DIR --tokens ... --out OUT`
(OUT/head_summary.json) against scores computed here from a float64 NumPy GPT-2
(check_gpt2_forward.py's gpt2_forward), with the definitions written out again:

  previous_token = mean over i >= 1 of A[i, i-1];  first_token = mean over i >= 1 of A[i, 0]
  entropy        = mean over i >= 1 of H(A[i, :i+1]) / ln(i+1)
  induction      = on the same ids: over the queries i whose id appeared exactly once before, at
                   j, the mean of A[i, j+1] (null when there is no such query)
  uniform        = the score of a head spreading its weight evenly (A[i, j] = 1/(i+1)):
                   mean of 1/(i+1) over the same queries (i in [1, n), or the induction queries)
  bar            = max(threshold, uniform + 0.25 (1 - uniform)); thresholds previous-token 0.4,
                   first-token 0.5, induction 0.4
  kind: the largest of previous-token, first-token, induction that reaches its bar; else broad if
        entropy >= 0.8; else mixed; with one token every score is null and every kind untested.

Scores and bars must agree within 1e-4; a kind may differ only where a score is within 1e-4 of
its bar. --corrupt-reference measures previous-token one key too far back (A[i, i-2]) and
requires the check to fail.

    /usr/bin/python3 scripts/check_gpt2_heads.py build/attn-cli data/gpt2_tiny --tokens 3,80,117,114 /tmp/heads
"""
import argparse
import json
import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_gpt2_forward import gpt2_forward, read_safetensors  # noqa: E402

TOLERANCE = 1e-4
THRESHOLDS = {"previous-token": 0.4, "first-token": 0.5, "induction": 0.4}
BEAT_UNIFORM_SHARE = 0.25


def induction_targets(ids):
    """{query i: key j + 1} for the queries whose id appeared exactly once before, at j."""
    seen, target = {}, {}
    for i, t in enumerate(ids):
        if len(seen.get(t, [])) == 1:
            target[i] = seen[t][0] + 1
        seen.setdefault(t, []).append(i)
    return target


def bars(n, targets):
    """Each kind's bar at n tokens: its threshold, raised to a quarter of the way from a uniform head's score to 1."""
    def bar(threshold, queries):
        uniform = float(np.mean([1.0 / (i + 1) for i in queries]))
        return {"threshold": threshold, "uniform": uniform,
                "bar": max(threshold, uniform + BEAT_UNIFORM_SHARE * (1 - uniform))}
    return {"previous-token": bar(THRESHOLDS["previous-token"], range(1, n)),
            "first-token": bar(THRESHOLDS["first-token"], range(1, n)),
            "induction": bar(THRESHOLDS["induction"], sorted(targets)) if targets else None}


def scores(A, targets, n, back, kind_bars):
    i = np.arange(1, n)
    prev = A[i, i - back].mean() if n > back else 0.0
    first = A[i, 0].mean()
    entropy = np.mean([-(A[k, :k + 1][A[k, :k + 1] > 0] * np.log(A[k, :k + 1][A[k, :k + 1] > 0])).sum() / np.log(k + 1)
                       for k in range(1, n)])
    induction = float(np.mean([A[i, j] for i, j in targets.items()])) if targets else None
    s = {"previous-token": float(prev), "first-token": float(first), "induction": induction}
    best = None
    for kind in THRESHOLDS:
        b = kind_bars[kind]
        if s[kind] is not None and b is not None and s[kind] >= b["bar"] and (best is None or s[kind] > s[best]):
            best = kind
    kind = best or ("broad" if entropy >= 0.8 else "mixed")
    return s, float(entropy), kind


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("cli")
    ap.add_argument("model")
    ap.add_argument("--tokens", required=True)
    ap.add_argument("out")
    ap.add_argument("--corrupt-reference", action="store_true")
    a = ap.parse_args()

    run = subprocess.run([a.cli, "forward", "--model", a.model, "--tokens", a.tokens, "--out", a.out],
                         capture_output=True, text=True)
    if run.returncode != 0:
        raise SystemExit(f"check_gpt2_heads: attn-cli exited {run.returncode}: {run.stderr.strip()}")
    with open(os.path.join(a.out, "head_summary.json")) as f:
        got = json.load(f)
    with open(f"{a.model}/config.json") as f:
        config = json.load(f)
    tensors = read_safetensors(f"{a.model}/model.safetensors")
    ids = [int(s) for s in a.tokens.split(",")]
    n = len(ids)
    attention, _ = gpt2_forward(tensors, config, ids)
    targets = induction_targets(ids)

    failures, kinds = [], {}
    heads = {(h["layer"], h["head"]): h for h in got["heads"]}
    if len(heads) != config["n_layer"] * config["n_head"]:
        failures.append(f"{len(heads)} heads in the summary")
    if n < 2:  # query 0 alone says nothing: every score null, every head untested
        for g in heads.values():
            if g["kind"] != "untested" or any(g[k] is not None for k in
                                              ("previous_token", "first_token", "induction", "entropy")):
                failures.append(f"layer {g['layer']} head {g['head']}: {g} with one token")
        if any(b is not None for b in got["bars"].values()):
            failures.append(f"bars {got['bars']} with one token")
        if failures:
            raise SystemExit("check_gpt2_heads: " + "; ".join(failures[:5]))
        print(f"check_gpt2_heads: 1 token, {len(heads)} heads, every one untested")
        print("check_gpt2_heads: every head's scores and kind agree with the float64 reference")
        return
    kind_bars = bars(n, targets)
    for kind, key in (("previous-token", "previous_token"), ("first-token", "first_token"), ("induction", "induction")):
        want, have = kind_bars[kind], got["bars"][key]
        if (want is None) != (have is None) or (want is not None and any(
                abs(have[f] - want[f]) > TOLERANCE for f in ("threshold", "uniform", "bar"))):
            failures.append(f"{kind} bar {have}, the reference {want}")
    for l in range(config["n_layer"]):
        for h in range(config["n_head"]):
            s, entropy, kind = scores(attention[l, h], targets, n,
                                      2 if a.corrupt_reference else 1, kind_bars)
            g = heads.get((l, h))
            if g is None:
                continue
            kinds[kind] = kinds.get(kind, 0) + 1
            pairs = [("previous_token", s["previous-token"]), ("first_token", s["first-token"]),
                     ("entropy", entropy), ("induction", s["induction"])]
            for key, want in pairs:
                have = g[key]
                if (want is None) != (have is None) or (want is not None and abs(have - want) > TOLERANCE):
                    failures.append(f"layer {l} head {h}: {key} {have}, the reference {want}")
            if g["kind"] != kind:
                near = any(v is not None and kind_bars[k] is not None and abs(v - kind_bars[k]["bar"]) <= TOLERANCE
                           for k, v in s.items()) or abs(entropy - 0.8) <= TOLERANCE
                if not near:
                    failures.append(f"layer {l} head {h}: kind {g['kind']}, the reference {kind}")
    print(f"check_gpt2_heads: {n} tokens, {len(heads)} heads; reference kinds {kinds}")
    if a.corrupt_reference:
        if not failures:
            raise SystemExit("check_gpt2_heads: the corrupted reference still agrees: the check cannot fail")
        print("check_gpt2_heads: the corrupted reference disagrees, as it must:", failures[0])
        return
    if failures:
        raise SystemExit("check_gpt2_heads: " + "; ".join(failures[:5]))
    print("check_gpt2_heads: every head's scores and kind agree with the float64 reference")


if __name__ == "__main__":
    main()
