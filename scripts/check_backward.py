#!/usr/bin/python3
"""The backward pass of `attn-cli attend` and `mha`, checked end to end with FlashAttention's rule.

For random cases, attn-cli gets a `grad_output` dO and returns the gradients of the loss
sum(dO * O). Each gradient must be within 2x the error of a plain float32 NumPy computation of
the same gradient, both measured against a float64 NumPy reference written from the equations:
    max|attn-cli - ref64| <= 2 * max|numpy_float32 - ref64| + one float32 ulp of max|ref64| + 1e-12
(the ulp: the answer is written in float32, so a gradient that float32 happens to compute
exactly can still be off by its final rounding; 1e-12: a gradient that is exactly 0 in both
references, such as b_k's without RoPE, may come out of float64 as 1e-18). Per gradient field,
naive and flash backends.

attend cases: several heads, GQA/MQA, Lq != Lk, masks with fully masked rows, causal with
Lq != Lk, custom scale and temperature, the score modifiers softcap and alibi (alone and
together, with temperature), rank-2 inputs, small flash tiles.
mha cases: projections with any subset of biases, GQA/MQA, causal, masks with fully masked
rows, RoPE in both conventions (rotate-half: GPT-NeoX / LLaMA-HF; interleaved pairs: GPT-J /
RoFormer) with explicit position ids, custom scale, and cross-attention (grad_key, grad_value).

The reference differentiates by hand, step by step (the chain rule written out below, the
RoPE backward as the transposed rotation), not with an autograd library.

Usage: /usr/bin/python3 scripts/check_backward.py path/to/attn-cli [--cases N] [--seed S] [--sabotage]
--sabotage flips a sign in the reference's softmax backward: every case should then fail,
which shows the check can. Needs Debian's python3-numpy. Prints one line per failure, the
worst ratio err / (2 x err32 + ulp) seen, and "N passed, M failed".
"""
import argparse
import json
import subprocess
import sys

import numpy as np

SABOTAGE = False


def visible(lq, lk, heads, allowed, causal):
    """[H, Lq, Lk] booleans: the mask and causal (bottom-right aligned: j <= i + lk - lq)."""
    ok = np.ones((heads, lq, lk), dtype=bool)
    if allowed is not None:
        ok &= np.broadcast_to(allowed, ok.shape)
    if causal:
        ok &= (np.arange(lk)[None, :] <= np.arange(lq)[:, None] + lk - lq)[None]
    return ok


def modified_scores(x, mod, lq, lk, dtype):
    """attend's score modifiers on x = scale q.k (before the temperature), [H, Lq, Lk]: the
    soft-cap c tanh(x / c), then ALiBi's -m_h (p - j) with p = i + Lk - Lq, then / temperature.
    Returns the scores and their slope d scores / dx times the temperature (1 - tanh^2(x / c))."""
    slope = np.ones_like(x)
    if mod.get("softcap"):
        c = dtype(mod["softcap"])
        t = np.tanh(x / c).astype(dtype)
        x, slope = (c * t).astype(dtype), (1 - t * t).astype(dtype)
    if mod.get("alibi"):
        distance = (np.arange(lq)[:, None] + lk - lq) - np.arange(lk)[None, :]
        x = (x - np.array(mod["alibi"], dtype=dtype)[:, None, None] * distance).astype(dtype)
    return (x / dtype(mod.get("temperature", 1.0))).astype(dtype), slope


