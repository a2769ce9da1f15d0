#!/usr/bin/env python3
"""Checks `attn-cli tokenize --model DIR` on a tokenizer.json against a reference written here.

    scripts/check_hf_tokenizer.py ATTN_CLI DIR [--break STEP]

The reference follows Hugging Face tokenizers' documented pipeline
(https://huggingface.co/docs/tokenizers/pipeline), written from the definitions with Python's
`regex` module (a different regex engine from the ICU one attn-cli uses; its \\s is Unicode's
White_Space, as Oniguruma's is in the tokenizers library):

  added tokens   cut out first, leftmost-longest; lstrip/rstrip take the whitespace beside them
  normalizer     unicodedata.normalize (NFC, NFD, NFKC, NFKD)
  pre-tokenizer  Split (matches and the text between them, "Isolated"), Digits, ByteLevel
                 (GPT-2's regex, then GPT-2's byte alphabet)
  model          BPE by a priority queue of (merge rank, position), as tokenizers' Word::merge_all
                 does; with ignore_merges a piece already in the vocabulary is taken whole
  post-processor the TemplateProcessing tokens around the text

Every string of STRINGS (spaces, digits, punctuation, contractions, CJK, emoji, special tokens)
is tokenized by both; any difference in the ids fails the check. --break STEP makes the reference
skip one step (added, normalizer, split, digits, ignore_merges, template): the broken reference
must then disagree on some string (exit 0 when it does, 1 when it does not), which proves the
check can fail.
"""
import argparse
import heapq
import json
import subprocess
import sys
import unicodedata

import regex

STRINGS = [
    "The cat sat on the mat",
    "  leading spaces, double  spaces and trailing   ",
    "tabs\tand\nnewlines\n\n\nend",
    "I'm sure you're right; we'LL see what THEY'VE done. It's",
    "1234567890 3.14159 12,345,678 2024-11-26 $42.00 100%",
    "Numbers like 7 and 77 and 777 and 7777 and 77777",
    "café naïve Über straße — “quotes” … ¿Qué tal?",
    "cafe\u0301 and A\u030a: decomposed accents",  # NFC joins them (Qwen2)
    "日本語のテキストを分かち書きせずに書きます。",
    "中文分词测试，我喜欢深度学习。한국어 문장도 있습니다.",
    "Emoji: 🐱 🐈‍⬛ 👍🏽 🎉🎉 ❤️ ∑∫√ ≤≥",
    "def attention(q, k, v):\n    return softmax(q @ k.T / sqrt(d)) @ v\n",
    "vertical\u000btab, next line\u0085 and nbsp\u00a0here",
    "Attention attention unreachable tokens",
    "<|begin_of_text|>Hello<|eot_id|> world<|end_of_text|>",
    "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant",
    "<|endoftext|>The end.<|endoftext|>",
    "call <tool_call>{\"name\": 1}</tool_call> done",
    "a sentence with a   <mask> token and <mask>",
    "<|begin_of_text|><|begin_of_text|>",
    "x",
]

GPT2_PATTERN = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"


def byte_to_unicode():
    keep = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    table, moved = {}, 0
    for b in range(256):
        table[b] = chr(b) if b in keep else chr(256 + moved)
        moved += b not in keep
    return table


BYTES = byte_to_unicode()


def split_isolated(pattern, piece):
    out, done = [], 0
    for m in regex.finditer(pattern, piece):
        if m.start() > done:
            out.append(piece[done:m.start()])
        if m.end() > m.start():
            out.append(m.group())
        done = m.end()
    if done < len(piece):
        out.append(piece[done:])
    return out


def split_digits(piece, individual):
    pattern = r"\p{N}" if individual else r"\p{N}+"
    return split_isolated(pattern, piece)


