#!/usr/bin/env bash
# libFuzzer run of every tests/fuzz/*_fuzz.cpp target: builds them with clang-14 (ASan + UBSan)
# in build-fuzz/, then runs each on a copy of its corpus (tests/fuzz/corpus/<target>/, never
# modified) with its dictionary, for an equal share of SECONDS (default 20; `make fuzz` passes
# 600). Prints "ok"/"not ok" per target and "fuzz: N passed, M failed"; exits 1 on any crash,
# leak, timeout or failed check, naming the reproducer to run again:
#   build-fuzz/tests/fuzz/<target> build-fuzz/artifacts/<target>/crash-...
# Environment: FUZZ_BUILD (build dir, default build-fuzz), KEEP=1 keeps the grown corpora,
# FUZZ_TARGETS="x_v2_fuzz ..." runs only those.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
SECONDS_TOTAL=${1:-20}
BUILD=${FUZZ_BUILD:-$ROOT/build-fuzz}
FUZZ_DIR=$ROOT/tests/fuzz
CXX_FUZZ=${CXX_FUZZ:-clang++-14}
CC_FUZZ=${CC_FUZZ:-clang-14}

if ! [[ $SECONDS_TOTAL =~ ^[0-9]+$ ]] || [ "$SECONDS_TOTAL" -lt 1 ]; then
  echo "usage: tests/fuzz/run.sh [SECONDS] (total fuzzing time, a positive integer; default 20)" >&2
  exit 2
fi

if [ -n "${FUZZ_TARGETS:-}" ]; then
  read -r -a targets <<<"$FUZZ_TARGETS"
else
  targets=()
  for f in "$FUZZ_DIR"/*_fuzz.cpp; do targets+=("$(basename "$f" .cpp)"); done
fi

fail_all() { # fail_all REASON: nothing could run
  echo "not ok - $1"
  echo "fuzz: 0 passed, ${#targets[@]} failed"
  exit 1
}

command -v "$CXX_FUZZ" >/dev/null || fail_all "$CXX_FUZZ not found (Debian: apt-get install clang-14 libclang-rt-14-dev)"
fuzzer_rt=$("$CXX_FUZZ" -print-file-name=libclang_rt.fuzzer-x86_64.a 2>/dev/null)
[ -f "$fuzzer_rt" ] || fail_all "the libFuzzer runtime is missing (Debian: apt-get install libclang-rt-14-dev)"

log=$(mktemp -d /tmp/tweetkeeper-fuzz.XXXXXX)
cleanup() { if [ -n "${KEEP:-}" ]; then echo "# kept $log"; else rm -rf "$log"; fi; }
trap cleanup EXIT

# Configured every time (a second or two; a build directory made before a target was added does
# not know it), with the compiler fixed at the first configure; only the fuzz targets are built.
CC=$CC_FUZZ CXX=$CXX_FUZZ cmake -S "$ROOT" -B "$BUILD" -DTK_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  >"$log/configure.log" 2>&1 || { tail -20 "$log/configure.log"; fail_all "cmake configure of $BUILD"; }
if ! cmake --build "$BUILD" -j2 --target "${targets[@]}" >"$log/build.log" 2>&1; then
  grep -E 'error|Error' "$log/build.log" | head -20
  fail_all "build of ${targets[*]} in $BUILD"
fi
[ -z "${TK_BUILD_ONLY:-}" ] || exit 0  # run-all.sh builds it ahead, in the background

share=$((SECONDS_TOTAL / ${#targets[@]}))
[ "$share" -ge 1 ] || share=1
passed=0
failed=0
echo "# ${#targets[@]} targets, ${share}s each"
for t in "${targets[@]}"; do
  corpus=$log/corpus-$t
  artifacts=$BUILD/artifacts/$t
  mkdir -p "$corpus" "$artifacts"
  [ -d "$FUZZ_DIR/corpus/$t" ] && cp "$FUZZ_DIR/corpus/$t"/* "$corpus"/ 2>/dev/null
  args=(-max_total_time="$share" -timeout=10 -rss_limit_mb=2048 -max_len=8192 -print_final_stats=1
        -artifact_prefix="$artifacts/")
  [ -f "$FUZZ_DIR/$t.dict" ] && args+=(-dict="$FUZZ_DIR/$t.dict")
  touch "$log/$t.start"
  # UBSan stops at the first report (-fno-sanitize-recover); ASan's leak check is on by default.
  UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1} "$BUILD/tests/fuzz/$t" "${args[@]}" "$corpus" >"$log/$t.log" 2>&1
  rc=$?
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log/$t.log" | tail -1)
  cov=$(grep -oE 'cov: [0-9]+' "$log/$t.log" | tail -1 | cut -d' ' -f2)
  if [ "$rc" -eq 0 ]; then
    echo "ok - $t (${runs:-?} runs, ${cov:-?} edges, corpus $(find "$corpus" -type f | wc -l) inputs)"
    passed=$((passed + 1))
  else
    echo "not ok - $t (exit $rc after ${runs:-?} runs)"
    failed=$((failed + 1))
    # The report: the failed check or the sanitizer's first lines.
    grep -E 'fuzz check failed|ERROR: |runtime error|SUMMARY|Direct leak|in LLVMFuzzerTestOneInput|in tweetkeeper::' \
      "$log/$t.log" | head -12 | sed 's/^/#   /'
    found=0
    while IFS= read -r a; do
      echo "#   reproducer: $BUILD/tests/fuzz/$t $a"
      found=1
    done < <(find "$artifacts" -type f -newer "$log/$t.start")
    if [ "$found" -eq 0 ]; then
      echo "#   no reproducer written; the whole log: $log/$t.log"
      KEEP=1
    fi
  fi
done
echo "fuzz: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