def attention_with_grads(q, k, v, do, allowed, causal, scale, dtype, mod=None):
    """Forward O = softmax(scale q k^T) v and the gradients of sum(do * O), every step in dtype.

    q [H, Lq, d], k [Hkv, Lk, d], v [Hkv, Lk, dv], do [H, Lq, dv]; query head h reads key/value
    head h // (H / Hkv). Returns o, dq, dk, dv (dk, dv summed over each GQA group). With `mod`
    ({"softcap", "alibi", "temperature"}), the scores are modified_scores' at scale * temperature
    and dS is multiplied by their slope before dQ and dK."""
    q, k, v, do = (x.astype(dtype) for x in (q, k, v, do))
    heads, lq, _ = q.shape
    kv_heads, lk, _ = k.shape
    group = heads // kv_heads
    kr, vr = np.repeat(k, group, 0), np.repeat(v, group, 0)
    ok = visible(lq, lk, heads, allowed, causal)
    slope = None
    if mod:
        raw = (np.einsum("hid,hjd->hij", q, kr) * dtype(scale * mod.get("temperature", 1.0))).astype(dtype)
        s, slope = modified_scores(raw, mod, lq, lk, dtype)
        s = np.where(ok, s, dtype(-np.inf))
    else:
        s = np.where(ok, (np.einsum("hid,hjd->hij", q, kr) * dtype(scale)).astype(dtype), dtype(-np.inf))
    m = s.max(-1, keepdims=True)
    dead = np.isneginf(m)  # every key masked: the row attends to nothing
    e = np.where(ok, np.exp(s - np.where(dead, dtype(0), m)), dtype(0)).astype(dtype)
    p = np.where(dead, dtype(0), e / np.where(dead, dtype(1), e.sum(-1, keepdims=True))).astype(dtype)
    o = np.einsum("hij,hjc->hic", p, vr).astype(dtype)
    # Backward: dV = P^T dO, dP = dO V^T, dS = P * (dP - rowsum(dP * P)), dQ = scale dS K, dK = scale dS^T Q
    dvr = np.einsum("hij,hic->hjc", p, do).astype(dtype)
    dp = np.einsum("hic,hjc->hij", do, vr).astype(dtype)
    row = (dp * p).sum(-1, keepdims=True).astype(dtype)
    ds = (p * (dp + row if SABOTAGE else dp - row)).astype(dtype)
    if slope is not None:
        ds = (ds * slope).astype(dtype)
    dq = (np.einsum("hij,hjd->hid", ds, kr) * dtype(scale)).astype(dtype)
    dkr = (np.einsum("hij,hid->hjd", ds, q) * dtype(scale)).astype(dtype)
    fold = lambda x: x.reshape(kv_heads, group, *x.shape[1:]).sum(1).astype(dtype)  # GQA: sum the group
    return o, dq, fold(dkr), fold(dvr)


def rope_angles(positions, d, base, dtype):
    theta = (dtype(base) ** (-np.arange(0, d, 2, dtype=dtype) / dtype(d))).astype(dtype)
    angle = (np.asarray(positions, dtype=dtype)[:, None] * theta[None, :]).astype(dtype)  # [L, d/2]
    return np.cos(angle).astype(dtype), np.sin(angle).astype(dtype)


