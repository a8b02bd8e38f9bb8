#!/usr/bin/env bash
# The C++ unit tests under AddressSanitizer + UBSan: the instrumented build that the fuzz suite
# shares (tests/lib/instrumented_build.sh: build-instrumented/, clang-14, every object with ASan,
# UBSan and libFuzzer's coverage) of the three unit test executables, run through ctest.
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
(cd "$BUILD" && ctest --output-on-failure -j2 --timeout 120) >"$log/ctest.log" 2>&1
rc=$?
# The report of each failed test: its name, then the sanitizer's or GoogleTest's first lines.
grep -E '^ *[0-9]+/[0-9]+ Test +#[0-9]+: .*\*\*\*' "$log/ctest.log" | sed -E "s/^ *[0-9]+\/[0-9]+ Test +#[0-9]+: ([^ ]+) .*\*\*\*(.*)$/not ok - \1 (\2)/" | tr -s " "
grep -E 'ERROR: (Address|Leak)Sanitizer|runtime error|SUMMARY: |: Failure$' "$log/ctest.log" | sort -u | head -20 |
  sed 's/^/#   /'
total=$(sed -n 's/.*tests passed, [0-9]* tests failed out of \([0-9]*\).*/\1/p' "$log/ctest.log")
failed=$(sed -n 's/.*tests passed, \([0-9]*\) tests failed out of.*/\1/p' "$log/ctest.log")
if [ -z "$total" ] || [ "$total" -eq 0 ]; then
  tail -20 "$log/ctest.log"
  fail_all "ctest ran no test in $BUILD"
fi
echo "sanitize: $((total - failed)) passed, $failed failed"
[ "$rc" -eq 0 ] && [ "$failed" -eq 0 ]
