#!/usr/bin/env bash
# Every network on one queue: an X worker, a Bluesky worker and Mastodon workers at once against
# the mock (X's /2/tweets, Bluesky's getPosts, two Mastodon servers, one of which wants a token),
# on one database. Bluesky posts are scheduled by URL; checks
# that each network's batches hold only its posts (at most 25 URIs a Bluesky batch), that every
# post the AppView shows is refreshed on its schedule, that a creation time from the answer
# (a backdated post) moves a post to its true age's delay, that posts the AppView leaves out are
# put off, not refreshed, that Bluesky reads bill nothing, and that nothing is lost or left leased,
# also when a Bluesky and a Mastodon worker are SIGKILLed with a batch in flight (the mock answers
# after 500 ms, so there is one to catch). Last, a Mastodon post on a host that resolves to
# loopback: not connected to unless --allow-private-hosts, the post kept.
# Prints "ok"/"not ok" lines and "networks: N passed, M failed".
set -uo pipefail
source "$(dirname "$0")/../lib/common.sh"
RUN_SECONDS=${RUN_SECONDS:-25}
BUFFER_TTL_S=1
SLACK_S=3

tk_workdir networks
tk_pg_start "$dir" -c tweetkeeper.buffer_ttl=${BUFFER_TTL_S}s -c tweetkeeper.lease_ttl=30s || exit 1
# --bluesky-refused-every 89: getPosts refuses a whole request holding a post of clock id 5 or 94
# (as the AppView does for a URI it calls malformed).
tk_mock_start "$dir/mock.log" --latency-ms 500 --bluesky-refused-every 89 || exit 1

# TIDs of posts made a minute ago: microseconds << 10 | clock id, base32-sortable, 13 characters.
tk_psql >/dev/null <<SQL || exit 1
CREATE EXTENSION tweetkeeper;
ALTER DATABASE tweetkeeper SET tweetkeeper.history_keep_unchanged = on;
CREATE ROLE tk_worker_login LOGIN IN ROLE tweetkeeper_worker;
$(tk_fast_policy_sql)
SELECT tweetkeeper.schedule_tweets($(tk_snowflake_sql '1 minute' 150 0));
$(tk_tid_sql)
SELECT tweetkeeper.schedule_posts(ARRAY(
  SELECT format('https://bsky.app/profile/did:plc:z72i7hdynmk6r22z27h6tvur/post/%s',
                public.tid(now() - interval '1 minute' + g * interval '1 ms', g))
    FROM generate_series(1, 120) g));
CREATE TABLE public.estimate AS SELECT tweet_id, created_at FROM tweetkeeper.tweets WHERE tweet_id < 0;
-- Mastodon statuses made a minute ago (ids: ms << 16) on a.social and on locked.social, which
-- answers only with a token.
SELECT tweetkeeper.schedule_posts(ARRAY(
  SELECT format('https://%s/@u/%s', h, ((extract(epoch FROM now() - interval '1 minute') * 1000)::bigint << 16) + g)
    FROM generate_series(1, 45) g, unnest(ARRAY['a.social', 'locked.social']) h));
-- And on old.social, which runs Mastodon 4.2: no GET /api/v1/statuses.
SELECT tweetkeeper.schedule_posts(ARRAY(
  SELECT format('https://old.social/@u/%s', ((extract(epoch FROM now() - interval '1 minute') * 1000)::bigint << 16) + g)
    FROM generate_series(101, 106) g));
-- Posts known by handle: alice's resolve (the mock gives every handle a DID), gone.example's not.
SELECT tweetkeeper.schedule_posts(ARRAY(
  SELECT format('https://bsky.app/profile/%s/post/%s', h, public.tid(now() - interval '2 minutes' + g * interval '1 ms', g))
    FROM generate_series(1, 6) g, unnest(ARRAY['alice.example.com', 'gone.example.com']) h));
