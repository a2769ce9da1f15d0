#!/usr/bin/python3
"""Writes a small GPT-2 model folder with seeded random weights, as Hugging Face lays one out:
config.json, model.safetensors, vocab.json and merges.txt (copied from a tokenizer folder,
by default the tiny fixture data/gpt2_tokenizer/tiny; vocab_size is its number of tokens).

Two layouts, as real checkpoints come:
  --dtype f32                 bare names (wte.weight, h.0.attn.c_attn.weight, ...), as in GPT-2 on the Hub
  --dtype f16 --hf-extras     "transformer." names plus lm_head.weight (= wte) and the
                              h.{i}.attn.bias causal-mask buffers that older checkpoints carry
Broken folders for the error tests: --omit NAME drops a tensor, --transpose NAME writes a
matrix's shape reversed (same bytes), --truncate N cuts N bytes off the end of the file.

    /usr/bin/python3 scripts/make_gpt2_folder.py --out /tmp/gpt2-small --layers 2 --embd 32 --heads 4

A folder the size of GPT-2 small (124M parameters, about 250 MB in float16) for timing, with
the tiny tokenizer and vocab_size padded to GPT-2's (--vocab; ids past the tokenizer's own have no text):

    /usr/bin/python3 scripts/make_gpt2_folder.py --out /tmp/gpt2-124m --layers 12 --embd 768 --heads 12 \
        --positions 1024 --vocab 50257 --dtype f16
"""
import argparse
import json
import os
import shutil
import struct

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def parameters(rng, vocab, positions, layers, embd):
    """GPT-2's tensors, in Hugging Face's order, with weights spread wide enough that the
    attention is far from uniform (GPT-2's own initialisation, std 0.02, would make it flat)."""
    D = embd

    def normal(shape, std):
        return rng.normal(0.0, std, shape)

    out = [("wte.weight", normal((vocab, D), 0.3)), ("wpe.weight", normal((positions, D), 0.3))]
    for i in range(layers):
        h = f"h.{i}."
        out += [
            (h + "ln_1.weight", 1.0 + normal((D,), 0.2)), (h + "ln_1.bias", normal((D,), 0.2)),
            (h + "attn.c_attn.weight", normal((D, 3 * D), 0.4)), (h + "attn.c_attn.bias", normal((3 * D,), 0.2)),
            (h + "attn.c_proj.weight", normal((D, D), 0.2)), (h + "attn.c_proj.bias", normal((D,), 0.1)),
            (h + "ln_2.weight", 1.0 + normal((D,), 0.2)), (h + "ln_2.bias", normal((D,), 0.2)),
            (h + "mlp.c_fc.weight", normal((D, 4 * D), 0.3)), (h + "mlp.c_fc.bias", normal((4 * D,), 0.2)),
            (h + "mlp.c_proj.weight", normal((4 * D, D), 0.1)), (h + "mlp.c_proj.bias", normal((D,), 0.1)),
        ]
    out += [("ln_f.weight", 1.0 + normal((D,), 0.2)), ("ln_f.bias", normal((D,), 0.2))]
    return out


def safetensors_bytes(tensors, dtype, transpose):
    """safetensors: u64 little-endian header length, JSON header, raw little-endian data."""
    np_dtype = {"F32": "<f4", "F16": "<f2"}[dtype]
    header, blobs, offset = {}, [], 0
    for name, value in tensors:
        raw = np.ascontiguousarray(value, dtype=np_dtype).tobytes()
        shape = list(value.shape)[::-1] if name == transpose else list(value.shape)
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    text = json.dumps(header).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    return struct.pack("<Q", len(text)) + text + b"".join(blobs)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True)
    p.add_argument("--tokenizer", default=os.path.join(HERE, "..", "data", "gpt2_tokenizer", "tiny"))
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--embd", type=int, default=32)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--positions", type=int, default=64)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--dtype", choices=["f32", "f16"], default="f32")
    p.add_argument("--hf-extras", action="store_true", help="transformer. prefix, lm_head.weight, attn.bias buffers")
    p.add_argument("--omit", default="")
    p.add_argument("--transpose", default="")
    p.add_argument("--truncate", type=int, default=0)
    p.add_argument("--vocab", type=int, default=0,
                   help="vocab_size of the model (>= the tokenizer's; 50257 for a GPT-2-small-sized folder); "
                        "ids past the tokenizer's vocabulary have no text")
    a = p.parse_args()

    with open(os.path.join(a.tokenizer, "vocab.json"), encoding="utf-8") as f:
        vocab = len(json.load(f))
    if a.vocab:
        if a.vocab < vocab:
            raise SystemExit(f"make_gpt2_folder: --vocab {a.vocab} is smaller than the tokenizer's {vocab}")
        vocab = a.vocab
    rng = np.random.default_rng(a.seed)
    tensors = parameters(rng, vocab, a.positions, a.layers, a.embd)
    dtype = "F32" if a.dtype == "f32" else "F16"
    if a.hf_extras:
        tensors = [("transformer." + n, v) for n, v in tensors]
        tensors.append(("lm_head.weight", tensors[0][1]))
        causal = np.tril(np.ones((a.positions, a.positions))).reshape(1, 1, a.positions, a.positions)
        tensors += [(f"transformer.h.{i}.attn.bias", causal) for i in range(a.layers)]
    tensors = [(n, v) for n, v in tensors if n != a.omit]
    data = safetensors_bytes(tensors, dtype, a.transpose)
    if a.truncate:
        data = data[:-a.truncate]

    os.makedirs(a.out, exist_ok=True)
    config = {"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"], "n_layer": a.layers, "n_head": a.heads,
              "n_embd": a.embd, "vocab_size": vocab, "n_positions": a.positions, "n_ctx": a.positions,
              "layer_norm_epsilon": 1e-5, "activation_function": "gelu_new"}
    with open(os.path.join(a.out, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    with open(os.path.join(a.out, "model.safetensors"), "wb") as f:
        f.write(data)
    for name in ("vocab.json", "merges.txt"):
        shutil.copyfile(os.path.join(a.tokenizer, name), os.path.join(a.out, name))
    print(f"make_gpt2_folder: wrote {a.out} ({a.layers} layers, n_embd {a.embd}, {a.heads} heads, vocab {vocab}, {dtype})")


if __name__ == "__main__":
    main()
