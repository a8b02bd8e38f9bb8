#!/usr/bin/env bash
# Payloads end to end (issue 22): with tweetkeeper.payloads = changed set on the database, X and
# Bluesky workers against the mock keep each post's object as the API gave it (X: the tweet and
# its author from includes, asked for only then: the WARC files show the requests), erase
# nothing of the posts found, leave tombstones for the deleted and protected ones, follow edits
# to the newest version, and store no second payload when only the counts changed. With the
# setting back to none, the workers ask for the counts only.
# Prints "payloads: N passed, M failed".
set -uo pipefail
source "$(dirname "$0")/../lib/common.sh"
tk_workdir payloads
tk_pg_start "$dir" -c tweetkeeper.buffer_ttl=1s || exit 1
tk_mock_start "$dir/mock.log" --edited-every 29 || exit 1
tk_psql >/dev/null <<SQL || exit 1
CREATE EXTENSION tweetkeeper;
ALTER DATABASE tweetkeeper SET tweetkeeper.payloads = 'changed';
SELECT tweetkeeper.schedule_tweets($(tk_snowflake_sql '2 hours' 240));
$(tk_tid_sql)
$(tk_bluesky_posts_sql '2 hours' 40 '1 ms')
SQL
export TWEETKEEPER_BEARER_TOKEN=payloads-token
# run_workers NAME: an X and a Bluesky worker until both are idle, recording into $dir/NAME.
run_workers() {
  mkdir -p "$dir/$1"
  "$TK_WORKER" --dsn "$TK_DSN" --api-url "$TK_MOCK_URL" --exit-when-idle 3 --poll-interval 300 --name "x-$1" \
    --warc-dir "$dir/$1" >"$dir/x-$1.log" 2>&1 &
  local x=$!
  env -u TWEETKEEPER_BEARER_TOKEN "$TK_WORKER" --provider bluesky --dsn "$TK_DSN" --api-url "$TK_MOCK_URL" \
    --exit-when-idle 3 --poll-interval 300 --name "b-$1" >"$dir/b-$1.log" 2>&1 &
  local b=$!
  TK_PIDS+=($x $b)
  tk_wait_exit "$x" 90
  x_rc=$TK_RC
  tk_wait_exit "$b" 90
  b_rc=$TK_RC
}
# requests NAME: the request lines the X worker recorded
requests() { zcat "$dir/$1"/*.warc.gz | tr -d '\r' | grep -a '^GET /2/tweets' || true; }

run_workers first
tk_sql_ok "both workers exit 0 once idle (x $x_rc, bluesky $b_rc)" "SELECT '$x_rc $b_rc' = '0 0'"
expansion=$(requests first | grep -c 'expansions=author_id&user.fields=' || true)
all=$(requests first | wc -l)
tk_sql_ok "with payloads on, every X request asks for the payload's fields and the author ($expansion of $all)" \
  "SELECT $all > 0 AND $expansion = $all"
tk_sql_ok "every X tweet found has one payload: the tweet as the mock gave it, its author beside it" \
  "SELECT count(*) = (SELECT count(*) FROM tweetkeeper.tweets WHERE tweet_id > 0 AND update_count > 0)
          AND bool_and(p.payload->>'id' = p.tweet_id::text AND p.payload->>'text' = 'Mock tweet ' || p.tweet_id
                       AND p.payload ? 'created_at' AND p.payload ? 'lang' AND p.payload ? 'public_metrics'
                       AND p.author->>'id' = p.payload->>'author_id' AND p.author ? 'username')
     FROM tweetkeeper.payloads p WHERE p.tweet_id > 0" \
  "SELECT tweet_id, payload, author FROM tweetkeeper.payloads WHERE tweet_id > 0 LIMIT 2"
tk_sql_ok "every Bluesky post found has its postView as payload" \
  "SELECT count(*) = (SELECT count(*) FROM tweetkeeper.tweets WHERE tweet_id < 0 AND update_count > 0) AND count(*) > 0
          AND bool_and(p.payload->>'uri' = format('at://%s/app.bsky.feed.post/%s', r.author, r.post_key)
                       AND p.payload ? 'record' AND p.payload ? 'author' AND p.author IS NULL)
     FROM tweetkeeper.payloads p JOIN tweetkeeper.post_refs r ON r.tweet_id = p.tweet_id" \
  "SELECT p.payload, r.post_key FROM tweetkeeper.payloads p JOIN tweetkeeper.post_refs r ON r.tweet_id = p.tweet_id LIMIT 1"
tk_sql_ok "deleted and protected tweets: no payload, a tombstone with the API's reason" \
  "SELECT count(*) > 0 AND bool_and(x.reason = CASE WHEN t.tweet_id % 53 = 7 THEN 'resource-not-found'
                                                    ELSE 'not-authorized-for-resource' END)
          AND NOT bool_or(EXISTS (SELECT FROM tweetkeeper.payloads p WHERE p.tweet_id = t.tweet_id))
          AND count(*) = (SELECT count(*) FROM tweetkeeper.tweets WHERE tweet_id > 0 AND (tweet_id % 53 = 7 OR tweet_id % 61 = 11))
     FROM tweetkeeper.tweets t JOIN tweetkeeper.tombstones x USING (tweet_id)"
tk_sql_ok "edited tweets link to their newest version, which was refreshed and kept too (or is gone itself)" \
  "SELECT count(*) > 0 AND bool_and(e.newest_id = e.tweet_id + (1000::bigint << 22) AND t.problem_type = 'edited'
                                    AND t.state = 'done'
                                    AND ((n.update_count > 0 AND EXISTS (SELECT FROM tweetkeeper.payloads p WHERE p.tweet_id = e.newest_id))
                                         OR EXISTS (SELECT FROM tweetkeeper.tombstones x WHERE x.tweet_id = e.newest_id)))
          AND count(*) = (SELECT count(*) FROM tweetkeeper.tweets WHERE tweet_id > 0
                            AND tweet_id % 29 = 5 AND tweet_id % 53 <> 7 AND tweet_id % 61 <> 11
                            AND NOT EXISTS (SELECT FROM tweetkeeper.edits x WHERE x.newest_id = tweet_id))
     FROM tweetkeeper.edits e JOIN tweetkeeper.tweets t USING (tweet_id) JOIN tweetkeeper.tweets n ON n.tweet_id = e.newest_id" \
  "SELECT e.tweet_id, e.newest_id, t.state, t.problem_type, n.state, n.update_count, n.problem_type,
          (SELECT count(*) FROM tweetkeeper.payloads p WHERE p.tweet_id = e.newest_id)
     FROM tweetkeeper.edits e JOIN tweetkeeper.tweets t USING (tweet_id) LEFT JOIN tweetkeeper.tweets n ON n.tweet_id = e.newest_id;
   SELECT tweet_id, state, problem_type FROM tweetkeeper.tweets WHERE tweet_id > 0 AND tweet_id % 29 = 5"

# Again: the counts grew, the content did not.
payloads_before=$(tk_psql -c "SELECT count(*) FROM tweetkeeper.payloads")
history_before=$(tk_psql -c "SELECT count(*) FROM tweetkeeper.metric_history")
tk_psql -c "UPDATE tweetkeeper.tweets SET due_at = now() - interval '1 minute' WHERE due_at IS NOT NULL" >/dev/null
run_workers second
tk_sql_ok "a second round with new counts and the same content stores no payload ($payloads_before before)" \
  "SELECT count(*) = $payloads_before AND (SELECT count(*) FROM tweetkeeper.metric_history) > $history_before
     FROM tweetkeeper.payloads"

# Off again: counts only.
tk_psql -c "ALTER DATABASE tweetkeeper SET tweetkeeper.payloads = 'none'" >/dev/null
tk_psql -c "UPDATE tweetkeeper.tweets SET due_at = now() - interval '1 minute' WHERE due_at IS NOT NULL" >/dev/null
run_workers third
expansion=$(requests third | grep -c 'expansions=' || true)
all=$(requests third | wc -l)
tk_sql_ok "with payloads none, the X requests ask for the counts only ($expansion of $all ask for more)" \
  "SELECT $all > 0 AND $expansion = 0"
tk_summary payloads
