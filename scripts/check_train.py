#!/usr/bin/python3
"""An independent check of `attn-cli train` and `attn-cli forward`.

Reads model.safetensors with its own parser (struct + json, every offset checked), rebuilds the
architecture docs/contracts.md documents in NumPy float64:

    x = embed[t] + pos[i];  per layer  x += concat_h(softmax_causal(q_h k_h^T / sqrt(d)) v_h) W_o^T
    with q = x W_q^T, k = x W_k^T, v = x W_v^T;  logits = x unembed^T

checks that `attn-cli forward --json` and `attn-cli demo --model` (its manifest) agree, and then measures, on fresh repeated sequences
(P random ids, then the same P again; L = context = 2P):
  * the second-half loss: mean cross-entropy of predicting tokens P+1 .. L-1, each the successor
    of a token seen before (token P, the start of the repeat, cannot be known), <= 0.1 ln(vocab);
  * the best layer-0 previous-token score, mean over i >= 1 of A[i, i-1], >= 0.8;
  * the best last-layer induction score, mean over i >= P of A[i, i-P+1], >= 0.9;
  * in the demo's sentence "the cat sat on the mat . the cat sat on the mat", the stripe: the
    head the demo shows as its induction head puts >= 0.5 of the weight of each second "cat",
    "sat", "on" and "mat" on the word that followed its first copy.

Usage: check_train.py ATTN_CLI WORKDIR [--train-args "..."] [--expect-failure | --forward-only]
Trains into WORKDIR (`attn-cli train --threads 1 --out WORKDIR` plus --train-args), then checks.
--expect-failure: succeed only if the thresholds fail (a model that has not learned must not pass).
"""
import argparse
import json
import math
import shlex
import struct
import subprocess
import sys
import time

import numpy as np


def read_safetensors(path):
    data = open(path, "rb").read()
    if len(data) < 8:
        raise ValueError("shorter than the 8-byte header length")
    (n,) = struct.unpack("<Q", data[:8])
    if 8 + n > len(data):
        raise ValueError("header length past the end of the file")
    header = json.loads(data[8:8 + n].decode("utf-8"))
    body = data[8 + n:]
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        if info["dtype"] != "F32":
            raise ValueError(f"{name}: dtype {info['dtype']}, expected F32")
        begin, end = info["data_offsets"]
        count = math.prod(info["shape"])
        if not (0 <= begin <= end <= len(body)) or end - begin != 4 * count:
            raise ValueError(f"{name}: offsets {begin}..{end} do not hold {count} float32 values")
        tensors[name] = np.frombuffer(body[begin:end], dtype="<f4").astype(np.float64).reshape(info["shape"])
    return tensors


def forward(model, config, tokens):
    """Logits [n, vocab] and attention [layers][heads][n][n], float64."""
    D, H = config["d_model"], config["heads"]
    d, n = D // H, len(tokens)
    x = model["embed"][tokens] + model["pos"][:n]
    causal = np.tril(np.ones((n, n), dtype=bool))
    attention = []
    for layer in range(config["layers"]):
        w = {k: model[f"layers.{layer}.{k}"] for k in ("w_q", "w_k", "w_v", "w_o")}
        q, k, v = (x @ w[name].T for name in ("w_q", "w_k", "w_v"))
        merged, heads = np.zeros_like(x), []
        for h in range(H):
            cols = slice(h * d, (h + 1) * d)
            s = q[:, cols] @ k[:, cols].T / math.sqrt(d)
            s = np.where(causal, s, -np.inf)
            a = np.exp(s - s.max(axis=1, keepdims=True))
            a /= a.sum(axis=1, keepdims=True)
            merged[:, cols] = a @ v[:, cols]
            heads.append(a)
        x = x + merged @ w["w_o"].T
        attention.append(np.array(heads))
    return x @ model["unembed"].T, attention


def compare_with_cli(cli, model_dir, model, config, rng):
    worst_a = worst_l = 0.0
    for _ in range(3):
        tokens = rng.integers(0, config["vocab"], size=config["context"]).tolist()
        out = subprocess.run([cli, "forward", "--model", model_dir, "--tokens", ",".join(map(str, tokens)), "--json"],
                             check=True, capture_output=True, text=True).stdout
        got = json.loads(out)
        logits, attention = forward(model, config, tokens)
        assert [t["id"] for t in got["tokens"]] == tokens
        worst_a = max(worst_a, np.abs(np.array(got["attention"]) - np.array(attention)).max())
        scale = max(1.0, np.abs(logits).max())
        worst_l = max(worst_l, np.abs(np.array(got["logits"]) - logits).max() / scale)
    # The CLI multiplies the projections in float32: a few float32 roundings per value.
    print(f"forward vs NumPy float64: max |attention diff| {worst_a:.2e}, max |logit diff| / scale {worst_l:.2e}")
    return worst_a < 1e-4 and worst_l < 1e-4