SQL
n_x=$(tk_psql -c "SELECT count(*) FROM tweetkeeper.tweets WHERE tweet_id > 0")
n_b=$(tk_psql -c "SELECT count(*) FROM tweetkeeper.posts WHERE network = 'bluesky'")
n_h=$(tk_psql -c "SELECT count(*) FROM tweetkeeper.tweets WHERE endpoint = 'bluesky-handle'")
n_m=$(tk_psql -c "SELECT count(*) FROM tweetkeeper.posts WHERE network = 'mastodon'")
echo "# $n_x X tweets, $n_b Bluesky posts ($n_h of them by handle), $n_m Mastodon statuses; X, Bluesky and Mastodon workers for ${RUN_SECONDS}s against $TK_MOCK_URL"

export TWEETKEEPER_BEARER_TOKEN=networks-test-token
"$TK_WORKER" --dsn "$TK_DSN user=tk_worker_login" --api-url "$TK_MOCK_URL" --concurrency 2 --name x-worker \
  --poll-interval 200 >"$dir/x-worker.log" 2>&1 &
x_pid=$!
TK_PIDS+=($x_pid)
start_bsky() {
  env -u TWEETKEEPER_BEARER_TOKEN "$TK_WORKER" --provider bluesky --dsn "$TK_DSN user=tk_worker_login" \
    --api-url "$TK_MOCK_URL" --concurrency 2 --name bsky-worker --poll-interval 200 >>"$dir/bsky-worker.log" 2>&1 &
  b_pid=$!
  TK_PIDS+=($b_pid)
}
instances=(--instance "a.social=$TK_MOCK_URL/mastodon/a.social" --instance "locked.social=$TK_MOCK_URL/mastodon/locked.social"
           --instance "old.social=$TK_MOCK_URL/mastodon/old.social")
start_masto() {
  env -u TWEETKEEPER_BEARER_TOKEN "$TK_WORKER" --provider mastodon "${instances[@]}" --dsn "$TK_DSN user=tk_worker_login" \
    --concurrency 2 --name masto-worker --poll-interval 200 >>"$dir/masto-worker.log" 2>&1 &
  m_pid=$!
  TK_PIDS+=($m_pid)
}
start_bsky
start_masto
# A second Mastodon worker, with a token for locked.social, comes once that server has said 401.
tk_wait_for 20 "SELECT count(*) > 0 FROM tweetkeeper.endpoints WHERE endpoint = 'mastodon:locked.social' AND status = 'needs-token'"
locked_seen=$(tk_psql -c "SELECT status FROM tweetkeeper.endpoints WHERE endpoint = 'mastodon:locked.social'")
locked_refreshed=$(tk_psql -c "SELECT count(*) FROM tweetkeeper.posts WHERE url LIKE 'https://locked.social/%' AND update_count > 0")
echo "locked.social=networks-locked-token" >"$dir/masto-tokens"
chmod 600 "$dir/masto-tokens"
env -u TWEETKEEPER_BEARER_TOKEN "$TK_WORKER" --provider mastodon "${instances[@]}" --credentials "$dir/masto-tokens" \
  --dsn "$TK_DSN user=tk_worker_login" --concurrency 1 --name masto-token-worker --poll-interval 200 \
  >"$dir/masto-token-worker.log" 2>&1 &
