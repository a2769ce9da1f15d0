#!/usr/bin/python3
"""Golden files for attn-cli's tests, from a plain float64 NumPy reference.

Run from the repository root:   /usr/bin/python3 scripts/make_golden.py
(needs Debian's python3-numpy). Writes data/golden/<case>.json, each
    {"what": ..., "input": <attend or mha input per docs/contracts.md>, "expected": {...}}
Inputs are rounded to float32 first, so the reference and attn-cli see the same numbers.
The reference below is the textbook formula, written independently of the C++ code.
"""
import json
import os

import numpy as np

OUT = os.path.join(os.path.dirname(__file__), "..", "data", "golden")
rng = np.random.default_rng(20261121)


def f32(x):
    return np.asarray(x, dtype=np.float32).astype(np.float64)


def causal_allowed(lq, lk):
    # bottom-right aligned: query i sees keys j <= i + lk - lq
    i = np.arange(lq)[:, None]
    j = np.arange(lk)[None, :]
    return j <= i + (lk - lq)


def sdpa_reference(q, k, v, allowed=None, causal=False, scale=None):
    """q [H,Lq,d], k [Hkv,Lk,d], v [Hkv,Lk,dv]; allowed broadcastable to [H,Lq,Lk]."""
    H, lq, d = q.shape
    group = H // k.shape[0]
    k = np.repeat(k, group, axis=0)
    v = np.repeat(v, group, axis=0)
    scale = 1.0 / np.sqrt(d) if scale is None else scale
    s = np.einsum("hid,hjd->hij", q, k) * scale
    ok = np.ones(s.shape, dtype=bool)
    if allowed is not None:
        ok &= np.broadcast_to(allowed, s.shape)
    if causal:
        ok &= causal_allowed(lq, k.shape[1])[None]
    s = np.where(ok, s, -np.inf)
    m = s.max(axis=-1, keepdims=True)
    dead = np.isneginf(m)  # every key masked: attend to nothing
    e = np.where(ok, np.exp(s - np.where(dead, 0.0, m)), 0.0)
    z = e.sum(axis=-1, keepdims=True)
    p = np.where(dead, 0.0, e / np.where(dead, 1.0, z))
    lse = np.where(dead[..., 0], -np.inf, (m + np.log(np.where(dead, 1.0, z)))[..., 0])
    return p @ v, p, lse


