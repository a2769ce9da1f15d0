#!/usr/bin/env bash
# Runs a fixed set of attn-cli commands (the docs' examples, fixed seeds) in a scratch folder and
# prints one "sha256  path" line per file they leave and per command's stdout. Run it with two
# builds and diff the listings to show that a refactor changed no JSON or PNG byte:
#   scripts/snapshot_outputs.sh build-before/attn-cli > before.txt
#   scripts/snapshot_outputs.sh build/attn-cli > after.txt && diff before.txt after.txt
set -euo pipefail
cli=$(realpath "${1:?usage: snapshot_outputs.sh PATH/TO/attn-cli}")
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
ln -s "$root/data" data
n=0
run() {  # stdout is kept only for commands whose output holds no timing
  n=$((n + 1))
  "$cli" "$@" > "stdout-$(printf %02d $n).txt" 2>/dev/null || echo "exit $? from: $*" >> failures.txt
}
run demo "The cat sat on the mat" --out cat-demo
run demo "我喜欢深度学习" --out zh-pictures --format both
run demo "The cat sat on the mat" --rope half --out cat-rope
run demo "Hi" --out one-word
run mask --kind causal --size 5 --out mask-causal.png
run mask --kind padding --size 6 --lengths 6,3 --out mask-padding.png
run mask --kind window --size 6 --window 3 --out mask-window.svg
run mask --kind graph --size 5 --edges 0-1,1-2,2-3,3-4,4-0 --out mask-graph.png
run heatmap --input data/examples/heatmap_tokens.json --out cat-causal
run heatmap --input data/examples/heatmap_heads.json --out two-heads.svg
run attend --input data/examples/attend_small.json --output small.json
run heatmap --input small.json --causal --colormap viridis --format both --out small-heat
run tokenize "The cat sat on the mat."
run tokenize "我喜欢深度学习" --json
run attend --input data/examples/attend_mask.json --no-weights
run mha --input data/examples/mha_gqa.json
run attend --input data/examples/attend_flash.json
run mha --input data/examples/mha_rope_decode.json
run rope --out rope-pictures
run rope --head-dim 16 --style interleaved --json
run positional --length 32 --d-model 32 --heads 4 --out pe-pictures
run generate "The cat sat on the mat" --prefill 2 --out cache-pictures --format both
run variance --dk 8,64,512 --samples 2000 --plots plots
run temperature --plots plots
run complexity --n 64,128,256,512 --plots plots --format json
run explain --plots plots
run pitfalls --plots plots
rm -f data
# demo prints the float32 flash run's time: drop its stdout, keep its files.
for f in stdout-0[1-4].txt; do rm -f "$f"; done
find . -type f | LC_ALL=C sort | xargs sha256sum
