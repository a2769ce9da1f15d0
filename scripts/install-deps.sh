#!/usr/bin/env bash
# Installs the Debian packages attn-cli builds with, skipping those already installed.
# Used by scripts/test.sh, scripts/demo.sh and scripts/bench.sh; safe to run again.
# Extra package names as arguments are installed too (scripts/sanitize.sh: clang).
set -euo pipefail

packages=(
  cmake ninja-build g++ pkg-config
  libcli11-dev libxtensor-dev libxtensor-blas-dev libxsimd-dev nlohmann-json3-dev doctest-dev
  libopenblas-dev libcairo2-dev libpango1.0-dev libicu-dev fonts-wqy-microhei
  fonts-noto-color-emoji  # emoji tokens in colour, not as boxes (tests/test_render_heatmap.cpp)
  python3-numpy  # scripts/check_fa_rule.py and check_backward.py, run by the tests; the product itself is pure C++
  python3-regex  # scripts/check_hf_tokenizer.py's reference: \p{L} and Unicode \s, which Python's re lacks
  libexpat1-dev  # the tests parse the SVG output (already pulled in by libfontconfig-dev)
)
packages+=("$@")

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
((${#missing[@]} == 0)) && exit 0

echo "install-deps: installing ${missing[*]}"
sudo=""
if [[ $(id -u) -ne 0 ]]; then
  command -v sudo >/dev/null || { echo "error: need root (or sudo) to apt-get install ${missing[*]}" >&2; exit 1; }
  sudo=sudo
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
