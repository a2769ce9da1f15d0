#!/usr/bin/python3
"""The PyTorch cross-check of scripts/check_decoder_forward.py's NumPy decoder (issue 37).

The NumPy reference is written from the definitions. This script writes the same models a second
time, the way Hugging Face's modeling_llama / modeling_mistral / modeling_qwen2 are organised, in
torch float64: nn.Linear projections whose biases come from the config (Qwen2: q, k and v;
Llama: `attention_bias`; Mistral: none) and a strict load_state_dict, so a folder with a tensor too
many or too few fails; inverse frequencies with Llama 3's smoothing done with torch.where on the
wavelengths; cos/sin tables of the concatenated frequencies and q * cos + rotate_half(q) * sin;
repeat_kv (expand + reshape); an additive mask of the dtype's minimum, causal and, on sliding
layers, keys j > i - window; softmax; SiLU-gated MLP; final norm; lm_head (the embedding, tied).

It then checks, on one folder and one list of ids:
  1. PyTorch against the NumPy reference: every attention weight and logit within 1e-9 (relative
     to max |logit| for logits) -- two float64 implementations of one definition;
  2. `attn-cli forward --json` against PyTorch under issue 37's bounds (as check_decoder_forward).

--corrupt-torch gives query head h the key/value head h % Hkv (torch's .repeat instead of
repeat_kv) and then requires check 1 to fail: the cross-check can tell the layouts apart.

Exit 77 when torch is not installed (CTest reports the test as skipped).

    /usr/bin/python3 scripts/check_decoder_torch.py build/attn-cli /tmp/llama-tiny --tokens 1,2,3
"""
import argparse
import json
import math
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_decoder_forward as numpy_reference  # noqa: E402

try:
    import torch
    from torch import nn
except ImportError:
    print("torch is not installed (python3-torch): skipped")
    sys.exit(77)


class RMSNorm(nn.Module):
    def __init__(self, width, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(width, dtype=torch.float64))
        self.eps = eps

    def forward(self, x):
        variance = x.pow(2).mean(-1, keepdim=True)
        return self.weight * (x * torch.rsqrt(variance + self.eps))


def inverse_frequencies(c, dim):
    base = c.get("rope_theta", 10000.0)
    inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.float64) / dim))
    scaling = c.get("rope_scaling") or {}
    kind = scaling.get("rope_type", scaling.get("type", "default"))
    if kind == "linear":
        return inv_freq / scaling["factor"]
    if kind != "llama3":
        return inv_freq
    factor, low, high = scaling["factor"], scaling["low_freq_factor"], scaling["high_freq_factor"]
    old = scaling["original_max_position_embeddings"]
    wavelen = 2 * math.pi / inv_freq
    scaled = torch.where(wavelen > old / low, inv_freq / factor, inv_freq)
    smooth = (old / wavelen - low) / (high - low)
    smoothed = (1 - smooth) * scaled / factor + smooth * scaled
    medium = (wavelen >= old / high) & (wavelen <= old / low)
    return torch.where(medium, smoothed, scaled)


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def repeat_kv(x, n_rep, corrupt):
    heads, length, dim = x.shape
    if corrupt:
        return x.repeat(n_rep, 1, 1)
    return x[:, None].expand(heads, n_rep, length, dim).reshape(heads * n_rep, length, dim)


class Attention(nn.Module):
    def __init__(self, c, dim, window, corrupt):
        super().__init__()
        self.heads, self.kv_heads = c["num_attention_heads"], c.get("num_key_value_heads") or c["num_attention_heads"]
        self.dim, self.window, self.corrupt = dim, window, corrupt
        bias = c["model_type"] == "qwen2" or (c["model_type"] == "llama" and c.get("attention_bias", False))
        width = c["hidden_size"]
        self.q_proj = nn.Linear(width, self.heads * dim, bias=bias, dtype=torch.float64)
        self.k_proj = nn.Linear(width, self.kv_heads * dim, bias=bias, dtype=torch.float64)
        self.v_proj = nn.Linear(width, self.kv_heads * dim, bias=bias, dtype=torch.float64)
        self.o_proj = nn.Linear(self.heads * dim, width, bias=False, dtype=torch.float64)

    def forward(self, x, cos, sin):
        length = x.shape[0]
        q = self.q_proj(x).view(length, self.heads, self.dim).transpose(0, 1)
        k = self.k_proj(x).view(length, self.kv_heads, self.dim).transpose(0, 1)
        v = self.v_proj(x).view(length, self.kv_heads, self.dim).transpose(0, 1)
        q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        n_rep = self.heads // self.kv_heads
        k, v = repeat_kv(k, n_rep, self.corrupt), repeat_kv(v, n_rep, self.corrupt)
        i = torch.arange(length)[:, None]
        j = torch.arange(length)[None, :]
        hidden = j > i
        if self.window:
            hidden |= j <= i - self.window
        mask = torch.zeros(length, length, dtype=torch.float64).masked_fill(hidden, torch.finfo(torch.float64).min)
        weights = torch.softmax(q @ k.transpose(1, 2) / math.sqrt(self.dim) + mask, dim=-1)
        out = (weights @ v).transpose(0, 1).reshape(length, self.heads * self.dim)
        return self.o_proj(out), weights


