#!/usr/bin/env bash
# Issue 37 part 1, the lock-as-lease shape weighed: a claim that writes nothing and holds its
# tweets' row locks in a transaction left open across the API call would keep an xid open per
# batch in flight, and PostgreSQL's vacuum removes no row version younger than the oldest open
# xid. This measures what that horizon costs X's floor: the same pgbench floor as run.sh
# (claim_complete_x.pgbench, CLIENTS sessions, SECONDS each, on TWEETS due tweets), first alone,
# then beside HOLDERS sessions that each keep a transaction with an xid open for HOLD seconds,
# back to back (the batches in flight of a lock-as-lease worker, each as long as its request).
# Prints each floor's rate and its claims' mean time. A measurement: checks nothing.
#   tests/bench/held_horizon.sh                 # HOLD=1 (an ordinary request)
#   HOLD=10 tests/bench/held_horizon.sh         # a slow API (timeouts, retries)
set -uo pipefail
source "$(dirname "$0")/../lib/common.sh"
tk_defaults TWEETS=1000000 SECONDS_EACH=30 CLIENTS=4 HOLDERS=2 HOLD=1

tk_workdir held-horizon
tk_pg_start "$dir" -c shared_buffers=1GB -c max_wal_size=4GB -c checkpoint_timeout=30min \
  -c shared_preload_libraries=tweetkeeper,pg_stat_statements -c pg_stat_statements.track=all >/dev/null || exit 1
tk_psql -c "CREATE EXTENSION tweetkeeper" -c "CREATE EXTENSION pg_stat_statements" >/dev/null || exit 1
fresh() {
  tk_psql >/dev/null <<SQL
TRUNCATE tweetkeeper.tweets, tweetkeeper.metric_history_hot, tweetkeeper.batches, tweetkeeper.tombstones,
         tweetkeeper.payloads, tweetkeeper.edits;
SELECT tweetkeeper.schedule_tweets($(tk_floor_ids_sql "$TWEETS"));
SELECT tweetkeeper.create_partitions();
VACUUM ANALYZE tweetkeeper.tweets;
CHECKPOINT;
SELECT pg_stat_statements_reset();
SQL
}
cat >"$dir/hold.sql" <<SQL
BEGIN;
SELECT txid_current();
SELECT pg_sleep($HOLD);
COMMIT;
SQL
floor() {
  pgbench -n -c "$CLIENTS" -j 2 -T "$SECONDS_EACH" -f "$TK_ROOT/tests/bench/claim_complete_x.pgbench" >"$dir/pgbench.log" 2>&1 ||
    { cat "$dir/pgbench.log"; return 1; }
  local refreshes claim_ms
  refreshes=$(tk_psql -c "SELECT sum(stored) FROM tweetkeeper.batches WHERE outcome = 'completed'")
  # (A queue refreshed to its end measured less than a rate: say so.)
  # (Never reached: still scheduled, never refreshed nor settled as a problem or an omission.)
  [ "$(tk_psql -c "SELECT count(*) FROM tweetkeeper.tweets
                    WHERE state = 'scheduled' AND update_count = 0 AND omissions = 0 AND problem_type IS NULL")" -gt 0 ] ||
    echo "$1: every one of $TWEETS tweets refreshed within ${SECONDS_EACH}s: the rate below is a lower bound (more TWEETS)"
  claim_ms=$(tk_psql -c "SELECT round((sum(total_exec_time) / sum(calls))::numeric, 2) FROM pg_stat_statements
                          WHERE query LIKE '%claim_batch(%' AND toplevel")
  echo "$1: $((refreshes / SECONDS_EACH)) refreshes/s, claim $claim_ms ms mean"
}
fresh || exit 1
floor "no transaction held open" || exit 1
fresh || exit 1
pgbench -n -c "$HOLDERS" -T $((SECONDS_EACH + HOLD)) -f "$dir/hold.sql" >"$dir/hold.log" 2>&1 &
holders=$!
TK_PIDS+=("$holders")
tk_wait_for 10 "SELECT count(*) >= $HOLDERS FROM pg_stat_activity WHERE backend_xid IS NOT NULL AND query LIKE '%pg_sleep%'" >/dev/null ||
  { echo "the holders did not start" >&2; exit 1; }
floor "$HOLDERS transactions of ${HOLD}s held open back to back" || exit 1
wait "$holders"
tk_forget "$holders"
