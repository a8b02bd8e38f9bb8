#!/usr/bin/env bash
# Claims that meet a lock: a partial batch that finds one of its tweets locked by another
# session is left to that session only briefly (a claim commits in milliseconds). Here the lock
# is an operator's open transaction, held for seconds: the other nine tweets, due for two hours,
# must still go out at once. Prints "claims: N passed, M failed".
set -uo pipefail
source "$(dirname "$0")/../lib/common.sh"
tk_workdir claims
tk_pg_start "$dir" -c tweetkeeper.buffer_ttl=0 || exit 1
tk_psql >/dev/null <<SQL || exit 1
CREATE EXTENSION tweetkeeper;
SELECT tweetkeeper.schedule_tweets($(tk_snowflake_sql '2 hours' 10));
SQL
locked=$(tk_psql -c "SELECT min(tweet_id) FROM tweetkeeper.tweets")
# The operator's transaction: one tweet locked for 8 s.
tk_psql -c "BEGIN" -c "SELECT 1 FROM tweetkeeper.tweets WHERE tweet_id = $locked FOR UPDATE" \
  -c "SELECT pg_sleep(8)" -c "COMMIT" >/dev/null 2>&1 &
TK_PIDS+=($!)
for _ in $(seq 1 50); do
  [ "$(tk_psql -c "SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a USING (pid)
                    WHERE l.locktype = 'transactionid' AND a.query LIKE '%pg_sleep%'")" -gt 0 ] && break
  sleep 0.1
done
t0=$(date +%s.%N)
size=$(tk_psql -c "SELECT cardinality(tweet_ids) FROM tweetkeeper.claim_batch('claims-test')")
secs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
[ "${size:-0}" = 9 ]
tk_ok "a partial batch with one tweet locked by an open transaction goes out at once (${size:-no} tweets, ${secs} s)" $?
tk_summary claims
