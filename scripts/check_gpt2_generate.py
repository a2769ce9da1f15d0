#!/usr/bin/python3
"""Checks `attn-cli generate --model DIR PROMPT --tokens N --json` on a GPT-2 folder against a
float64 NumPy GPT-2 that recomputes the whole prefix at every step (check_gpt2_forward.py's
gpt2_forward, no cache), and the sampling rule against its own SplitMix64.

At every step the reference takes its logits z of the last position and
  greedy:   the argmax (lowest id on a tie); attn-cli's id must be it, and its probability
            softmax(z)[id] must agree within 1e-4;
  sampling: the top_k largest z (ties by lower id), p = softmax(z / T) over them, one uniform
            u = (SplitMix64 >> 11) * 2^-53 from seed --seed, the first id in order of
            decreasing p whose cumulative p exceeds u.
Where the reference's choice is within 1e-3 of a different choice (a near-tie that float32
may break the other way) the check stops there and says so, rather than fail on rounding.
With --check, attn-cli's own per-step comparison of the cached logits with a full forward must
be within 1e-4 x max(1, max |z|).

--corrupt-reference feeds the reference the prefix without its first token at every step (what
a cache that lost position 0 would compute) and requires the check to fail.

    /usr/bin/python3 scripts/check_gpt2_generate.py build/attn-cli data/gpt2_tiny "the cat" --tokens 6
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
MASK64 = (1 << 64) - 1


class SplitMix64:
    """attn-cli's Rng (include/attn/engine/core/random.hpp): Steele, Lea, Flood 2014."""

    def __init__(self, seed):
        self.state = seed & MASK64

    def uniform(self):
        self.state = (self.state + 0x9E3779B97F4A7C15) & MASK64
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
        z ^= z >> 31
        return (z >> 11) * 2.0 ** -53


def choose(z, temperature, top_k, rng):
    """(id, probability, margin): margin is how far the choice is from flipping."""
    order = sorted(range(len(z)), key=lambda v: (-z[v], v))
    if temperature == 0 and top_k == 0:
        p = np.exp(z - z.max())
        p /= p.sum()
        return order[0], float(p[order[0]]), float(z[order[0]] - z[order[1]])
    kept = order[:top_k] if top_k else order
    t = temperature if temperature > 0 else 1.0
    p = np.exp((z[kept] - z[kept[0]]) / t)
    p /= p.sum()
    u = rng.uniform()
    cumulative = np.cumsum(p)
    r = int(np.searchsorted(cumulative, u, side="right"))
    r = min(r, len(kept) - 1)
    margin = min(abs(cumulative[r] - u), abs(u - (cumulative[r - 1] if r else 0.0)))
    return kept[r], float(p[r]), float(margin)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("cli")
    ap.add_argument("model")
    ap.add_argument("prompt")
    ap.add_argument("--tokens", type=int, required=True)
    ap.add_argument("--temperature", type=float, default=0.0)
    ap.add_argument("--top-k", type=int, default=0)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--corrupt-reference", action="store_true")
    a = ap.parse_args()

    args = [a.cli, "generate", "--model", a.model, a.prompt, "--tokens", str(a.tokens), "--seed", str(a.seed), "--json"]
    if a.temperature:
        args += ["--temperature", repr(a.temperature)]
    if a.top_k:
        args += ["--top-k", str(a.top_k)]
    if a.check:
        args.append("--check")
    run = subprocess.run(args, capture_output=True, text=True)
    if run.returncode != 0:
        raise SystemExit(f"check_gpt2_generate: attn-cli exited {run.returncode}: {run.stderr.strip()}")
    out = json.loads(run.stdout)

    with open(f"{a.model}/config.json") as f:
        config = json.load(f)
    tensors = read_safetensors(f"{a.model}/model.safetensors")
    ids = list(out["prompt"])
    rng = SplitMix64(a.seed)
    failures, compared = [], 0
    for n, step in enumerate(out["steps"]):
        prefix = ids[1:] if a.corrupt_reference and len(ids) > 1 else ids
        _, logits = gpt2_forward(tensors, config, prefix)
        z = logits[-1]
        want, p, margin = choose(z, a.temperature, a.top_k, rng)
        if step["id"] != want:
            if margin < 1e-3:
                print(f"check_gpt2_generate: step {n + 1} is a near-tie (margin {margin:.1e}); stopping the comparison")
                break
            failures.append(f"step {n + 1}: attn-cli chose {step['id']}, the reference {want} (margin {margin:.2e})")
            break
        if abs(step["probability"] - p) > TOLERANCE:
            failures.append(f"step {n + 1}: probability {step['probability']:.6f}, the reference {p:.6f}")
        if a.check:
            bound = TOLERANCE * max(1.0, step["logit_scale"])
            if not step["max_abs_diff_vs_full"] <= bound:
                failures.append(f"step {n + 1}: cached vs full logits differ by {step['max_abs_diff_vs_full']:.2e} > {bound:.2e}")
        if step["cache_len"] != len(ids):
            failures.append(f"step {n + 1}: cache_len {step['cache_len']}, expected {len(ids)}")
        ids.append(want)
        compared += 1
    print(f"check_gpt2_generate: {compared} of {len(out['steps'])} steps compared "
          f"({'greedy' if not a.temperature and not a.top_k else f'T={a.temperature}, top_k={a.top_k}, seed {a.seed}'})")
    if a.corrupt_reference:
        if not failures:
            raise SystemExit("check_gpt2_generate: the corrupted reference still agrees: the check cannot fail")
        print("check_gpt2_generate: the corrupted reference disagrees, as it must:", failures[0])
        return
    if compared == 0:
        failures.append("no step compared")
    if failures:
        raise SystemExit("check_gpt2_generate: " + "; ".join(failures))
    print("check_gpt2_generate: generation agrees with the float64 reference")


if __name__ == "__main__":
    main()
