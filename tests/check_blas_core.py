#!/usr/bin/env python3
"""After start-up, attn-cli's OpenBLAS runs a core that uses this CPU's widest vectors.

The CPU's features come from /proc/cpuinfo (not from attn-cli's own cpuid code). Three runs:
  1. no OPENBLAS_CORETYPE: the core fits the CPU (OpenBLAS knew it, or attn-cli set it);
  2. OpenBLAS pretending to fall back to Prescott (ATTN_CLI_TEST_BLAS_CORE): attn-cli starts
     itself again with the right core, and says so;
  3. the user's own OPENBLAS_CORETYPE=Prescott: kept, with a one-line warning.
Usage: check_blas_core.py ATTN_CLI
"""
import json
import os
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


def doctor(cli, **env_changes):
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_CORETYPE", "ATTN_CLI_TEST_BLAS_CORE")}
    env.update(env_changes)
    r = subprocess.run([cli, "doctor", "--json"], env=env, capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        sys.exit(f"FAIL: doctor exited {r.returncode}: {r.stderr}")
    return json.loads(r.stdout)["blas"], r.stderr


def main():
    cli = sys.argv[1]
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
