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
tk_pg_start "$dir" || exit 1
tk_psql -c "CREATE EXTENSION pgtap" || exit 1
out=$(pg_prove --ext .sql -f "$TK_ROOT"/tests/pgtap/*.sql 2>&1 | grep -v 'NOTICE:')
echo "$out"
total=$(echo "$out" | sed -n 's/^Files=[0-9]*, Tests=\([0-9]*\).*/\1/p')
failed=$(echo "$out" | awk '/Failed [0-9]+\/[0-9]+ subtests/ { split($2, a, "/"); s += a[1] } END { print s + 0 }')
failed=${failed:-0}
status=0
echo "$out" | grep -q '^Result: PASS' || status=1
[ -n "$total" ] || { total=0; status=1; }

# again WHAT PRECONDITION [FILE...]: the pgTAP files (by default every one) once more, in
# $PGDATABASE; one line for the run.
again() {
  local what=$1 pre=$2 out files=("${@:3}")
  ((${#files[@]})) || files=("$TK_ROOT"/tests/pgtap/*.sql)
  out=$(pg_prove --ext .sql "${files[@]}" 2>&1 | grep -v 'NOTICE:')
  if [ "$pre" = t ] && echo "$out" | grep -q '^Result: PASS'; then
    echo "ok - every pgTAP file${3:+ that reads the clock} passes $what"
  else
    echo "not ok - every pgTAP file${3:+ that reads the clock} passes $what"
    echo "$out" | grep -E '^not ok|^#|Failed' | head -30 | sed 's/^/#   /'
    failed=$((failed + 1)); status=1
  fi
  total=$((total + 1))
}

# Collation: the same files in a database whose default collation is ICU's English, which orders
# punctuation as en_US.UTF-8 databases do (not as C): endpoint ranges such as 'mastodon:' ..
# 'mastodon;' must hold there too. (The background worker is told to run there, as the tests
# expect of their database.)
tk_psql -d postgres -c "CREATE DATABASE icu_en TEMPLATE template0 LOCALE_PROVIDER icu ICU_LOCALE 'en-US' LOCALE 'C.utf8'" >/dev/null &&
  tk_psql -d icu_en -c "CREATE EXTENSION pgtap" >/dev/null || exit 1
tk_pg_stop "$dir"
tk_pg_start "$dir" -c tweetkeeper.database=icu_en || exit 1
PGDATABASE=icu_en again "in a database collated by ICU's en-US (where 'mastodon:a.social' > 'mastodon;')" \
  "$(tk_psql -d icu_en -c "SELECT 'mastodon:a.social' > 'mastodon;'")"

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
for moment in "2026-12-01 00:30:00" "2026-12-31 23:59:55" "2028-02-29 23:59:55"; do
  tk_pg_stop "$dir"
  TK_SERVER_PRELOAD=$faketime_lib FAKETIME="@$moment" FAKETIME_DONT_FAKE_MONOTONIC=1 tk_pg_start "$dir" || exit 1
  started=$(tk_psql -c "SELECT to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI')")
  again "with the clock at $moment UTC (the server said $started)" \
    "$([ "${started:0:16}" = "${moment:0:16}" ] && echo t)" "${clock_files[@]}"
done

# Without shared_preload_libraries: CREATE EXTENSION works and says what is missing.
tk_pg_stop "$dir"
tk_pg_start "$dir" -c shared_preload_libraries= || exit 1
tk_psql -d postgres -c "CREATE DATABASE nopreload"
warning=$(psql -X -d nopreload -c "CREATE EXTENSION tweetkeeper" 2>&1)
if echo "$warning" | grep -q 'WARNING:  tweetkeeper is not in shared_preload_libraries' &&
   [ "$(tk_psql -d nopreload -c "SELECT tweetkeeper.schedule_tweet(1595000000000000000)")" = t ]; then
  echo "ok - without shared_preload_libraries, CREATE EXTENSION warns and the SQL API works"
  total=$((total + 1))
else
  echo "not ok - without shared_preload_libraries: $warning"
  total=$((total + 1)); failed=$((failed + 1)); status=1
fi
echo "pgtap: $((total - failed)) passed, $failed failed"
exit $status
