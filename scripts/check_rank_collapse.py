#!/usr/bin/python3
"""Checks `attn-cli rank-collapse --json` against a float64 NumPy reference written from the
equations (Dong, Cordonnier & Loukas 2021, arXiv 2103.03404):

  SA(X)  = concat_h(softmax(X Wq_h (X Wk_h)^T / sqrt(D/H)) X Wv_h) Wo^T      (y = x W^T, no bias)
  MLP(X) = relu(X W1^T) W2^T
  attention_only: X <- SA(X)      skip: X <- X + SA(X)
  mlp:            X <- MLP(SA(X)) skip_mlp: X <- X + SA(X); X <- X + MLP(X)
  r(X)   = ||X - 1 mean(X, axis=0)||_F / ||X||_F

The random stacks' X_0 and weights come from `--save-case FILE` (float32 values); the trained
model's residual stream (--model) is rebuilt here from model.safetensors with check_train.py's
own reader: x_0 = embed[t] + pos[i] in float32, then per layer x += SA(x) with causal attention.
Every r_l must agree within 1e-12 + 1e-9 r (the two differ only in float64 summation order).
The fit (ln(-ln r_l) = gamma + delta l over layers l >= 1 with 1e-12 < r_l < 1) is recomputed too.

--sabotage drops the skip from the reference's `skip` setting and requires the check to fail.

    /usr/bin/python3 scripts/check_rank_collapse.py build/attn-cli /tmp/rc [--model DIR] [--sabotage]
"""
import argparse
import json
import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_train import read_safetensors  # noqa: E402

ABS_TOL, REL_TOL = 1e-12, 1e-9
SETTINGS = ["attention_only", "skip", "mlp", "skip_mlp"]


def softmax(s):
    s = s - s.max(axis=-1, keepdims=True)
    e = np.exp(s)
    return e / e.sum(axis=-1, keepdims=True)


def self_attention(x, w, heads, causal):
    n, D = x.shape
    d = D // heads
    split = lambda m: (x @ m.T).reshape(n, heads, d).transpose(1, 0, 2)  # [H, n, d]
    q, k, v = split(w["w_q"]), split(w["w_k"]), split(w["w_v"])
    scores = q @ k.transpose(0, 2, 1) / np.sqrt(d)
    if causal:
        scores = np.where(np.tril(np.ones((n, n), dtype=bool)), scores, -np.inf)
    out = (softmax(scores) @ v).transpose(1, 0, 2).reshape(n, D)
    return out @ w["w_o"].T


def mlp(x, w):
    return np.maximum(x @ w["w_1"].T, 0) @ w["w_2"].T


def residual(x):
    total = np.linalg.norm(x)
    return float(np.linalg.norm(x - x.mean(axis=0, keepdims=True)) / total) if total > 0 else 0.0


def stack(x, layers, setting, heads, causal, drop_skip=False):
    skip = setting in ("skip", "skip_mlp") and not drop_skip
    r = [residual(x)]
    for w in layers:
        a = self_attention(x, w, heads, causal)
        x = x + a if skip else a
        if setting in ("mlp", "skip_mlp"):
            m = mlp(x, w)
            x = x + m if skip else m
        r.append(residual(x))
    return r


def doubly_exponential_growth(r):
    pts = [(l, np.log(-np.log(v))) for l, v in enumerate(r) if l >= 1 and 1e-12 < v < 1]
    if len(pts) < 2:
        return None
    l, y = np.array(pts).T
    return float(np.exp(np.polyfit(l, y, 1)[0]))


def compare(name, ours, ref):
    ours, ref = np.array(ours), np.array(ref)
    if ours.shape != ref.shape:
        return [f"{name}: {ours.size} values, reference {ref.size}"]
    bad = np.abs(ours - ref) > ABS_TOL + REL_TOL * np.abs(ref)
    return [f"{name}: r_{l} = {ours[l]:.17g}, reference {ref[l]:.17g}" for l in np.nonzero(bad)[0]]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("cli")
    ap.add_argument("workdir")
    ap.add_argument("--model", help="a toy model folder")
    ap.add_argument("--args", default="--layers 10 --tokens 24 --d-model 32 --heads 4 --seed 7")
    ap.add_argument("--sabotage", action="store_true")
    a = ap.parse_args()
    os.makedirs(a.workdir, exist_ok=True)
    case_path = os.path.join(a.workdir, "case.json")
    cmd = [a.cli, "rank-collapse", *a.args.split(), "--json", "--save-case", case_path]
    if a.model:
        cmd += ["--model", a.model]
    out = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
    case = json.load(open(case_path))
    x0 = np.array(case["x0"], dtype=np.float64)
    layers = [{k: np.array(v, dtype=np.float64) for k, v in w.items()} for w in case["layers"]]
    heads = case["config"]["heads"]

    errors = []
    for s in SETTINGS:
        ref = stack(x0, layers, s, heads, causal=False, drop_skip=a.sabotage and s == "skip")
        errors += compare(s, out["settings"][s], ref)
        growth, printed = doubly_exponential_growth(ref), out["fits"][s]["fit"]["doubly_exponential"]["growth_b"]
        if growth is not None and abs(growth - printed) > 1e-6 * growth:
            errors.append(f"{s}: growth_b {printed}, reference {growth}")
    print(f"check_rank_collapse: attention_only {' '.join(f'{v:.3g}' for v in out['settings']['attention_only'])}")
    if a.model:
        m = read_safetensors(os.path.join(a.model, "model.safetensors"))
        config = json.load(open(os.path.join(a.model, "config.json")))
        ids = out["model_info"]["token_ids"]
        x = (m["embed"][ids].astype(np.float32) + m["pos"][:len(ids)].astype(np.float32)).astype(np.float64)
        model_layers = [{k: m[f"layers.{l}.{k}"] for k in ("w_q", "w_k", "w_v", "w_o")} for l in range(config["layers"])]
        errors += compare("model", out["model"], stack(x, model_layers, "skip", config["heads"], causal=True))
        print(f"check_rank_collapse: model {' '.join(f'{v:.3g}' for v in out['model'])}")

    if a.sabotage:
        if errors:
            print(f"check_rank_collapse: the sabotaged reference fails, as it must ({errors[0]})")
            return 0
        print("check_rank_collapse: FAILED to notice the sabotaged reference")
        return 1
    if errors:
        print("check_rank_collapse: FAILED\n  " + "\n  ".join(errors[:10]))
        return 1
    print(f"check_rank_collapse: every r_l agrees within {ABS_TOL:g} + {REL_TOL:g} r")
    return 0


if __name__ == "__main__":
    sys.exit(main())
