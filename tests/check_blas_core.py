#!/usr/bin/env python3
"""After start-up, attn-cli's OpenBLAS runs a core that uses this CPU's widest vectors.

The CPU's features come from /proc/cpuinfo (not from attn-cli's own cpuid code). Three runs:
  1. no OPENBLAS_CORETYPE: the core fits the CPU (OpenBLAS knew it, or attn-cli set it);
  2. OpenBLAS pretending to fall back to Prescott (ATTN_CLI_TEST_BLAS_CORE): attn-cli starts
     itself again with the right core, and says so;
  3. the user's own OPENBLAS_CORETYPE=Prescott: kept, with a one-line warning.
With --qemu, attn-cli runs instead under qemu-x86_64 (qemu-user) posing as CPUs this machine is
not, among them the issue's Intel Xeon of family 6, model 207, which Debian 12's OpenBLAS does
not know: there OpenBLAS itself falls back to Prescott, and no stand-in is needed. qemu's
emulator has AVX2 but no AVX-512, so these CPUs are AVX2 ones. Under each, the core after
start-up must use AVX2, and the float64 reference (dgemm on the core attn-cli switched to) must
agree with NumPy. Prints SKIP without qemu-x86_64.
Usage: check_blas_core.py ATTN_CLI [--qemu]
"""
import json
import os
import shutil
import subprocess
import sys

AVX512 = {"SkylakeX", "Cooperlake", "SapphireRapids"}
AVX2 = AVX512 | {"Haswell", "Zen", "Excavator"}


def cpu_flags():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("flags"):
                return set(line.split(":", 1)[1].split())
    return set()


def run(command, stdin=None, **env_changes):
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_CORETYPE", "ATTN_CLI_TEST_BLAS_CORE")}
    env.update(env_changes)
    r = subprocess.run(command, input=stdin, env=env, capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        sys.exit(f"FAIL: {' '.join(command)} exited {r.returncode}: {r.stderr}")
    return r


def doctor(cli, **env_changes):
    r = run([cli, "doctor", "--json"], **env_changes)
    return json.loads(r.stdout)["blas"], r.stderr


# (qemu -cpu, what it stands for). Haswell-v4 is qemu's AVX2 + FMA model; the family and model
# numbers are what OpenBLAS reads to pick its kernels.
EMULATED = [
    ("Haswell-v4,model=207", "Intel Xeon, family 6 model 207 (the issue's; Debian 12's OpenBLAS: Prescott)"),
    ("Haswell-v4,model=173", "Intel Xeon, family 6 model 173"),
    ("Haswell-v4", "Intel Haswell, family 6 model 60 (OpenBLAS knows it)"),
    ("EPYC-Milan,family=26,model=2", "AMD EPYC, family 26 (Zen 5)"),
]


def attention_case():
    import numpy as np
    rng = np.random.default_rng(7)
    q, k, v = rng.standard_normal((48, 32)), rng.standard_normal((40, 32)), rng.standard_normal((40, 24))
    s = q @ k.T / np.sqrt(32)
    w = np.exp(s - s.max(axis=1, keepdims=True))
    w /= w.sum(axis=1, keepdims=True)
    return json.dumps({"q": q.tolist(), "k": k.tolist(), "v": v.tolist(), "backend": "naive"}), w @ v


def check_emulated(cli):
    qemu = shutil.which("qemu-x86_64")
    if not qemu:
        print("SKIP: qemu-x86_64 (Debian package qemu-user) is not installed")
        return 0
    if os.uname().machine != "x86_64":
        print("SKIP: attn-cli is not an x86-64 build here")
        return 0
    try:
        import numpy as np
    except ImportError:
        print("SKIP: NumPy (Debian package python3-numpy) is not installed")
        return 0
    case, expected = attention_case()
    failures = []
    for cpu, what in EMULATED:
        r = run([qemu, "-cpu", cpu, cli, "doctor", "--json"])
        facts = json.loads(r.stdout)
        blas = facts["blas"]
        chose = blas.get("openblas_chose", blas["core"])  # set only when attn-cli switched the core
        said = f"{what}: cpu_vectors {facts['cpu_vectors']}, core {blas['core']}, OpenBLAS chose {chose}"
        print(said)
        if facts["cpu_vectors"] != "AVX2":
            failures.append(f"{what}: qemu did not pose as an AVX2 CPU ({facts['cpu_vectors']})")
            continue
        if blas["core"] not in AVX2 or not blas["core_fits_cpu"]:
            failures.append(f"{said}: the core does not use AVX2")
        if "model=207" in cpu and " 0.3.21 " in blas["library"] and chose != "Prescott":
            failures.append(f"{said}: expected Debian 12's OpenBLAS to fall back to Prescott here, as on the real CPU")
        out = json.loads(run([qemu, "-cpu", cpu, cli, "attend", "--input", "-", "--no-weights"], stdin=case).stdout)
        err = np.abs(np.array(out["output"]) - expected).max()
        if not err < 1e-6:  # the JSON holds float32 values
            failures.append(f"{what}: the float64 reference differs from NumPy by {err:.3g}")
    for f in failures:
        print("FAIL:", f)
    if not failures:
        print("blas core: under every emulated CPU, start-up ends on an AVX2 core and dgemm agrees with NumPy")
    return 1 if failures else 0


def main():
    cli = sys.argv[1]
    if sys.argv[2:] == ["--qemu"]:
        return check_emulated(cli)
    flags = cpu_flags()
    if {"avx512f", "avx512bw", "avx512vl", "avx512dq", "avx512cd"} <= flags:
        expected, level = AVX512, "AVX-512"
    elif {"avx2", "fma"} <= flags:
        expected, level = AVX2, "AVX2"
    else:
        print("SKIP: this CPU has neither AVX-512 nor AVX2")
        return 0
    failures = []

    blas, _ = doctor(cli)
    if blas["core"] not in expected:
        failures.append(f"plain start: core {blas['core']} does not use {level}")

    blas, _ = doctor(cli, ATTN_CLI_TEST_BLAS_CORE="Prescott")
    if blas["core"] not in expected or blas.get("openblas_chose") != "Prescott":
        failures.append(f"after a Prescott fallback: core {blas['core']}, openblas_chose {blas.get('openblas_chose')}")

    blas, err = doctor(cli, OPENBLAS_CORETYPE="Prescott")
    lines = err.strip().splitlines()
    if blas["core"] != "Prescott" or blas["core_fits_cpu"]:
        failures.append(f"the user's OPENBLAS_CORETYPE=Prescott was not kept: core {blas['core']}")
    if len(lines) != 1 or not lines[0].startswith("warning: OpenBLAS runs its Prescott kernels"):
        failures.append(f"no one-line warning for the user's slow core: {err!r}")

    for f in failures:
        print("FAIL:", f)
    if not failures:
        print(f"blas core: every start-up runs an {level} core")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
