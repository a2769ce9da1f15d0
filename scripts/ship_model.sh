#!/usr/bin/env bash
# Retrains the toy model that attn-cli carries inside it (data/models/induction/) with the command
# its provenance.json names, and records the CPU, flash ISA and BLAS core it was trained with.
# Rebuild afterwards: the build embeds the folder (src/io/shipped_model.cpp).
#   scripts/ship_model.sh [ATTN_CLI]    (default build/attn-cli)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cli=${1:-$root/build/attn-cli}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd "$work" && "$cli" train --no-timing >/dev/null)
dest=$root/data/models/induction
cp "$work/train-out/model/config.json" "$work/train-out/model/model.safetensors" "$dest/"
"$cli" doctor --json > "$work/doctor.json"
python3 - "$work/doctor.json" "$dest/provenance.json" "$work/train-out/train.json" <<'PY'
import json, sys
doctor = json.load(open(sys.argv[1]))
path = sys.argv[2]
p = json.load(open(path))
p["trained_on"] = {"attn_cli": doctor["version"], "compiler": doctor["compiler"], "cpu": doctor["cpu"],
                   "flash_isa": doctor["flash_isa"], "blas_core": doctor["blas"]["core"]}
p["final_heads"] = json.load(open(sys.argv[3]))["final"]
open(path, "w").write(json.dumps(p, indent=2) + "\n")
PY
echo "ship_model: wrote $dest (rebuild attn-cli to embed it)"
