#!/usr/bin/env bash
# One command to see attn-cli work on a fresh Debian machine:
# installs what is missing, builds in Release, runs `attn-cli demo` (arguments pass through).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/install-deps.sh"
"$root/scripts/build.sh" attn-cli >/dev/null  # the binary only: scripts/test.sh builds the tests
exec "${BUILD_DIR:-$root/build}/attn-cli" demo "$@"
