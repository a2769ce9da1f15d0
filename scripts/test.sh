#!/usr/bin/env bash
# One command for the whole test suite on a fresh Debian machine:
# installs what is missing, builds in Release, runs every test through CTest.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/install-deps.sh"
# Debian's chromium (~430 MB) for the browser test of report.html (tests: report_browser), only
# here: demo.sh and bench.sh do not need it. Without it that test is skipped, saying why.
"$root/scripts/install-deps.sh" chromium ||
  echo "test.sh: chromium could not be installed: the report_browser tests will be skipped"
# qemu-user (~12 MB) for the BLAS core test on emulated CPUs (tests: blas_core_fits_emulated_cpus):
# the Intel Xeon that Debian 12's OpenBLAS does not know, on any x86-64 machine.
"$root/scripts/install-deps.sh" qemu-user ||
  echo "test.sh: qemu-user could not be installed: the emulated-CPU BLAS test will be skipped"
# python3-torch (~600 MB installed) for the PyTorch cross-check of the decoder reference
# (tests: decoder_forward_*_vs_torch). Without it those tests are skipped.
"$root/scripts/install-deps.sh" python3-torch ||
  echo "test.sh: python3-torch could not be installed: the PyTorch cross-checks will be skipped"
"$root/scripts/build.sh"
cd "${BUILD_DIR:-$root/build}"
ctest --output-on-failure --parallel "$(nproc)" "$@"
