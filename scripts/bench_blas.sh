#!/usr/bin/env bash
# Does attn-cli's OpenBLAS run at this machine's speed? One run, 1 and 2 threads, sgemm N^3:
#   plain C program, OPENBLAS_CORETYPE = the best core for this CPU  (the yardstick)
#   attn-cli bench --sgemm N as started (your environment, as it is)
#   attn-cli with OpenBLAS's own choice (OPENBLAS_CORETYPE unset)
#   attn-cli after OpenBLAS fell back to Prescott (what Debian 12's OpenBLAS does on CPUs it does
#     not know; attn-cli switches to the right core at start-up, `attn-cli doctor` says so)
#   scripts/bench_blas.sh [N]       (default 2048; ATTN_CLI=path skips the install and build)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
n=${1:-2048}
ATTN_CLI=$("$root/scripts/attn_cli.sh")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cc -O2 -o "$work/sgemm_rate" "$root/scripts/sgemm_rate.c" -lopenblas

best=$(env -u OPENBLAS_CORETYPE "$ATTN_CLI" doctor --json | python3 -c '
import json, sys
b = json.load(sys.stdin)["blas"]
print(b.get("better_core", b["core"]))')
attn_sgemm() {  # env settings..., then prints "core gflops" for each thread count
  env "$@" "$ATTN_CLI" bench --backend flash --n 64 --heads 1 --repeat 1 --no-check --threads 1,2 \
    --sgemm "$n" --json 2>/dev/null | python3 -c '
import json, sys
d = json.load(sys.stdin)
print(" ".join("%s:%.1f" % (d["machine"]["blas"]["core"], s["gflops"]) for s in d["sgemm"]))'
}
echo "sgemm ${n}^3, GFLOP/s on 1 and 2 threads (CPU: $("$ATTN_CLI" doctor --json 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["cpu"])'))"
printf '%-58s %s\n' "plain C, OPENBLAS_CORETYPE=$best (yardstick)" \
  "$(for t in 1 2; do OPENBLAS_CORETYPE=$best "$work/sgemm_rate" "$n" $t | tr ' ' ':'; done | tr '\n' ' ')"
printf '%-58s %s\n' "attn-cli, your environment (OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-unset})" "$(attn_sgemm)"
printf '%-58s %s\n' "attn-cli, OpenBLAS's own choice" "$(attn_sgemm -u OPENBLAS_CORETYPE)"
printf '%-58s %s\n' "attn-cli, OpenBLAS fell back to Prescott" \
  "$(attn_sgemm -u OPENBLAS_CORETYPE ATTN_CLI_TEST_BLAS_CORE=Prescott)"
printf '%-58s %s\n' "plain C, OPENBLAS_CORETYPE=Prescott (what it would cost)" \
  "$(for t in 1 2; do OPENBLAS_CORETYPE=Prescott "$work/sgemm_rate" "$n" $t | tr ' ' ':'; done | tr '\n' ' ')"
