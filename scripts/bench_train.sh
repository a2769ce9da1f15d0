#!/usr/bin/env bash
# Training speed against PyTorch (issue: attn-cli's default training on one thread at least 3x
# the same model, batch and optimizer in PyTorch on one thread), in one run:
#   1. steps per second in process: `attn-cli bench --mode train` against
#      scripts/bench_train_torch.py (the same model in PyTorch), both on one thread;
#   2. the whole default command, `attn-cli train --threads 1` (1000 steps, held-out scoring every
#      10 steps, four pictures), against the PyTorch loop of 1000 steps alone.
#   scripts/bench_train.sh            (installs what is missing, python3-torch included, and builds)
#   scripts/bench_train.sh --smoke    a few steps (what the test suite runs; skips PyTorch when it
#                                     is not installed)
# ATTN_CLI=path/to/attn-cli skips the install and build.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
steps=200 repeat=3 whole=1
if [[ ${1:-} == --smoke ]]; then
  steps=3 repeat=1 whole=0
fi
ATTN_CLI=$("$root/scripts/attn_cli.sh" python3-torch)
# One thread means one thread for both: without these, PyTorch's OpenMP and OpenBLAS pools keep
# a second core spinning (measured here: 30 ms/step instead of 23 with them set).
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

"$ATTN_CLI" bench --mode train --steps "$steps" --repeat "$repeat" --threads 1 --json >"$work/attn.json"
if ! /usr/bin/python3 -c 'import torch' 2>/dev/null; then
  /usr/bin/python3 -c 'import json, sys; r = json.load(open(sys.argv[1]))["runs"][0]
print(f"attn-cli: {r[\"min_ms_per_step\"]:.2f} ms/step; PyTorch is not installed (python3-torch): no ratio")' "$work/attn.json"
  exit 0
fi
/usr/bin/python3 "$root/scripts/bench_train_torch.py" --steps "$steps" --repeat "$repeat" --threads 1 >"$work/torch.json"
/usr/bin/python3 - "$work/attn.json" "$work/torch.json" <<'PY'
import json, sys
attn = json.load(open(sys.argv[1]))["runs"][0]
torch = json.load(open(sys.argv[2]))
print(f"one thread, {attn['steps']} steps, best of the repeats (forward + backward + Adam per step):")
print(f"  attn-cli  {attn['min_ms_per_step']:8.2f} ms/step  {attn['steps_per_s']:7.1f} steps/s  ({attn['gflops']:.1f} GFLOP/s)")
print(f"  PyTorch   {torch['min_ms_per_step']:8.2f} ms/step  {torch['steps_per_s']:7.1f} steps/s  (torch {torch['torch_version']})")
print(f"  attn-cli is {torch['min_ms_per_step'] / attn['min_ms_per_step']:.2f}x PyTorch's steps per second")
PY
if ((whole)); then
  t0=$(date +%s.%N)
  "$ATTN_CLI" train --threads 1 --out "$work/train" >/dev/null 2>&1
  t1=$(date +%s.%N)
  /usr/bin/python3 "$root/scripts/bench_train_torch.py" --steps 1000 --repeat 1 --threads 1 >/dev/null
  t2=$(date +%s.%N)
  /usr/bin/python3 -c 'import sys; a, p = float(sys.argv[1]), float(sys.argv[2])
print(f"whole commands, 1000 steps: attn-cli train --threads 1 {a:.1f} s (with scoring and pictures), "
      f"PyTorch loop {p:.1f} s: {p / a:.2f}x")' "$(python3 -c "print($t1 - $t0)")" "$(python3 -c "print($t2 - $t1)")"
fi
