#!/usr/bin/env bash
# The one instrumented build that tests/sanitize/run.sh (the unit tests) and tests/fuzz/run.sh
# (the libFuzzer targets) share: build-instrumented/, clang-14, every object with ASan and UBSan
# (stopping at the first report), and libFuzzer's coverage where a fuzz target can reach
# (tests/fuzz/coverage_ignorelist.txt names the rest; -DTK_FUZZ=ON, see CMakeLists.txt), so
# each source is compiled once for both suites. Unoptimised (-O0 -g1, asserts on): clang spends
# most of an instrumented object's time in the optimiser (-ftime-trace of cli/options.cpp: 22 s
# at -O2, 11 s at -O0; -O1 is no faster than -O2), the whole tree takes 223 CPU-seconds against
# 489 at -O2, and make check waits for it; the suites run for a fixed time or a fixed set of
# tests, and a sanitizer sees more at -O0, where nothing is optimised away.
#   tests/lib/instrumented_build.sh [TARGET...]   (default: instrumented, the unit tests and every fuzz target)
# Configures (a second or two; a tree made before a target was added does not know it), then
# builds those targets; one build at a time in the tree (flock), so that the two suites, or make
# check's build ahead of them, never build it at once. Exit 0: built; 1: configure or build
# failed (the errors on stdout); 2: clang-14 or libFuzzer's runtime is missing.
# Environment: TK_INSTRUMENTED_BUILD (the tree, default build-instrumented), CC_FUZZ, CXX_FUZZ.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${TK_INSTRUMENTED_BUILD:-$ROOT/build-instrumented}
CXX_FUZZ=${CXX_FUZZ:-clang++-14}
CC_FUZZ=${CC_FUZZ:-clang-14}
targets=("$@")
((${#targets[@]})) || targets=(instrumented) # tests/fuzz/CMakeLists.txt: the unit tests and every fuzzer

command -v "$CXX_FUZZ" >/dev/null || { echo "$CXX_FUZZ not found (Debian: apt-get install clang-14 libclang-rt-14-dev)"; exit 2; }
fuzzer_rt=$("$CXX_FUZZ" -print-file-name=libclang_rt.fuzzer-x86_64.a 2>/dev/null)
[ -f "$fuzzer_rt" ] || { echo "the libFuzzer runtime is missing (Debian: apt-get install libclang-rt-14-dev)"; exit 2; }

mkdir -p "$BUILD"
exec 9>"$BUILD/.build.lock"
flock 9
log=$(mktemp -d /tmp/tweetkeeper-instrumented.XXXXXX)
trap 'rm -rf "$log"' EXIT
start=$SECONDS
if ! CC=$CC_FUZZ CXX=$CXX_FUZZ cmake -S "$ROOT" -B "$BUILD" -DTK_FUZZ=ON -DCMAKE_BUILD_TYPE=Debug \
     -DCMAKE_C_FLAGS_DEBUG=-g1 -DCMAKE_CXX_FLAGS_DEBUG=-g1 \
     >"$log/configure.log" 2>&1; then
  tail -20 "$log/configure.log"
  echo "cmake configure of $BUILD failed"
  exit 1
fi
# gtest_discover_tests runs each unit test executable after linking, so a sanitizer report at
# start-up already fails here.
if ! cmake --build "$BUILD" -j"${JOBS:-2}" --target "${targets[@]}" >"$log/build.log" 2>&1; then
  grep -E 'error|Error|runtime error|Sanitizer' "$log/build.log" | head -20
  echo "build of ${targets[*]} in $BUILD failed"
  exit 1
fi
echo "built ${#targets[@]} targets in $BUILD in $((SECONDS - start)) s"
