#!/usr/bin/env bash
# End to end: PostgreSQL + the mock X API + two workers. Schedules tweets of three ages under a
# fast test policy, lets the workers run, stops them with SIGTERM, and checks that every tweet
# was refreshed on its schedule, in full batches whenever 100 or more were due, that deleted and
# protected tweets ended in the right state, and that nothing was lost or left leased.
# Prints "ok"/"not ok" lines and "integration: N passed, M failed".
set -uo pipefail
source "$(dirname "$0")/../lib/common.sh"
RUN_SECONDS=${RUN_SECONDS:-40}
BUFFER_TTL_S=1
SLACK_S=3          # scheduling jitter we accept: poll interval, commit time, a busy 2-core box
DELETED_EVERY=53   # the mock's rule: id % 53 = 7 is deleted ...
PROTECTED_EVERY=61 # ... and id % 61 = 11 protected (deleted wins)

tk_workdir integration

tk_pg_start "$dir" -c tweetkeeper.buffer_ttl=${BUFFER_TTL_S}s -c tweetkeeper.lease_ttl=30s || exit 1
tk_mock_start "$dir/mock.log" --deleted-every $DELETED_EVERY --protected-every $PROTECTED_EVERY || exit 1

tk_psql >/dev/null <<SQL || exit 1
CREATE EXTENSION tweetkeeper;
-- Every refresh leaves a history row, unchanged or not: the gaps between them are measured.
ALTER DATABASE tweetkeeper SET tweetkeeper.history_keep_unchanged = on;
-- The workers log in with nothing but the worker role's rights.
CREATE ROLE tk_worker_login LOGIN IN ROLE tweetkeeper_worker;
$(tk_fast_policy_sql)
$(tk_fast_queue_sql 1050 130 20)
$(tk_expected_sql $DELETED_EVERY $PROTECTED_EVERY)
SQL
total=$(tk_psql -c "SELECT count(*) FROM tweetkeeper.tweets")
echo "# scheduled $total tweets; running two workers for ${RUN_SECONDS}s against $TK_MOCK_URL"

start=$(tk_psql -c "SELECT now()")
export TWEETKEEPER_BEARER_TOKEN=integration-test-token
for w in 1 2; do
  "$TK_WORKER" --dsn "$TK_DSN user=tk_worker_login" --api-url "$TK_MOCK_URL" --concurrency 2 --name "worker-$w" \
    --poll-interval 200 >"$dir/worker-$w.log" 2>&1 &
  eval "worker_$w=$!"
  TK_PIDS+=($!)
done
sleep "$RUN_SECONDS" # sleep-ok: the run, over which refreshes are checked on schedule
stop=$(tk_psql -c "SELECT now()")
t0=$(date +%s.%N)
kill -TERM "$worker_1" "$worker_2"
# Graceful shutdown is bounded by the HTTP timeout; here requests take milliseconds.
tk_wait_exit "$worker_1" 30; rc1=$TK_RC
tk_wait_exit "$worker_2" 30; rc2=$TK_RC
t1=$(date +%s.%N)
echo "# workers exited with $rc1 and $rc2 after SIGTERM in $(awk "BEGIN { printf \"%.2f\", $t1 - $t0 }")s"
curl -s "$TK_MOCK_URL/mock/stats" >"$dir/mock-stats.json"

slack="interval '$SLACK_S seconds'"
buffer="interval '$BUFFER_TTL_S seconds'"
[ "$rc1" = 0 ] && [ "$rc2" = 0 ] && r=t || r=f
tk_sql_ok "both workers exit 0 on SIGTERM" "SELECT '$r'::boolean"
tk_sql_ok "no tweet disappeared" "SELECT count(*) = $total FROM tweetkeeper.tweets"
# Each check of "none" below is guarded by "something ran": it holds only if the workers did.
ran="(SELECT count(*) FROM tweetkeeper.batches WHERE outcome = 'completed') > 0"
tk_sql_ok "something ran: batches were completed and refreshes stored" \
  "SELECT $ran AND (SELECT count(*) FROM tweetkeeper.metric_history) > 0"
tk_sql_ok "nothing is left leased after a graceful exit" \
  "SELECT count(*) = 0 AND $ran FROM tweetkeeper.tweets WHERE lease_id IS NOT NULL" \
  "SELECT tweet_id, due_at, lease_id FROM tweetkeeper.tweets WHERE lease_id IS NOT NULL"
tk_sql_ok "no batch is left in flight" "SELECT count(*) = 0 AND $ran FROM tweetkeeper.batches WHERE outcome IS NULL"
tk_sql_ok "every tweet ends in the state the mock's rules say (deleted, unavailable, done, scheduled)" \
  "SELECT count(*) = 0 FROM tweetkeeper.tweets t JOIN expected e USING (tweet_id) WHERE t.state::text <> e.state" \
  "SELECT t.tweet_id, t.state, e.state AS expected FROM tweetkeeper.tweets t JOIN expected e USING (tweet_id) WHERE t.state::text <> e.state"
