#!/usr/bin/env bash
# The test suite (less seven long runs, named below) under AddressSanitizer +
# UndefinedBehaviorSanitizer (clang), in its own build folder (build-sanitize/,
# SANITIZE_BUILD_DIR overrides). Every process the tests start --
# attn-cli spawned by doctest cases and by the Python reference checks included -- runs
# instrumented; any report, even from a process whose failure a test tolerated, fails the run.
#   scripts/sanitize.sh [ctest arguments, e.g. -R mask; an -E of your own replaces the list below]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${SANITIZE_BUILD_DIR:-$root/build-sanitize}

"$root/scripts/install-deps.sh" clang libclang-rt-14-dev

# -DATTN_SANITIZE=ON compiles everything with -fsanitize=address,undefined,float-cast-overflow,
# float-divide-by-zero -fno-sanitize-recover=all (CMakeLists.txt), and adds the libFuzzer
# targets, whose fuzz_run_* tests fuzz each one for a few seconds. Not ATTN_FUZZ: its coverage
# hooks in every file doubled a loop's time under ASan (scripts/fuzz.sh builds with them, in
# build-fuzz/). float-divide-by-zero is outside clang's "undefined" group; it is on because no
# code relies on x / 0 giving inf (infinities are written numeric_limits<>::infinity()).
# Line tables are all a report's stack needs (-gline-tables-only, not -g's whole debug info).
CC=clang CXX=clang++ cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -gline-tables-only -DNDEBUG" \
  -DATTN_SANITIZE=ON -DATTN_FUZZ=OFF -DATTN_WITH_CUDA=OFF >/dev/null
cmake --build "$build" --parallel "$(nproc)"

# Reports go to files as well as aborting the process: a test that only checks "it failed"
# could otherwise swallow one. scripts/lsan.supp names the font caches, nothing of ours.
logs=$build/sanitizer-logs
rm -rf "$logs" && mkdir -p "$logs"
common="halt_on_error=1:abort_on_error=1:print_stacktrace=1:log_path=$logs/report"
export ASAN_OPTIONS="$common:detect_leaks=1:strict_init_order=1:check_initialization_order=1"
export UBSAN_OPTIONS="$common:report_error_type=1"
export LSAN_OPTIONS="suppressions=$root/scripts/lsan.supp:print_suppressions=0:log_path=$logs/report"

status=0
# Left out, each longer than its lesson under the sanitizers, whose code runs instrumented in
# shorter tests:
# - train_default_meets_thresholds and the shipped model's retraining train 1000 steps each
#   (22 s in Release, 5 to 10 minutes instrumented); the same forward, backward and Adam code
#   runs in the train unit tests and the short CLI training runs;
# - the README/docs and --help examples: they run `attn-cli train` at its defaults and `tune`'s
#   timing loops several times, and every subcommand they reach has tests of its own;
# - doc_images_numbers_current: every picture and number the docs show, made again (5 minutes
#   instrumented on a 2-core Zen 3); each command it runs has tests of its own;
# - gpu_kit_on_cpu: the GPU kit's 92 float64 references (3.5 minutes instrumented), the engine's
#   reference code that its own tests run; the driver it checks is not built here;
# - gpu_kit_nvcc_build: nvcc's build of the CUDA driver, which nothing here instruments.
skip='^(train_default_meets_thresholds|gpu_kit_nvcc_build|gpu_kit_on_cpu|doc_images_numbers_current'
skip+='|shipped model: .attn-cli train --no-timing. writes it again'
skip+='|cli: every example in --help runs|cli: every example in README.md and docs/..md runs)$'
(cd "$build" && ctest --output-on-failure --parallel "$(nproc)" -E "$skip" "$@") || status=$?
if compgen -G "$logs/report*" >/dev/null; then
  echo "sanitize: sanitizer reports (one file per process):" >&2
  for f in "$logs"/report*; do echo "== $f" >&2; cat "$f" >&2; done
  status=1
fi
((status == 0)) && echo "sanitize: the suite (less the seven long runs) is clean under ASan + UBSan"
exit "$status"
