#!/usr/bin/python3
"""Writes a small Llama, Mistral or Qwen2 model folder with seeded random weights, as Hugging
Face's save_pretrained lays one out: config.json (the family's field names) and
model.safetensors, or --shards N files named by model.safetensors.index.json.

Options a family's real checkpoints use:
  --kv-heads K           grouped-query attention (K must divide --heads)
  --head-dim d           a head dim other than hidden / heads (Qwen3-style configs write it)
  --tie                  tie_word_embeddings: no lm_head.weight (SmolLM, Llama 3.2 1B)
  --sliding-window W     Mistral's window (with --family qwen2: use_sliding_window too)
  --rope-scaling llama3  Llama 3.1's frequency scaling (factor 8, low 1, high 4, original 16)
  --rope-scaling linear  positions divided by factor 2
  --attention-bias       q, k, v biases on a Llama (Qwen2 always has them)
  --dtype f32|bf16|f16   the weights' storage type (bf16 rounded to nearest even)
  --plant-sink           layer 0's query head 0 attends to the first token (BOS), as a trained
                         model's sink head does (forward --out's sinks.png must show it)
  --tokenizer STYLE      a tokenizer.json (scripts/make_tokenizer_json.py: llama3, qwen2, smollm, gpt2),
                         the vocabulary grown to hold its ids (unless --tokenizer-vocab-only)
Broken folders for the error tests: --omit NAME drops a tensor, --transpose NAME writes a
matrix's shape reversed (same bytes), --extra NAME adds a tensor the config does not describe.

    /usr/bin/python3 scripts/make_decoder_folder.py --out /tmp/llama-tiny --family llama --kv-heads 2
"""
import argparse
import json
import os
import struct
import sys

import numpy as np


def parameters(rng, a):
    """The model's tensors by Hugging Face name, spread so that attention is far from uniform."""
    D, I, V = a.hidden, a.intermediate, a.vocab
    d = a.head_dim or D // a.heads
    Q, KV = a.heads * d, a.kv_heads * d

    def normal(shape, std):
        return rng.normal(0.0, std, shape)

    bias = a.family == "qwen2" or a.attention_bias
    out = [("model.embed_tokens.weight", normal((V, D), 1.0))]
    for i in range(a.layers):
        p = f"model.layers.{i}."
        out += [
            (p + "input_layernorm.weight", 1.0 + normal((D,), 0.1)),
            (p + "self_attn.q_proj.weight", normal((Q, D), 2.0 / np.sqrt(D))),
            (p + "self_attn.k_proj.weight", normal((KV, D), 2.0 / np.sqrt(D))),
            (p + "self_attn.v_proj.weight", normal((KV, D), 1.0 / np.sqrt(D))),
            (p + "self_attn.o_proj.weight", normal((D, Q), 0.5 / np.sqrt(Q))),
            (p + "post_attention_layernorm.weight", 1.0 + normal((D,), 0.1)),
            (p + "mlp.gate_proj.weight", normal((I, D), 1.0 / np.sqrt(D))),
            (p + "mlp.up_proj.weight", normal((I, D), 1.0 / np.sqrt(D))),
            (p + "mlp.down_proj.weight", normal((D, I), 0.5 / np.sqrt(I))),
        ]
        if bias:
            out += [(p + "self_attn.q_proj.bias", normal((Q,), 0.2)), (p + "self_attn.k_proj.bias", normal((KV,), 0.2)),
                    (p + "self_attn.v_proj.bias", normal((KV,), 0.2))]
    out.append(("model.norm.weight", 1.0 + normal((D,), 0.1)))
    if not a.tie:
        out.append(("lm_head.weight", normal((V, D), 1.0 / np.sqrt(D))))
    return out


def plant_sink(tensors, a, bos):
    """Layer 0's query head 0 made an attention sink on token `bos`, as trained decoders grow one
    (Xiao et al. 2023): the token's embedding gets a feature no other token has (the last
    dimension), head 0's key reads it into RoPE's slowest pair (rotate-half pairs dims i and
    i + d/2; i = d/2 - 1 turns least, so a query far from position 0 still lines up), and head 0's
    query holds a constant there through its bias. Head 0's score on `bos` then dwarfs the rest."""
    t = dict(tensors)
    D, d = a.hidden, a.head_dim or a.hidden // a.heads
    lane, other = d // 2 - 1, d - 1
    emb = t["model.embed_tokens.weight"]
    emb[:, D - 1] = 0.0
    emb[bos, D - 1] = 8.0
    p = "model.layers.0.self_attn."
    for name in ("q_proj.weight", "k_proj.weight"):
        t[p + name][[lane, other], :] = 0.0
    t[p + "k_proj.weight"][lane, D - 1] = 6.0
    t[p + "q_proj.bias"][[lane, other]] = [6.0, 0.0]
    t[p + "k_proj.bias"][[lane, other]] = 0.0
    return list(t.items())


def raw_bytes(value, dtype):
    v = np.ascontiguousarray(value, dtype="<f4")
    if dtype == "F32":
        return v.tobytes()
    if dtype == "F16":
        return v.astype("<f2").tobytes()
    bits = v.view("<u4").astype(np.uint64)  # BF16: the top 16 bits, rounded to nearest even
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
    return rounded.astype("<u2").tobytes()


