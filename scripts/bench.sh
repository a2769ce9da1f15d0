#!/usr/bin/env bash
# The standard benchmark sweep: naive (float64 oracle), blas (float32
# matmul-softmax-matmul) and flash, n = 512..4096, H = 8, d = 64, 1 and 2 threads, causal and
# not, with OpenBLAS's own sgemm (2048^3) measured in the same run as the yardstick.
#   scripts/bench.sh            full sweep (installs what is missing and builds first)
#   scripts/bench.sh --smoke    tiny sizes, seconds (what the test suite runs)
# ATTN_CLI=path/to/attn-cli skips the install and build. Extra arguments go to every bench call.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
# The full sweep runs for minutes on purpose: lift bench's one-minute time budget.
sizes=512,1024,2048,4096 heads=8 repeat=3 sgemm=2048 peak_n=4096 budget=36000
if [[ ${1:-} == --smoke ]]; then
  shift
  sizes=64,128 heads=2 repeat=1 sgemm=128 peak_n=256 budget=60
fi
ATTN_CLI=$("$root/scripts/attn_cli.sh")

for causal in "" --causal; do
  "$ATTN_CLI" bench --backend naive,blas,flash --n "$sizes" --heads "$heads" --head-dim 64 \
    --threads 1,2 --repeat "$repeat" --sgemm "$sgemm" --max-seconds "$budget" $causal "$@"
  echo
done
# Peak memory of flash alone (no naive run in the process): the kernel's own footprint.
echo "flash peak memory without the naive check (inputs + outputs = $((4 * heads * peak_n * 64 * 4 / 1048576)) MiB):"
"$ATTN_CLI" bench --backend flash --n "$peak_n" --heads "$heads" --head-dim 64 --threads 2 --repeat 1 --no-check --max-seconds "$budget" "$@" | tail -1
