#!/usr/bin/env bash
# Every test suite, then one summary line. Called by `make check` after the build and the
# extension's install. Each suite prints its own "<suite>: N passed, M failed", or, when it cannot
# run at all, "<suite>: skipped: <reason>" and exits 77.
#
# Suites run side by side, up to TK_JOBS (default 6) at once: each starts its own cluster in its
# own /tmp directory on a unix socket and the mock on a free port, and
# most of them spend their time waiting on the clock, on workers, on pg_cron. Each suite writes
# to a file of its own, printed whole when it ends, so outputs never interleave. Two kinds of
# suite never share the machine as the others do (see the table below):
#  - alone: suites that time a latency or a pace (a claim within 0.75 s of a NOTIFY, requests
#    never 0.3 s apart, a killed worker's batch back within a second) run with no other suite
#    beside them: such a check
#    must not depend on what else the machine is doing;
#  - cpu: suites that keep cores busy (the sanitized unit tests, the fuzzer, pgTAP's passes) run one at a
#    time, beside waiting suites only.
# make check builds only what the first suites run (the worker and the mock API); the other
# programs are built in the background from the start (nice 10), and the instrumented build that
# sanitize (the unit tests) and fuzz share at the lowest priority (nice 19), in the time the
# first suites spend waiting.
#
# Environment: TK_SKIP="fuzz spec": suites not to run (space-separated names as in the table);
# they are listed as skipped on request. A suite that skips by itself (exit 77) fails make check.
# TK_JOBS=1 runs the suites one after the other, in the table's order.
#
# The last line is "N passed, M failed", followed by ", K skipped" when suites or checks were
# skipped (a check skips when what it compares with is not beside the clone, e.g. X's OpenAPI
# description in ../shared: each is named on a line of its own before the last; never passed); the
# seconds each suite took are printed before it, and make check's status is 0 only when every
# suite ran and passed (a suite that exits non-zero, or prints no summary line, has failed).
set -uo pipefail
source "$(dirname "$0")/lib/common.sh"
cd "$TK_ROOT"
TK_JOBS=${TK_JOBS:-6}
read -r -a skip_asked <<<"${TK_SKIP:-}"
work=$(mktemp -d /tmp/tweetkeeper-check.XXXXXX)

# The suites, in the order they start: suite NAME KIND NEEDS COMMAND...
#   KIND alone | cpu | wait (above); NEEDS: - or the background build it waits for.
names=() kinds=() needs=() cmds=()
suite() {
  names+=("$1") kinds+=("$2") needs+=("$3")
  shift 3
  cmds+=("$(printf '%q ' "$@")")
}
# First the suites whose checks time latencies or paces, one at a time and alone, while the
# background builds use the cores they leave idle:
suite wakeup alone - tests/integration/wakeup.sh     # claimed within 0.75 s of a NOTIFY or due time
suite quota alone - tests/integration/quota.sh       # requests 0.67 s apart, never 0.3 s; 15 a window
suite crash-faults alone - tests/faults/crash.sh     # a killed worker's batches back within 1 s (p99)
suite partitions-quota alone - tests/integration/partitions_quota.sh # two nodes share a window: every one full, no 429
# Then up to TK_JOBS at once, at most one of those that keep a core busy (cpu). Those that wait
# have timing checks too, with room for a busy machine (a forecast within 10%, refreshes within
# their delay + 3 s, counted in a run); they use a few CPU-seconds a minute each.
suite pgtap cpu - tests/pgtap/run.sh                  # six passes of the pgTAP files, two at a time
suite sanitize cpu instrumented tests/sanitize/run.sh # the unit tests, under ASan and UBSan: 4 processes, 20 s
suite fuzz cpu instrumented tests/fuzz/run.sh         # two cores for 10 s
# The waiting suites longest first (their seconds in a make check), so that none of the long ones
# starts last and runs on alone.
suite upgrade wait programs tests/upgrade/upgrade.sh
suite housekeeping wait programs tests/integration/housekeeping.sh # pg_cron's jobs at the next minute (90 s allowed)
suite import wait programs tests/cli/import_cli.sh
suite forecast wait programs tests/integration/forecast.sh
suite report wait programs tests/integration/report.sh       # the report in chromium
suite integration wait programs tests/integration/pipeline.sh
suite adaptive wait programs tests/integration/adaptive.sh # the live completion decides as the replay does
suite partitions wait programs tests/integration/partitions.sh # a proxy and two partitions, Debian's PL/Proxy
suite cli wait programs tests/cli/worker_cli.sh
suite warc wait programs tests/integration/warc.sh
suite warc-purge wait programs tests/integration/warc_purge.sh # SIGKILL at every step of the rewrite
suite api-faults-bluesky wait programs env PROVIDER=bluesky tests/faults/api_faults.sh
suite api-faults wait programs tests/faults/api_faults.sh
suite follow wait programs tests/integration/follow.sh
suite stream wait programs tests/integration/stream.sh # Jetstream counts exact through a drop, a kill, a restart and a gap
suite spec wait programs tests/mock_api/spec/spec.sh
suite networks wait programs tests/integration/networks.sh
suite dataset wait programs tests/integration/dataset.sh # a dataset exported, imported, read again: the same curves
suite deletions wait programs tests/integration/deletions.sh # gone at the source: marked, erased, out of exports and WARC files, each network
suite accounted wait programs tests/integration/accounted.sh
suite payloads wait programs tests/integration/payloads.sh
suite prometheus wait programs tests/integration/prometheus.sh
suite backup wait programs tests/integration/backup.sh
suite billing wait programs tests/integration/billing.sh
suite hostile-schema wait programs tests/integration/hostile_schema.sh
suite claims wait programs tests/integration/claims.sh
suite v1.1 wait programs tests/integration/v1_1.sh
suite follow_pages wait programs tests/integration/follow_pages.sh   # an X read of several pages stored, not read again forever
suite windows wait programs tests/integration/windows.sh   # a window the API opened is used while posts are due
suite build wait programs tests/build/make_targets.sh
suite deploy wait programs tests/deploy/deploy.sh
suite sleeps wait programs tests/build/sleeps.sh     # every sleep left in a test script says why

