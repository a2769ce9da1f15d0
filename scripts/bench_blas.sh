#!/usr/bin/env bash
# Does attn-cli's OpenBLAS run at this machine's speed? One run, 1 and 2 threads, sgemm N^3:
#   plain C program, OPENBLAS_CORETYPE = the best core for this CPU  (the yardstick)
#   attn-cli bench --sgemm N as started (your environment, as it is)
#   attn-cli with OpenBLAS's own choice (OPENBLAS_CORETYPE unset)
#   attn-cli after OpenBLAS fell back to Prescott (what Debian 12's OpenBLAS does on CPUs it does
#     not know; attn-cli switches to the right core at start-up, `attn-cli doctor` says so)
# then what the switch buys the float64 reference (dgemm): `bench --backend naive` at n = 1024,
# H = 8, d = 64 with OpenBLAS's own choice, and left on Prescott (OPENBLAS_CORETYPE=Prescott,
# which attn-cli keeps as the user's own).
#   scripts/bench_blas.sh [N]       (default 2048; ATTN_CLI=path skips the install and build)
#   scripts/bench_blas.sh --suite   also the whole CTest suite (build/, or BUILD_DIR) both ways,
#                                   less blas_cases_on_openblas_own_core:
#                                   twice the suite's time; failed tests are counted
#   scripts/bench_blas.sh --smoke   tiny sizes, seconds (what the test suite runs)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
n=2048 naive_n=1024 heads=8 suite=""
case ${1:-} in
  --smoke) n=128 naive_n=64 heads=1 ;;
  --suite) suite=1 ;;
  --*) echo "error: unknown option $1 (expected N, --suite or --smoke)" >&2; exit 2 ;;
  "") ;;
  *) n=$1 ;;
esac
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

naive_ms() {  # env settings..., then prints "core ms(1 thread) ms(2 threads)" (best of 3)
  env "$@" "$ATTN_CLI" bench --backend naive --n "$naive_n" --heads "$heads" --repeat 3 --threads 1,2 \
    --json 2>/dev/null | python3 -c '
import json, sys
d = json.load(sys.stdin)
print(d["machine"]["blas"]["core"], " ".join("%.6g" % r["min_ms"] for r in d["runs"]))'
}
read -r right_core right_1 right_2 <<<"$(naive_ms -u OPENBLAS_CORETYPE)"
read -r slow_core slow_1 slow_2 <<<"$(naive_ms OPENBLAS_CORETYPE=Prescott)"
echo
echo "float64 reference (bench --backend naive, n = $naive_n, H = $heads, d = 64), ms on 1 and 2 threads, best of 3"
printf '%-58s %s\n' "attn-cli, OpenBLAS's own choice (core $right_core)" "$(printf '%.2f %.2f' "$right_1" "$right_2")"
printf '%-58s %s\n' "attn-cli, left on Prescott (core $slow_core)" "$(printf '%.2f %.2f' "$slow_1" "$slow_2")"
printf '%-58s %s\n' "speed-up of the switch" "$(python3 -c "print('%.2fx %.2fx' % ($slow_1 / $right_1, $slow_2 / $right_2))")"

if [[ -n $suite ]]; then
  build=${BUILD_DIR:-$root/build}
  [[ -f $build/CTestTestfile.cmake ]] || { echo "error: no CTest build in $build (run scripts/build.sh)" >&2; exit 2; }
  suite_time() {  # env settings..., then prints "seconds failed-count"
    local start end log="$work/ctest.log"
    start=$(date +%s.%N)
    # blas_cases_on_openblas_own_core runs on OpenBLAS's own core whatever the environment says
    # (its ENVIRONMENT_MODIFICATION), so it would blur the comparison: its cases run one by one anyway.
    (cd "$build" && env "$@" ctest --parallel "$(nproc)" -E '^blas_cases_on_openblas_own_core$' >"$log" 2>&1) || true
    end=$(date +%s.%N)
    python3 -c "print('%.0f s' % ($end - $start), end=' ')"
    grep -Eo '[0-9]+ tests failed out of [0-9]+' "$log" || echo "(no CTest summary: the run did not finish)"
  }
  echo
  echo "the whole suite (ctest --parallel $(nproc) in $build), wall time"
  printf '%-58s %s\n' "OpenBLAS's own choice, switched by attn-cli if it fell back" "$(suite_time -u OPENBLAS_CORETYPE)"
  printf '%-58s %s\n' "left on Prescott (OPENBLAS_CORETYPE=Prescott)" "$(suite_time OPENBLAS_CORETYPE=Prescott)"
fi
