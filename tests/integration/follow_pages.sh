#!/usr/bin/env bash
# An X account with more than a page of new posts (issue 49): its read takes several pages of
# 100, and all of them are stored and billed (record_follow_read() takes at most a page's 100 ids
# a call, so the follower records each page by a call of its own). Before, the whole read went in
# one call, was refused (54000) with its store, and the follower read the account again from
# the start, over and over: no post stored, every read without since_id. Here one posting
# account of the mock (2 posts a second) is followed as if 3 minutes ago (about 360 posts: 4
# pages); the check waits for its posts in the database, then reads the mock's log of answers.
# Prints "ok"/"not ok" lines and "follow_pages: N passed, M failed".
set -uo pipefail
source "$(dirname "$0")/../lib/common.sh"

tk_workdir follow_pages
tk_pg_start "$dir" || exit 1
tk_mock_start "$dir/mock.log" --follow-accounts 1 --follow-rate 2 --answer-log "$dir/answers" || exit 1
url=$(curl -sf "$TK_MOCK_URL/mock/follow/accounts?network=x" |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["accounts"][0]["url"])')
tk_psql >/dev/null <<SQL || exit 1
CREATE EXTENSION tweetkeeper;
CREATE ROLE tk_follower LOGIN IN ROLE tweetkeeper_worker;
SELECT tweetkeeper.follow('$url');
-- Followed 3 minutes ago: its posts since are new to it (the mock's past is a function of the clock).
UPDATE tweetkeeper.followed_accounts SET since = now() - interval '3 minutes';
SQL

export TWEETKEEPER_BEARER_TOKEN=follow-pages-token
"$TK_WORKER" --dsn "$TK_DSN user=tk_follower" --name x-1 --provider x-v2 --api-url "$TK_MOCK_URL" --follow \
  --follow-share 1 --follow-min-poll 1 --follow-max-poll 8 --log-level debug >"$dir/x-1.log" 2>&1 &
TK_PIDS+=($!)

tk_wait_for 30 "SELECT posts_found > 300 FROM tweetkeeper.follows WHERE network = 'x'"
found=$(tk_psql -c "SELECT posts_found FROM tweetkeeper.follows WHERE network = 'x'")
tk_ok "the account's posts of 3 minutes (more than 3 pages) stored" "$([ "${found:-0}" -gt 300 ]; echo $?)" \
  "posts_found ${found:-none}; $(grep -m3 -iE 'error|54000|failed' "$dir/x-1.log")"
# Its first read, from the follow (start_time), paged; every read after it from the newest post stored.
timeline="/2/users/[0-9]+/tweets"
first=$(grep -E "$timeline" "$dir/answers" | grep -v since_id | grep -vc pagination_token)
pages=$(grep -E "$timeline" "$dir/answers" | grep -v since_id | grep -c pagination_token)
tk_ok "read from the follow once, in pages ($first first request(s), $pages next page(s))" \
  "$([ "$first" = 1 ] && [ "$pages" -ge 3 ]; echo $?)"
requests=$(tk_psql -c "SELECT coalesce(sum(requests), 0) FROM tweetkeeper.daily_usage WHERE provider = 'x-v2'")
tk_ok "each page counted a request ($requests for $((first + pages)) pages of the first read)" \
  "$([ "$requests" -ge $((first + pages)) ]; echo $?)"
tk_summary follow_pages
