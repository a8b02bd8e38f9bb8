#!/usr/bin/env bash
# Runs every pgTAP file against a throwaway cluster with tweetkeeper preloaded, then checks
# CREATE EXTENSION's warning in a cluster without it. Prints "pgtap: N passed, M failed".
set -uo pipefail
source "$(dirname "$0")/../lib/common.sh"
tk_workdir pgtap
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
