#!/usr/bin/python3
"""Writes data/gpt2_tokenizer/tiny/{vocab.json,merges.txt}: a GPT-2-style byte-level BPE
vocabulary small enough to check by hand (the --help examples and the unit tests use it).

Ids 0..255 are the byte characters in the order of GPT-2's bytes_to_unicode (Radford et al.
2019): printable bytes first, then the 68 others moved to U+0100 and up; then one token per
merge, in rank order; then <|endoftext|>, as in GPT-2's vocab.json.

Merges (rank = line order). The order is chosen so that rank order and a greedy left-to-right
merge disagree on "the": "h e" (rank 1) comes before "t h" (rank 17), so "the" becomes
t + he -> the, while merging from the left would give th + e and stop there.
"""
import json
import os
import sys

MERGES = [
    ("Ġ", "t"), ("h", "e"), ("Ġt", "he"), ("t", "he"), ("a", "t"), ("Ġ", "c"), ("Ġc", "at"),
    ("Ġ", "s"), ("Ġs", "at"), ("Ġ", "o"), ("Ġo", "n"), ("Ġ", "m"), ("o", "n"), ("Ġ", "d"),
    ("Ġd", "on"), ("'", "t"), ("Ġm", "at"), ("t", "h"),
]


def bytes_to_unicode():
    """byte -> character: '!'..'~', '¡'..'¬', '®'..'ÿ' stay; the rest go to 256, 257, ..."""
    kept = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + \
        list(range(ord("®"), ord("ÿ") + 1))
    order, chars = kept[:], kept[:]
    for b in range(256):
        if b not in kept:
            order.append(b)
            chars.append(256 + len(order) - len(kept) - 1)
    return [(b, chr(c)) for b, c in zip(order, chars)]


def main(out_dir):
    vocab = {}
    for _, ch in bytes_to_unicode():
        vocab[ch] = len(vocab)
    for left, right in MERGES:
        vocab[left + right] = len(vocab)
    vocab["<|endoftext|>"] = len(vocab)
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "vocab.json"), "w", encoding="utf-8") as f:
        json.dump(vocab, f, ensure_ascii=False)
    with open(os.path.join(out_dir, "merges.txt"), "w", encoding="utf-8") as f:
        f.write("#version: 0.2\n")
        for left, right in MERGES:
            f.write(f"{left} {right}\n")
    print(f"{out_dir}: {len(vocab)} tokens, {len(MERGES)} merges")


if __name__ == "__main__":
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    main(sys.argv[1] if len(sys.argv) > 1 else os.path.join(root, "data", "gpt2_tokenizer", "tiny"))
