#!/usr/bin/env bash
# libFuzzer run of every tests/fuzz/*_fuzz.cpp target: builds them in the instrumented build that
# the sanitize suite shares (tests/lib/instrumented_build.sh: build-instrumented/, clang-14, ASan +
# UBSan + libFuzzer's coverage), then runs each on a copy of its corpus (tests/fuzz/corpus/<target>/, never
# modified) with its dictionary, for an equal share of SECONDS (default 20; `make fuzz` passes
# 600), two targets at a time (FUZZ_JOBS). Prints "ok"/"not ok" per target and "fuzz: N passed, M failed"; exits 1 on any crash,
# leak, timeout or failed check, naming the reproducer to run again:
#   build-instrumented/tests/fuzz/<target> build-instrumented/artifacts/<target>/crash-...
# Environment: TK_INSTRUMENTED_BUILD (build dir, default build-instrumented), KEEP=1 keeps the
# grown corpora, FUZZ_TARGETS="x_v2_fuzz ..." runs only those.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
SECONDS_TOTAL=${1:-20}
BUILD=${TK_INSTRUMENTED_BUILD:-$ROOT/build-instrumented}
export TK_INSTRUMENTED_BUILD=$BUILD
FUZZ_DIR=$ROOT/tests/fuzz

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

log=$(mktemp -d /tmp/tweetkeeper-fuzz.XXXXXX)
cleanup() { if [ -n "${KEEP:-}" ]; then echo "# kept $log"; else rm -rf "$log"; fi; }
trap cleanup EXIT

# (Built ahead by make check, in the background: then this finds nothing to do.)
out=$("$ROOT/tests/lib/instrumented_build.sh" "${targets[@]}") || { echo "$out"; fail_all "the instrumented build of ${targets[*]} in $BUILD"; }

share=$((SECONDS_TOTAL / ${#targets[@]}))
[ "$share" -ge 1 ] || share=1
# Two targets at a time (FUZZ_JOBS): each still fuzzes for its share, on a core of its own.
jobs_at_once=${FUZZ_JOBS:-2}
echo "# ${#targets[@]} targets, ${share}s each, $jobs_at_once at a time"

fuzz_one() { # fuzz_one TARGET: its "ok"/"not ok" lines into $log/TARGET.result
  local t=$1 corpus=$log/corpus-$1 artifacts=$BUILD/artifacts/$1 args rc runs cov found a
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
  {
    if [ "$rc" -eq 0 ]; then
      echo "ok - $t (${runs:-?} runs, ${cov:-?} edges, corpus $(find "$corpus" -type f | wc -l) inputs)"
    else
      echo "not ok - $t (exit $rc after ${runs:-?} runs)"
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
        touch "$log/keep"
      fi
    fi
  } >"$log/$t.result"
}

for t in "${targets[@]}"; do
  while (($(jobs -rp | wc -l) >= jobs_at_once)); do wait -n; done
  fuzz_one "$t" &
done
wait
passed=0
failed=0
for t in "${targets[@]}"; do
  cat "$log/$t.result" 2>/dev/null || echo "not ok - $t (no result)"
  if grep -q '^ok - ' "$log/$t.result" 2>/dev/null; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
done
[ -e "$log/keep" ] && KEEP=1
echo "fuzz: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
