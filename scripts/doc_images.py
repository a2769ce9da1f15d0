#!/usr/bin/python3
"""Every picture under docs/images/ from the command the docs show for it, and the numbers each
picture states, read from that run's own JSON into docs/images/numbers.json.
roofline.png, a measurement of this machine that docs/performance.md's table goes with, is
redrawn only with --roofline; tradeoff.png (timings, docs/experiments.md's table) only with
--tradeoff.

    scripts/doc_images.py [ATTN_CLI]            regenerate docs/images/*.png and numbers.json, and
                                                write the numbers the docs quote
    scripts/doc_images.py --check [ATTN_CLI]    run the commands into a scratch folder and fail
                                                when a number differs from numbers.json, or when
                                                a number the docs quote (<!--n:PICTURE:KEY-->VALUE
                                                <!--/n--> in README.md and docs/*.md) differs from
                                                numbers.json

A picture's numbers are drawn into its pixels, which no test can read back: numbers.json is what
they say, written by the run that drew them, so --check (a CTest test) fails when the build
computes something else and the pictures are stale. roofline.png measures this machine and is
regenerated but never checked. Float32 rounding differs between CPUs (AVX-512, AVX2), and 1000
steps of training carry it on: on the flash ISA, BLAS core and compiler numbers.json records
("_kernels"), scores are compared within 0.01 and step numbers within 30 steps; on others within
0.1 and 100 steps, and the trained heads' kinds are not compared.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
IMAGES = os.path.join(ROOT, "docs", "images")
DATA = os.path.join(ROOT, "data")
REPEATED = "the cat sat on the mat . the cat sat on the mat"
SCORE_TOLERANCE, STEP_TOLERANCE = 0.01, 30
# NumPy's python (make_gpt2_folder.py), as the test suite's ATTN_PYTHON3.
PYTHON = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable


def run(cli, args, cwd):
    subprocess.run([cli] + args, cwd=cwd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def load(path):
    with open(path) as f:
        return json.load(f)


def model_numbers(manifest):
    """The heatmap's head of demo --model and its score, and every head's kind."""
    r = manifest["results"]
    return {"layer": r["single_head"]["layer"], "head": r["single_head"]["head"],
            "induction_score": round(r["single_head"]["induction_score"], 3),
            "kinds": [h["kind"] for h in r["model"]["head_summary"]["heads"]]}


def trained_numbers(manifest):
    """The default demo's trained model: every head's kind and the induction head's score."""
    t = manifest["results"]["trained"]
    ind = t["induction_head"]
    score = next(h["induction"] for h in t["head_summary"]["heads"] if (h["layer"], h["head"]) == (ind["layer"], ind["head"]))
    return {"kinds": [h["kind"] for h in t["head_summary"]["heads"]], "induction_score": round(score, 3)}


def approximation_numbers(manifest):
    a = manifest["results"]["approximations"]
    return {r["family"] + "_output_error": round(r["output_error"], 2) for r in a["runs"] if r["family"] != "exact"}


def train_numbers(train):
    last = train["steps"][-1]
    first = lambda key: next((p["step"] for p in train["steps"] if p[key] >= 0.4), None)
    return {"phase_change_step": train["phase_change_step"],
            "previous_token_reaches_0.4": first("prev_token_score"),
            "induction_reaches_0.4": first("induction_score"),
            "final_previous_token": round(last["prev_token_score"], 3),
            "final_induction": round(last["induction_score"], 3),
            "final_loss": round(last["loss"], 2),
            "kinds": [h["kind"] for h in train["final"]]}


