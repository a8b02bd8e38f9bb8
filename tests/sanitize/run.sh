#!/usr/bin/env bash
# The C++ unit tests under AddressSanitizer + UBSan: the instrumented build that the fuzz suite
# shares (tests/lib/instrumented_build.sh: build-instrumented/, clang-14, every object with ASan,
# UBSan and libFuzzer's coverage) of the three unit test executables, each run whole (not one
# process per test as ctest does: under ASan a process's start costs more than most tests, 42 s
# against 22), worker_unit_tests in two shards, all at once; then the two checks ctest alone runs
# (cpp_only_guard: a file including both PostgreSQL and C++-only headers fails to compile;
# include_layers), from the same tree. make check runs the unit tests here only.
# Prints "ok"/"not ok" per failing test and "sanitize: N passed, M failed"; exits 1 on any
# failure, sanitizer report or leak. Environment: TK_INSTRUMENTED_BUILD (default
# build-instrumented).
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${TK_INSTRUMENTED_BUILD:-$ROOT/build-instrumented}
export TK_INSTRUMENTED_BUILD=$BUILD
TARGETS=(worker_unit_tests mock_unit_tests extension_unit_tests)

log=$(mktemp -d /tmp/tweetkeeper-sanitize.XXXXXX)
trap 'rm -rf "$log"' EXIT
fail_all() {
  echo "not ok - $1"
  echo "sanitize: 0 passed, 1 failed"
  exit 1
}

# (Built ahead by make check, in the background: then this finds nothing to do.)
out=$("$ROOT/tests/lib/instrumented_build.sh" "${TARGETS[@]}") || { echo "$out"; fail_all "the instrumented build of ${TARGETS[*]} in $BUILD"; }

# Every report is fatal (-fno-sanitize-recover=all, halt_on_error); leaks are checked at exit.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:halt_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1:check_initialization_order=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
# Each run: its executable, its shard (GoogleTest's GTEST_SHARD_INDEX of GTEST_TOTAL_SHARDS).
runs=("worker_unit_tests 0 2" "worker_unit_tests 1 2" "mock_unit_tests 0 1" "extension_unit_tests 0 1")
pids=()
for r in "${runs[@]}"; do
  read -r exe shard shards <<<"$r"
  GTEST_SHARD_INDEX=$shard GTEST_TOTAL_SHARDS=$shards "$BUILD/tests/unit/$exe" \
    >"$log/$exe.$shard.log" 2>&1 &
  pids+=("$!")
done
passed=0 failed=0 k=0
# A unit-test executable the list above does not run would be left out silently: each one the
# tree's ctest knows must be there.
for exe in $(sed -nE 's/^include\(".*\/([a-z_]+_unit_tests)\[1\]_include\.cmake"\)$/\1/p' "$BUILD/tests/unit/CTestTestfile.cmake" | sort -u); do
  if ! printf '%s\n' "${runs[@]}" | grep -q "^$exe "; then
    echo "not ok - $exe is a unit-test executable that tests/sanitize/run.sh does not run"
    failed=$((failed + 1))
  fi
done
for r in "${runs[@]}"; do
  read -r exe shard shards <<<"$r"
  out=$log/$exe.$shard.log
  wait "${pids[$k]}" 2>/dev/null
  rc=$?
  k=$((k + 1))
  # Each test's result line: "[       OK ] Suite.Name (N ms)" or "[  FAILED  ] Suite.Name (N ms)".
  ok=$(grep -c '^\[       OK \] ' "$out")
  bad=$(grep -E '^\[  FAILED  \] [A-Za-z_0-9/]+\.[A-Za-z_0-9/]+ \(' "$out" | sed -E 's/^\[  FAILED  \] ([^ ]+) .*/\1/' | sort -u)
  nbad=$(grep -c . <<<"$bad")
  passed=$((passed + ${ok:-0}))
  failed=$((failed + nbad))
  while IFS= read -r t; do [ -n "$t" ] && echo "not ok - $t ($exe)"; done <<<"$bad"
  if [ "$rc" -ne 0 ] && [ "$nbad" -eq 0 ]; then
    # Stopped by a sanitizer report, a leak at exit or a crash: the test that was running is the
    # last one started.
    echo "not ok - $exe shard $shard stopped (exit $rc) in $(grep -E '^\[ RUN      \] ' "$out" | tail -1 | cut -c14-)"
    failed=$((failed + 1))
  fi
  if [ "$rc" -ne 0 ]; then
    grep -E 'ERROR: (Address|Leak)Sanitizer|runtime error|SUMMARY: |: Failure$' "$out" | sort -u | head -20 | sed 's/^/#   /'
  fi
done
# The checks that are ctest's alone (they compile or read files, no executable of ours).
only=(cpp_only_guard include_layers)
out=$(ctest --test-dir "$BUILD" -R "^($(IFS='|'; echo "${only[*]}"))\$" --output-on-failure 2>&1)
for t in "${only[@]}"; do
  if grep -qE "Test +#[0-9]+: $t \.+ +Passed" <<<"$out"; then
    passed=$((passed + 1))
  else
    echo "not ok - $t (ctest)"
    grep -A15 -E "Test +#[0-9]+: $t " <<<"$out" | sed 's/^/#   /'
    failed=$((failed + 1))
  fi
done
if [ $((passed + failed)) -eq 0 ]; then
  fail_all "no unit test ran in $BUILD"
fi
echo "sanitize: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
