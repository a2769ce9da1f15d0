#!/usr/bin/python3
"""Hostile Llama-family folders (issue 37): each is built by scripts/make_decoder_folder.py and
then broken one way, and `attn-cli forward --model DIR --tokens ...` must answer with exit code
2, exactly one line on stderr starting "error: ", naming what is wrong, and nothing on stdout.
The commands that do not run these models yet (demo, rank-collapse, tokenize) say so the same way.

    /usr/bin/python3 scripts/check_decoder_refusals.py build/attn-cli /tmp/decoder-refusals
"""
import json
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def make(root, name, *flags):
    path = os.path.join(root, name)
    shutil.rmtree(path, ignore_errors=True)
    subprocess.run([sys.executable, os.path.join(HERE, "make_decoder_folder.py"), "--out", path, *flags], check=True)
    return path


def edit_json(path, change):
    with open(path) as f:
        j = json.load(f)
    change(j)
    with open(path, "w") as f:
        json.dump(j, f)


def cases(root):
    """(what, folder, extra arguments, the text the error line must hold)."""
    out = []
    out.append(("a missing tensor", make(root, "omit", "--omit", "model.layers.1.mlp.up_proj.weight"), [],
                'missing tensor "model.layers.1.mlp.up_proj.weight"'))
    out.append(("a shape that contradicts config.json",
                make(root, "transpose", "--kv-heads", "2", "--transpose", "model.layers.0.self_attn.k_proj.weight"), [],
                "config.json implies shape [32, 64]"))
    out.append(("a layer more than config.json says", make(root, "extra", "--extra", "model.layers.2.mlp.up_proj.weight"),
                [], "is not part of the model config.json describes"))
    out.append(("no lm_head on an untied model", make(root, "nohead", "--omit", "lm_head.weight"), [],
                'missing tensor "lm_head.weight"'))
    outside = make(root, "outside", "--shards", "2")
    edit_json(os.path.join(outside, "model.safetensors.index.json"),
              lambda j: j["weight_map"].update({"model.norm.weight": "../elsewhere.safetensors"}))
    out.append(("a shard outside the folder", outside, [], "is not a file name inside the folder"))
    gone = make(root, "gone", "--shards", "2")
    os.remove(os.path.join(gone, "model-00002-of-00002.safetensors"))
    out.append(("a missing shard", gone, [], "missing (model.safetensors.index.json names it)"))
    pickle = make(root, "pickle")
    os.rename(os.path.join(pickle, "model.safetensors"), os.path.join(pickle, "pytorch_model.bin"))
    out.append(("only PyTorch's pickle", pickle, [], "pytorch_model.bin"))
    cut = make(root, "cut")
    with open(os.path.join(cut, "model.safetensors"), "r+b") as f:
        f.truncate(os.path.getsize(os.path.join(cut, "model.safetensors")) - 100)
    out.append(("a truncated file", cut, [], "model.safetensors"))
    plain = make(root, "plain", "--positions", "8")
    out.append(("an id past the vocabulary", plain, ["--tokens", "1,97"], "out of range [0, 97)"))
    out.append(("more tokens than positions", plain, ["--tokens", "1,2,3,4,5,6,7,8,9"], "max_position_embeddings 8"))
    out.append(("text without a tokenizer", plain, ["hello"], "tokenizer.json"))
    out.append(("demo on a folder without a tokenizer", plain, ["@demo", "--out", os.path.join(root, "demo-out")],
                "no tokenizer"))
    out.append(("rank-collapse on one", plain, ["@rank-collapse"], "a Hugging Face Llama, Mistral or Qwen2 folder"))
    out.append(("generate without prompt ids or a tokenizer", plain, ["@generate", "--tokens", "2"], "no tokenizer"))
    piece = make(root, "sentencepiece")
    with open(os.path.join(piece, "tokenizer.model"), "wb") as f:
        f.write(b"\x0a\x00")
    out.append(("a SentencePiece tokenizer.model only", piece, ["hello"], "SentencePiece"))
    big = make(root, "big-tokenizer", "--tokenizer", "llama3", "--vocab", "97", "--tokenizer-vocab-only")
    out.append(("a tokenizer larger than the model", big, ["The cat sat on the mat"],
                "past the model's vocabulary of 97"))
    fallback = make(root, "fallback", "--tokenizer", "llama3")
    edit_json(os.path.join(fallback, "tokenizer.json"), lambda j: j["model"].update({"byte_fallback": True}))
    out.append(("a SentencePiece-style tokenizer.json (byte_fallback)", fallback, ["hello"], "model.byte_fallback"))
    empty = make(root, "empty-tokenizer")
    with open(os.path.join(empty, "tokenizer.json"), "w") as f:
        f.write("{}")
    out.append(("tokenize with an empty tokenizer.json", empty, ["@tokenize", "hello"], "model: expected an object"))
    return out


def main():
    cli, root = sys.argv[1], sys.argv[2]
    os.makedirs(root, exist_ok=True)
    failures = 0
    for what, folder, extra, expected in cases(root):
        command = "forward"
        if extra and extra[0].startswith("@"):  # another command than forward
            command, extra = extra[0][1:], extra[1:]
        args = extra if extra or command != "forward" else ["--tokens", "1,2,3"]
        r = subprocess.run([cli, command, "--model", folder, *args], capture_output=True, text=True)
        lines = r.stderr.splitlines()
        ok = r.returncode == 2 and len(lines) == 1 and lines[0].startswith("error: ") and expected in lines[0] \
            and r.stdout == ""
        print(("ok    " if ok else "FAIL  ") + what + ": exit " + str(r.returncode) + ", " + repr(r.stderr.strip()))
        failures += not ok
    print("every hostile folder was refused with one error line" if failures == 0 else f"{failures} not refused right")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
