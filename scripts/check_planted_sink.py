#!/usr/bin/env python3
"""Checks that `attn-cli forward --out` finds the attention sink planted in a folder.

    scripts/check_planted_sink.py ATTN_CLI FOLDER OUT_DIR

FOLDER comes from `scripts/make_decoder_folder.py --plant-sink --tokenizer llama3`: its layer 0
query head 0 attends to <|begin_of_text|> by construction (see plant_sink there). The lesson must
measure that head's weight on token 0 near 1 while the unplanted layer stays near what an even
head would give, the head summary must call the head first-token, and sinks.png must exist.
"""
import json
import os
import subprocess
import sys


def main():
    cli, folder, out = sys.argv[1:4]
    text = "The cat sat on the mat, and the dog sat on the log by the door"
    r = subprocess.run([cli, "forward", "--model", folder, text, "--out", out], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"error: forward exited {r.returncode}: {r.stderr.strip()}")
    with open(os.path.join(out, "lessons.json")) as f:
        sinks = json.load(f)["attention_sinks"]
    with open(os.path.join(out, "head_summary.json")) as f:
        heads = json.load(f)["heads"]
    weight = sinks["first_token_weight"]
    failures = []
    if not weight[0][0] > 0.9:
        failures.append(f"the planted head puts {weight[0][0]:.3f} on token 0, expected > 0.9")
    last = max(weight[-1])
    if not last < 0.5:
        failures.append(f"a head of the last layer puts {last:.3f} on token 0, expected < 0.5 (nothing planted there)")
    kind = next(h["kind"] for h in heads if h["layer"] == 0 and h["head"] == 0)
    if kind != "first-token":
        failures.append(f"head_summary.json calls the planted head {kind!r}, expected 'first-token'")
    if not os.path.exists(os.path.join(out, "sinks.png")):
        failures.append("no sinks.png")
    for f in failures:
        print("FAIL " + f)
    if not failures:
        print(f"the planted sink is found: layer 0 head 0 puts {weight[0][0]:.3f} on token 0 "
              f"(an even head {sinks['uniform_head_weight']:.3f})")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