# Each picture: the commands (in a scratch folder W), the file they leave, and its numbers.
def pictures(cli, w):
    # Models are copied into the scratch folder and named relative to it, as the pictures'
    # titles show them.
    induction, gpt2_random = "induction", "gpt2-random"
    return [
        ("complexity.png", [["complexity", "--n", "64,128,256,512,1024,2048,4096", "--plots", "c"]], "c/complexity.png", None),
        ("variance.png", [["variance", "--plots", "v"]], "v/variance.png", None),
        ("variance-saturation.png", [["variance", "--plots", "v"]], "v/saturation.png", None),
        ("temperature.png", [["temperature", "--t", "0.1,0.2,0.5,1,2,5,10,20", "--plots", "t"]], "t/temperature.png", None),
        ("explain-multihead.png", [["explain", "The cat sat on the mat", "--heads", "2", "--plots", "eh"]],
         "eh/explain-multihead.png", None),
        ("explain-split-kv.png", [["explain", "The cat sat on the mat", "--split-kv", "3", "--row", "3", "--plots", "es"]],
         "es/explain-split-kv.png", None),
        ("demo-attention-zh.png", [["demo", "我喜欢深度学习", "--out", "zh"]], "zh/attention.png", None),
        ("demo-causal.png", [["demo", "The cat sat on", "--out", "cat"]], "cat/attention_causal.png", None),
        ("demo-heads.png", [["demo", "The cat sat on", "--out", "cat"]], "cat/heads.png", None),
        ("demo-flash-tiles.png", [["demo", "The cat sat on the mat", "--out", "mat"]], "mat/flash_tiles.png", None),
        ("demo-trained-heads.png", [["demo", "--out", "default"]], "default/trained_heads.png",
         lambda: trained_numbers(load(f"{w}/default/manifest.json"))),
        ("demo-approximations.png", [["demo", "--out", "default"]], "default/approximations.png",
         lambda: approximation_numbers(load(f"{w}/default/manifest.json"))),
        ("demo-model-induction.png", [["demo", "--model", induction, REPEATED, "--out", "model"]], "model/attention.png",
         lambda: model_numbers(load(f"{w}/model/manifest.json"))),
        ("mask-causal.png", [["mask", "--kind", "causal", "--size", "6", "--out", "mask-causal.png"]], "mask-causal.png", None),
        ("mask-padding.png", [["mask", "--kind", "padding", "--size", "6", "--lengths", "6,3", "--out", "mask-padding.png"]],
         "mask-padding.png", None),
        ("mask-window.png", [["mask", "--kind", "window", "--size", "6", "--window", "3", "--out", "mask-window.png"]],
         "mask-window.png", None),
        ("heatmap-your-own.png", [["heatmap", "--input", os.path.join(DATA, "examples", "heatmap_heads.json"), "--out",
                                   "two-heads.png"]], "two-heads.png", None),
        ("rope-rotation.png", [["rope", "--plots", "r"]], "r/rope_rotation.png", None),
        ("rope-scores.png", [["rope", "--plots", "r"]], "r/rope_scores.png", None),
        ("rope-styles.png", [["rope", "--plots", "r"]], "r/rope_styles.png", None),
        ("positional-sinusoidal.png", [["positional", "--length", "32", "--d-model", "32", "--heads", "4", "--plots", "pe"]],
         "pe/sinusoidal.png", None),
        ("kv-cache.png", [["generate", "The cat sat on the mat", "--prefill", "2", "--out", "kv"]], "kv/kv_cache.png", None),
        ("train-curves.png", [["train", "--no-timing", "--out", "train"]], "train/curves.png",
         lambda: train_numbers(load(f"{w}/train/train.json"))),
        ("train-heads-after.png", [["train", "--no-timing", "--out", "train"]], "train/heads_after.png", None),
        # No picture: the numbers of docs/training.md's one-layer contrast.
        ("train-one-layer", [["train", "--layers", "1", "--no-timing", "--out", "train1"]], None,
         lambda: train_numbers(load(f"{w}/train1/train.json"))),
        ("gpt2-model-view.png", [["forward", "--model", gpt2_random, REPEATED, "--out", "views", "--scale", "1.5"]],
         "views/heads.png",
         lambda: {"kinds": [h["kind"] for h in load(f"{w}/views/head_summary.json")["heads"]]}),
        ("roofline.png", [["roofline", "--n", "512,2048", "--kv", "1024,16384", "--plots", "roofline"]], "roofline/roofline.png",
         None),
        ("tradeoff.png", [["tradeoff", "--n", "256,1024,4096", "--plots", "tradeoff"]], "tradeoff/tradeoff.png", None),
    ]


def kernels(cli):
    doctor = json.loads(subprocess.run([cli, "doctor", "--json"], check=True, capture_output=True, text=True).stdout)
    return {"flash_isa": doctor["flash_isa"], "blas_core": doctor["blas"]["core"], "compiler": doctor["compiler"]}


def differs(key, want, have, same_kernels):
    if want is None and have is None:
        return False
    loose = 1 if same_kernels else 10
    if isinstance(want, float) or isinstance(have, float):
        return have is None or want is None or abs(float(want) - float(have)) > SCORE_TOLERANCE * loose
    if key.endswith("_step") or key.endswith("reaches_0.4"):
        return have is None or want is None or abs(int(want) - int(have)) > STEP_TOLERANCE * (1 if same_kernels else 3.4)
    if key == "kinds" and not same_kernels:
        return False
    return want != have


QUOTE = re.compile(r"<!--n:([^:>]+):([^>]+)-->([^<]*)<!--/n-->")


def pages():
    return [os.path.join(ROOT, "README.md")] + sorted(
        os.path.join(ROOT, "docs", p) for p in os.listdir(os.path.join(ROOT, "docs")) if p.endswith(".md"))


