#!/usr/bin/python3
"""Checks `attn-cli linear-attention --json` against float64 NumPy written from Katharopoulos et
al. 2020 (arXiv 2006.16236), on the Q, K, V the JSON prints (float32 values):

  phi(x) = elu(x) + 1
  causal linear attention, parallel:  A = tril(phi(Q) phi(K)^T), rows normalised;  out = A V
  the recurrence (eq. 18-20):         S_t = S_{t-1} + phi(k_t) v_t^T, z_t = z_{t-1} + phi(k_t),
                                      out_t = S_t^T phi(q_t) / z_t^T phi(q_t)
  softmax:                            P = causal softmax(Q K^T / sqrt(d))
  memory:                             KV cache t (d + dv) b bytes, state (d dv + d) b bytes

Outputs and A within 1e-12, P within 1e-6 (attn-cli's softmax is float32), recurrent vs parallel
<= 1e-12 in the JSON and here. --sabotage uses phi = relu + 1 in the reference: it must fail.

    /usr/bin/python3 scripts/check_linear_attention.py build/attn-cli ["SENTENCE" --d 8] [--sabotage]
"""
import argparse
import json
import subprocess
import sys

import numpy as np


def phi(x, sabotage=False):
    return np.maximum(x, 0) + 1 if sabotage else np.where(x > 0, x + 1, np.exp(np.minimum(x, 0)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("cli")
    ap.add_argument("args", nargs="*", default=["Attention is all you need , or is it ?", "--d", "6", "--seed", "3"])
    ap.add_argument("--sabotage", action="store_true")
    a = ap.parse_args()
    out = json.loads(subprocess.run([a.cli, "linear-attention", *a.args, "--json"], check=True,
                                    capture_output=True, text=True).stdout)
    q, k, v = (np.array(out[n], dtype=np.float64) for n in ("q", "k", "v"))
    L, d = q.shape
    mask = np.tril(np.ones((L, L), dtype=bool))

    A = np.where(mask, phi(q, a.sabotage) @ phi(k, a.sabotage).T, 0.0)
    A = A / A.sum(axis=1, keepdims=True)
    parallel = A @ v
    S, z, recurrent = np.zeros((d, v.shape[1])), np.zeros(d), np.zeros_like(parallel)
    for t in range(L):
        S += np.outer(phi(k[t], a.sabotage), v[t])
        z += phi(k[t], a.sabotage)
        recurrent[t] = S.T @ phi(q[t], a.sabotage) / (z @ phi(q[t], a.sabotage))
    scores = np.where(mask, q @ k.T / np.sqrt(d), -np.inf)
    P = np.exp(scores - scores.max(axis=1, keepdims=True))
    P /= P.sum(axis=1, keepdims=True)

    errors = []

    def close(name, ours, ref, tol):
        err = float(np.max(np.abs(np.array(ours, dtype=np.float64) - ref)))
        if not err <= tol:
            errors.append(f"{name}: max |ours - reference| = {err:.3g} > {tol:g}")

    close("parallel_output", out["parallel_output"], parallel, 1e-12)
    close("recurrent_output", out["recurrent_output"], recurrent, 1e-12)
    close("linear_weights", out["linear_weights"], A, 1e-12)
    close("softmax_weights", out["softmax_weights"], P, 1e-6)
    close("max_abs_weight_difference", out["max_abs_weight_difference"], np.max(np.abs(A - P)), 1e-6)
    if not (out["max_abs_recurrent_vs_parallel"] <= 1e-12 and np.max(np.abs(recurrent - parallel)) <= 1e-12):
        errors.append("recurrent and parallel differ by more than 1e-12")
    b = out["value_bytes"]
    for m in out["memory"]:
        if m["kv_cache_bytes"] != m["t"] * 2 * d * b or m["state_bytes"] != (d * d + d) * b:
            errors.append(f"memory at t = {m['t']}: {m}")
    print(f"check_linear_attention: {L} tokens, d = {d}, max |A - P| = {np.max(np.abs(A - P)):.3g}")
    if a.sabotage:
        if errors:
            print(f"check_linear_attention: the sabotaged reference fails, as it must ({errors[0]})")
            return 0
        print("check_linear_attention: FAILED to notice the sabotaged reference")
        return 1
    if errors:
        print("check_linear_attention: FAILED\n  " + "\n  ".join(errors))
        return 1
    print("check_linear_attention: outputs and weights agree with float64 NumPy (1e-12; softmax 1e-6)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
