#!/usr/bin/env bash
# Decode at memory speed? One query row against a KV cache (H = 8, d = 64, float32), 1 and 2
# threads, in one run: attn-cli's decode path against a plain streaming read of the same K and V
# bytes (the machine's ceiling, same process) and against the tiled (prefill) kernel; then GQA
# 8:1, which reads an eighth of the bytes; then a bfloat16 cache, which reads half.
#   scripts/bench_decode.sh            full sweep (installs what is missing and builds first)
#   scripts/bench_decode.sh --smoke    tiny sizes, seconds (what the test suite runs)
# ATTN_CLI=path/to/attn-cli skips the install and build. Extra arguments go to every bench call.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
kv=1024,4096,16384 repeat=9
if [[ ${1:-} == --smoke ]]; then
  shift
  kv=300,1000 repeat=1
fi
ATTN_CLI=$("$root/scripts/attn_cli.sh")
"$ATTN_CLI" bench --mode decode --kv "$kv" --heads 8 --head-dim 64 --threads 1,2 --repeat "$repeat" "$@"
echo
"$ATTN_CLI" bench --mode decode --kv "$kv" --heads 8 --kv-heads 1 --head-dim 64 --threads 1,2 --repeat "$repeat" "$@"
echo
"$ATTN_CLI" bench --mode decode --kv "$kv" --heads 8 --head-dim 64 --kv-dtype bf16 --threads 1,2 --repeat "$repeat" "$@"
