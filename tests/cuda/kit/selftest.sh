#!/usr/bin/env bash
# The GPU check kit on a machine without a GPU (CTest: gpu_kit_on_cpu): the cases are written
# with the engine's float64 references, scripts/gpu_check.sh runs them end to end through the
# driver built with the kernel's CPU stand-in, and the driver is shown able to fail: a
# reference changed by a little, a truncated file, a case whose inputs differ and a case whose
# score modifiers differ from its reference's are each caught.
# With --nvcc (CTest: gpu_kit_nvcc_build, a test of its own so that it runs beside the others):
# only the driver built with the real kernel by nvcc's one command, as the GPU machine builds it,
# reporting that no device is here; exit 77 (skipped) without nvcc. It makes PTX alone
# (compute_90): the CMake build compiles the kernel into A100 and H100 machine code already.
# Usage: selftest.sh PATH/attn_gpu_kit_cases PATH/attn_gpu_kit_driver_cpu [--nvcc]
set -uo pipefail
cases_exe=$1 driver=$2 nvcc_only=${3:-}
root=$(cd "$(dirname "$0")/../../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
checks=0 failed=0
expect() {  # expect WHAT STATUS COMMAND...: the command exits with STATUS
  local what=$1 want=$2; shift 2
  "$@" >"$tmp/last.out" 2>&1
  local rc=$?
  checks=$((checks + 1))
  if [ "$rc" != "$want" ]; then
    failed=$((failed + 1)); echo "FAIL $what: exit $rc, expected $want"; sed 's/^/    /' "$tmp/last.out" | tail -15
  else
    echo "ok   $what"
  fi
}
expect_in() {  # expect_in WHAT PATTERN: the last command's output matches PATTERN
  checks=$((checks + 1))
  if grep -Eq -- "$2" "$tmp/last.out"; then echo "ok   $1"; else
    failed=$((failed + 1)); echo "FAIL $1: no '$2' in"; sed 's/^/    /' "$tmp/last.out" | tail -15; fi
}

if [ "$nvcc_only" = --nvcc ]; then
  nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
  [ -x "$nvcc" ] || { echo "nvcc not found: the nvcc build of the driver is not checked here"; exit 77; }
fi

kit=$tmp/kit
expect "the case writer writes every case" 0 "$cases_exe" --out "$kit/cases"
expect_in "... 92 of them" "wrote 92 cases"
echo "test" >"$kit/commit.txt"

summary() {
  if [ "$failed" = 0 ]; then echo "gpu kit self-test: all $checks checks passed"; exit 0; fi
  echo "gpu kit self-test: $failed of $checks checks failed"
  exit 1
}

# With nvcc: the driver and the real kernel build as on the GPU machine; no device answers here.
if [ "$nvcc_only" = --nvcc ]; then
  expect "nvcc builds the driver with the kernel" 0 env NVCC="$nvcc" NVCC_ARCH=compute_90 "$root/scripts/gpu_check.sh" build --kit "$tmp/nv"
  if nvidia-smi -L >/dev/null 2>&1; then
    expect "the driver finds the GPU" 0 "$tmp/nv/build/kit_driver" info
  else
    expect "the driver reports that no device is here" 77 "$tmp/nv/build/kit_driver" check "$kit/cases"
    expect_in "... as a skip" "^SKIPPED: "
  fi
  summary
fi

# The whole run as the GPU machine does it, on the stand-in.
expect "gpu_check.sh run --cpu passes every case" 0 "$root/scripts/gpu_check.sh" run --cpu --kit "$kit" --out "$tmp/out"
expect_in "... and says so" "^92 passed, 0 failed$"
expect_in "... with the lse, the backward's three gradients and the empty rows" "ok   0(3[0-9]|40)-bwd-f32-H8-Hkv2-Lq700-Lk900"
expect_in "... and the score modifiers in every kernel" "ok   05[0-9]-bwd-f32-H2-Hkv1-Lq33-Lk300-d96-dv80-full-window-softcap2-alibi-T0.5 "
expect_in "... and the mask variants by index, forward and backward" "ok   0[67][0-9]-bwd-f32-H4-Hkv2-Lq100-Lk37-d32-dv32-full-documents "
expect "... its summary is JSON with every case and the bench rows" 0 python3 -c '
import json, sys
s = json.load(open(sys.argv[1]))
c = json.load(open(sys.argv[2]))
assert s["ok"] and s["check"]["passed"] == 92 and s["check"]["failed"] == 0, s
assert len(c["cases"]) == 92 and all(x["ok"] and len(x["max_abs_err"]) in (1, 3) for x in c["cases"])
assert all(e <= b for x in c["cases"] for e, b in zip(x["max_abs_err"], x["bound"]))
# A mask-variant case whose rows all see nothing passes with error 0 and proves nothing: each has
# a plain error above 0, so a bound above the 1e-6 floor.
import re
ruled = [x for x in c["cases"] if re.search(r"-(window|prefix|strided|chunked|documents|combined|bitmap-window)", x["name"])]
assert len(ruled) == 43 and all(min(x["bound"]) > 1.000001e-6 for x in ruled), [x["name"] for x in ruled if min(x["bound"]) <= 1.000001e-6]
rows = s["bench"]["rows"]
assert len(rows) == 4 and all(r["median_ms"] > 0 and r["min_ms"] <= r["median_ms"] for r in rows), rows
assert {(r["dtype"], r["causal"]) for r in rows} == {("f32", False), ("f32", True), ("f16", False), ("f16", True)}
' "$tmp/out/gpu_check.json" "$tmp/out/check.json"
expect "... and the log holds the run" 0 grep -q "gpu check: PASSED" "$tmp/out/gpu_check.log"
expect "the quick subset for compute-sanitizer" 0 "$driver" check "$kit/cases" --quick
expect_in "... is the 53 small cases" "^53 passed, 0 failed$"

# The driver can fail: one float64 reference moved by 1e-3 (far beyond 2x plain float32).
bad=$tmp/bad
mkdir -p "$bad"
victim=$(cd "$kit/cases" && ls | grep -- '-fwd-f32-H4-Hkv2-Lq100-Lk37-' | head -1)
cp "$kit/cases/$victim" "$bad/"
python3 - "$bad/$victim" <<'PY'
import struct, sys
p = sys.argv[1]
b = bytearray(open(p, "rb").read())
off = 8 + 16 * 8 + 3 * 8 + 5 * 8                  # the sixth element of the output reference
x = struct.unpack_from("<d", b, off)[0]
struct.pack_into("<d", b, off, x + 1e-3)
open(p, "wb").write(b)
PY
expect "a reference off by 1e-3 fails the case" 1 "$driver" check "$bad"
expect_in "... naming it" "^FAIL ${victim%.case} "
mkdir -p "$tmp/badkit" && cp -r "$bad" "$tmp/badkit/cases"
expect "gpu_check.sh run on it fails" 1 "$root/scripts/gpu_check.sh" run --cpu --no-bench --kit "$tmp/badkit" --out "$tmp/badout"
expect_in "... and says FAILED" "gpu check: FAILED"

# ... and so can the modifiers: a case's header saying no ALiBi, or a soft-cap of 3 instead of 2,
# while its reference was computed with them (forward and backward).
for pass in fwd bwd; do
  modded=$(cd "$kit/cases" && ls | grep -- "-$pass-f32-H2-Hkv1-Lq33-Lk300-.*-softcap2-alibi-T0.5" | head -1)
  for change in "alibi 0" "softcap 3"; do
    rm -rf "$tmp/mods" && mkdir -p "$tmp/mods"
    python3 - "$kit/cases/$modded" "$tmp/mods/$modded" $change <<'PY'
import struct, sys
src, dst, field, value = sys.argv[1:]
b = bytearray(open(src, "rb").read())
if field == "alibi":
    struct.pack_into("<Q", b, 8 + 14 * 8, int(value))   # header word 14: ALiBi on or off
else:
    struct.pack_into("<d", b, 8 + 13 * 8, float(value))  # header word 13: the soft-cap
open(dst, "wb").write(b)
PY
    expect "a $pass case run with $change against its reference fails" 1 "$driver" check "$tmp/mods"
    expect_in "... naming it" "^FAIL ${modded%.case} "
  done
done

# ... and so can the mask variants: a prefix-LM case run as strided, a chunked one as a window
# (the header's mask kind, word 9; such cases have the same inputs, only the rule differs).
for change in "prefix strided 6" "chunked window 4"; do
  read -r from to kind <<<"$change"
  ruled=$(cd "$kit/cases" && ls | grep -- "-fwd-f32-.*-$from\.case$" | head -1)
  rm -rf "$tmp/rules" && mkdir -p "$tmp/rules"
  python3 - "$kit/cases/$ruled" "$tmp/rules/$ruled" "$kind" <<'PY'
import struct, sys
src, dst, kind = sys.argv[1:]
b = bytearray(open(src, "rb").read())
struct.pack_into("<Q", b, 8 + 9 * 8, int(kind))  # header word 9: the mask kind
open(dst, "wb").write(b)
PY
  expect "a $from case run as $to fails" 1 "$driver" check "$tmp/rules"
  expect_in "... naming it" "^FAIL ${ruled%.case} "
done
# Bad files and bad use: one error line, exit 2.
cp "$kit/cases/$victim" "$bad/$victim"
head -c 1000 "$kit/cases/$victim" >"$bad/$victim"
expect "a truncated case file is an error" 2 "$driver" check "$bad"
expect_in "... saying so" "^error: .*truncated"
python3 - "$kit/cases/$victim" "$bad/$victim" <<'PY'
import struct, sys
b = bytearray(open(sys.argv[1], "rb").read())
struct.pack_into("<Q", b, 8 + 11 * 8, 999)         # another seed: other inputs than the reference's
open(sys.argv[2], "wb").write(b)
PY
expect "a case whose inputs differ from the reference's is an error" 2 "$driver" check "$bad"
expect_in "... saying so" "inputs made here differ"
python3 - "$kit/cases/$victim" "$bad/$victim" <<'PY'
import struct, sys
b = bytearray(open(sys.argv[1], "rb").read())
struct.pack_into("<d", b, 8 + 13 * 8, -2.0)        # a soft-cap no kernel takes
open(sys.argv[2], "wb").write(b)
PY
expect "a case with a negative soft-cap is an error" 2 "$driver" check "$bad"
expect_in "... saying so" "soft-cap or the temperature is out of range"
printf 'ATTNKIT2' >"$bad/$victim"
expect "a header cut short is an error" 2 "$driver" check "$bad"
expect "a missing folder is an error" 2 "$driver" check "$tmp/nowhere"
expect "an empty folder is an error" 2 "$driver" check "$tmp/out"
expect "an unknown command is an error" 2 "$driver" frobnicate
expect "bench refuses a head dim the 16-bit kernel lacks" 2 "$driver" bench --dtypes f16 --shapes 96x2 --n 8
expect "bench refuses n = 0" 2 "$driver" bench --n 0
expect "gpu_check.sh refuses an unknown option" 2 "$root/scripts/gpu_check.sh" run --frobnicate
expect "gpu_check.sh refuses a bad --bench-n" 2 "$root/scripts/gpu_check.sh" run --cpu --bench-n 1k
expect "gpu_check.sh run without cases says how to make them" 2 "$root/scripts/gpu_check.sh" run --cpu --kit "$tmp/empty"
expect_in "... naming prepare" "gpu_check.sh prepare"
expect "gpu_check.sh --help" 0 "$root/scripts/gpu_check.sh" --help
expect_in "... shows the three commands" "gpu_check.sh build"

summary
