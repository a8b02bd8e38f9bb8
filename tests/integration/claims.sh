#!/usr/bin/env bash
# Claims that meet a lock. 1: a partial batch that finds one of its tweets locked by another
# session is left to that session only briefly (a claim commits in milliseconds). Here the lock
# is an operator's open transaction, held for seconds: the other nine tweets, due for two hours,
# must still go out at once. 2: a Bluesky claim reads its endpoint's window without a lock and
# counts its request last, under the row's lock; when the window is used up meanwhile (here by
# an operator's transaction holding that lock), the claim must be undone: no batch, its posts
# due as they were, and a wait that says why. Prints "claims: N passed, M failed".
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
TK_POLL_S=0.1 tk_wait_for 5 "SELECT count(*) > 0 FROM pg_locks l JOIN pg_stat_activity a USING (pid)
                             WHERE l.locktype = 'transactionid' AND a.query LIKE '%pg_sleep%'"
t0=$(date +%s.%N)
size=$(tk_psql -c "SELECT cardinality(tweet_ids) FROM tweetkeeper.claim_batch('claims-test')")
secs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
[ "${size:-0}" = 9 ]
tk_ok "a partial batch with one tweet locked by an open transaction goes out at once (${size:-no} tweets, ${secs} s)" $?

tk_psql >/dev/null <<SQL || exit 1
$(tk_tid_sql)
$(tk_bluesky_posts_sql '2 hours' 30 '1 second')
UPDATE tweetkeeper.tweets SET due_at = now() - interval '1 hour' - tweet_id % 1000 * interval '1 ms' WHERE tweet_id < 0;
INSERT INTO tweetkeeper.endpoints (endpoint, answered_at, requests_per_window, remaining, window_reset_at)
VALUES ('bluesky', now(), 3000, 100, now() + interval '5 minutes');
SQL
posts_sql="SELECT string_agg(tweet_id || ' ' || due_at || ' ' || coalesce(lease_id, 0), ',' ORDER BY tweet_id)
             FROM tweetkeeper.tweets WHERE tweet_id < 0"
before=$(tk_psql -c "$posts_sql")
# The operator: holds the endpoint's row while the claim reaches it, then uses the window up.
tk_psql -c "BEGIN" -c "UPDATE tweetkeeper.endpoints SET requests = requests WHERE endpoint = 'bluesky'" \
  -c "SELECT pg_sleep(3)" -c "UPDATE tweetkeeper.endpoints SET remaining = 0 WHERE endpoint = 'bluesky'" \
  -c "COMMIT" >/dev/null 2>&1 &
TK_PIDS+=($!)
TK_POLL_S=0.1 tk_wait_for 5 "SELECT count(*) > 0 FROM pg_stat_activity WHERE query LIKE '%pg_sleep(3)%' AND state = 'active'
                               AND pid <> pg_backend_pid()"