def pairs(style, d):
    """The two index sets each rotation pairs: (i, i + d/2) for "half", (2i, 2i + 1) "interleaved"."""
    if style == "half":
        return np.arange(d // 2), np.arange(d // 2, d)
    return np.arange(0, d, 2), np.arange(1, d, 2)


def rope(x, positions, base, style, dtype):
    """x [H, L, d]: each pair (a, b) turned by pos * theta_i: a' = a cos - b sin, b' = a sin + b cos."""
    cos, sin = rope_angles(positions, x.shape[-1], base, dtype)
    ia, ib = pairs(style, x.shape[-1])
    out = np.empty_like(x)
    out[..., ia] = x[..., ia] * cos - x[..., ib] * sin
    out[..., ib] = x[..., ia] * sin + x[..., ib] * cos
    return out.astype(dtype)


def rope_backward(g, positions, base, style, dtype):
    """The transpose of rope()'s linear map applied to the gradient g: da = ga cos + gb sin,
    db = -ga sin + gb cos."""
    cos, sin = rope_angles(positions, g.shape[-1], base, dtype)
    ia, ib = pairs(style, g.shape[-1])
    out = np.empty_like(g)
    out[..., ia] = g[..., ia] * cos + g[..., ib] * sin
    out[..., ib] = -g[..., ia] * sin + g[..., ib] * cos
    return out.astype(dtype)


def mha_grads(case, dtype):
    """mha's forward from the equations, then every gradient by the chain rule, in dtype."""
    f = lambda name: np.asarray(case[name], dtype=np.float32).astype(dtype)
    self_attention = "key" not in case
    xq = f("query")
    xk, xv = (xq, xq) if self_attention else (f("key"), f("value"))
    heads, kv_heads = case["num_heads"], case["num_kv_heads"]
    lq, lk, d = xq.shape[0], xk.shape[0], xq.shape[1] // heads
    bias = lambda b: f(b) if b in case else dtype(0)
    linear = lambda x, w, b: (x @ f(w).T + bias(b)).astype(dtype)  # y = x W^T + b
    split = lambda y, h: y.reshape(y.shape[0], h, d).transpose(1, 0, 2)  # [L, h*d] -> [h, L, d]
    merge = lambda y: y.transpose(1, 0, 2).reshape(y.shape[1], -1)  # [h, L, d] -> [L, h*d]
    q, k = split(linear(xq, "w_q", "b_q"), heads), split(linear(xk, "w_k", "b_k"), kv_heads)
    v = split(linear(xv, "w_v", "b_v"), kv_heads)
    r = case.get("rope")
    if r:
        q_pos = r.get("position_ids", list(range(lq)))
        k_pos = q_pos if self_attention else list(range(lk))  # cross-attention keys sit at 0..Lk-1
        q, k = rope(q, q_pos, r["base"], r["style"], dtype), rope(k, k_pos, r["base"], r["style"], dtype)
    allowed = np.asarray(case["mask"], dtype=bool) if "mask" in case else None
    scale = case.get("scale", 1 / np.sqrt(d))
    dy = f("grad_output")
    do = split((dy @ f("w_o")).astype(dtype), heads)  # y = merge(o) W_o^T + b_o  ->  d merge(o) = dy W_o
    o, dq, dk, dv = attention_with_grads(q, k, v, do, allowed, case.get("causal", False), scale, dtype)
    if r:
        dq, dk = rope_backward(dq, q_pos, r["base"], r["style"], dtype), rope_backward(dk, k_pos, r["base"], r["style"], dtype)
    dQ, dK, dV = merge(dq), merge(dk), merge(dv)
    g = {"grad_w_o": (dy.T @ merge(o)).astype(dtype), "grad_w_q": (dQ.T @ xq).astype(dtype),
         "grad_w_k": (dK.T @ xk).astype(dtype), "grad_w_v": (dV.T @ xv).astype(dtype)}
    for b, dz in (("b_q", dQ), ("b_k", dK), ("b_v", dV), ("b_o", dy)):
        if b in case:
            g["grad_" + b] = dz.sum(0).astype(dtype)
    dxq, dxk, dxv = (dQ @ f("w_q")).astype(dtype), (dK @ f("w_k")).astype(dtype), (dV @ f("w_v")).astype(dtype)
    if self_attention:  # x is query, key and value: the three paths add
        g["grad_query"] = (dxq + dxk + dxv).astype(dtype)
    else:
        g.update(grad_query=dxq, grad_key=dxk, grad_value=dxv)
    return g


def random_attend_case(rng, t):
    heads = int(rng.integers(1, 5))
    kv_heads = [heads, 1, heads // 2 if heads % 2 == 0 else heads][t % 3]
    lq, lk = int(rng.integers(1, 20)), int(rng.integers(1, 20))
    d, dv = int(rng.integers(1, 17)), int(rng.integers(1, 9))
    magnitude = [1.0, 3.0, 8.0][t % 3]  # the last saturates the softmax
    q = (rng.standard_normal((heads, lq, d)) * magnitude).astype(np.float32)
    k = (rng.standard_normal((kv_heads, lk, d)) * magnitude).astype(np.float32)
    v = rng.standard_normal((kv_heads, lk, dv)).astype(np.float32)
    do = rng.standard_normal((heads, lq, dv)).astype(np.float32)
    case = {"causal": bool(t % 2)}
    scale = 1 / np.sqrt(d)
    if t % 5 == 0:
        case["scale"] = scale = 0.37
    if t % 7 == 3:
        case["temperature"] = 1.7
        scale = scale / 1.7  # softmax(scale S / T): the temperature divides the scaled scores
    mod = {}
    if t % 4 == 1:  # Gemma 2's soft-cap, small enough to bend these scores
        case["softcap"] = mod["softcap"] = [0.6, 2.5][t % 8 // 4]
    if t % 6 == 2:
        case["alibi"] = mod["alibi"] = [round(0.5 / (h + 1), 3) for h in range(heads)]
    if mod and "temperature" in case:
        mod["temperature"] = 1.7
    allowed = None
    if t % 3 == 0:
        allowed = rng.random((heads, lq, lk)) < 0.6
        allowed[0, lq // 2, :] = False  # a fully masked row
        case["mask"] = allowed.astype(int).tolist()
    rank2 = heads == 1 and kv_heads == 1 and t % 2 == 0  # [L, d] in, [L, d] out
    tensors = {"q": q, "k": k, "v": v, "grad_output": do}
    for name, x in tensors.items():
        case[name] = (x[0] if rank2 else x).tolist()
    if rank2 and allowed is not None:
        case["mask"] = allowed[0].astype(int).tolist()  # [Lq, Lk] for [Lq, d] inputs
    return case, tensors, allowed, scale, rank2, mod


def random_mha_case(rng, t):
    heads = [1, 2, 4][t % 3]
    kv_heads = [heads, 1, max(1, heads // 2)][(t // 3) % 3]
    d = 2 * int(rng.integers(1, 4))
    D, lq = heads * d, int(rng.integers(1, 10))
    Dkv = kv_heads * d
    u = lambda *shape: (rng.uniform(-1, 1, shape) / np.sqrt(D)).astype(np.float32).tolist()
    case = {"query": rng.standard_normal((lq, D)).astype(np.float32).tolist(), "num_heads": heads,
            "num_kv_heads": kv_heads, "w_q": u(D, D), "w_k": u(Dkv, D), "w_v": u(Dkv, D), "w_o": u(D, D),
            "causal": bool(t % 2)}
    lk = lq
    if t % 3 == 1:  # cross-attention
        lk = int(rng.integers(1, 10))
        case["key"] = rng.standard_normal((lk, D)).astype(np.float32).tolist()
        case["value"] = rng.standard_normal((lk, D)).astype(np.float32).tolist()
    for b, n in (("b_q", D), ("b_k", Dkv), ("b_v", Dkv), ("b_o", D)):
        if rng.random() < 0.6:
            case[b] = u(n)
    if t % 4:
        case["rope"] = {"base": [10000, 500][t % 2], "style": ["half", "interleaved"][(t // 2) % 2]}
        if t % 3 == 0:
            case["rope"]["position_ids"] = sorted(int(p) for p in rng.integers(0, 50, lq))
    if t % 5 == 2:
        allowed = rng.random((lq, lk)) < 0.7
        allowed[lq - 1, :] = False  # a fully masked row
        case["mask"] = allowed.astype(int).tolist()
    if t % 7 == 4:
        case["scale"] = 0.9
    case["grad_output"] = rng.standard_normal((lq, D)).astype(np.float32).tolist()
    return case


class Score:
    def __init__(self, quiet=False):
        self.passed, self.failed, self.worst, self.quiet = 0, 0, (0.0, ""), quiet

    def report(self, line):
        if not self.quiet:
            print(line)

    def check(self, cli, subcommand, run, ref64, ref32, label):
        """Runs one case through attn-cli and compares every gradient field with the rule."""
        out = subprocess.run([cli, subcommand, "--input", "-", "--no-weights"], input=json.dumps(run),
                             capture_output=True, text=True)
        if out.returncode != 0:
            self.report(f"{label}: exit {out.returncode}: {out.stderr.strip()}")
            self.failed += 1
            return
        got = json.loads(out.stdout)
        ok = True
        for field, ref in ref64.items():
            if field not in got:
                self.report(f"{label}: {field} missing from the output")
                ok = False
                continue
            ours = np.array(got[field], dtype=np.float64)
            if ours.shape != ref.shape:
                self.report(f"{label}: {field} has shape {list(ours.shape)}, expected {list(ref.shape)}")
                ok = False
                continue
            err = np.abs(ours - ref).max()
            err32 = np.abs(ref32[field].astype(np.float64) - ref).max()
            bound = 2 * err32 + np.finfo(np.float32).eps * np.abs(ref).max() + 1e-12
            ratio = err / bound if bound > 0 else (0.0 if err == 0 else np.inf)
            if ratio > self.worst[0]:
                self.worst = (ratio, f"{label} {field}")
            if err > bound:
                self.report(f"{label}: {field} error {err:.3g} > 2 x float32's {err32:.3g} (+ulp)")
                ok = False
        self.passed += ok
        self.failed += not ok


def main():
    global SABOTAGE
    ap = argparse.ArgumentParser()
    ap.add_argument("cli")
    ap.add_argument("--cases", type=int, default=30)
    ap.add_argument("--seed", type=int, default=2307)
    ap.add_argument("--sabotage", action="store_true", help="break the reference: every case should fail")
    args = ap.parse_args()
    SABOTAGE = args.sabotage
    rng = np.random.default_rng(args.seed)
    score = Score(quiet=SABOTAGE)
    for t in range(args.cases):
        case, x, allowed, scale, rank2, mod = random_attend_case(rng, t)
        refs = []
        for dtype in (np.float64, np.float32):
            _, dq, dk, dv = attention_with_grads(x["q"], x["k"], x["v"], x["grad_output"], allowed,
                                                 case["causal"], scale, dtype, mod)
            refs.append({"grad_q": dq[0] if rank2 else dq, "grad_k": dk[0] if rank2 else dk,
                         "grad_v": dv[0] if rank2 else dv})
        for backend in ("naive", "flash"):
            run = dict(case, backend=backend)
            if backend == "flash" and t % 2:
                run["block_size"] = int(rng.integers(1, 9))
            score.check(args.cli, "attend", run, refs[0], refs[1], f"attend case {t} {backend}")
    for t in range(args.cases):
        case = random_mha_case(rng, t)
        ref64, ref32 = mha_grads(case, np.float64), mha_grads(case, np.float32)
        for backend in ("naive", "flash"):
            run = dict(case, backend=backend)
            if backend == "flash" and t % 2:
                run["block_size"] = int(rng.integers(1, 5))
            score.check(args.cli, "mha", run, ref64, ref32, f"mha case {t} {backend}")
    total = score.passed + score.failed
    if SABOTAGE:  # the check must notice a wrong reference in (nearly) every run
        print(f"sabotaged reference: {score.failed} of {total} runs failed")
        return 0 if score.failed >= 0.9 * total else 1
    print(f"worst ratio err / bound: {score.worst[0]:.3f} ({score.worst[1]})")
    print(f"{score.passed} passed, {score.failed} failed")
    return 1 if score.failed else 0


if __name__ == "__main__":
    sys.exit(main())
