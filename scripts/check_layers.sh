#!/usr/bin/env bash
# Checks that no file of a layer includes a header of a higher layer (docs/architecture.md):
#   engine <- io <- lessons <- render <- cli
# Prints each offending include and exits 1; prints "layers: ok" otherwise.
set -euo pipefail
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$root"
layers=(engine io lessons render cli)
bad=0
for ((i = 0; i < ${#layers[@]}; ++i)); do
  layer=${layers[i]}
  higher=("${layers[@]:i+1}")
  ((${#higher[@]})) || continue
  pattern="#include \"attn/($(IFS='|'; echo "${higher[*]}"))/"
  dirs=(src/"$layer")
  [[ -d include/attn/$layer ]] && dirs+=(include/attn/"$layer")
  if grep -rnE "$pattern" "${dirs[@]}"; then bad=1; fi
  # Relative includes would slip past the per-layer include roots.
  if grep -rnE '#include "\.\./' "${dirs[@]}"; then bad=1; fi
done
((bad)) && { echo "layers: a lower layer includes a higher one (above)" >&2; exit 1; }
echo "layers: ok"