got=$(tk_psql -c "SELECT coalesce(lease_id::text, 'no lease') || ': ' || coalesce(wait_reason, '')
                    FROM tweetkeeper.claim_posts('claims-test', 25, 'bluesky')")
waited=$(tk_psql -c "SELECT count(*) FROM tweetkeeper.endpoints WHERE remaining = 0")
[ "$got" = "no lease: bluesky: its window changed meanwhile" ] && [ "$waited" = 1 ]
tk_ok "a Bluesky claim whose window was used up while it waited for the endpoint's row gets no lease, and says why ($got)" $?
[ "$(tk_psql -c "SELECT count(*) FROM tweetkeeper.batches WHERE provider = 'bluesky'")" = 0 ]
tk_ok "and leaves no batch" $?
[ "$(tk_psql -c "$posts_sql")" = "$before" ]
tk_ok "and its posts as they were: due when they were, held by no lease" $?
[ "$(tk_psql -c "SELECT count(*) FROM tweetkeeper.claim_posts('claims-test', 25, 'bluesky') WHERE lease_id IS NULL
                  AND wait_reason = 'bluesky window used up'")" = 1 ]
tk_ok "the next claim sees the window used up" $?

# Lanes: four sessions claim at once from a server whose window has 150 requests left; whether
# a claim counts on the endpoint's row or in a lane, together they get exactly 150 leases.
tk_psql >/dev/null <<SQL || exit 1
UPDATE tweetkeeper.tweets SET due_at = now() + interval '1 day' WHERE tweet_id < 0;
SELECT tweetkeeper.schedule_posts(ARRAY(SELECT format('https://e.social/@u/%s', 113284726341234500 + g)
                                          FROM generate_series(1, 400) g));
UPDATE tweetkeeper.tweets SET due_at = now() - interval '1 hour' WHERE endpoint = 'mastodon:e.social';
INSERT INTO tweetkeeper.endpoints (endpoint, answered_at, requests_per_window, remaining, window_reset_at)
VALUES ('mastodon:e.social', now(), 3000, 150, now() + interval '5 minutes');
SQL
echo "SELECT count(*) FROM tweetkeeper.claim_posts('lanes-test', 1, 'mastodon') WHERE lease_id IS NOT NULL;" >"$dir/claim.sql"
out=$(pgbench -n -c 4 -j 2 -t 100 -f "$dir/claim.sql" 2>&1)
tk_ok "four sessions claim 400 times at once" $? "$out"
counts=$(tk_psql -c "SELECT (SELECT count(*) FROM tweetkeeper.batches WHERE endpoint = 'mastodon:e.social') || ' '
                            || (SELECT remaining || ' ' || requests FROM tweetkeeper.endpoint_stats WHERE endpoint = 'mastodon:e.social') || ' '
                            || (SELECT count(DISTINCT id) FROM tweetkeeper.batches, unnest(tweet_ids) id WHERE endpoint = 'mastodon:e.social')")
lane_requests=$(tk_psql -c "SELECT coalesce(sum(requests), 0) FROM tweetkeeper.endpoint_lanes WHERE endpoint = 'mastodon:e.social'")
[ "$counts" = "150 0 150 150" ]
tk_ok "a window of 150 requests gave exactly 150 leases, each of its own post; none left (batches, remaining, requests, posts: $counts; $lane_requests of them counted in lanes)" $?
[ "${lane_requests:-0}" -gt 0 ]
tk_ok "the lanes took part" $?

# Remembered heads (delay_heads(), claim_heads()): a session's claims start each delay's read at
# the head they last saw, so a tweet put below it must send the session back to a full look:
# when another session moves it earlier (a release, an operator's UPDATE) to a due time less than
# a second after its transaction began, at that commit (one due later is found by the full look
# every session makes at least once a second, before it is due); when
# this session's own transaction rolls back (its tweets are back where they were). Thirty X
# tweets due an hour and more ago, one second apart; one session claims, another writes between
# its statements (psql's \!).
tk_psql >/dev/null <<SQL || exit 1
DELETE FROM tweetkeeper.tweets;
SELECT tweetkeeper.schedule_tweets($(tk_snowflake_sql '2 hours' 30 1000));
UPDATE tweetkeeper.tweets SET due_at = now() - interval '1 hour' - (tweet_id % 1000) * interval '1 second'
 WHERE tweet_id > 0;
SQL
first=$(tk_psql -c "SELECT tweet_id FROM tweetkeeper.tweets WHERE tweet_id > 0 ORDER BY due_at LIMIT 1")
out=$(tk_psql 2>&1 <<SQL
SELECT cardinality(tweet_ids) FROM tweetkeeper.claim_batch('heads', 10);
SELECT (tweetkeeper_internal.claim_heads('1 hour')).delays IS NOT NULL;
SELECT cardinality(tweet_ids) FROM tweetkeeper.claim_batch('heads', 10);
SELECT (tweetkeeper_internal.claim_heads('1 hour')).heads[1] = (SELECT oldest_due_at FROM tweetkeeper.batches WHERE worker = 'heads' ORDER BY lease_id DESC LIMIT 1);
\! psql -X -q -c "UPDATE tweetkeeper.tweets SET due_at = now() + interval '30 seconds', lease_id = NULL WHERE tweet_id = (SELECT max(tweet_id) FROM tweetkeeper.tweets WHERE lease_id IS NOT NULL)"
SELECT (tweetkeeper_internal.claim_heads('1 hour')).delays IS NOT NULL;
\! psql -X -q -c "UPDATE tweetkeeper.tweets SET due_at = now() - interval '5 hours', lease_id = NULL WHERE tweet_id = $first"
SELECT (tweetkeeper_internal.claim_heads('1 hour')).delays IS NULL;
SELECT tweet_ids[1] = $first FROM tweetkeeper.claim_batch('heads', 1);
BEGIN;
SELECT cardinality(tweet_ids) FROM tweetkeeper.claim_batch('heads', 5);
SELECT cardinality(tweet_ids) FROM tweetkeeper.claim_batch('heads', 5);
ROLLBACK;
SELECT (tweetkeeper_internal.claim_heads('1 hour')).delays IS NULL;
SELECT cardinality(tweet_ids) FROM tweetkeeper.claim_batch('heads', 9);
SQL
)
[ "$(echo "$out" | tr '\n' ' ')" = "10 t 10 t t t t 5 5 t 9 " ]
tk_ok "remembered heads: kept between claims, each claim starting past the tweets the one before took; a tweet another session moves earlier but due a second or more from now keeps them (a completion of a delay shorter than the lease); one it moves below, due now, sends the next claim to a full look, which finds it; a rollback forgets them" $? "$out"
tk_summary claims