tk_sql_ok "deleted and protected tweets were not observed (though asked for: they ended deleted and unavailable)" \
  "SELECT count(*) = 0 AND (SELECT count(*) FROM tweetkeeper.tweets WHERE state = 'deleted') > 0
          AND (SELECT count(*) FROM tweetkeeper.tweets WHERE state = 'unavailable') > 0
     FROM tweetkeeper.metric_history h JOIN expected e USING (tweet_id) WHERE e.state IN ('deleted', 'unavailable')"
tk_sql_ok "tweets past the last bucket were observed exactly once" \
  "SELECT bool_and(n = 1) FROM (SELECT count(h.tweet_id) n FROM expected e LEFT JOIN tweetkeeper.metric_history h USING (tweet_id) WHERE e.state = 'done' GROUP BY e.tweet_id) x"
tk_sql_ok "every overdue tweet was first refreshed within the first seconds" \
  "SELECT max(first) <= timestamptz '$start' + interval '10 seconds' FROM (SELECT min(observed_at) first FROM tweetkeeper.metric_history GROUP BY tweet_id) x"
# On schedule: between two observations of a tweet, at least its delay and at most delay +
# buffer TTL + slack; and the last observation is no older than that at the end of the run.
tk_gaps_sql >"$dir/gaps.sql"
tk_sql_ok "scheduled tweets were refreshed several times" \
  "SELECT min(update_count) >= 2 FROM tweetkeeper.tweets WHERE state = 'scheduled'"
tk_sql_ok "no refresh came earlier than the tweet's delay" \
  "$(cat "$dir/gaps.sql") SELECT coalesce(bool_and(gap >= delay - interval '50 ms'), false) FROM gaps WHERE gap IS NOT NULL" \
  "$(cat "$dir/gaps.sql") SELECT tweet_id, gap, delay FROM gaps WHERE gap < delay - interval '50 ms'"
tk_on_schedule_ok "buffer TTL + ${SLACK_S}s" "$stop" "$buffer + $slack"
tk_sql_ok "every partial batch waited the buffer TTL for its oldest tweet" \
  "SELECT count(*) = 0 AND $ran FROM tweetkeeper.batches WHERE size < 100 AND claimed_at - oldest_due_at < $buffer" \
  "SELECT lease_id, size, claimed_at - oldest_due_at FROM tweetkeeper.batches WHERE size < 100 AND claimed_at - oldest_due_at < $buffer"
tk_sql_ok "most batches were full (100 ids)" \
  "SELECT count(*) FILTER (WHERE size = 100) >= 0.8 * count(*) AND $ran FROM tweetkeeper.batches"
tk_sql_ok "history has one observation per tweet per lease" \
  "SELECT count(*) = count(DISTINCT (tweet_id, lease_id)) AND count(*) > 0 FROM tweetkeeper.metric_history"
tk_sql_ok "metrics never went down between observations (of tweets observed more than once)" \
  "SELECT count(*) FILTER (WHERE d < 0) = 0 AND count(d) > 0
     FROM (SELECT like_count - lag(like_count) OVER (PARTITION BY tweet_id ORDER BY lease_id) d FROM tweetkeeper.metric_history) x"
# One API request per batch: the mock saw exactly the batches the database recorded.
requests=$(jq '.status_counts["200"] // 0' "$dir/mock-stats.json")
ids=$(jq '.ids_requested' "$dir/mock-stats.json")
tk_sql_ok "one API request per completed batch ($requests requests)" \
  "SELECT count(*) = $requests AND $requests > 0 FROM tweetkeeper.batches WHERE outcome = 'completed'"
tk_sql_ok "every id requested belongs to a completed batch ($ids ids)" \
  "SELECT sum(size) = $ids AND $ids > 0 FROM tweetkeeper.batches WHERE outcome = 'completed'"

# The bearer token never reaches the database or any log.
pg_dump --data-only tweetkeeper >"$dir/dump.sql" 2>/dev/null
# (grep exits 2 when a file cannot be read: only its 1, none found in files all there, passes.)
grep -q -- "$TWEETKEEPER_BEARER_TOKEN" "$dir/dump.sql" "$dir/pg/server.log" "$dir"/worker-*.log "$dir"/mock.log*
[ $? = 1 ] && r=t || r=f
for f in "$dir/dump.sql" "$dir/pg/server.log" "$dir"/worker-{1,2}.log; do [ -s "$f" ] || r=f; done
tk_sql_ok "the bearer token is in no table, no server log, no worker or mock log" "SELECT '$r'::boolean"
tk_psql -c "SELECT format('# %s refreshes in %s batches (%s full); %s requests to the mock',
  (SELECT count(*) FROM tweetkeeper.metric_history), count(*), count(*) FILTER (WHERE size = 100), $requests)
  FROM tweetkeeper.batches"
tk_psql -F ' | ' -c "SELECT '#', state, tweets FROM tweetkeeper.queue_stats"
if [ "$TK_FAILED" -gt 0 ]; then
  echo "# worker logs:"; tail -n 15 "$dir"/worker-*.log | sed 's/^/#   /'
fi
tk_summary integration
