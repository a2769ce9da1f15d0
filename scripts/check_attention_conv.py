#!/usr/bin/python3
"""attn-cli attention-conv against a convolution written here in NumPy: from the x and the kernel
taps the tool prints (--json), compute the 1-D and 2-D convolution ("same" size, zero padding,
tap t at offset t - (K-1)/2 per axis, row-major) and require the tool's attention output to
equal it within 1e-12, for kernel sizes 3 and 5; and that leaving one head out is not the
convolution. --corrupt-reference shifts every tap by one position and must make the check fail.

Usage: check_attention_conv.py ATTN_CLI [--corrupt-reference]
"""
import itertools
import json
import subprocess
import sys

import numpy as np


def convolve(x, taps, extent, shift):
    x = np.asarray(x)
    K = round(len(taps) ** (1 / len(extent)))
    half = (K - 1) // 2
    offsets = list(itertools.product(range(-half, half + 1), repeat=len(extent)))
    y = np.zeros((x.shape[0], np.asarray(taps[0]).shape[0]))
    for n, point in enumerate(itertools.product(*[range(e) for e in extent])):
        for w, off in zip(taps, offsets):
            q = [p + o + shift for p, o in zip(point, off)]
            if all(0 <= c < e for c, e in zip(q, extent)):
                m = np.ravel_multi_index(q, extent)
                y[n] += np.asarray(w) @ x[m]
    return y


def main():
    cli = sys.argv[1]
    corrupt = "--corrupt-reference" in sys.argv
    failures, worst = [], 0.0
    for kernel in (3, 5):
        out = subprocess.run([cli, "attention-conv", "--kernel", str(kernel), "--length", "11", "--height", "5",
                              "--width", "6", "--json"], check=True, capture_output=True, text=True).stdout
        j = json.loads(out)
        for name in ("one_d", "two_d"):
            c = j[name]
            want = convolve(c["x"], c["weights"], c["extent"], 1 if corrupt else 0)
            diff = float(np.abs(np.asarray(c["attention"]) - want).max())
            worst = max(worst, diff)
            if diff > 1e-12:
                failures.append(f"kernel {kernel}, {name}: max |attention - conv| = {diff:.2e}")
            if not c["one_head_short"] > 1e-3:
                failures.append(f"kernel {kernel}, {name}: one head short still matches ({c['one_head_short']:.1e})")
    print(f"check_attention_conv: worst |attention - NumPy conv| {worst:.1e} for K = 3, 5 in 1-D and 2-D")
    if corrupt:
        if not failures:
            raise SystemExit("check_attention_conv: the shifted reference still agrees: the check cannot fail")
        print("check_attention_conv: the shifted reference disagrees, as it must:", failures[0])
        return 0
    if failures:
        raise SystemExit("check_attention_conv: " + "; ".join(failures))
    print("check_attention_conv: attention equals the convolution to round-off")
    return 0


if __name__ == "__main__":
    sys.exit(main())
