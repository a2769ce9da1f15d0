#!/usr/bin/env bash
# The GPU check kit: proves the CUDA kernel on a bare GPU machine in one short run.
#
# A GPU machine here is lent for minutes, with nvcc, CMake and Python + PyTorch but none of
# attn-cli's Debian libraries. So everything that needs those is done before, on the CPU:
#
#   scripts/gpu_check.sh prepare [--kit DIR]
#       (CPU machine) builds attn-cli's tests, writes the cases with their float64 references
#       into DIR (default .gpu-kit/, ignored by git) and prints the command for the GPU machine.
#   scripts/gpu_check.sh run [--kit DIR] [--out DIR] [--quick] [--no-sanitizer] [--no-bench]
#                            [--bench-n LIST] [--cpu]
#       (GPU machine) builds the driver with one nvcc command (the kernel, tile_math.hpp and
#       tests/cuda/kit/, standard library only); runs every case against its reference under
#       FlashAttention's rule; the speed table against PyTorch's SDPA and cuBLAS
#       (scripts/bench_cuda.py); compute-sanitizer memcheck and racecheck on the quick cases
#       (each step under a time limit: about 5 minutes in all on an H100/H200). Writes
#       gpu_check.log, gpu_check.json, check.json and bench.json into --out (default $OUT, else
#       DIR/out). --cpu builds the driver with the C++ compiler and the kernel's CPU stand-in
#       instead, so the whole run is tested on a machine without a GPU (tests: gpu_kit_on_cpu).
#   scripts/gpu_check.sh build [--kit DIR] [--cpu]
#       only builds the driver into DIR/build (with nvcc this checks the kernel compiles; with
#       no GPU there, NVCC_ARCH=sm_90 builds one architecture instead of A100's and H100's).
#
# Exit status: 0 when every case passed and the sanitizers found nothing, 1 otherwise, 2 for bad
# use or a missing kit.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)

die() { echo "error: $*" >&2; exit 2; }
usage() { sed -n '2,/^[^#]/p' "$0" | sed '$d; s/^# \{0,1\}//'; }

[ $# -ge 1 ] || { usage >&2; die "expected a command: prepare, run or build"; }
cmd=$1; shift
case "$cmd" in
  prepare|run|build) ;;
  -h|--help|help) usage; exit 0 ;;
  *) die "unknown command '$cmd' (expected prepare, run or build)" ;;
esac

kit=$root/.gpu-kit
out=${OUT:-}
quick=0 sanitizer=1 bench=1 cpu=0 bench_n=1024,4096,16384
while [ $# -gt 0 ]; do
  case "$1" in
    --kit) [ $# -ge 2 ] || die "--kit needs a folder"; kit=$2; shift ;;
    --out) [ $# -ge 2 ] || die "--out needs a folder"; out=$2; shift ;;
    --quick) quick=1 ;;
    --no-sanitizer) sanitizer=0 ;;
    --no-bench) bench=0 ;;
    --bench-n) [ $# -ge 2 ] || die "--bench-n needs a list"; bench_n=$2; shift
               [[ $bench_n =~ ^[0-9]+(,[0-9]+)*$ ]] || die "--bench-n: expected numbers separated by commas, got '$bench_n'" ;;
    --cpu) cpu=1 ;;
    -h|--help) usage; exit 0 ;;
    *) die "unknown option '$1' (scripts/gpu_check.sh --help lists them)" ;;
  esac
  shift
done
kit=$(mkdir -p "$kit" && cd "$kit" && pwd) || die "cannot make the kit folder '$kit'"

if [ "$cmd" = prepare ]; then
  build=${BUILD_DIR:-$root/build}
  "$root/scripts/build.sh" >/dev/null
  "$build/tests/attn_gpu_kit_cases" --out "$kit/cases"
  { git -C "$root" rev-parse HEAD 2>/dev/null || echo unknown; } >"$kit/commit.txt"
  if [ -n "$(git -C "$root" status --porcelain 2>/dev/null)" ]; then echo "(with uncommitted changes)" >>"$kit/commit.txt"; fi
  du -sh "$kit/cases" | sed 's/\t.*/ of cases/'
  rel=${kit#"$root"/}
  echo "On the GPU machine, from the repository root (carry '$rel'):"
  echo "  scripts/gpu_check.sh run --kit $rel --out \"\$OUT\""
  exit 0
fi

drv=$kit/build/kit_driver
build_driver() {
  mkdir -p "$kit/build"
  local srcs=("$root/tests/cuda/kit/kit_driver.cpp")
  local inc=(-I"$root/include" -I"$root/src/engine/attention/cuda")
  if [ "$cpu" = 1 ]; then
    "${CXX:-c++}" -O2 -std=c++17 "${inc[@]}" "${srcs[@]}" "$root/tests/cuda/kit/kit_cpu_standin.cpp" -o "$drv"
  else
    local nvcc=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
    [ -x "$nvcc" ] || die "nvcc not found (set NVCC, or use --cpu for the CPU stand-in)"
    # The GPU's own architecture when a GPU answers, else NVCC_ARCH when set (one architecture,
    # e.g. sm_90: half the compile time), else A100 and H100/H200 code plus PTX.
    local cc arch
    cc=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d ' .' || true)
    if [[ $cc =~ ^[0-9]+$ ]]; then arch=(-arch="sm_$cc")
    elif [ -n "${NVCC_ARCH:-}" ]; then arch=(-arch="$NVCC_ARCH")
    else arch=(-gencode arch=compute_80,code=sm_80
      -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90); fi
    "$nvcc" -O3 -std=c++17 -lineinfo "${arch[@]}" "${inc[@]}" "$root/src/engine/attention/cuda/flash_cuda.cu" "${srcs[@]}" -o "$drv"
  fi
}

