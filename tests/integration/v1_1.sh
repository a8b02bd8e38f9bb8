#!/usr/bin/env bash
# The v1.1 provider end to end: a worker with --provider x-v1.1 against the mock's
# /1.1/statuses/lookup.json refreshes every tweet; v1.1 has no reply/quote counts, and its
# missing tweets (null in map=true) become 'unavailable', asked again later. It keeps no payloads
# (tweetkeeper.payloads is on here), and says so.
# Prints "v1.1: N passed, M failed".
set -uo pipefail
source "$(dirname "$0")/../lib/common.sh"
tk_workdir v11
tk_pg_start "$dir" -c tweetkeeper.buffer_ttl=1s || exit 1
tk_mock_start "$dir/mock.log" --deleted-every 53 --protected-every 61 || exit 1
tk_psql >/dev/null <<SQL || exit 1
CREATE EXTENSION tweetkeeper;
-- On, which v1.1 cannot honour: the worker says so once and stores the counts.
ALTER DATABASE tweetkeeper SET tweetkeeper.payloads = 'changed';
SELECT tweetkeeper.schedule_tweets($(tk_snowflake_sql '2 hours' 350));
SQL
TWEETKEEPER_BEARER_TOKEN=v11-token "$TK_WORKER" --dsn "$TK_DSN" --api-url "$TK_MOCK_URL" --provider x-v1.1 \
  --exit-when-idle 3 --poll-interval 500 --name v11 >"$dir/worker.log" 2>&1 &
pid=$!
TK_PIDS+=($pid)
tk_wait_exit "$pid" 60
tk_sql_ok "the v1.1 worker exits 0 once idle (was $TK_RC)" "SELECT '$TK_RC' = '0'"
tk_sql_ok "every tweet was answered: observed or marked missing" \
  "SELECT count(*) = 350 FROM tweetkeeper.tweets WHERE update_count = 1 OR problem_type = 'v1.1-missing'"
tk_sql_ok "observed tweets have v1.1's counts (retweets, likes) and no v2-only ones" \
  "SELECT bool_and(retweet_count IS NOT NULL AND like_count IS NOT NULL AND reply_count IS NULL AND impression_count IS NULL) FROM tweetkeeper.tweets WHERE update_count = 1"
tk_sql_ok "missing tweets (deleted or protected: v1.1 cannot tell) are unavailable, asked again later" \
  "SELECT count(*) > 0 AND bool_and(state = 'unavailable' AND due_at > now() + interval '6 days') FROM tweetkeeper.tweets WHERE problem_type = 'v1.1-missing'"
tk_sql_ok "the mock's rule: exactly the deleted and protected ids are missing" \
  "SELECT bool_and((problem_type = 'v1.1-missing') = (tweet_id % 53 = 7 OR tweet_id % 61 = 11)) FROM tweetkeeper.tweets"
warned=$(grep -c "keeps no payloads" "$dir/worker.log")
tk_sql_ok "with tweetkeeper.payloads on, the v1.1 worker says once that it keeps none, and none are stored ($warned warnings)" \
  "SELECT $warned = 1 AND NOT EXISTS (SELECT FROM tweetkeeper.payloads)"
stats=$(curl -s "$TK_MOCK_URL/mock/stats")
requests=$(jq '.status_counts["200"] // 0' <<<"$stats")
tk_sql_ok "four requests for 350 tweets ($requests; sizes $(jq -c .batch_sizes <<<"$stats"))" "SELECT $requests = 4" \
  "SELECT string_agg(format('%s %s %s..%s', size, coalesce(outcome, 'open'), claimed_at::time, finished_at::time), E'\\n' ORDER BY claimed_at) FROM tweetkeeper.batches; SELECT '$(grep -c . "$dir/worker.log") log lines: ' || '$(grep -v ' info ' "$dir/worker.log" | head -5 | tr "'\n" '" ')'"
tk_summary v1.1