def quoted_numbers():
    """Every <!--n:PICTURE:KEY-->VALUE<!--/n--> in README.md and docs/*.md."""
    for page in pages():
        with open(page) as f:
            for m in QUOTE.finditer(f.read()):
                yield os.path.relpath(page, ROOT), m.group(1), m.group(2), m.group(3)


def requote(numbers):
    """Writes each quoted number's current value into README.md and docs/*.md."""
    def value(m):
        want = numbers.get(m.group(1), {}).get(m.group(2))
        if want is None:
            raise SystemExit(f"doc_images: a page quotes {m.group(1)} {m.group(2)}, which no picture records")
        return f"<!--n:{m.group(1)}:{m.group(2)}-->{want}<!--/n-->"
    for page in pages():
        with open(page) as f:
            text = f.read()
        new = QUOTE.sub(value, text)
        if new != text:
            with open(page, "w") as f:
                f.write(new)


def main():
    args = sys.argv[1:]
    check = "--check" in args
    # --corrupt-recorded: check one picture against numbers.json with its score moved by 0.1, and
    # succeed only when that is caught (the check can fail).
    corrupt = "--corrupt-recorded" in args
    check = check or corrupt
    numbers_path = os.path.join(IMAGES, "numbers.json")
    if "--numbers" in args:  # another numbers.json to check against (the test that the check can fail)
        numbers_path = args[args.index("--numbers") + 1]
        args = [a for a in args if a not in ("--numbers", numbers_path)]
    args = [a for a in args if a not in ("--check", "--roofline", "--tradeoff", "--corrupt-recorded")]
    cli = os.path.abspath(args[0]) if args else os.path.join(ROOT, "build", "attn-cli")
    w = tempfile.mkdtemp(prefix="doc-images-")
    try:
        shutil.copytree(os.path.join(DATA, "models", "induction"), os.path.join(w, "induction"))
        subprocess.run([PYTHON, os.path.join(ROOT, "scripts", "make_gpt2_folder.py"), "--out", os.path.join(w, "gpt2-random"),
                        "--layers", "4", "--embd", "64", "--heads", "4", "--positions", "128"],
                       check=True, stdout=subprocess.DEVNULL)
        done, numbers = set(), {}
        for name, commands, output, read in pictures(cli, w):
            if check and read is None:
                continue  # nothing to compare: its run is skipped
            if corrupt and name != "demo-model-induction.png":
                continue
            if name == "roofline.png" and (check or "--roofline" not in sys.argv):
                continue  # this machine's measurement: docs/performance.md's table goes with it
            if name == "tradeoff.png" and (check or "--tradeoff" not in sys.argv):
                continue  # timings too: docs/experiments.md's table goes with it
            for c in commands:
                if tuple(c) not in done:
                    run(cli, c, w)
                    done.add(tuple(c))
            if read is not None:
                numbers[name] = read()
            if not check and output is not None:
                shutil.copyfile(os.path.join(w, output), os.path.join(IMAGES, name))
        if not check:
            numbers["_kernels"] = kernels(cli)
            with open(numbers_path, "w") as f:
                f.write(json.dumps(numbers, indent=2, ensure_ascii=False) + "\n")
            requote(numbers)
            print(f"doc_images: wrote {len(pictures(cli, w))} pictures and {numbers_path}")
            return 0
        recorded = load(numbers_path)
        if corrupt:
            recorded["demo-model-induction.png"]["induction_score"] += 0.1
        failures = []
        same_kernels = recorded.get("_kernels") == kernels(cli)
        if not same_kernels:
            print(f"doc_images: this machine runs {kernels(cli)}, numbers.json was made with {recorded.get('_kernels')}: "
                  "looser tolerances, kinds not compared")
        for name, have in numbers.items():
            for key, value in have.items():
                want = recorded.get(name, {}).get(key)
                if differs(key, want, value, same_kernels):
                    failures.append(f"{name}: {key} is {value} in this build, {want} in numbers.json")
        for page, name, key, text in quoted_numbers():
            if corrupt and name not in numbers:
                continue
            want = recorded.get(name, {}).get(key)
            if want is None or str(want) != text.strip():
                failures.append(f"{page} quotes {name} {key} = {text.strip()}, numbers.json has {want}")
        if corrupt:
            if not failures:
                print("doc_images: a number moved by 0.1 went unnoticed: the check cannot fail")
                return 1
            print("doc_images: the moved number is caught, as it must be: " + failures[0])
            return 0
        if failures:
            print("doc_images: stale:\n  " + "\n  ".join(failures) + "\n(scripts/doc_images.py regenerates them)")
            return 1
        print(f"doc_images: the numbers of {len(numbers)} pictures and every quoted number are current")
        return 0
    finally:
        shutil.rmtree(w, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
