#!/usr/bin/env python3
"""Writes a small tokenizer.json in the style of a model family, for tests.

    scripts/make_tokenizer_json.py STYLE OUT_DIR     STYLE: llama3, qwen2, smollm or gpt2

The vocabulary is learned here: byte-level BPE (Sennrich et al. 2016; GPT-2's byte alphabet)
trained for a few hundred merges on a short multilingual text, so English words, digits, CJK and
emoji bytes all have merges to exercise. Each style then writes the pipeline its family ships
(Hugging Face tokenizers' serialization, https://huggingface.co/docs/tokenizers/api/pipeline):

  llama3  Split with Llama 3's pattern (at most 3 digits together) + ByteLevel without its regex,
          ignore_merges, added tokens <|begin_of_text|>..., a TemplateProcessing that adds BOS,
          merges written as ["a", "b"] pairs (tokenizers >= 0.20)
  qwen2   NFC normalizer, Split with Qwen2's pattern (one digit per piece), ByteLevel, a
          non-special added token <tool_call>, no BOS
  smollm  Digits (each digit alone) + ByteLevel with GPT-2's regex, special tokens inside
          model.vocab at ids 0..2 (as SmolLM2 has them)
  gpt2    ByteLevel with GPT-2's regex, <|endoftext|> last, and a RoBERTa-style <mask> that takes
          the whitespace before it (lstrip)

Deterministic: the same STYLE always writes the same bytes. Needs only the standard library.
"""
import collections
import json
import os
import re
import sys

CORPUS = """
The cat sat on the mat. The dog sat on the log. Attention is all you need, they said in 2017;
the transformer reads every token at once. I'm sure you're right, we'll see what they've done.
Numbers: 1234567890, 3.14159, 2024-11-26, $42.00 and 100% of 12,345,678 items.
Unicode: café naïve Über straße — “quotes” and ‘single’ ones… ¿Qué tal? Ça va très bien.
日本語のテキストを分かち書きせずに書きます。中文分词测试，我喜欢深度学习。한국어 문장도 있습니다.
Emoji: 🐱 🐈‍⬛ 👍🏽 🎉🎉 ❤️ and symbols ∑ ∫ √ ≤ ≥ → ←.
def attention(q, k, v):\n    return softmax(q @ k.T / sqrt(d)) @ v\n\n\tindented\ttabs
The the the cat cat sat sat on on the the mat mat attention attention tokens tokens.
"""

LLAMA3_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
                  r"|\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN2_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
                 r"|\s*[\r\n]+|\s+(?!\S)|\s+")


def byte_to_unicode():
    """GPT-2's table: printable bytes stand for themselves, the other 68 move to U+0100..."""
    keep = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    table, moved = {}, 0
    for b in range(256):
        if b in keep:
            table[b] = chr(b)
        else:
            table[b] = chr(256 + moved)
            moved += 1
    return table


def learn_merges(count):
    """Most frequent adjacent pair first, ties by the pair's text; words cut at spaces."""
    table = byte_to_unicode()
    words = collections.Counter(re.findall(r" ?\S+|\s+", CORPUS))
    splits = {w: [table[b] for b in w.encode("utf-8")] for w in words}
    merges = []
    for _ in range(count):
        pairs = collections.Counter()
        for w, n in words.items():
            s = splits[w]
            for a, b in zip(s, s[1:]):
                pairs[(a, b)] += n
        if not pairs:
            break
        best = min(pairs, key=lambda p: (-pairs[p], p))
        merges.append(best)
        for w in words:
            s, out, i = splits[w], [], 0
            while i < len(s):
                if i + 1 < len(s) and (s[i], s[i + 1]) == best:
                    out.append(s[i] + s[i + 1])
                    i += 2
                else:
                    out.append(s[i])
                    i += 1
            splits[w] = out
    return merges


