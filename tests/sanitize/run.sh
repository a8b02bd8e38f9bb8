#!/usr/bin/env bash
# The C++ unit tests under AddressSanitizer + UBSan (TK_SANITIZE, GCC): a Debug build in
# build-asan/ of only the three unit test executables (and what they link), run through ctest.
# Prints "ok"/"not ok" per failing test and "sanitize: N passed, M failed"; exits 1 on any
# failure, sanitizer report or leak. Environment: SANITIZE_BUILD (default build-asan).
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${SANITIZE_BUILD:-$ROOT/build-asan}
TARGETS=(worker_unit_tests mock_unit_tests extension_unit_tests)

log=$(mktemp -d /tmp/tweetkeeper-sanitize.XXXXXX)
trap 'rm -rf "$log"' EXIT
fail_all() {
  echo "not ok - $1"
  echo "sanitize: 0 passed, 1 failed"
  exit 1
}

if ! cmake -S "$ROOT" -B "$BUILD" -DTK_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug >"$log/configure.log" 2>&1; then
  tail -20 "$log/configure.log"
  fail_all "cmake configure of $BUILD"
fi
# gtest_discover_tests runs each executable after linking, so a sanitizer report at start-up
# already fails here.
if ! cmake --build "$BUILD" -j2 --target "${TARGETS[@]}" >"$log/build.log" 2>&1; then
  grep -E 'error|Error|runtime error|Sanitizer' "$log/build.log" | head -20
  fail_all "build of ${TARGETS[*]} in $BUILD"
fi
[ -z "${TK_BUILD_ONLY:-}" ] || exit 0  # run-all.sh builds it ahead, in the background

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
