#!/usr/bin/env bash
# Runs every pgTAP file against a throwaway cluster with tweetkeeper preloaded, again in an ICU
# collated database, those that read the clock again with the server's clock set to where days,
# months and years turn, then checks CREATE EXTENSION's warning in a cluster without it. Prints
# "pgtap: N passed, M failed".
set -uo pipefail
source "$(dirname "$0")/../lib/common.sh"
tk_workdir pgtap
# 29_documented.sql reads the reference it holds the schema tweetkeeper to.
export TK_SQL_REFERENCE=$TK_ROOT/docs/sql-reference.md
# Each pass in a cluster of its own (DIR/NAME), two at a time: the passes are one session each,
# a core each, and the suite's time is theirs (one after the other they were its last 100 s).
# A pass prints its own lines; "ok"/"not ok" lines count one check each, and the first pass's
# pg_prove summary counts its tests.

# prove [-f] [FILE...]: the pgTAP files (by default every one) in $PGDATABASE (-f: each failing
# test named).
prove() {
  local opts=() files
  [ "${1:-}" = -f ] && { opts=(-f); shift; }
  files=("$@")
  ((${#files[@]})) || files=("$TK_ROOT"/tests/pgtap/*.sql)
  pg_prove --ext .sql "${opts[@]}" "${files[@]}" 2>&1 | grep -v 'NOTICE:'
}
# again WHAT PRECONDITION [FILE...]: the files once more, one line for the run.
again() {
  local what=$1 pre=$2 out
  out=$(prove "${@:3}")
  if [ "$pre" = t ] && grep -q '^Result: PASS' <<<"$out"; then
    echo "ok - every pgTAP file${3:+ that reads the clock} passes $what"
  else
    echo "not ok - every pgTAP file${3:+ that reads the clock} passes $what"
    echo "$out" | grep -E '^not ok|^#|Failed' | head -30 | sed 's/^/#   /'
  fi
}

# Every file, verbose (its tests are counted one by one).
pass_all() {
  tk_pg_start "$1" || return 1
  tk_psql -c "CREATE EXTENSION pgtap" || return 1
  echo "== every pgTAP file"
  prove -f
}

# Collation: the same files in a database whose default collation is ICU's English, which orders
# punctuation as en_US.UTF-8 databases do (not as C): endpoint ranges such as 'mastodon:' ..
# 'mastodon;' must hold there too. (The background worker is told to run there, as the tests
# expect of their database.)
pass_icu() {
  tk_pg_start "$1" || return 1
  tk_psql -d postgres -c "CREATE DATABASE icu_en TEMPLATE template0 LOCALE_PROVIDER icu ICU_LOCALE 'en-US' LOCALE 'C.utf8'" >/dev/null &&
    tk_psql -d icu_en -c "CREATE EXTENSION pgtap" >/dev/null || return 1
  tk_pg_stop "$1"
  tk_pg_start "$1" -c tweetkeeper.database=icu_en || return 1
  PGDATABASE=icu_en again "in a database collated by ICU's en-US (where 'mastodon:a.social' > 'mastodon;')" \
    "$(tk_psql -d icu_en -c "SELECT 'mastodon:a.social' > 'mastodon;'")"
}

# The clock: the same files again, with the server's clock (libfaketime) started at moments where
# days, months and years turn, ticking on from there: half an hour after a UTC midnight, seconds
# before the midnight that ends a month of 31 days and a year (the run crosses it), and before
# the end of a leap day, a month of 29. Tests that build days, months or partitions from now()
# must pass at any of them. (A month of 30 days ends as these do: 2026-11-30 was a moment here
# too, until make check's time asked for its 12 s.)
# Only the files that read the clock run again there: every file but those named below, which
# test what no clock reaches (a new file runs at these moments until it is named here).
clock_free=(08_bridge 16_post_urls 24_privileges 29_documented) # the bridge's errors; parse_post_url(); grants; names
clock_files=()
for f in "$TK_ROOT"/tests/pgtap/*.sql; do
  [[ " ${clock_free[*]} " == *" $(basename "$f" .sql) "* ]] || clock_files+=("$f")
done
faketime_lib=/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1
pass_clock() { # pass_clock DIR MOMENT
  local started
  # The cluster made and pgTAP created on the real clock, so that the faked one starts at the
  # moment just before the files run.
  tk_pg_start "$1" && tk_psql -c "CREATE EXTENSION pgtap" >/dev/null || return 1
  tk_pg_stop "$1"
  TK_SERVER_PRELOAD=$faketime_lib FAKETIME="@$2" FAKETIME_DONT_FAKE_MONOTONIC=1 tk_pg_start "$1" || return 1
  started=$(tk_psql -c "SELECT to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI')")
  again "with the clock at $2 UTC (the server said $started)" \
    "$([ "${started:0:16}" = "${2:0:16}" ] && echo t)" "${clock_files[@]}"
}

# Without shared_preload_libraries: CREATE EXTENSION works and says what is missing.
pass_nopreload() {
  local warning scheduled
  tk_pg_start "$1" -c shared_preload_libraries= || return 1
  tk_psql -d postgres -c "CREATE DATABASE nopreload"
  warning=$(psql -X -d nopreload -c "CREATE EXTENSION tweetkeeper" 2>&1)
  scheduled=$(tk_psql -d nopreload -c "SELECT tweetkeeper.schedule_tweet(1595000000000000000)" 2>&1)
  if grep -q 'WARNING:  tweetkeeper is not in shared_preload_libraries' <<<"$warning" && [ "$scheduled" = t ]; then
    echo "ok - without shared_preload_libraries, CREATE EXTENSION warns and the SQL API works"
  else
    echo "not ok - without shared_preload_libraries: CREATE EXTENSION said: $warning; schedule_tweet said: $scheduled"
  fi
}

passes=(all icu "clock 2026-12-01 00:30:00" "clock 2026-12-31 23:59:55" "clock 2028-02-29 23:59:55" nopreload)
pids=()
stop_passes() {
  local p
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  wait
  for p in "$dir"/pass-*; do [ -d "$p/pg" ] && tk_pg_stop "$p" immediate >/dev/null 2>&1; done
  tk_finish
}
trap stop_passes EXIT
for k in "${!passes[@]}"; do
  read -r kind moment <<<"${passes[$k]}"
  d=$dir/pass-$k
  mkdir -p "$d"
  # At most two at once: wait for one to end.
  while (($(jobs -rp | wc -l) >= 2)); do wait -n; done
  ( if [ "$kind" = clock ]; then pass_clock "$d" "$moment"; else "pass_$kind" "$d"; fi
    echo "pass exit $?"; tk_pg_stop "$d" >/dev/null 2>&1 ) >"$d/out" 2>&1 &
  pids+=("$!")
done
wait
total=0 failed=0 status=0
for k in "${!passes[@]}"; do
  out=$dir/pass-$k/out
  grep -v '^pass exit ' "$out"
  if [ "$k" = 0 ]; then # every file, verbose: its tests
    n=$(sed -n 's/^Files=[0-9]*, Tests=\([0-9]*\).*/\1/p' "$out")
    f=$(awk '/Failed [0-9]+\/[0-9]+ subtests/ { split($2, a, "/"); s += a[1] } END { print s + 0 }' "$out")
    grep -q '^Result: PASS' "$out" && [ -n "$n" ] || status=1
    total=$((total + ${n:-0})) failed=$((failed + ${f:-0}))
  fi
  ok=$(grep -c '^ok - every\|^ok - without' "$out")
  bad=$(grep -c '^not ok - every\|^not ok - without' "$out")
  total=$((total + ok + bad)) failed=$((failed + bad))
  if ! grep -qx 'pass exit 0' "$out"; then # could not run: a failure of its own
    echo "not ok - pgTAP pass ${passes[$k]} did not run to its end ($(grep '^pass exit' "$out"))"
    total=$((total + 1)) failed=$((failed + 1))
  fi
done
((failed == 0)) || status=1
echo "pgtap: $((total - failed)) passed, $failed failed"
exit $status