def vocabulary(merges, first=()):
    table = byte_to_unicode()
    symbols = list(first) + [table[b] for b in range(256)] + [a + b for a, b in merges]
    # A whole word no merge sequence reaches: ignore_merges (Llama 3) takes it in one piece.
    symbols.append(table[ord(" ")] + "unreachable")
    vocab = {}
    for s in symbols:  # two merges may spell the same token ("ab" + "c", "a" + "bc"): one id
        vocab.setdefault(s, len(vocab))
    return vocab


def added(tokens, start, special=True, **flags):
    return [dict({"id": start + i, "content": t, "single_word": False, "lstrip": False, "rstrip": False,
                  "normalized": False, "special": special}, **flags) for i, t in enumerate(tokens)]


def byte_level(use_regex):
    return {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": use_regex}


def split(pattern):
    return {"type": "Split", "pattern": {"Regex": pattern}, "behavior": "Isolated", "invert": False}


def model(vocab, merges, pairs, ignore_merges):
    return {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
            "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False, "ignore_merges": ignore_merges,
            "vocab": vocab, "merges": [list(m) for m in merges] if pairs else [a + " " + b for a, b in merges]}


def tokenizer(style):
    merges = learn_merges(400)
    doc = {"version": "1.0", "truncation": None, "padding": None, "normalizer": None,
           "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True}}
    if style == "llama3":
        vocab = vocabulary(merges)
        specials = ["<|begin_of_text|>", "<|end_of_text|>", "<|reserved_special_token_0|>", "<|eot_id|>"]
        doc["added_tokens"] = added(specials, len(vocab))
        doc["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [split(LLAMA3_PATTERN), byte_level(False)]}
        bos = {"id": specials[0], "ids": [len(vocab)], "tokens": [specials[0]]}
        doc["post_processor"] = {"type": "Sequence", "processors": [
            {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False, "use_regex": True},
            {"type": "TemplateProcessing",
             "single": [{"SpecialToken": {"id": specials[0], "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
             "pair": [{"SpecialToken": {"id": specials[0], "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                      {"SpecialToken": {"id": specials[0], "type_id": 1}}, {"Sequence": {"id": "B", "type_id": 1}}],
             "special_tokens": {specials[0]: bos}}]}
        doc["model"] = model(vocab, merges, pairs=True, ignore_merges=True)
    elif style == "qwen2":
        vocab = vocabulary(merges)
        doc["added_tokens"] = (added(["<|endoftext|>", "<|im_start|>", "<|im_end|>"], len(vocab)) +
                               added(["<tool_call>"], len(vocab) + 3, special=False))
        doc["normalizer"] = {"type": "NFC"}
        doc["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [split(QWEN2_PATTERN), byte_level(False)]}
        doc["post_processor"] = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False,
                                 "use_regex": False}
        doc["model"] = model(vocab, merges, pairs=False, ignore_merges=False)
    elif style == "smollm":
        specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
        vocab = vocabulary(merges, first=specials)
        doc["added_tokens"] = added(specials, 0)
        doc["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [
            {"type": "Digits", "individual_digits": True}, byte_level(True)]}
        doc["post_processor"] = {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False,
                                 "use_regex": True}
        doc["model"] = model(vocab, merges, pairs=False, ignore_merges=False)
    elif style == "gpt2":
        vocab = vocabulary(merges)
        vocab["<|endoftext|>"] = len(vocab)
        doc["added_tokens"] = (added(["<|endoftext|>"], len(vocab) - 1) +
                               added(["<mask>"], len(vocab), lstrip=True))
        doc["pre_tokenizer"] = byte_level(True)
        doc["post_processor"] = {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False,
                                 "use_regex": True}
        doc["model"] = model(vocab, merges, pairs=False, ignore_merges=False)
    else:
        sys.exit(f"error: style {style!r}: expected llama3, qwen2, smollm or gpt2")
    return doc


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__.strip().splitlines()[2].strip())
    style, out = sys.argv[1], sys.argv[2]
    doc = tokenizer(style)
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(doc, f, ensure_ascii=False, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