t_pid=$!
TK_PIDS+=($t_pid)
# SIGKILL each of the Bluesky and the Mastodon worker while a batch of theirs is in flight (the
# mock answers after 500 ms), and start another at once: nothing may be lost, nothing stored
# from the killed request, nothing refreshed before its time.
# The worker is stopped (SIGSTOP) first, so the batches it holds cannot complete while they are
# read; if it holds none just then, it goes on (SIGCONT) and the next one is waited for.
killed=()
kill_in_flight() { # NAME PID START: SIGKILL worker NAME while it holds a batch, then START another
  local attempt leases
  for attempt in $(seq 1 20); do
    tk_wait_for 15 "SELECT count(*) > 0 FROM tweetkeeper.batches WHERE worker = '$1' AND outcome IS NULL" || return
    kill -STOP "$2"
    # A completion the worker sent just before it stopped may still be running in its session:
    # wait for its statements to end, so that the leases read are the ones it truly holds (seen:
    # two batches read as held, completed a moment later).
    tk_wait_for 10 "SELECT count(*) = 0 FROM pg_stat_activity WHERE application_name = 'tweetkeeper-worker $1' AND state = 'active'"
    leases=$(tk_psql -c "SELECT string_agg(lease_id::text, ' ') FROM tweetkeeper.batches WHERE worker = '$1' AND outcome IS NULL")
    if [ -n "$leases" ]; then
      kill -KILL "$2"
      tk_wait_exit "$2" 10
      $3
      killed+=($leases)
      kills=$((kills + 1))
      return
    fi
    kill -CONT "$2"
  done
}
kills=0
kill_in_flight bsky-worker "$b_pid" start_bsky
kill_in_flight masto-worker "$m_pid" start_masto
killed_at=$(tk_psql -c "SELECT now()")
sleep "$RUN_SECONDS" # sleep-ok: the run, over which refreshes are checked on schedule
stop=$(tk_psql -c "SELECT now()")
kill -TERM "$x_pid" "$b_pid" "$m_pid" "$t_pid"
tk_wait_exit "$x_pid" 30; rc_x=$TK_RC
tk_wait_exit "$b_pid" 30; rc_b=$TK_RC
tk_wait_exit "$m_pid" 30; rc_m=$TK_RC
tk_wait_exit "$t_pid" 30; rc_t=$TK_RC

[ "$rc_x" = 0 ] && [ "$rc_b" = 0 ] && [ "$rc_m" = 0 ] && [ "$rc_t" = 0 ] && r=t || r=f
tk_sql_ok "every worker exits 0 on SIGTERM (x $rc_x, bluesky $rc_b, mastodon $rc_m and $rc_t)" "SELECT '$r'::boolean"
tk_sql_ok "no post disappeared (those by handle now under their DIDs)" "SELECT count(*) = $n_x + $n_b + $n_m FROM tweetkeeper.tweets"
tk_sql_ok "nothing is left leased, no batch in flight" \
  "SELECT (SELECT count(*) = 0 FROM tweetkeeper.tweets WHERE lease_id IS NOT NULL)
      AND (SELECT count(*) = 0 FROM tweetkeeper.batches WHERE outcome IS NULL)"
ok_batch="CASE b.provider WHEN 'bluesky' THEN i < 0 AND b.size <= 25 AND b.endpoint IN ('bluesky', 'bluesky-handle')
                          WHEN 'mastodon' THEN i < 0 AND b.size <= 20
                                                AND b.endpoint IN ('mastodon:a.social', 'mastodon:locked.social', 'mastodon:old.social')
                                                AND (SELECT t.endpoint FROM tweetkeeper.tweets t WHERE t.tweet_id = i) = b.endpoint
                          ELSE i > 0 AND b.endpoint IS NULL END"
tk_sql_ok "each network's batches hold its own posts only: X's; Bluesky's (at most 25); Mastodon's (at most 20, of one server)" \
  "SELECT bool_and($ok_batch) FROM tweetkeeper.batches b, unnest(b.tweet_ids) i" \
  "SELECT DISTINCT b.lease_id, b.provider, b.endpoint, b.size FROM tweetkeeper.batches b, unnest(b.tweet_ids) i WHERE NOT ($ok_batch)"
tk_sql_ok "the posts known by handle went out as one batch of their own, to be resolved (again if a killed worker held it)" \
  "SELECT count(*) FILTER (WHERE outcome = 'completed') = 1 AND min(size) = $n_h AND max(size) = $n_h
          AND count(*) FILTER (WHERE outcome NOT IN ('completed', 'abandoned', 'expired')) = 0
     FROM tweetkeeper.batches WHERE endpoint = 'bluesky-handle'" \
  "SELECT lease_id, worker, size, claimed_at, finished_at, outcome, reason FROM tweetkeeper.batches WHERE endpoint = 'bluesky-handle'"
