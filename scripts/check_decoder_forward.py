#!/usr/bin/python3
"""Checks `attn-cli forward --model DIR --tokens ... --json` on a Llama, Mistral or Qwen2 folder
against the model written from its definitions in float64 NumPy, reading config.json and the
safetensors files (one, or the shards of model.safetensors.index.json) with its own parser:

    x = embed[ids]; per layer: h = rmsnorm(x) * w_in; q, k, v = h W^T (+ b); rotate-half RoPE
    (theta^(-2i/d), scaled as rope_scaling says); causal softmax(q k^T / sqrt(d)) with query
    head h on KV head h // (H / Hkv), keys j > i - W under a sliding window W; x += o W_o^T;
    h = rmsnorm(x) * w_post; x += (silu(h W_g^T) * h W_u^T) W_d^T
    logits = rmsnorm(x) * w_norm  lm_head^T   (embed when tie_word_embeddings)

Agreement (issue 37's bounds): every attention weight within 2e-5 (F32 weights) or 2e-4 (BF16,
F16), every masked weight exactly 0, every logit within 1e-3 x max |logit|.

--corrupt-reference runs the reference with RoPE's two halves swapped (interleaved pairs instead
of rotate-half) and then requires the check to fail: a check that cannot tell them apart proves
nothing.

    /usr/bin/python3 scripts/check_decoder_forward.py build/attn-cli /tmp/llama-tiny --tokens 1,2,3
"""
import argparse
import json
import math
import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from safetensors_np import read_safetensors  # noqa: E402


def read_weights(folder):
    index = os.path.join(folder, "model.safetensors.index.json")
    if not os.path.exists(index):
        return read_safetensors(os.path.join(folder, "model.safetensors"))
    with open(index) as f:
        files = sorted(set(json.load(f)["weight_map"].values()))
    out = {}
    for name in files:
        out.update(read_safetensors(os.path.join(folder, name)))
    return out


def rope_frequencies(c, d):
    theta = c.get("rope_theta", 10000.0) ** (-np.arange(0, d, 2) / d)
    s = c.get("rope_scaling") or {}
    kind = s.get("rope_type", s.get("type", "default"))
    if kind == "linear":
        theta = theta / s["factor"]
    if kind == "llama3":  # Hugging Face's _compute_llama3_parameters, written out
        old = s["original_max_position_embeddings"]
        low_wavelength, high_wavelength = old / s["low_freq_factor"], old / s["high_freq_factor"]
        out = []
        for t in theta:
            wavelength = 2 * math.pi / t
            if wavelength > low_wavelength:
                out.append(t / s["factor"])
            elif wavelength < high_wavelength:
                out.append(t)
            else:
                smooth = (old / wavelength - s["low_freq_factor"]) / (s["high_freq_factor"] - s["low_freq_factor"])
                out.append((1 - smooth) * t / s["factor"] + smooth * t)
        theta = np.array(out)
    return theta