if [ "$cmd" = build ]; then
  build_driver
  echo "built $drv"
  exit 0
fi

# run
[ -d "$kit/cases" ] || die "$kit/cases: no cases (run 'scripts/gpu_check.sh prepare' on the CPU machine, and carry the kit)"
out=${out:-$kit/out}
mkdir -p "$out" || die "cannot make '$out'"
out=$(cd "$out" && pwd)
log=$out/gpu_check.log
: >"$log"
exec > >(tee -a "$log") 2>&1
step() { echo; echo "== $* ($(date -u +%H:%M:%S))"; }

step "machine"
date -u +%Y-%m-%dT%H:%M:%SZ
echo "commit: $(tr '\n' ' ' <"$kit/commit.txt" 2>/dev/null || echo unknown)"
if [ "$cpu" = 1 ]; then echo "mode: --cpu (the kernel's CPU stand-in)"; else
  nvidia-smi -L || true
  "${NVCC:-nvcc}" --version | tail -1 || true
fi

step "build"
t0=$(date +%s)
build_driver
build_s=$(( $(date +%s) - t0 ))
echo "built $drv in ${build_s} s"

step "check: every case against its float64 reference"
check_args=(check "$kit/cases" --json "$out/check.json")
[ "$quick" = 1 ] && check_args+=(--quick)
set +e
timeout 120 "$drv" "${check_args[@]}"
check_rc=$?
set -e

declare -A san_rc=()
bench_rc=skipped
if [ "$bench" = 1 ]; then
  step "speed"
  set +e
  if [ "$cpu" = 1 ]; then  # the stand-in is no GPU: the driver's timing path at a toy size
    timeout 120 "$drv" bench --dtypes f32,f16 --n 33 --shapes 64x2 --causal no,yes --repeat 2 --json "$out/bench.json"
  else
    timeout 180 python3 "$root/scripts/bench_cuda.py" --kit-driver "$drv" --n "$bench_n" --json "$out/bench.json"
  fi
  bench_rc=$?
  set -e
fi

sanitizer_exe=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
if [ "$sanitizer" = 1 ] && [ "$cpu" = 0 ] && [ ! -x "$sanitizer_exe" ]; then
  echo "compute-sanitizer not found: the sanitizer steps are skipped"; sanitizer=0
fi
if [ "$sanitizer" = 1 ] && [ "$cpu" = 0 ]; then
  san_log=$(mktemp)
  trap 'rm -f "$san_log"' EXIT
  for tool in memcheck racecheck; do
    step "compute-sanitizer --tool $tool (quick cases)"
    set +e
    # racecheck runs each block's threads under a hazard tracker: slower than memcheck.
    timeout "$([ "$tool" = racecheck ] && echo 150 || echo 120)" "$sanitizer_exe" --tool "$tool" --error-exitcode 3 "$drv" check "$kit/cases" --quick >"$san_log" 2>&1
    san_rc[$tool]=$?
    set -e
    grep -v '^ok  ' "$san_log" || true  # every case's line is already in the check above
  done
fi

step "summary"
san_json="{"
for tool in "${!san_rc[@]}"; do san_json+="\"$tool\": ${san_rc[$tool]}, "; done
san_json="${san_json%, }}"
python3 - "$out" "$kit" "$build_s" "$check_rc" "$san_json" "$bench_rc" "$cpu" <<'PY'
import json, os, sys
out, kit, build_s, check_rc, san, bench_rc, cpu = sys.argv[1:]
def load(name):
    try:
        with open(os.path.join(out, name)) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None
check = load("check.json")
san = json.loads(san)
try:
    commit = open(os.path.join(kit, "commit.txt")).read().split()
except OSError:
    commit = ["unknown"]
summary = {
    "commit": " ".join(commit), "mode": "cpu stand-in" if cpu == "1" else "gpu",
    "device": check["device"] if check else None, "build_s": int(build_s),
    "check": {"exit": int(check_rc), "passed": check["passed"] if check else 0,
              "failed": check["failed"] if check else None},
    "sanitizer_exit": san, "bench_exit": None if bench_rc == "skipped" else int(bench_rc),
    "bench": load("bench.json"),
}
summary["ok"] = int(check_rc) == 0 and all(v == 0 for v in san.values())
with open(os.path.join(out, "gpu_check.json"), "w") as f:
    json.dump(summary, f, indent=2)
print(f"cases: {summary['check']['passed']} passed, {summary['check']['failed']} failed; "
      f"sanitizers: {san or 'not run'}; bench: {'not run' if bench_rc == 'skipped' else 'exit ' + bench_rc}")
print("gpu check: " + ("PASSED" if summary["ok"] else "FAILED"))
PY
ok=$(python3 -c 'import json,sys; print(int(json.load(open(sys.argv[1]))["ok"]))' "$out/gpu_check.json")
[ "$ok" = 1 ]