tk_sql_ok "Bluesky batches were full whenever 25 or more were due (the first ones)" \
  "SELECT count(*) FILTER (WHERE size = 25) >= 4 FROM tweetkeeper.batches WHERE provider = 'bluesky'"
tk_sql_ok "every partial Bluesky batch waited the buffer TTL for its oldest post" \
  "SELECT count(*) = 0 FROM tweetkeeper.batches WHERE provider = 'bluesky' AND size < 25
      AND claimed_at - oldest_due_at < interval '$BUFFER_TTL_S seconds'"
tk_sql_ok "Bluesky reads bill nothing; X's do" \
  "SELECT sum(billed) FILTER (WHERE provider = 'bluesky') = 0 AND sum(billed) FILTER (WHERE provider = 'x-v2') > 0
     FROM tweetkeeper.batches WHERE outcome = 'completed'"
tk_sql_ok "the posts the AppView shows were refreshed on the young schedule (3 times or more)" \
  "SELECT count(*) >= 100 AND min(update_count) >= 3 FROM tweetkeeper.posts
    WHERE network = 'bluesky' AND update_count > 0 AND created_at > now() - interval '1 hour'"
tk_sql_ok "their counts are stored, reposts as retweet_count, views NULL (Bluesky has none)" \
  "SELECT bool_and(like_count IS NOT NULL AND retweet_count IS NOT NULL AND bookmark_count IS NOT NULL
                   AND impression_count IS NULL)
     FROM tweetkeeper.posts WHERE network = 'bluesky' AND update_count > 0"
tk_sql_ok "history holds the Bluesky observations, views NULL" \
  "SELECT count(*) >= 300 AND bool_and(impression_count IS NULL) FROM tweetkeeper.metric_history WHERE tweet_id < 0"
tk_sql_ok "backdated posts (clock id % 17 = 3: the answer's createdAt is 10 days before the record key's) moved to their true age's delay" \
  "SELECT count(*) = 7 AND bool_and(t.delay = interval '1 day' AND t.update_count = 1)
     FROM tweetkeeper.tweets t JOIN public.estimate e USING (tweet_id)
    WHERE t.created_at < e.created_at - interval '9 days'"
tk_sql_ok "the others keep (within seconds) the record key's time" \
  "SELECT bool_and(abs(extract(epoch FROM t.created_at - e.created_at)) < 6)
     FROM tweetkeeper.tweets t JOIN public.estimate e USING (tweet_id)
    WHERE t.update_count > 1"
tk_sql_ok "posts the AppView leaves out (clock ids 7, 60, 113: % 53 = 7; 11, 72: % 61 = 11) were put off as omitted, never observed" \
  "SELECT count(*) = 5 AND bool_and(t.problem_type = 'omitted' AND t.omissions >= 1
                                     AND NOT EXISTS (SELECT 1 FROM tweetkeeper.metric_history h WHERE h.tweet_id = t.tweet_id))
     FROM tweetkeeper.tweets t WHERE t.endpoint = 'bluesky' AND t.update_count = 0
      AND t.problem_type IS DISTINCT FROM 'invalid-key'" \
  "SELECT t.tweet_id, r.post_key, t.update_count, t.problem_type, t.omissions FROM tweetkeeper.tweets t
     JOIN tweetkeeper.post_refs r USING (tweet_id) WHERE t.endpoint = 'bluesky' AND (t.update_count = 0 OR t.omissions > 0)"
tk_sql_ok "posts whose URI the AppView refuses (clock id 5: two by DID, one by handle; 94) are missing as invalid-key, never observed" \
  "SELECT count(*) = 3 AND bool_and(t.state = 'missing' AND t.update_count = 0
                                    AND t.problem_detail LIKE '%must be a valid at-uri%'
                                    AND NOT EXISTS (SELECT 1 FROM tweetkeeper.metric_history h WHERE h.tweet_id = t.tweet_id))
     FROM tweetkeeper.tweets t WHERE t.problem_type = 'invalid-key'" \
  "SELECT t.tweet_id, r.author, r.post_key, t.state, t.update_count, t.problem_type, t.problem_detail
     FROM tweetkeeper.tweets t JOIN tweetkeeper.post_refs r USING (tweet_id) WHERE t.problem_type = 'invalid-key' OR r.post_key LIKE '%2f'"