class MLP(nn.Module):
    def __init__(self, width, inner):
        super().__init__()
        self.gate_proj = nn.Linear(width, inner, bias=False, dtype=torch.float64)
        self.up_proj = nn.Linear(width, inner, bias=False, dtype=torch.float64)
        self.down_proj = nn.Linear(inner, width, bias=False, dtype=torch.float64)

    def forward(self, x):
        return self.down_proj(nn.functional.silu(self.gate_proj(x)) * self.up_proj(x))


class Layer(nn.Module):
    def __init__(self, c, dim, window, corrupt):
        super().__init__()
        eps = c.get("rms_norm_eps", 1e-6)
        self.input_layernorm = RMSNorm(c["hidden_size"], eps)
        self.self_attn = Attention(c, dim, window, corrupt)
        self.post_attention_layernorm = RMSNorm(c["hidden_size"], eps)
        self.mlp = MLP(c["hidden_size"], c["intermediate_size"])

    def forward(self, x, cos, sin):
        attended, weights = self.self_attn(self.input_layernorm(x), cos, sin)
        x = x + attended
        return x + self.mlp(self.post_attention_layernorm(x)), weights


def layer_window(c, layer):
    """The sliding window of one layer, as each family's config sets it (0: none)."""
    if c["model_type"] == "mistral":
        return c.get("sliding_window") or 0
    if c["model_type"] == "qwen2" and c.get("use_sliding_window") and layer >= c.get("max_window_layers", 28):
        return c.get("sliding_window") or 0
    return 0


class Model(nn.Module):
    """Holds `model.*` and `lm_head.*` under Hugging Face's names, so the state dict loads strictly."""

    def __init__(self, c, corrupt):
        super().__init__()
        self.config = c
        dim = c.get("head_dim") or c["hidden_size"] // c["num_attention_heads"]
        self.model = nn.Module()
        self.model.embed_tokens = nn.Embedding(c["vocab_size"], c["hidden_size"], dtype=torch.float64)
        self.model.layers = nn.ModuleList(Layer(c, dim, layer_window(c, n), corrupt)
                                          for n in range(c["num_hidden_layers"]))
        self.model.norm = RMSNorm(c["hidden_size"], c.get("rms_norm_eps", 1e-6))
        self.tied = bool(c.get("tie_word_embeddings"))
        if not self.tied:
            self.lm_head = nn.Linear(c["hidden_size"], c["vocab_size"], bias=False, dtype=torch.float64)
        self.register_buffer("inv_freq", inverse_frequencies(c, dim), persistent=False)

    def forward(self, ids):
        x = self.model.embed_tokens(ids)
        freqs = torch.arange(len(ids), dtype=torch.float64)[:, None] * self.inv_freq[None, :]
        angles = torch.cat((freqs, freqs), dim=-1)
        cos, sin = angles.cos(), angles.sin()
        attention = []
        for layer in self.model.layers:
            x, weights = layer(x, cos, sin)
            attention.append(weights)
        x = self.model.norm(x)
        head = self.model.embed_tokens.weight if self.tied else self.lm_head.weight
        return attention, x @ head.T


def torch_forward(c, stored, ids, corrupt):
    model = Model(c, corrupt)
    model.load_state_dict({name: torch.from_numpy(v) for name, (v, _) in stored.items()}, strict=True)
    with torch.no_grad():
        attention, logits = model(torch.tensor(ids))
    return [a.numpy() for a in attention], logits.numpy()


def torch_against_numpy(attention, logits, ref_attention, ref_logits):
    print("PyTorch vs NumPy: ", end="")
    return numpy_reference.compare({"attention": attention, "logits": logits}, ref_attention, ref_logits, 1e-9, 1e-9)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("cli")
    p.add_argument("folder")
    p.add_argument("--tokens", required=True)
    p.add_argument("--corrupt-torch", action="store_true")
    a = p.parse_args()
    with open(os.path.join(a.folder, "config.json")) as f:
        c = json.load(f)
    stored = numpy_reference.read_weights(a.folder)
    ids = [int(t) for t in a.tokens.split(",")]
    attention, logits = torch_forward(c, stored, ids, a.corrupt_torch)
    ref_attention, ref_logits = numpy_reference.forward(c, {n: v for n, (v, _) in stored.items()}, ids, False)
    same = torch_against_numpy(attention, logits, ref_attention, ref_logits)
    if a.corrupt_torch:
        print("the corrupted PyTorch model agrees: the cross-check cannot fail" if same else
              "the corrupted PyTorch model disagrees, as it must")
        return 1 if same else 0
    run = subprocess.run([a.cli, "forward", "--model", a.folder, "--tokens", a.tokens, "--json"], capture_output=True,
                         text=True)
    if run.returncode != 0:
        print(run.stderr, file=sys.stderr)
        return 1
    tolerance = 2e-5 if all(dtype == "F32" for _, dtype in stored.values()) else 2e-4
    print("attn-cli vs PyTorch: ", end="")
    agrees = numpy_reference.compare(json.loads(run.stdout), attention, logits, tolerance)
    ok = same and agrees
    print("PyTorch, NumPy and attn-cli agree" if ok else "PyTorch, NumPy and attn-cli DISAGREE")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
