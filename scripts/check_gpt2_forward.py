#!/usr/bin/python3
"""Checks `attn-cli forward --model DIR --tokens ... --json` on a GPT-2 folder against GPT-2
written from its definition in float64 NumPy (Radford et al. 2019; Hugging Face's Conv1D
stores weights [in, out]), reading model.safetensors with its own parser (struct + json).

Agreement: every attention weight within 1e-4 of the reference, every logit within 1e-4 x
max(1, max |logit|): float32 through a few layers of width <= 64 loses about 1e-6 relative, so
the bound is loose for rounding and tight for any real mistake.

--corrupt-reference swaps ln_1.weight and ln_2.weight of the first block in the reference,
and then requires the check to fail: a check that cannot tell those apart proves nothing.

    /usr/bin/python3 scripts/check_gpt2_forward.py build/attn-cli /tmp/gpt2-small --tokens 1,2,3
"""
import argparse
import json
import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from safetensors_np import read_safetensors as read_safetensors_np  # noqa: E402

TOLERANCE = 1e-4


def read_safetensors(path):
    """GPT-2's tensors by their bare names: "transformer." dropped, the short wte/wpe completed."""
    tensors = {}
    for name, (values, _) in read_safetensors_np(path).items():
        name = name[len("transformer."):] if name.startswith("transformer.") else name
        name = name + ".weight" if name in ("wte", "wpe") else name  # the short names some exports use
        tensors[name] = values
    return tensors


def layer_norm(x, gamma, beta, eps):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)  # biased, as torch.nn.LayerNorm
    return (x - mean) / np.sqrt(var + eps) * gamma + beta


def gelu_new(x):
    return 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x ** 3)))


def gpt2_forward(t, config, ids):
    """Returns (attention [layer][head][n][n], logits [n][vocab]) in float64."""
    n, D, H = len(ids), config["n_embd"], config["n_head"]
    d, eps = D // H, config["layer_norm_epsilon"]
    x = t["wte.weight"][ids] + t["wpe.weight"][:n]
    future = np.triu(np.ones((n, n), dtype=bool), k=1)
    attention = []
    for i in range(config["n_layer"]):
        p = lambda name: t[f"h.{i}.{name}"]
        a = layer_norm(x, p("ln_1.weight"), p("ln_1.bias"), eps)
        qkv = a @ p("attn.c_attn.weight") + p("attn.c_attn.bias")
        q, k, v = (qkv[:, j * D:(j + 1) * D].reshape(n, H, d).transpose(1, 0, 2) for j in range(3))
        scores = q @ k.transpose(0, 2, 1) / np.sqrt(d)
        scores[:, future] = -np.inf
        w = np.exp(scores - scores.max(-1, keepdims=True))
        w /= w.sum(-1, keepdims=True)
        attention.append(w)
        heads = (w @ v).transpose(1, 0, 2).reshape(n, D)
        x = x + heads @ p("attn.c_proj.weight") + p("attn.c_proj.bias")
        m = layer_norm(x, p("ln_2.weight"), p("ln_2.bias"), eps)
        x = x + gelu_new(m @ p("mlp.c_fc.weight") + p("mlp.c_fc.bias")) @ p("mlp.c_proj.weight") + p("mlp.c_proj.bias")
    x = layer_norm(x, t["ln_f.weight"], t["ln_f.bias"], eps)
    return np.array(attention), x @ t["wte.weight"].T


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("cli")
    ap.add_argument("model")
    ap.add_argument("--tokens", required=True)
    ap.add_argument("--corrupt-reference", action="store_true")
    a = ap.parse_args()

    with open(f"{a.model}/config.json") as f:
        config = json.load(f)
    tensors = read_safetensors(f"{a.model}/model.safetensors")
    if a.corrupt_reference:
        tensors["h.0.ln_1.weight"], tensors["h.0.ln_2.weight"] = tensors["h.0.ln_2.weight"], tensors["h.0.ln_1.weight"]
    ids = [int(s) for s in a.tokens.split(",")]
    ref_attention, ref_logits = gpt2_forward(tensors, config, ids)

    run = subprocess.run([a.cli, "forward", "--model", a.model, "--tokens", a.tokens, "--json"],
                         capture_output=True, text=True)
    if run.returncode != 0:
        raise SystemExit(f"check_gpt2_forward: attn-cli exited {run.returncode}: {run.stderr.strip()}")
    out = json.loads(run.stdout)
    attention, logits = np.array(out["attention"], dtype=np.float64), np.array(out["logits"], dtype=np.float64)
    if attention.shape != ref_attention.shape or logits.shape != ref_logits.shape:
        raise SystemExit(f"check_gpt2_forward: shapes {attention.shape} {logits.shape}, "
                         f"expected {ref_attention.shape} {ref_logits.shape}")
    if [tok["id"] for tok in out["tokens"]] != ids:
        raise SystemExit("check_gpt2_forward: the JSON's token ids differ from --tokens")
    attention_err = float(np.abs(attention - ref_attention).max())
    logit_scale = max(1.0, float(np.abs(ref_logits).max()))
    logit_err = float(np.abs(logits - ref_logits).max()) / logit_scale
    agrees = attention_err <= TOLERANCE and logit_err <= TOLERANCE
    print(f"check_gpt2_forward: {len(ids)} tokens, {config['n_layer']} layers x {config['n_head']} heads: "
          f"max attention error {attention_err:.2e}, max logit error {logit_err:.2e} of scale {logit_scale:.3g} "
          f"(tolerance {TOLERANCE:g})")
    if a.corrupt_reference:
        if agrees:
            raise SystemExit("check_gpt2_forward: the corrupted reference still agrees: the check cannot fail")
        print("check_gpt2_forward: the corrupted reference disagrees, as it must")
        return
    if not agrees:
        raise SystemExit("check_gpt2_forward: attn-cli disagrees with the float64 reference")
    print("check_gpt2_forward: forward agrees with the float64 reference")


if __name__ == "__main__":
    main()
