#!/usr/bin/env bash
# Prints the attn-cli binary that the benchmark scripts run: $ATTN_CLI when it is set (nothing
# is installed or built then); otherwise installs what is missing, with any extra Debian
# packages named, builds, and prints the build's binary. Messages go to stderr.
#   ATTN_CLI=$("$root/scripts/attn_cli.sh" [package ...])
set -euo pipefail
if [[ -n ${ATTN_CLI:-} ]]; then
  echo "$ATTN_CLI"
  exit 0
fi
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/install-deps.sh" "$@" >&2
"$root/scripts/build.sh" >/dev/null
echo "${BUILD_DIR:-$root/build}/attn-cli"