asked_to_skip() { local s; for s in "${skip_asked[@]}"; do [ "$s" = "$1" ] && return 0; done; return 1; }
for s in "${skip_asked[@]}"; do
  printf '%s\n' "${names[@]}" | grep -qxF -- "$s" || { echo "TK_SKIP: no suite is called '$s' (suites: ${names[*]})" >&2; exit 2; }
done

# The background builds: one instrumented tree for sanitize and fuzz (tests/lib/instrumented_build.sh),
# and the other programs. bg_pid[NAME]: its pid until it ends; bg_done[NAME]: its exit status then.
declare -A bg_pid=() bg_done=() bg_of=()
background() { # background NAME NICENESS COMMAND...: in a process group of its own, stopped whole at exit
  setsid nice -n "$2" "${@:3}" >"$work/build-$1.log" 2>&1 &
  bg_pid[$1]=$!
  bg_of[$!]=$1
}
asked_to_skip sanitize && asked_to_skip fuzz || background instrumented 19 tests/lib/instrumented_build.sh
# The programs the first suites do not run (tweetkeeper-import, -export, -report), which the suites
# after them wait for: ahead of the instrumented build (nice 10 against 19). The unit tests are
# built and run in the instrumented tree only (the sanitize suite): built a second time with gcc
# -O2 and run again, they cost make check about 130 CPU-seconds. The programs the other suites
# run are gcc -O2; `make build-cpp && ctest --test-dir build` runs the unit tests built so.
background programs 10 cmake --build "$TK_BUILD" -j"${JOBS:-2}" --target programs

# The scheduler. pending: indexes of suites not started yet, in order; running[pid] = index.
declare -A running=() started=() beside=()
pending=()
skipped_asked=() skipped=() skipped_checks=() failed_suites=() times=()
for i in "${!names[@]}"; do
  if asked_to_skip "${names[$i]}"; then skipped_asked+=("${names[$i]}"); else pending+=("$i"); fi