def rope_half(x, pos, base):
    """GPT-NeoX / HF LlamaRotaryEmbedding: x * cos + rotate_half(x) * sin.
    x [..., L, d]; cos and sin have width d (the d/2 frequencies written twice) --
    a common tutorial broadcasts width d/2 against width d, which does not even run."""
    d = x.shape[-1]
    inv_freq = 1.0 / base ** (np.arange(0, d, 2) / d)
    freqs = np.outer(pos, inv_freq)  # [L, d/2]
    emb = np.concatenate([freqs, freqs], axis=-1)  # [L, d]
    x1, x2 = x[..., : d // 2], x[..., d // 2:]
    rotated = np.concatenate([-x2, x1], axis=-1)
    return x * np.cos(emb) + rotated * np.sin(emb)


def rope_interleaved(x, pos, base):
    """RoFormer eq. 34 / Meta's llama reference: adjacent dims (2i, 2i+1) read as one complex
    number and multiplied by e^{i pos theta_i}, theta_i = base^(-2i/d)."""
    d = x.shape[-1]
    theta = base ** (-np.arange(0, d, 2) / d)
    z = (x[..., 0::2] + 1j * x[..., 1::2]) * np.exp(1j * np.outer(pos, theta))
    out = np.empty_like(x)
    out[..., 0::2], out[..., 1::2] = z.real, z.imag
    return out


def mha_reference(x_q, x_k, x_v, w, H, Hkv, allowed=None, causal=False, rope=None):
    """rope: None or (style, base, query positions, key positions)."""
    def lin(x, W, b):
        return x @ W.T + (0 if b is None else b)

    D = x_q.shape[1]
    d = D // H
    Q = lin(x_q, w["w_q"], w.get("b_q")).reshape(-1, H, d).transpose(1, 0, 2)
    K = lin(x_k, w["w_k"], w.get("b_k")).reshape(-1, Hkv, d).transpose(1, 0, 2)
    V = lin(x_v, w["w_v"], w.get("b_v")).reshape(-1, Hkv, d).transpose(1, 0, 2)
    if rope is not None:
        style, base, qpos, kpos = rope
        turn = rope_half if style == "half" else rope_interleaved
        Q, K = turn(Q, np.asarray(qpos, float), base), turn(K, np.asarray(kpos, float), base)
    o, p, lse = sdpa_reference(Q, K, V, allowed, causal)
    y = lin(o.transpose(1, 0, 2).reshape(-1, D), w["w_o"], w.get("b_o"))
    return y, p, lse


def tolist(a):
    if isinstance(a, np.ndarray) and a.dtype == bool:
        return a.astype(int).tolist()
    return np.where(np.isneginf(a), np.nan, a).tolist() if np.ndim(a) else float(a)


def lse_list(lse):
    return [None if np.isneginf(x) else float(x) for x in lse] if lse.ndim == 1 else [lse_list(r) for r in lse]


def write(name, what, inp, expected):
    doc = {"what": what, "input": {k: (v if not isinstance(v, np.ndarray) else tolist(v)) for k, v in inp.items()},
           "expected": expected}
    with open(os.path.join(OUT, name + ".json"), "w") as f:
        json.dump(doc, f, indent=None, separators=(",", ":"))
        f.write("\n")
    print("wrote", name)


def attend_case(name, what, H, Hkv, lq, lk, d, dv, magnitude=1.0, mask=None, causal=False, scale=None, squeeze=False):
    q = f32(rng.standard_normal((H, lq, d)) * magnitude)
    k = f32(rng.standard_normal((Hkv, lk, d)) * magnitude)
    v = f32(rng.standard_normal((Hkv, lk, dv)))
    o, p, lse = sdpa_reference(q, k, v, mask, causal, scale)
    inp = {"q": q[0] if squeeze else q, "k": k[0] if squeeze else k, "v": v[0] if squeeze else v}
    if mask is not None:
        inp["mask"] = mask
    if causal:
        inp["causal"] = True
    if scale is not None:
        inp["scale"] = scale
    exp = {"output": (o[0] if squeeze else o).tolist(), "weights": (p[0] if squeeze else p).tolist(),
           "lse": lse_list(lse[0] if squeeze else lse)}
    write(name, what, inp, exp)


def mha_case(name, what, lq, lk, D, H, Hkv, bias, cross, mask=None, causal=False, rope=None, decode_from=None):
    """rope: None or a dict as in the contract ({"style", "base"?, "position_ids"?}).
    Keys of a cross-attention sit at 0..Lk-1; in self-attention they share the queries'
    positions. decode_from P: the expected result is the one-shot causal run."""
    Dkv = Hkv * D // H
    bound = 1 / np.sqrt(D)
    w = {"w_q": f32(rng.uniform(-bound, bound, (D, D))), "w_k": f32(rng.uniform(-bound, bound, (Dkv, D))),
         "w_v": f32(rng.uniform(-bound, bound, (Dkv, D))), "w_o": f32(rng.uniform(-bound, bound, (D, D)))}
    if bias:
        for b, n in (("b_q", D), ("b_k", Dkv), ("b_v", Dkv), ("b_o", D)):
            w[b] = f32(rng.uniform(-bound, bound, n))
    xq = f32(rng.standard_normal((lq, D)))
    xk = f32(rng.standard_normal((lk, D))) if cross else xq
    xv = f32(rng.standard_normal((lk, D))) if cross else xq
    rope_args = None
    if rope is not None:
        qpos = rope.get("position_ids", list(range(lq)))
        kpos = list(range(lk)) if cross else qpos
        rope_args = (rope["style"], rope.get("base", 10000.0), qpos, kpos)
    y, p, lse = mha_reference(xq, xk, xv, w, H, Hkv, mask, causal, rope_args)
    inp = {"query": xq, "num_heads": H, "num_kv_heads": Hkv, **w}
    if cross:
        inp["key"], inp["value"] = xk, xv
    if mask is not None:
        inp["mask"] = mask
    if causal:
        inp["causal"] = True
    if rope is not None:
        inp["rope"] = rope
    expected = {"output": y.tolist(), "weights": p.tolist(), "lse": lse_list(lse)}
    if decode_from is not None:
        inp["decode_from"] = decode_from
        expected["kv_cache_len"] = lq
    write(name, what, inp, expected)


def check_rope_references():
    """The two RoPE references are written independently (rotate_half vs complex numbers); they
    must agree up to de-interleaving the dims: rope_half(x[perm]) == rope_interleaved(x)[perm]."""
    x = np.random.default_rng(1).standard_normal((3, 5, 8))
    pos = np.array([0, 1, 7, 30, 1000.0])
    perm = np.r_[0:8:2, 1:8:2]
    assert np.allclose(rope_half(x[..., perm], pos, 10000.0), rope_interleaved(x, pos, 10000.0)[..., perm],
                       rtol=0, atol=1e-12)


def main():
    os.makedirs(OUT, exist_ok=True)
    check_rope_references()
    attend_case("attend_2d", "single head given as [L, d], Lq != Lk, dv != d", 1, 1, 3, 5, 4, 3, squeeze=True)
    attend_case("attend_heads", "three heads, d = 7 (odd)", 3, 3, 4, 6, 7, 5)
    attend_case("attend_causal_rect", "causal with Lq < Lk: bottom-right aligned", 2, 2, 3, 6, 4, 4, causal=True)
    attend_case("attend_causal_tall", "causal with Lq > Lk: the first rows see no key", 1, 1, 5, 3, 4, 2,
                causal=True, squeeze=True)
    m = rng.random((2, 4, 5)) < 0.6
    m[1, 2, :] = False  # a fully masked row
    attend_case("attend_mask_heads", "per-head mask [H, Lq, Lk] with a fully masked row", 2, 2, 4, 5, 3, 3, mask=m)
    attend_case("attend_scale", "custom scale and a [Lq, Lk] mask shared by all heads", 2, 2, 3, 4, 8, 2,
                mask=rng.random((3, 4)) < 0.7, scale=0.9)
    attend_case("attend_huge", "scores in the thousands: max subtraction keeps exp finite", 2, 2, 4, 6, 16, 4,
                magnitude=30.0)
    attend_case("attend_gqa", "grouped-query: 4 query heads share 2 key/value heads", 4, 2, 3, 5, 4, 4)
    mha_case("mha_self_bias", "self-attention, 2 heads, all four biases", 4, 4, 8, 2, 2, True, False)
    mha_case("mha_cross_gqa", "cross-attention, 4 heads over 2 kv heads, mask", 3, 5, 12, 4, 2, False, True,
             mask=rng.random((3, 5)) < 0.7)
    mha_case("mha_mqa_causal", "multi-query (1 kv head), causal self-attention", 5, 5, 8, 4, 1, True, False,
             causal=True)
    # Positions and decoding. New cases go last: the ones above keep their numbers.
    mha_case("mha_rope_half", "RoPE rotate_half (GPT-NeoX / LLaMA-HF), base 10000, causal self-attention",
             6, 6, 16, 2, 2, False, False, causal=True, rope={"base": 10000, "style": "half"})
    mha_case("mha_rope_interleaved_ids", "RoPE interleaved (GPT-J / RoFormer), explicit position_ids, base 500, MQA",
             5, 5, 12, 2, 1, True, False, rope={"base": 500, "style": "interleaved", "position_ids": [4, 9, 10, 2, 30]})
    mha_case("mha_rope_gqa_causal", "RoPE interleaved, GQA 4 heads over 2, causal, positions 100..106",
             7, 7, 16, 4, 2, False, False, causal=True,
             rope={"style": "interleaved", "position_ids": list(range(100, 107))})
    mha_case("mha_rope_cross", "RoPE half in cross-attention: queries at position_ids, keys at 0..Lk-1",
             3, 5, 8, 2, 2, False, True, rope={"base": 10000, "style": "half", "position_ids": [5, 6, 7]})
    mha_case("mha_decode_gqa_rope", "decode_from 2 (prefill 2, then one token at a time), GQA, RoPE half",
             6, 6, 16, 4, 2, False, False, causal=True, rope={"style": "half"}, decode_from=2)
    mha_case("mha_decode_mqa_p0", "decode_from 0: every token decoded alone, MQA, biases",
             5, 5, 8, 2, 1, True, False, causal=True, decode_from=0)
    mha_case("mha_decode_last", "decode_from L-1: one decode step, RoPE interleaved with position_ids, mask",
             4, 4, 8, 2, 2, False, False, causal=True,
             mask=np.array([[1, 1, 1, 1], [0, 1, 1, 1], [1, 0, 1, 1], [1, 1, 0, 1]], dtype=bool),
             rope={"style": "interleaved", "base": 10000, "position_ids": [7, 8, 9, 10]}, decode_from=3)


if __name__ == "__main__":
    main()
