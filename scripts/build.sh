#!/usr/bin/env bash
# Configures and builds attn-cli in Release into build/ (BUILD_DIR overrides).
#   scripts/build.sh            everything: attn-cli, the test suite, the fuzz replays
#   scripts/build.sh attn-cli   only what the named targets need (scripts/demo.sh: the binary alone,
#                               without the test suite, which is about a third of a clean build)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build}
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
targets=()
for t in "$@"; do targets+=(--target "$t"); done
cmake --build "$build" --parallel "$(nproc)" "${targets[@]}"
