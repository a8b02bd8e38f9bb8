#!/usr/bin/env bash
# make bench: the raw SQL floor (pgbench running claim+complete with fake metrics) and the
# end-to-end rate (N due tweets, the mock API on loopback, real workers), in one run, each from
# the same fresh state, printed as tweet-updates/s and their ratio.
set -uo pipefail
source "$(dirname "$0")/../lib/common.sh"
TWEETS=${TWEETS:-1000000}
FLOOR_SECONDS=${FLOOR_SECONDS:-20}
FLOOR_CLIENTS=${FLOOR_CLIENTS:-4}
WORKERS=${WORKERS:-2}
CONCURRENCY=${CONCURRENCY:-4}

tk_workdir bench
tk_pg_start "$dir" -c shared_buffers=1GB -c max_wal_size=4GB -c checkpoint_timeout=30min || exit 1
tk_psql -c "CREATE EXTENSION tweetkeeper" || exit 1

# A fresh table of $TWEETS due tweets (two hours old: due since 118 minutes).
fresh_state() {
  tk_psql <<SQL
TRUNCATE tweetkeeper.tweets, tweetkeeper.metric_history, tweetkeeper.batches;
SELECT tweetkeeper.schedule_tweets($(tk_snowflake_sql '2 hours' "$TWEETS"));
VACUUM ANALYZE tweetkeeper.tweets;
CHECKPOINT;
SQL
}

echo "== scheduling $TWEETS tweets with one schedule_tweets call"
t0=$(date +%s.%N)
fresh_state >/dev/null || exit 1
t1=$(date +%s.%N)
echo "schedule_tweets($TWEETS ids) + vacuum: $(awk "BEGIN { printf \"%.1f\", $t1 - $t0 }") s"

echo "== floor: pgbench, $FLOOR_CLIENTS clients, ${FLOOR_SECONDS}s"
pgbench -n -c "$FLOOR_CLIENTS" -j 2 -T "$FLOOR_SECONDS" -f "$TK_ROOT/tests/bench/claim_complete.pgbench" \
  >"$dir/pgbench.log" 2>&1 || { cat "$dir/pgbench.log"; exit 1; }
tps=$(sed -n 's/^tps = \([0-9.]*\) .*/\1/p' "$dir/pgbench.log" | head -1)
floor=$(awk "BEGIN { printf \"%.0f\", $tps * 100 }")
grep -E "latency average|number of transactions actually processed" "$dir/pgbench.log"
echo "floor: $floor tweet-updates/s"
tk_psql -c "SELECT format('sizes after the floor run: tweets %s, tweets_due_idx %s, metric_history %s',
  pg_size_pretty(pg_table_size('tweetkeeper.tweets')), pg_size_pretty(pg_relation_size('tweetkeeper.tweets_due_idx')),
  pg_size_pretty((SELECT sum(pg_total_relation_size(inhrelid)) FROM pg_inherits
                   WHERE inhparent = 'tweetkeeper.metric_history'::regclass)))"

echo "== end to end: $WORKERS workers x $CONCURRENCY batches in flight, mock API on loopback, $TWEETS due tweets"
fresh_state >/dev/null || exit 1
tk_mock_start "$dir/mock.log" --threads 32 --rate-limit 100000000 || exit 1
export TWEETKEEPER_BEARER_TOKEN=bench
pids=()
for w in $(seq 1 "$WORKERS"); do
  "$TK_WORKER" --dsn "$TK_DSN" --api-url "$TK_MOCK_URL" --concurrency "$CONCURRENCY" \
    --name "bench-$w" --exit-when-idle 3 --log-level warn >"$dir/worker-$w.log" 2>&1 &
  pids+=($!)
  TK_PIDS+=($!)
done
for p in "${pids[@]}"; do
  tk_wait_exit "$p" 1200
  [ "$TK_RC" = 0 ] || { echo "worker exited with $TK_RC"; tail -n 20 "$dir"/worker-*.log; exit 1; }
done
read -r stored span < <(tk_psql -F ' ' -c "SELECT sum(stored), extract(epoch FROM max(finished_at) - min(claimed_at))
  FROM tweetkeeper.batches WHERE outcome = 'completed'")
e2e=$(awk "BEGIN { printf \"%.0f\", $stored / $span }")
left=$(tk_psql -c "SELECT count(*) FROM tweetkeeper.tweets WHERE state = 'scheduled' AND update_count = 0")
echo "stored $stored results in $(awk "BEGIN { printf \"%.1f\", $span }") s; $left tweets never refreshed"
echo "end-to-end: $e2e tweet-updates/s"
tk_psql -c "SELECT format('batches: %s, full: %s, released: %s, expired: %s', count(*),
  count(*) FILTER (WHERE size = 100), count(*) FILTER (WHERE outcome = 'released'),
  count(*) FILTER (WHERE outcome = 'expired')) FROM tweetkeeper.batches"
echo "== result"
echo "floor $floor tweet-updates/s, end-to-end $e2e tweet-updates/s, ratio $(awk "BEGIN { printf \"%.2f\", $e2e / $floor }") (target >= 0.5)"