tk_sql_ok "and their batches were not handed back to fail again: no Bluesky batch released, the others' posts stored" \
  "SELECT count(*) FILTER (WHERE outcome = 'released') = 0 AND count(*) FILTER (WHERE outcome = 'completed') > 0
     FROM tweetkeeper.batches WHERE provider = 'bluesky'" \
  "SELECT lease_id, endpoint, size, outcome, reason FROM tweetkeeper.batches WHERE provider = 'bluesky' AND outcome = 'released' LIMIT 5"
tk_sql_ok "posts known by handle were re-keyed under the DID the handle resolved to, and refreshed (or, deleted, left out)" \
  "SELECT count(*) = 6 AND bool_and(r.author LIKE 'did:plc:%' AND t.endpoint = 'bluesky'
                                    AND (t.update_count >= 1 OR t.problem_type IN ('omitted', 'invalid-key')))
     FROM tweetkeeper.post_refs r JOIN tweetkeeper.tweets t USING (tweet_id)
    WHERE r.author = (SELECT did FROM tweetkeeper.bluesky_handles WHERE handle = 'alice.example.com')" \
  "SELECT r.*, t.endpoint, t.update_count FROM tweetkeeper.post_refs r JOIN tweetkeeper.tweets t USING (tweet_id) WHERE r.author NOT LIKE 'did:%' OR r.author IN (SELECT did FROM tweetkeeper.bluesky_handles)"
tk_sql_ok "posts of a handle that does not resolve are missing, and say why" \
  "SELECT count(*) = 6 AND bool_and(t.state = 'missing' AND t.problem_type = 'handle-unresolved'
                                    AND t.problem_detail LIKE '%gone.example.com does not resolve%')
     FROM tweetkeeper.post_refs r JOIN tweetkeeper.tweets t USING (tweet_id) WHERE r.author = 'gone.example.com'"
tk_sql_ok "both handles are remembered (one with its DID, one with why not)" \
  "SELECT count(*) = 2 AND count(did) = 1 AND count(problem) = 1 FROM tweetkeeper.bluesky_handles"
tk_sql_ok "a.social's statuses were refreshed (3 times or more) or, deleted or hidden, left out" \
  "SELECT count(*) = 45 AND bool_and(update_count >= 3 OR problem_type = 'omitted') AND count(*) FILTER (WHERE update_count >= 3) >= 30
     FROM tweetkeeper.posts WHERE url LIKE 'https://a.social/%'"
tk_sql_ok "Mastodon counts: favourites as like_count, boosts as retweet_count, quotes (4.5; NULL from old.social's 4.2); bookmarks and views NULL" \
  "SELECT bool_and(like_count IS NOT NULL AND retweet_count IS NOT NULL
                   AND (quote_count IS NOT NULL) = (url NOT LIKE 'https://old.social/%')
                   AND bookmark_count IS NULL AND impression_count IS NULL)
     FROM tweetkeeper.posts WHERE network = 'mastodon' AND update_count > 0"
tk_ok_if "locked.social said 401: it needed a token, and nothing of it was refreshed without one ($locked_seen, $locked_refreshed)" \
  "[ '$locked_seen' = needs-token ] && [ '$locked_refreshed' = 0 ]"
tk_sql_ok "the worker holding its token then refreshed locked.social's statuses (or, deleted, they were left out)" \
  "SELECT count(*) = 45 AND bool_and(p.update_count >= 1 OR p.problem_type = 'omitted')
     FROM tweetkeeper.posts p WHERE p.url LIKE 'https://locked.social/%'"