def check_demo(cli, workdir, model, config):
    """attn-cli demo --model: its ids, attention and chosen heads against our own; then the stripe."""
    model_dir = workdir + "/model"
    subprocess.run([cli, "demo", "--model", model_dir, "--out", workdir + "/demo"], check=True,
                   stdout=subprocess.DEVNULL)
    manifest = json.load(open(workdir + "/demo/manifest.json"))
    words = manifest["tokens"]
    first = {}
    ids = [first.setdefault(w, len(first)) for w in words]
    got = manifest["results"]["model"]
    if got["ids"] != ids:
        raise AssertionError(f"demo ids {got['ids']}, expected {ids}")
    _, attention = forward(model, config, ids)
    diff = np.abs(np.array(got["attention"]) - np.array(attention)).max()
    # Our own induction score, head_summary's definition, on the tokens the demo shows: the
    # queries i whose word appeared exactly once before, at j, and their weight on key j + 1.
    # The demo shows the best head that the summary's rule calls induction, else the best score
    # after layer 0.
    seen, target = {}, {}
    for i, t in enumerate(ids):
        if len(seen.get(t, [])) == 1:
            target[i] = seen[t][0] + 1
        seen.setdefault(t, []).append(i)
    if not target:
        raise AssertionError(f"the demo's tokens {words} repeat no word: no induction score")
    score = {(l, h): np.mean([attention[l][h][i, j] for i, j in target.items()])
             for l in range(config["layers"]) for h in range(config["heads"])}
    kinds = {(k["layer"], k["head"]): k["kind"] for k in got["head_summary"]["heads"]}
    layers = range(1 if config["layers"] > 1 else 0, config["layers"])
    named = [lh for lh, kind in kinds.items() if kind == "induction"]
    best = max(named or [(l, h) for l in layers for h in range(config["heads"])], key=lambda lh: score[lh])
    shown = manifest["results"]["single_head"]
    if (shown["layer"], shown["head"]) != best:
        raise AssertionError(f"demo shows layer {shown['layer']} head {shown['head']}, the best is {best}")
    diff = max(diff, np.abs(np.array(shown["weights"]) - attention[best[0]][best[1]]).max(),
               abs(shown["induction_score"] - score[best]))
    print(f"demo --model vs NumPy float64: max |attention diff| {diff:.2e}, induction head {best}")
    if diff >= 1e-4:
        raise AssertionError("demo --model disagrees with the NumPy forward")
    # The stripe: second copies of the words that occur once in the first half.
    half = words.index(".")
    stripe = {i: j for i, j in target.items() if i > half and words[:half].count(words[i]) == 1}
    weights = {words[i]: attention[best[0]][best[1]][i, j] for i, j in stripe.items()}
    return min(weights.values()), weights


def measure(model, config, rng, sequences=200):
    V, L = config["vocab"], config["context"]
    P = L // 2
    losses, prev, induction = [], [], []
    for _ in range(sequences):
        half = rng.integers(0, V, size=P)
        tokens = np.concatenate([half, half])
        logits, attention = forward(model, config, tokens)
        lse = np.log(np.exp(logits - logits.max(axis=1, keepdims=True)).sum(axis=1)) + logits.max(axis=1)
        for i in range(P, L - 1):  # position i predicts token i + 1, a successor of a repeated token
            losses.append(lse[i] - logits[i, tokens[i + 1]])
        prev.append([np.mean([a[i, i - 1] for i in range(1, L)]) for a in attention[0]])
        induction.append([np.mean([a[i, i - P + 1] for i in range(P, L)]) for a in attention[-1]])
    return float(np.mean(losses)), float(np.mean(prev, axis=0).max()), float(np.mean(induction, axis=0).max())


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("cli")
    ap.add_argument("workdir")
    ap.add_argument("--train-args", default="")
    ap.add_argument("--expect-failure", action="store_true")
    ap.add_argument("--forward-only", action="store_true", help="check only that forward agrees with NumPy")
    args = ap.parse_args()

    start = time.monotonic()
    subprocess.run([args.cli, "train", "--threads", "1", "--out", args.workdir] + shlex.split(args.train_args),
                   check=True, stdout=subprocess.DEVNULL)
    print(f"attn-cli train --threads 1 {args.train_args}: {time.monotonic() - start:.1f} s wall (the goal: <= 30 s on one thread)")
    model_dir = args.workdir + "/model"
    config = json.load(open(model_dir + "/config.json"))
    model = read_safetensors(model_dir + "/model.safetensors")
    rng = np.random.default_rng(20220308)  # fresh sequences, none of them seen in training
    if not compare_with_cli(args.cli, model_dir, model, config, rng):
        print("check_train: FAILED: attn-cli forward disagrees with the NumPy forward")
        return 1

    stripe, stripe_weights = check_demo(args.cli, args.workdir, model, config)
    if args.forward_only:
        print("check_train: forward agrees")
        return 0
    loss, prev, ind = measure(model, config, rng)
    bound = 0.1 * math.log(config["vocab"])
    stripe_text = ", ".join(f"{w} {v:.3f}" for w, v in stripe_weights.items())
    checks = [(f"second-half loss {loss:.4f} <= 0.1 ln(vocab) = {bound:.4f}", loss <= bound),
              (f"layer-0 previous-token score {prev:.4f} >= 0.8", prev >= 0.8),
              (f"last-layer induction score {ind:.4f} >= 0.9", ind >= 0.9),
              (f"demo stripe, weight on the word after the first copy ({stripe_text}) >= 0.5", stripe >= 0.5)]
    for text, ok in checks:
        print(("ok    " if ok else "FAIL  ") + text)
    passed = all(ok for _, ok in checks)
    if args.expect_failure:
        print("check_train: the untrained model fails, as it must" if not passed
              else "check_train: FAILED: an untrained model passed the thresholds")
        return 0 if not passed else 1
    print("check_train: passed" if passed else "check_train: FAILED")
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
