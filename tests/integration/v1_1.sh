#!/usr/bin/env bash
# The v1.1 provider end to end: a worker with --provider x-v1.1 against the mock's
# /1.1/statuses/lookup.json refreshes every tweet; v1.1 has no reply/quote counts, and its
# missing tweets (null in map=true) become 'unavailable', asked again later.
# Prints "v1.1: N passed, M failed".
set -uo pipefail
source "$(dirname "$0")/../lib/common.sh"
dir=$(tk_tmpdir v11)
cleanup() { tk_cleanup; tk_pg_stop "$dir"; [ -n "${KEEP:-}" ] || rm -rf "$dir"; }
trap cleanup EXIT
passed=0
failed=0
check() {
  if [ "$(tk_psql -c "$2")" = t ]; then echo "ok - $1"; passed=$((passed + 1)); else echo "not ok - $1"; failed=$((failed + 1)); fi
}
tk_pg_start "$dir" -c tweetkeeper.buffer_ttl=1s || exit 1
tk_mock_start "$dir/mock.log" --deleted-every 53 --protected-every 61 || exit 1
tk_psql >/dev/null <<'SQL' || exit 1
CREATE EXTENSION tweetkeeper;
SELECT tweetkeeper.schedule_tweets(ARRAY(SELECT (((extract(epoch FROM now() - interval '2 hours') * 1000)::bigint - 1288834974657) << 22) + g FROM generate_series(1, 350) g));
SQL
TWEETKEEPER_BEARER_TOKEN=v11-token "$TK_WORKER" --dsn "$TK_DSN" --api-url "$TK_MOCK_URL" --provider x-v1.1 \
  --exit-when-idle 3 --poll-interval 500 --name v11 >"$dir/worker.log" 2>&1 &
pid=$!
TK_PIDS+=($pid)
tk_wait_exit "$pid" 60
check "the v1.1 worker exits 0 once idle (was $TK_RC)" "SELECT '$TK_RC' = '0'"
check "every tweet was answered: observed or marked missing" \
  "SELECT count(*) = 350 FROM tweetkeeper.tweets WHERE update_count = 1 OR problem_type = 'v1.1-missing'"
check "observed tweets have v1.1's counts (retweets, likes) and no v2-only ones" \
  "SELECT bool_and(retweet_count IS NOT NULL AND like_count IS NOT NULL AND reply_count IS NULL AND impression_count IS NULL) FROM tweetkeeper.tweets WHERE update_count = 1"
check "missing tweets (deleted or protected: v1.1 cannot tell) are unavailable, asked again later" \
  "SELECT count(*) > 0 AND bool_and(state = 'unavailable' AND due_at > now() + interval '6 days') FROM tweetkeeper.tweets WHERE problem_type = 'v1.1-missing'"
check "the mock's rule: exactly the deleted and protected ids are missing" \
  "SELECT bool_and((problem_type = 'v1.1-missing') = (tweet_id % 53 = 7 OR tweet_id % 61 = 11)) FROM tweetkeeper.tweets"
requests=$(curl -s "$TK_MOCK_URL/mock/stats" | jq '.status_counts["200"] // 0')
check "four requests for 350 tweets ($requests)" "SELECT $requests = 4"
echo "v1.1: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