tk_sql_ok "and locked.social still says it needs a token, so workers without one never asked it again (one 401 in all)" \
  "SELECT (SELECT status FROM tweetkeeper.endpoints WHERE endpoint = 'mastodon:locked.social') = 'needs-token'
      AND (SELECT count(*) FROM tweetkeeper.batches WHERE endpoint = 'mastodon:locked.social' AND reason LIKE '%401%') = 1" \
  "SELECT lease_id, worker, claimed_at, finished_at, outcome, reason FROM tweetkeeper.batches
    WHERE endpoint = 'mastodon:locked.social' ORDER BY lease_id LIMIT 6"
tk_sql_ok "old.social (4.2): found out once, then read one status per request, every status refreshed or left out" \
  "SELECT (SELECT single_status FROM tweetkeeper.endpoints WHERE endpoint = 'mastodon:old.social')
      AND (SELECT count(*) FROM tweetkeeper.batches WHERE endpoint = 'mastodon:old.social' AND size > 1 AND outcome = 'released') = 1
      AND (SELECT bool_and(update_count >= 2 OR problem_type = 'omitted') AND count(*) = 6
             FROM tweetkeeper.posts WHERE url LIKE 'https://old.social/%')" \
  "SELECT lease_id, size, outcome, reason FROM tweetkeeper.batches WHERE endpoint = 'mastodon:old.social' ORDER BY lease_id LIMIT 5"
tk_sql_ok "each Mastodon server's window is recorded from its X-RateLimit headers" \
  "SELECT count(*) = 3 AND bool_and(requests_per_window = 300) FROM tweetkeeper.endpoints WHERE endpoint LIKE 'mastodon:%'"
tk_ok_if "a Bluesky and a Mastodon worker were SIGKILLed holding batches (leases ${killed[*]})" "[ $kills = 2 ]"
kl="ARRAY[${killed[*]:-0}]::bigint[]"
kl=${kl// /,}
tk_sql_ok "the killed batches were handed back (abandoned: their sessions were gone), nothing of them stored" \
  "SELECT count(*) = ${#killed[@]} AND bool_and(outcome IN ('abandoned', 'expired'))
          AND NOT EXISTS (SELECT 1 FROM tweetkeeper.metric_history h WHERE h.lease_id = ANY ($kl))
     FROM tweetkeeper.batches WHERE lease_id = ANY ($kl)" \
  "SELECT lease_id, provider, outcome, reason FROM tweetkeeper.batches WHERE lease_id = ANY ($kl)"
tk_sql_ok "and their posts were refreshed after the kill (each observed later, or left out by the API, or its handle found not to resolve)" \
  "SELECT bool_and(EXISTS (SELECT 1 FROM tweetkeeper.metric_history h WHERE h.tweet_id = i AND h.observed_at > '$killed_at')
                   OR (SELECT problem_type IN ('omitted', 'handle-unresolved', 'invalid-key') FROM tweetkeeper.tweets t WHERE t.tweet_id = i))
     FROM tweetkeeper.batches b, unnest(b.tweet_ids) i WHERE b.lease_id = ANY ($kl)" \
  "SELECT b.lease_id, i, t.endpoint, t.state, t.due_at, t.update_count, t.problem_type, t.updated_at
     FROM tweetkeeper.batches b, unnest(b.tweet_ids) i JOIN tweetkeeper.tweets t ON t.tweet_id = i
    WHERE b.lease_id = ANY ($kl) AND NOT EXISTS (SELECT 1 FROM tweetkeeper.metric_history h WHERE h.tweet_id = i AND h.observed_at > '$killed_at')
    LIMIT 10"
tk_sql_ok "no post of any network was refreshed before its delay (kills and restarts included)" \
  "$(tk_gaps_sql) SELECT coalesce(bool_and(gap >= delay - interval '50 ms'), false) FROM gaps WHERE gap IS NOT NULL" \
  "$(tk_gaps_sql) SELECT tweet_id, gap, delay FROM gaps WHERE gap < delay - interval '50 ms' LIMIT 10"
