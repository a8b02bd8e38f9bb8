#!/usr/bin/env bash
# Every test suite, one after the other, then one summary line. Called by `make check` after the
# build and the extension's install. Each suite prints its own "<suite>: N passed, M failed".
set -uo pipefail
source "$(dirname "$0")/lib/common.sh"
cd "$TK_ROOT"
log=$(mktemp /tmp/tweetkeeper-check.XXXXXX)
trap 'rm -f "$log"' EXIT
suites_failed=()
times=() # "name seconds" of each suite, printed before the summary: where make check's time goes

run_suite() { # run_suite NAME COMMAND...
  local name=$1
  shift
  echo "=== $name"
  local start=$SECONDS
  "$@" 2>&1 | tee -a "$log"
  local rc=${PIPESTATUS[0]}
  times+=("$name $((SECONDS - start))s")
  [ "$rc" -eq 0 ] || suites_failed+=("$name")
}

# run_side_by_side NAME_A SCRIPT_A NAME_B SCRIPT_B: two suites that spend their time waiting
# (on the clock: a forecast's minute, pg_cron's minute), at once. Each has its own cluster, socket
# directory and mock port, and neither measures a latency, only counts; their outputs are printed
# one after the other, as if they had run so.
run_side_by_side() {
  local a=$1 script_a=$2 b=$3 script_b=$4 start=$SECONDS pid_a rc_a rc_b
  "$script_a" >"$bg_log/$a.out" 2>&1 &
  pid_a=$!
  "$script_b" >"$bg_log/$b.out" 2>&1
  rc_b=$?
  wait "$pid_a"
  rc_a=$?
  for s in "$a:$rc_a" "$b:$rc_b"; do
    echo "=== ${s%%:*} (side by side with $([ "${s%%:*}" = "$a" ] && echo "$b" || echo "$a"))"
    tee -a "$log" <"$bg_log/${s%%:*}.out"
    [ "${s##*:}" -eq 0 ] || suites_failed+=("${s%%:*}")
  done
  times+=("$a+$b $((SECONDS - start))s")
}

unit() {
  local out rc
  out=$(cd "$TK_BUILD" && ctest --output-on-failure -j2 2>&1)
  rc=$?
  echo "$out" | tail -n 25
  local total failed
  total=$(echo "$out" | sed -n 's/.*tests passed, [0-9]* tests failed out of \([0-9]*\).*/\1/p')
  failed=$(echo "$out" | sed -n 's/.*tests passed, \([0-9]*\) tests failed out of.*/\1/p')
  echo "unit: $((${total:-0} - ${failed:-0})) passed, ${failed:-0} failed"
  [ -n "$total" ] && [ "$total" -gt 0 ] && return $rc
  return 1
}

# What the last three suites build (the one instrumented build of the sanitize and fuzz suites, and
# Citus from its source when it is not installed yet) is built in the background from the start,
# at the lowest priority: in the time the suites between spend waiting on their workers and
# clusters, not after them (about four minutes of two cores, otherwise).
bg_log=$(mktemp -d /tmp/tweetkeeper-check-builds.XXXXXX)
nice -n 19 tests/lib/instrumented_build.sh >"$bg_log/instrumented.log" 2>&1 &
instrumented_build=$!
nice -n 19 tests/citus/build.sh >"$bg_log/citus.log" 2>&1 &
citus_build=$!
trap 'rm -f "$log"; rm -rf "$bg_log"' EXIT

run_suite build tests/build/make_targets.sh
run_suite unit unit
run_suite cli tests/cli/worker_cli.sh
run_suite import tests/cli/import_cli.sh
run_suite pgtap tests/pgtap/run.sh
run_suite upgrade tests/upgrade/upgrade.sh
run_suite integration tests/integration/pipeline.sh
run_suite backup tests/integration/backup.sh
run_suite wakeup tests/integration/wakeup.sh
run_suite quota tests/integration/quota.sh
run_suite billing tests/integration/billing.sh
run_side_by_side forecast tests/integration/forecast.sh housekeeping tests/integration/housekeeping.sh
run_suite claims tests/integration/claims.sh
run_suite prometheus tests/integration/prometheus.sh
run_suite deploy tests/deploy/deploy.sh
run_suite v1.1 tests/integration/v1_1.sh
run_suite accounted tests/integration/accounted.sh
run_suite networks tests/integration/networks.sh
run_suite warc tests/integration/warc.sh
run_suite payloads tests/integration/payloads.sh
run_suite spec tests/mock_api/spec/spec.sh
run_suite api-faults tests/faults/api_faults.sh
run_suite api-faults-bluesky env PROVIDER=bluesky tests/faults/api_faults.sh
run_suite crash-faults tests/faults/crash.sh
wait "$instrumented_build" || tail -5 "$bg_log/instrumented.log"  # (the suites say what failed)
run_suite sanitize tests/sanitize/run.sh
run_suite fuzz tests/fuzz/run.sh
wait "$citus_build"
echo "citus build: $(tail -1 "$bg_log/citus.log")"
run_suite citus tests/citus/citus.sh

read -r passed failed < <(awk '/^[a-z0-9.-]+: [0-9]+ passed, [0-9]+ failed$/ { p += $2; f += $4 } END { print p + 0, f + 0 }' "$log")
echo "==="
echo "seconds per suite: ${times[*]/ /=}"
if ((${#suites_failed[@]})); then
  echo "failed suites: ${suites_failed[*]}"
  [ "$failed" -gt 0 ] || failed=${#suites_failed[@]}
fi
echo "$passed passed, $failed failed"
[ "${#suites_failed[@]}" -eq 0 ]