class Reference:
    def __init__(self, doc, broken):
        self.broken = broken
        m = doc["model"]
        self.vocab = m["vocab"]
        merges = [tuple(x) if isinstance(x, list) else tuple(x.split(" ")) for x in m["merges"]]
        self.rank = {pair: r for r, pair in enumerate(merges)}
        self.ignore_merges = bool(m.get("ignore_merges")) and broken != "ignore_merges"
        self.added = sorted(doc.get("added_tokens") or [], key=lambda t: -len(t["content"]))
        self.normalizers = self.flatten(doc.get("normalizer"), "normalizers")
        self.pre = self.flatten(doc.get("pre_tokenizer"), "pretokenizers")
        self.prefix, self.suffix = [], []
        for p in self.flatten(doc.get("post_processor"), "processors"):
            if p["type"] == "TemplateProcessing" and broken != "template":
                text_seen = False
                for piece in p["single"]:
                    if "Sequence" in piece:
                        text_seen = True
                    else:
                        ids = p["special_tokens"][piece["SpecialToken"]["id"]]["ids"]
                        (self.suffix if text_seen else self.prefix).extend(ids)

    @staticmethod
    def flatten(step, key):
        if step is None:
            return []
        if step["type"] == "Sequence":
            return [s for sub in step[key] for s in Reference.flatten(sub, key)]
        return [step]

    def pre_tokenize(self, text):
        for n in self.normalizers:
            if self.broken != "normalizer":
                text = unicodedata.normalize(n["type"], text)
        pieces = [text] if text else []
        for step in self.pre:
            out = []
            for piece in pieces:
                if step["type"] == "Split":
                    out += [piece] if self.broken == "split" else split_isolated(step["pattern"]["Regex"], piece)
                elif step["type"] == "Digits":
                    out += [piece] if self.broken == "digits" else split_digits(piece, step["individual_digits"])
                elif step["type"] == "ByteLevel":
                    if step.get("add_prefix_space") and not piece.startswith(" "):
                        piece = " " + piece
                    out += split_isolated(GPT2_PATTERN, piece) if step.get("use_regex", True) else [piece]
            pieces = out
        return pieces

    def bpe(self, piece):
        word = [BYTES[b] for b in piece.encode("utf-8")]
        if self.ignore_merges and "".join(word) in self.vocab:
            return [self.vocab["".join(word)]]
        # tokenizers' Word::merge_all: pop the lowest (rank, position); a stale entry (its
        # symbols changed since it was pushed) is skipped.
        while True:
            queue = [(self.rank[(a, b)], i) for i, (a, b) in enumerate(zip(word, word[1:])) if (a, b) in self.rank]
            if not queue:
                break
            heapq.heapify(queue)
            rank, i = heapq.heappop(queue)
            word[i:i + 2] = [word[i] + word[i + 1]]
        return [self.vocab[s] for s in word]

    def encode(self, text):
        ids, pending, at = [], 0, 0
        added = [] if self.broken == "added" else self.added
        while at < len(text):
            match = next((t for t in added if text.startswith(t["content"], at)), None)
            if match is None:
                at += 1
                continue
            left, right = at, at + len(match["content"])
            if match["lstrip"]:
                while left > pending and regex.match(r"\s", text[left - 1]):
                    left -= 1
            if match["rstrip"]:
                while right < len(text) and regex.match(r"\s", text[right]):
                    right += 1
            ids += self.encode_plain(text[pending:left]) + [match["id"]]
            pending = at = right
        ids += self.encode_plain(text[pending:])
        return self.prefix + ids + self.suffix

    def encode_plain(self, text):
        return [i for piece in (self.pre_tokenize(text) if text else []) for i in self.bpe(piece)]


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("cli")
    p.add_argument("folder")
    p.add_argument("--break", dest="broken", choices=["added", "normalizer", "split", "digits", "ignore_merges",
                                                       "template"])
    a = p.parse_args()
    with open(f"{a.folder}/tokenizer.json", encoding="utf-8") as f:
        ref = Reference(json.load(f), a.broken)
    failures = 0
    for s in STRINGS:
        run = subprocess.run([a.cli, "tokenize", "--model", a.folder, "--json", "--", s], capture_output=True)
        if run.returncode != 0:
            print(f"FAIL {s!r}: exit {run.returncode}: {run.stderr.decode(errors='replace').strip()}")
            failures += 1
            continue
        got = [t["id"] for t in json.loads(run.stdout)["tokens"]]
        want = ref.encode(s)
        if got != want:
            print(f"FAIL {s!r}:\n  attn-cli  {got}\n  reference {want}")
            failures += 1
    print((f"all {len(STRINGS)}" if failures == 0 else f"{len(STRINGS) - failures}/{len(STRINGS)}") +
          f" strings give the same ids as the reference ({a.folder})")
    if a.broken:
        print(f"the reference without {a.broken} disagrees on {failures} strings" if failures
              else f"error: the reference without {a.broken} still agrees: the check cannot see that step")
        sys.exit(0 if failures else 1)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