tk_sql_ok "X tweets were refreshed too" \
  "SELECT min(update_count) >= 3 FROM tweetkeeper.tweets WHERE tweet_id > 0 AND state = 'scheduled'"
tk_sql_ok "the Bluesky endpoint's window is recorded from the RateLimit headers" \
  "SELECT requests_per_window = 3000 AND requests > 0 FROM tweetkeeper.endpoints WHERE endpoint = 'bluesky'"

# A post URL's host that resolves into this network (libcurl resolves *.localhost to loopback
# itself, without DNS): no --instance maps it, so the Mastodon worker connects nowhere (SSRF),
# says why once, and hands each batch back: the post stays tracked. With --allow-private-hosts it
# connects (to https://evil.localhost:443, where nothing listens: a connection failure instead).
evil_url=$(tk_psql -c "SELECT format('https://evil.localhost/@u/%s', (extract(epoch FROM now() - interval '1 minute') * 1000)::bigint << 16)")
tk_psql -c "SELECT tweetkeeper.schedule_posts(ARRAY['$evil_url'])" >/dev/null
echo "evil.localhost=networks-evil-token" >"$dir/evil-tokens"
chmod 600 "$dir/evil-tokens"
start_evil() { # NAME [OPTION...]
  local name=$1
  shift
  env -u TWEETKEEPER_BEARER_TOKEN "$TK_WORKER" --provider mastodon "${instances[@]}" --credentials "$dir/evil-tokens" "$@" \
    --dsn "$TK_DSN user=tk_worker_login" --concurrency 2 --name "$name" --poll-interval 200 >"$dir/$name.log" 2>&1 &
  e_pid=$!
  TK_PIDS+=($e_pid)
  tk_wait_for 20 "SELECT count(*) >= 2 FROM tweetkeeper.batches WHERE endpoint = 'mastodon:evil.localhost' AND worker = '$name' AND outcome IS NOT NULL"
  kill -TERM "$e_pid"
  tk_wait_exit "$e_pid" 30
}
start_evil masto-evil
evil_batches="SELECT lease_id, worker, outcome, reason FROM tweetkeeper.batches WHERE endpoint = 'mastodon:evil.localhost' ORDER BY lease_id"
tk_sql_ok "a post on a host that resolves to loopback, not mapped: each batch released, nothing connected (the reason says so)" \
  "SELECT count(*) >= 2 AND bool_and(outcome = 'released' AND reason LIKE 'not connected: evil.localhost resolves to a private or loopback address (%)')
     FROM tweetkeeper.batches WHERE endpoint = 'mastodon:evil.localhost'" "$evil_batches"
refusals=$(grep -c 'mastodon: refusing evil.localhost: it resolves to a private or loopback address (.*); map it with --instance or pass --allow-private-hosts' "$dir/masto-evil.log")
tk_ok_if "the worker said why once, for all those batches ($refusals lines)" "[ '$refusals' = 1 ]"
tk_ok_if "and never its token" "! grep -q networks-evil-token '$dir/masto-evil.log'"
tk_sql_ok "the post is still tracked: scheduled, not leased, due, never observed" \
  "SELECT count(*) = 1 AND bool_and(state = 'scheduled' AND NOT in_flight AND due_at IS NOT NULL AND update_count = 0)
     FROM tweetkeeper.posts WHERE url = '$evil_url'" \
  "SELECT * FROM tweetkeeper.posts WHERE url = '$evil_url'"
start_evil masto-allow --allow-private-hosts
tk_sql_ok "with --allow-private-hosts the worker connects there (and finds nothing on port 443)" \
  "SELECT count(*) >= 1 AND bool_and(outcome = 'released' AND reason NOT LIKE '%private or loopback%' AND reason LIKE '%evil.localhost port 443%')
     FROM tweetkeeper.batches WHERE endpoint = 'mastodon:evil.localhost' AND worker = 'masto-allow'" "$evil_batches"
tk_summary networks