def rope(x, theta, corrupt):
    """x [heads, L, d] rotated to positions 0..L-1: pairs (i, i + d/2) (rotate-half)."""
    L, d = x.shape[1], x.shape[2]
    angle = np.arange(L)[:, None] * theta[None, :]  # [L, d/2]
    cos, sin = np.cos(angle), np.sin(angle)
    if corrupt:  # pairs (2i, 2i + 1): the interleaved layout, wrong for these models
        a, b = x[..., 0::2], x[..., 1::2]
        y = np.empty_like(x)
        y[..., 0::2], y[..., 1::2] = a * cos - b * sin, b * cos + a * sin
        return y
    a, b = x[..., :d // 2], x[..., d // 2:]
    return np.concatenate([a * cos - b * sin, b * cos + a * sin], axis=-1)


def rms_norm(x, w, eps):
    return x / np.sqrt((x * x).mean(axis=-1, keepdims=True) + eps) * w


def forward(c, w, ids, corrupt):
    H, D = c["num_attention_heads"], c["hidden_size"]
    Hkv = c.get("num_key_value_heads") or H
    d = c.get("head_dim") or D // H
    eps = c.get("rms_norm_eps", 1e-6)
    family = c["model_type"]
    window = 0
    if family == "mistral":
        window = c.get("sliding_window") or 0
    if family == "qwen2" and c.get("use_sliding_window"):
        window = c.get("sliding_window") or 0
    first_window_layer = c.get("max_window_layers", 28) if family == "qwen2" else 0
    theta = rope_frequencies(c, d)
    x = w["model.embed_tokens.weight"][ids]
    L = len(ids)
    attention = []
    for layer in range(c["num_hidden_layers"]):
        p = f"model.layers.{layer}."

        def proj(name, h):
            y = h @ w[p + name + ".weight"].T
            return y + w[p + name + ".bias"] if p + name + ".bias" in w else y

        h = rms_norm(x, w[p + "input_layernorm.weight"], eps)
        q = proj("self_attn.q_proj", h).reshape(L, H, d).transpose(1, 0, 2)
        k = proj("self_attn.k_proj", h).reshape(L, Hkv, d).transpose(1, 0, 2)
        v = proj("self_attn.v_proj", h).reshape(L, Hkv, d).transpose(1, 0, 2)
        q, k = rope(q, theta, corrupt), rope(k, theta, corrupt)
        i, j = np.arange(L)[:, None], np.arange(L)[None, :]
        visible = j <= i
        if window and layer >= first_window_layer:
            visible = visible & (j > i - window)
        weights, out = np.zeros((H, L, L)), np.zeros((H, L, d))
        for head in range(H):
            kv = head // (H // Hkv)
            s = np.where(visible, q[head] @ k[kv].T / math.sqrt(d), -np.inf)
            e = np.exp(s - s.max(axis=1, keepdims=True))
            weights[head] = e / e.sum(axis=1, keepdims=True)
            out[head] = weights[head] @ v[kv]
        attention.append(weights)
        x = x + out.transpose(1, 0, 2).reshape(L, H * d) @ w[p + "self_attn.o_proj.weight"].T
        h = rms_norm(x, w[p + "post_attention_layernorm.weight"], eps)
        gate = h @ w[p + "mlp.gate_proj.weight"].T
        x = x + (gate / (1 + np.exp(-gate)) * (h @ w[p + "mlp.up_proj.weight"].T)) @ w[p + "mlp.down_proj.weight"].T
    head = w["model.embed_tokens.weight"] if c.get("tie_word_embeddings") else w["lm_head.weight"]
    return attention, rms_norm(x, w["model.norm.weight"], eps) @ head.T


def compare(got, attention, logits, tolerance, logit_bound=1e-3):
    worst_weight, worst_logit, masked_nonzero = 0.0, 0.0, 0
    for layer, ref in enumerate(attention):
        have = np.array(got["attention"][layer])
        worst_weight = max(worst_weight, float(np.abs(have - ref).max()))
        masked_nonzero += int(((ref == 0) & (have != 0)).sum())
    scale = max(1.0, float(np.abs(logits).max()))
    worst_logit = float(np.abs(np.array(got["logits"]) - logits).max()) / scale
    ok = worst_weight <= tolerance and worst_logit <= logit_bound and masked_nonzero == 0
    print(f"max |attention - reference| = {worst_weight:.3g} (bound {tolerance:g}); max |logit - reference| / "
          f"max |logit| = {worst_logit:.3g} (bound {logit_bound:g}); masked weights not 0: {masked_nonzero}")
    return ok


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("cli")
    p.add_argument("folder")
    p.add_argument("--tokens", required=True)
    p.add_argument("--corrupt-reference", action="store_true")
    a = p.parse_args()
    with open(os.path.join(a.folder, "config.json")) as f:
        c = json.load(f)
    stored = read_weights(a.folder)
    w = {name: v for name, (v, _) in stored.items()}
    tolerance = 2e-5 if all(dtype == "F32" for _, dtype in stored.values()) else 2e-4
    ids = [int(t) for t in a.tokens.split(",")]
    run = subprocess.run([a.cli, "forward", "--model", a.folder, "--tokens", a.tokens, "--json"], capture_output=True,
                         text=True)
    if run.returncode != 0:
        print(run.stderr, file=sys.stderr)
        return 1
    attention, logits = forward(c, w, ids, a.corrupt_reference)
    ok = compare(json.loads(run.stdout), attention, logits, tolerance)
    if a.corrupt_reference:
        print("the corrupted reference was accepted: the check cannot fail" if ok else
              "the corrupted reference disagrees, as it must")
        return 1 if ok else 0
    print("forward agrees with the float64 reference" if ok else "forward DISAGREES with the float64 reference")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