done
ready() { # ready I: what suite I needs has been built (or it needs nothing)
  local n=${needs[$1]}
  [ "$n" = - ] || [ -n "${bg_done[$n]:-}" ]
}
kind_running() { local p; for p in "${!running[@]}"; do [ "${kinds[${running[$p]}]}" = "$1" ] && return 0; done; return 1; }
start() { # start I
  local i=$1 p
  # (exec: the pid is the suite's own, which a TERM lets clean up after itself.)
  if declare -F "${cmds[$i]%% *}" >/dev/null; then
    ( eval "${cmds[$i]}" ) >"$work/${names[$i]}.out" 2>&1 </dev/null &
  else
    ( eval "exec ${cmds[$i]}" ) >"$work/${names[$i]}.out" 2>&1 </dev/null &
  fi
  running[$!]=$i
  started[$i]=$SECONDS
  for p in "${!running[@]}"; do # who ran beside whom, for the report
    [ "$p" = $! ] && continue
    beside[$i]+=" ${names[${running[$p]}]}"
    beside[${running[$p]}]+=" ${names[$i]}"
  done
}
start_what_can_start() {
  local k i rest=()
  for ((k = 0; k < ${#pending[@]}; k++)); do
    i=${pending[$k]}
    if [ "${kinds[$i]}" = alone ] && ready "$i"; then
      # A suite that runs alone waits for the others to end; none starts beside it, nor ahead
      # of it while it waits.
      if ((${#running[@]} == 0)); then start "$i"; else rest+=("$i"); fi
      rest+=("${pending[@]:$((k + 1))}")
      break
    fi
    if kind_running alone || ((${#running[@]} >= TK_JOBS)) || ! ready "$i" ||
       { [ "${kinds[$i]}" = cpu ] && kind_running cpu; }; then
      rest+=("$i")
    else
      start "$i"
    fi
  done
  pending=("${rest[@]}")
}
passed=0 failed=0
finished() { # finished I RC: print its output whole, count its checks, say how it went
  local i=$1 rc=$2 name=${names[$1]} out=$work/${names[$1]}.out line p=0 f=0 others
  local secs=$((SECONDS - started[$1]))
  others=$(printf '%s\n' ${beside[$i]:-} | sort -u | paste -sd ' ')
  echo "=== $name (${secs}s${others:+, beside $others})"
  cat "$out"
  times+=("$name=${secs}s")
  # Its own summary line, "<name>: N passed, M failed", counts.
  line=$(grep -E "^${name//./[.]}: [0-9]+ passed, [0-9]+ failed\$" "$out" | tail -1)
  if [ -n "$line" ]; then
    read -r p f < <(awk '{ print $2, $4 }' <<<"$line")
    passed=$((passed + p)) failed=$((failed + f))
  fi
  # Checks a suite could not run here (tk_skip: what they need is not beside the clone), by name:
  # "# skipped: K (NAME; NAME...)" after its summary line. Never counted as passed.
  local skip
  skip=$(sed -n 's/^# skipped: [0-9][0-9]* (\(.*\))$/\1/p' "$out" | tail -1)
  if [ -n "$skip" ]; then
    while IFS= read -r c; do skipped_checks+=("$name: ${c# }"); done < <(tr ';' '\n' <<<"$skip")
  fi
  if [ "$rc" = 77 ] && grep -q "^$name: skipped: " "$out"; then
    skipped+=("$name")
    failed=$((failed + 1)) # not asked for: a failure (TK_SKIP asks)
  elif [ "$rc" != 0 ] || [ -z "$line" ] || [ "$f" != 0 ]; then
    failed_suites+=("$name ($([ -z "$line" ] && echo "no summary line, ")exit $rc)")
    [ "$f" != 0 ] || failed=$((failed + 1)) # failed without a failing check: one failure
  fi
}
cleanup() { # at exit, also when interrupted: suites still running and builds are stopped
  local p
  for p in "${bg_pid[@]}"; do kill -TERM -- "-$p" 2>/dev/null || kill -TERM "$p" 2>/dev/null; done
  for p in "${!running[@]}"; do kill -TERM "$p" 2>/dev/null; done
  wait
  rm -rf "$work"
}
trap cleanup EXIT
trap 'echo "interrupted"; exit 130' INT TERM

begin=$SECONDS
while ((${#pending[@]} + ${#running[@]})); do
  start_what_can_start
  if ((${#running[@]} == 0)) && ((${#bg_pid[@]} == 0)); then
    echo "run-all.sh: nothing can start (pending: ${pending[*]})" >&2
    break
  fi
  if ((${#running[@]} == 0)); then # only the builds are left to wait for: no need to yield now
    for b in "${bg_pid[@]}"; do renice -n 0 -g "$b" >/dev/null 2>&1; done
  fi
  wait -n -p done_pid
  rc=$?
  [ -n "${done_pid:-}" ] || continue
  if [ -n "${running[$done_pid]:-}" ]; then
    i=${running[$done_pid]}
    unset "running[$done_pid]"
    finished "$i" "$rc"
  elif [ -n "${bg_of[$done_pid]:-}" ]; then
    b=${bg_of[$done_pid]}
    unset "bg_pid[$b]"
    bg_done[$b]=$rc
    echo "=== $b build (background, $((SECONDS - begin))s in, exit $rc): $(tail -1 "$work/build-$b.log")"
  fi
done

echo "==="
echo "seconds per suite: ${times[*]}"
echo "wall: $((SECONDS - begin))s, up to $TK_JOBS suites at once"
((${#failed_suites[@]})) && echo "failed suites: ${failed_suites[*]}"
for s in "${skipped[@]}"; do
  echo "skipped, not asked for (a failure; TK_SKIP=\"$s\" allows it): $(grep -m1 "^$s: skipped: " "$work/$s.out")"
done
((${#skipped_asked[@]})) && echo "skipped on request (TK_SKIP): ${skipped_asked[*]}"
if ((${#pending[@]})); then # (a background build that every remaining suite needed failed to start)
  echo "not run: $(for i in "${pending[@]}"; do printf '%s ' "${names[$i]}"; done)"
  failed=$((failed + ${#pending[@]}))
fi
for c in "${skipped_checks[@]}"; do echo "check skipped (what it needs is not here): $c"; done
n_skipped=$((${#skipped[@]} + ${#skipped_asked[@]} + ${#skipped_checks[@]}))
echo "$passed passed, $failed failed$( ((n_skipped)) && echo ", $n_skipped skipped")"
[ "$failed" -eq 0 ] && ((${#failed_suites[@]} + ${#skipped[@]} + ${#pending[@]} == 0))
