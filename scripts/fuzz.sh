#!/usr/bin/env bash
# Fuzzes one target of fuzz/ with libFuzzer under ASan + UBSan (clang), starting from its seed
# corpus in data/fuzz/TARGET/:
#   scripts/fuzz.sh TARGET SECONDS [more libFuzzer flags, e.g. -jobs=2]
# Builds in build-fuzz/ (FUZZ_BUILD_DIR overrides): scripts/sanitize.sh's flags plus libFuzzer's
# coverage hooks in every file (-DATTN_FUZZ=ON), so that coverage guides the fuzzer through the
# library too. A finding is written to build-fuzz/findings/TARGET/crash-* (reproduce:
# build-fuzz/fuzz/fuzz_TARGET FILE); copy it into data/fuzz/TARGET/ once fixed, and the
# default test suite replays it from then on. New inputs that reach new code collect in
# build-fuzz/fuzz/corpus-TARGET/.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${FUZZ_BUILD_DIR:-$root/build-fuzz}
targets=$(cd "$root/fuzz" && ls fuzz_*.cpp | sed 's/^fuzz_//; s/\.cpp$//' | tr '\n' ' ')
usage="usage: scripts/fuzz.sh TARGET SECONDS [libFuzzer flags]; targets: $targets"
(($# >= 2)) || { echo "error: $usage" >&2; exit 2; }
target=$1 seconds=$2
shift 2
[[ " $targets" == *" $target "* ]] || { echo "error: unknown target '$target'; $usage" >&2; exit 2; }
if [[ $target == safetensors && ! -f $root/src/io/safetensors.cpp ]]; then
  echo "error: the safetensors reader (src/io/safetensors.cpp) is not in this tree yet" >&2; exit 2
fi
[[ $seconds =~ ^[1-9][0-9]*$ ]] || { echo "error: SECONDS must be a whole number >= 1, got '$seconds'" >&2; exit 2; }

"$root/scripts/install-deps.sh" clang libclang-rt-14-dev
CC=clang CXX=clang++ cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DATTN_FUZZ=ON -DATTN_WITH_CUDA=OFF >/dev/null
cmake --build "$build" --parallel "$(nproc)" --target "fuzz_$target"

findings=$build/findings/$target
corpus=$build/fuzz/corpus-$target
mkdir -p "$findings" "$corpus"
export ASAN_OPTIONS="halt_on_error=1:print_stacktrace=1:detect_leaks=1"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:report_error_type=1"
export LSAN_OPTIONS="suppressions=$root/scripts/lsan.supp:print_suppressions=0"
exec "$build/fuzz/fuzz_$target" -max_total_time="$seconds" -max_len=4096 -timeout=10 \
  -rss_limit_mb=4096 -print_final_stats=1 -artifact_prefix="$findings/" "$@" \
  "$corpus" "$root/data/fuzz/$target"
