#!/usr/bin/env bash
# Every id accounted for, end to end: the mock leaves some ids out of its answers (neither in
# `data` nor in `errors`, --omitted-every); workers put each off by its delay, doubled at each
# omission, and mark it 'missing' at the third, having asked for it exactly three times (no hot
# loop spends quota on it), while the other tweets keep being refreshed.
# Prints "accounted: N passed, M failed".
set -uo pipefail
source "$(dirname "$0")/../lib/common.sh"
tk_workdir accounted
tk_pg_start "$dir" -c tweetkeeper.buffer_ttl=1s || exit 1
tk_mock_start "$dir/mock.log" --deleted-every 0 --protected-every 0 --omitted-every 20 || exit 1
tk_psql >/dev/null <<SQL || exit 1
CREATE EXTENSION tweetkeeper;
$(tk_fast_policy_sql '1 hour' '2 seconds')
SELECT tweetkeeper.schedule_tweets($(tk_snowflake_sql '1 minute' 400));
SQL
omitted=$(tk_psql -c "SELECT count(*) FROM tweetkeeper.tweets WHERE tweet_id % 20 = 13")
echo "# 400 tweets, $omitted of them left out of every answer (id % 20 = 13); delay 2 s"
export TWEETKEEPER_BEARER_TOKEN=accounted-test-token
tk_start_workers 2 acc --api-url "$TK_MOCK_URL" --poll-interval 200
# Left out at ~1 s, ~3 s and ~7 s after the start (waits of 2 s, then 4 s): missing by ~10 s.
tk_wait_for 40 "SELECT count(*) = $omitted AND $omitted > 0 FROM tweetkeeper.tweets WHERE state = 'missing'"
tk_ok "the workers marked every id the mock leaves out missing, and only those ($omitted of 400)" $? \
  "$(tk_psql -c "SELECT state, problem_type, omissions, tweet_id % 20 = 13 AS left_out, count(*) FROM tweetkeeper.tweets GROUP BY 1, 2, 3, 4")"
# Two more rounds of the others (each refreshed twice more), during which no missing tweet may be
# asked for.
tk_psql -c "CREATE TABLE public.at_missing AS SELECT tweet_id, update_count FROM tweetkeeper.tweets WHERE tweet_id % 20 <> 13" >/dev/null
tk_wait_for 40 "SELECT bool_and(t.update_count >= m.update_count + 2) FROM tweetkeeper.tweets t JOIN public.at_missing m USING (tweet_id)"
tk_ok "the other tweets were refreshed twice more after that" $?
tk_stop_workers

tk_sql_ok "each of them is missing, rechecked only after unavailable_recheck (7 days)" \
  "SELECT bool_and(state = 'missing' AND due_at > now() + interval '6 days' AND problem_type = 'omitted')
     FROM tweetkeeper.tweets WHERE tweet_id % 20 = 13"
tk_sql_ok "each was asked for exactly missing_after (3) times: no hot loop" \
  "SELECT bool_and(omissions = 3) FROM tweetkeeper.tweets WHERE tweet_id % 20 = 13"
tk_sql_ok "the batches counted exactly those omissions" \
  "SELECT sum(omitted) = 3 * $omitted FROM tweetkeeper.batches"
tk_sql_ok "the other tweets were never left out, and refreshed several times meanwhile" \
  "SELECT bool_and(omissions = 0 AND state = 'scheduled' AND problem_type IS NULL) AND min(update_count) >= 3
     FROM tweetkeeper.tweets WHERE tweet_id % 20 <> 13"
tk_sql_ok "queue_stats shows them missing" \
  "SELECT tweets = $omitted FROM tweetkeeper.queue_stats WHERE state = 'missing'"
tk_sql_ok "batch_stats shows the ids left out" \
  "SELECT ids_left_out = 3 * $omitted FROM tweetkeeper.batch_stats WHERE window_name = 'last hour'"
if grep -q "the answer left out" "$dir"/acc-*.log; then
  tk_pass "the workers log the ids left out"
else
  tk_fail "the workers log the ids left out" "$(tail -5 "$dir"/acc-1.log)"
fi

# A batch made only of ids the answers leave out (a queue of nothing else, or the recheck of
# missing tweets): the answer is {}, and still each id is put off, not handed back.
tk_psql -c "UPDATE tweetkeeper.tweets SET state = 'done', due_at = NULL WHERE tweet_id % 20 <> 13" \
        -c "UPDATE tweetkeeper.tweets SET state = 'scheduled', omissions = 0, problem_type = NULL,
                   due_at = now(), delay = interval '2 seconds' WHERE tweet_id % 20 = 13" >/dev/null
before=$(curl -s "$TK_MOCK_URL/mock/stats" | jq .requests)
# (The batches of this run only: stopping the first run's workers may hand back a batch one of
# them had just claimed, 'worker shutting down', which is right there.)
since=$(tk_psql -c "SELECT clock_timestamp()")
tk_start_workers 1 only --api-url "$TK_MOCK_URL" --poll-interval 200
tk_wait_for 40 "SELECT count(*) = $omitted FROM tweetkeeper.tweets WHERE state = 'missing'"
tk_ok "a batch of only left-out ids: every one missing again within 40 s" $?
# Not a wait for readiness but the window a fourth request would come in: a missing id is due
# again in 7 days; one left due would be asked for within its delay (2 s) + buffer TTL (1 s).
sleep 3 # sleep-ok: a request that must not come: the window it would come in is watched
tk_stop_workers
requests=$(( $(curl -s "$TK_MOCK_URL/mock/stats" | jq .requests) - before ))
tk_sql_ok "a batch of only left-out ids: each missing after exactly 3 omissions" \
  "SELECT bool_and(state = 'missing' AND omissions = 3) FROM tweetkeeper.tweets WHERE tweet_id % 20 = 13"
tk_sql_ok "in 3 requests of $omitted ids each, none released ($requests requests)" \
  "SELECT $requests = 3 AND count(*) FILTER (WHERE outcome = 'released') = 0 FROM tweetkeeper.batches
    WHERE claimed_at >= '$since'" \
  "SELECT outcome, size, reason, claimed_at FROM tweetkeeper.batches ORDER BY claimed_at DESC LIMIT 6"
tk_summary accounted
