#!/usr/bin/env bash
# One command for the whole test suite on a fresh Debian machine:
# installs what is missing, builds in Release, runs every test through CTest.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/install-deps.sh"
"$root/scripts/build.sh"
cd "${BUILD_DIR:-$root/build}"
ctest --output-on-failure --parallel "$(nproc)" "$@"