def safetensors_bytes(tensors, dtype, transpose):
    header, blobs, offset = {}, [], 0
    for name, value in tensors:
        raw = raw_bytes(value, dtype)
        shape = list(value.shape)[::-1] if name in transpose else list(value.shape)
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + b"".join(blobs)


def config(a):
    c = {
        "architectures": [{"llama": "LlamaForCausalLM", "mistral": "MistralForCausalLM",
                           "qwen2": "Qwen2ForCausalLM"}[a.family]],
        "model_type": a.family, "hidden_size": a.hidden, "intermediate_size": a.intermediate,
        "num_hidden_layers": a.layers, "num_attention_heads": a.heads, "num_key_value_heads": a.kv_heads,
        "vocab_size": a.vocab, "max_position_embeddings": a.positions, "rms_norm_eps": 1e-5,
        "rope_theta": a.rope_theta, "tie_word_embeddings": a.tie, "hidden_act": "silu", "torch_dtype": a.dtype,
    }
    if a.head_dim:
        c["head_dim"] = a.head_dim
    if a.family == "llama":
        c["attention_bias"] = a.attention_bias
    if a.family == "mistral":
        c["sliding_window"] = a.sliding_window or None
    if a.family == "qwen2":
        c["use_sliding_window"] = bool(a.sliding_window)
        c["sliding_window"] = a.sliding_window or 4096
        c["max_window_layers"] = 0
    if a.rope_scaling == "llama3":
        c["rope_scaling"] = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                             "original_max_position_embeddings": 16}
    elif a.rope_scaling == "linear":
        c["rope_scaling"] = {"rope_type": "linear", "factor": 2.0}
    return c


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True)
    p.add_argument("--family", choices=["llama", "mistral", "qwen2"], default="llama")
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--intermediate", type=int, default=96)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--kv-heads", type=int, default=None)
    p.add_argument("--head-dim", type=int, default=0)
    p.add_argument("--vocab", type=int, default=97)
    p.add_argument("--positions", type=int, default=256)
    p.add_argument("--rope-theta", type=float, default=10000.0)
    p.add_argument("--rope-scaling", choices=["none", "llama3", "linear"], default="none")
    p.add_argument("--sliding-window", type=int, default=0)
    p.add_argument("--attention-bias", action="store_true")
    p.add_argument("--tie", action="store_true")
    p.add_argument("--dtype", choices=["f32", "bf16", "f16"], default="f32")
    p.add_argument("--shards", type=int, default=1)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--omit", action="append", default=[])
    p.add_argument("--transpose", action="append", default=[])
    p.add_argument("--extra", action="append", default=[])
    p.add_argument("--tokenizer", choices=["llama3", "qwen2", "smollm", "gpt2"])
    p.add_argument("--tokenizer-vocab-only", action="store_true")
    p.add_argument("--plant-sink", action="store_true")
    a = p.parse_args()
    tokenizer = None
    if a.tokenizer:
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import make_tokenizer_json
        tokenizer = make_tokenizer_json.tokenizer(a.tokenizer)
        ids = list(tokenizer["model"]["vocab"].values()) + [t["id"] for t in tokenizer["added_tokens"]]
        if not a.tokenizer_vocab_only:
            a.vocab = max(a.vocab, max(ids) + 1)
    a.kv_heads = a.kv_heads or a.heads
    a.dtype = {"f32": "float32", "bf16": "bfloat16", "f16": "float16"}[a.dtype]
    stored = {"float32": "F32", "bfloat16": "BF16", "float16": "F16"}[a.dtype]
    rng = np.random.default_rng(a.seed)
    if a.plant_sink:
        a.attention_bias = True  # head 0's query holds the sink's constant through its bias
    tensors = parameters(rng, a)
    if a.plant_sink:  # on the tokenizer's BOS when it adds one (Llama 3's), else on id 0
        prefix = [] if not tokenizer else [t for t in tokenizer["added_tokens"] if t["content"] == "<|begin_of_text|>"]
        tensors = plant_sink(tensors, a, prefix[0]["id"] if prefix else 0)
    tensors = [(n, v) for n, v in tensors if n not in a.omit]
    tensors += [(n, rng.normal(0.0, 1.0, (4,))) for n in a.extra]
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "config.json"), "w") as f:
        json.dump(config(a), f, indent=2)
    if tokenizer:
        with open(os.path.join(a.out, "tokenizer.json"), "w", encoding="utf-8") as f:
            json.dump(tokenizer, f, ensure_ascii=False, indent=1)
            f.write("\n")
    if a.shards == 1:
        with open(os.path.join(a.out, "model.safetensors"), "wb") as f:
            f.write(safetensors_bytes(tensors, stored, set(a.transpose)))
        return
    weight_map, per = {}, -(-len(tensors) // a.shards)
    for s in range(a.shards):
        name = f"model-{s + 1:05d}-of-{a.shards:05d}.safetensors"
        part = tensors[s * per:(s + 1) * per]
        with open(os.path.join(a.out, name), "wb") as f:
            f.write(safetensors_bytes(part, stored, set(a.transpose)))
        weight_map.update({n: name for n, _ in part})
    with open(os.path.join(a.out, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {}, "weight_map": weight_map}, f, indent=2)


if __name__ == "__main__":
    main()
