#!/usr/bin/env bash
# Regenerates data/gpt2_tokenizer/cases.json: GPT-2 token ids for ~45 strings (English,
# contractions, numbers, accents, emoji and ZWJ sequences, CJK, Arabic, whitespace runs,
# newlines, code, edge cases) from the reference encoder of the npm package gpt-3-encoder.
# The package goes to $GPT2_NPM_DIR (default build/npm); tests/ reads cases.json.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
pkg=$("$root/scripts/fetch_gpt2_encoder.sh" "${GPT2_NPM_DIR:-$root/build/npm}")
out=$root/data/gpt2_tokenizer/cases.json
node "$root/scripts/gpt2_reference_cases.js" "$pkg" > "$out.tmp"
mv "$out.tmp" "$out"
echo "wrote $out"
