#!/usr/bin/env bash
# Deleted means deleted (issue 53), end to end on the mock, for each network: posts still refreshed
# and posts past their last refresh are made gone at the source (POST /mock/gone: a post deleted,
# a post made private, an account deleted, deactivated or taken down), and within one refresh or
# compliance cycle each is marked gone with its reason, its payloads erased, absent from later
# exports, and (tweetkeeper-warc purge) out of the WARC files the workers recorded, while every
# other post stays everywhere. X's posts past their last refresh are found by a batch compliance
# job (no read), Bluesky's and Mastodon's by a recheck read; a Bluesky account's takedown and
# deletion come from the stream at once, and its reactivation brings its posts back.
# Prints "ok"/"not ok" lines and "deletions: N passed, M failed".
set -uo pipefail
source "$(dirname "$0")/../lib/common.sh"
EXPORT=$TK_BUILD/worker/tweetkeeper-export
WARC=$TK_BUILD/worker/tweetkeeper-warc
TOKEN=deletions-test-secret-token

tk_workdir deletions
# (missing_after 1: a Bluesky or Mastodon post left out of one answer is gone at once. Posts past
# their last refresh are checked only once the test says so: done_recheck 0 until then.)
tk_pg_start "$dir" -c tweetkeeper.buffer_ttl=1s -c tweetkeeper.missing_after=1 -c tweetkeeper.payloads=first \
  -c tweetkeeper.bluesky_stream_counts=on || exit 1
tk_mock_start "$dir/mock.log" --deleted-every 0 --protected-every 0 --jetstream-port 0 \
  --compliance-processing-ms 300 || exit 1
jetstream=$(sed -n 's/.*jetstream listening on \(ws[^ ]*\).*/\1/p' "$dir/mock.log.out")
tk_psql >/dev/null <<SQL || exit 1
ALTER SYSTEM SET tweetkeeper.done_recheck = 0;
SELECT pg_reload_conf();
CREATE EXTENSION tweetkeeper;
CREATE ROLE tk_worker_login LOGIN IN ROLE tweetkeeper_worker;
CREATE ROLE tk_reader LOGIN IN ROLE tweetkeeper_reader;
SELECT tweetkeeper.add_credential('default', 3500, interval '15 minutes');
$(tk_fast_policy_sql)
$(tk_tid_sql)
-- (Bluesky clock ids 1 apart from a multiple of 17: the mock backdates those that are 3 apart.)
-- The test's posts: live ones (made a minute ago: refreshed every few seconds) and old ones (made 40
-- days ago: read once, then past their last refresh), and what happens to each at the source.
CREATE TABLE public.p (k text PRIMARY KEY, network text, ref text, post_id bigint, act text, expect text);
INSERT INTO public.p (k, network, ref, act, expect) VALUES
  ('x-live-deleted', 'x', NULL, 'deleted', 'deleted'), ('x-live-private', 'x', NULL, 'protected', 'hidden'),
  ('x-live-kept', 'x', NULL, NULL, NULL),
  ('x-old-deleted', 'x', NULL, 'deleted', 'deleted'), ('x-old-private', 'x', NULL, 'protected', 'private'),
  ('x-old-account', 'x', NULL, 'user:deactivated', 'account gone'), ('x-old-kept', 'x', NULL, NULL, NULL),
  ('b-live-deleted', 'bluesky', 'did:plc:aaaaaaaaaaaaaaaaaaaaaaaa', 'deleted', 'missing'),
  ('b-live-kept', 'bluesky', 'did:plc:aaaaaaaaaaaaaaaaaaaaaaaa', NULL, NULL),
  ('b-live-account', 'bluesky', 'did:plc:bbbbbbbbbbbbbbbbbbbbbbbb', 'did:deleted', 'account gone'),
  ('b-live-account2', 'bluesky', 'did:plc:bbbbbbbbbbbbbbbbbbbbbbbb', 'did:deleted', 'account gone'),
  ('b-old-deleted', 'bluesky', 'did:plc:aaaaaaaaaaaaaaaaaaaaaaaa', 'deleted', 'missing'),
  ('b-old-kept', 'bluesky', 'did:plc:aaaaaaaaaaaaaaaaaaaaaaaa', NULL, NULL),
  ('b-old-takedown', 'bluesky', 'did:plc:cccccccccccccccccccccccc', 'did:takendown', 'suspended'),
  ('m-live-deleted', 'mastodon', NULL, 'deleted', 'missing'), ('m-live-private', 'mastodon', NULL, 'private', 'missing'),
  ('m-live-kept', 'mastodon', NULL, NULL, NULL),
  ('m-old-deleted', 'mastodon', NULL, 'deleted', 'missing'), ('m-old-account', 'mastodon', NULL, 'account:deleted', 'missing'),
  ('m-old-kept', 'mastodon', NULL, NULL, NULL);
WITH n AS (SELECT k, network, row_number() OVER (ORDER BY k) AS i,
                  CASE WHEN k LIKE '%-old-%' THEN interval '40 days' ELSE interval '1 minute' END AS age FROM public.p)
UPDATE public.p SET
  post_id = CASE WHEN n.network = 'x' THEN (((extract(epoch FROM now() - n.age) * 1000)::bigint - 1288834974657) << 22) + n.i END,
  ref = CASE n.network
          WHEN 'bluesky' THEN format('https://bsky.app/profile/%s/post/%s', p.ref, public.tid(now() - n.age + n.i * interval '1 ms', n.i::int * 17 + 1))
          WHEN 'mastodon' THEN format('https://a.social/@u%s/%s', n.i, ((extract(epoch FROM now() - n.age) * 1000)::bigint << 16) + n.i)
          ELSE format('https://x.com/i/web/status/%s', (((extract(epoch FROM now() - n.age) * 1000)::bigint - 1288834974657) << 22) + n.i) END
  FROM n WHERE n.k = p.k;
SELECT tweetkeeper.schedule_posts(ARRAY(SELECT ref FROM public.p ORDER BY k));
UPDATE public.p SET post_id = x.post_id FROM tweetkeeper.posts x WHERE p.network <> 'x' AND x.url = p.ref;
SQL
tk_sql_ok "the test's 20 posts are tracked, each once" \
  "SELECT count(DISTINCT p.post_id) = 20 FROM public.p JOIN tweetkeeper.tweets t ON t.tweet_id = p.post_id" \
  "SELECT k, ref, post_id FROM public.p"

export TWEETKEEPER_BEARER_TOKEN=$TOKEN
start_workers() {
  local d="$TK_DSN user=tk_worker_login"
  mkdir -p "$dir/warc-x" "$dir/warc-b" "$dir/warc-m"
  "$TK_WORKER" --dsn "$d" --api-url "$TK_MOCK_URL" --name x --poll-interval 200 --compliance-poll 1 \
    --warc-dir "$dir/warc-x" --warc-purge-interval 0 >>"$dir/x.log" 2>&1 &
  TK_WORKERS=($!)
  env -u TWEETKEEPER_BEARER_TOKEN "$TK_WORKER" --provider bluesky --dsn "$d" --api-url "$TK_MOCK_URL" --name b \
    --poll-interval 200 --warc-dir "$dir/warc-b" --warc-purge-interval 0 >>"$dir/b.log" 2>&1 &
  TK_WORKERS+=($!)
  env -u TWEETKEEPER_BEARER_TOKEN "$TK_WORKER" --provider mastodon --instance "a.social=$TK_MOCK_URL/mastodon/a.social" \
    --dsn "$d" --name m --poll-interval 200 --warc-dir "$dir/warc-m" --warc-purge-interval 0 >>"$dir/m.log" 2>&1 &
  TK_WORKERS+=($!)
  env -u TWEETKEEPER_BEARER_TOKEN "$TK_WORKER" --provider bluesky --stream-counts --jetstream-url "$jetstream" \
    --dsn "$d" --name s >>"$dir/s.log" 2>&1 &
  TK_WORKERS+=($!)
  TK_PIDS+=("${TK_WORKERS[@]}")
}
start_workers
tk_wait_for 60 "SELECT bool_and(t.update_count >= 1) AND bool_and(t.state = 'done') FILTER (WHERE p.k LIKE '%-old-%')
                  FROM public.p JOIN tweetkeeper.tweets t ON t.tweet_id = p.post_id"
tk_sql_ok "every post was read (with its payload); the old ones are past their last refresh" \
  "SELECT bool_and(t.update_count >= 1 AND EXISTS (SELECT FROM tweetkeeper.payloads x WHERE x.tweet_id = t.tweet_id))
          AND bool_and(t.state = 'done') FILTER (WHERE p.k LIKE '%-old-%')
          AND bool_and(t.state = 'scheduled') FILTER (WHERE p.k LIKE '%-live-%')
     FROM public.p JOIN tweetkeeper.tweets t ON t.tweet_id = p.post_id" \
  "SELECT p.k, t.state, t.update_count FROM public.p JOIN tweetkeeper.tweets t ON t.tweet_id = p.post_id ORDER BY 1"
tk_wait_until 30 tk_log_has "$dir/s.log" "stream: counting" || echo "# the stream reader did not start"

# At the source: each post's fate (the X author and the Mastodon account from the posts' payloads).
gone=$(tk_psql <<'SQL'
SELECT json_build_object(
  'x', (SELECT json_agg(CASE WHEN p.act LIKE 'user:%'
                             THEN json_build_object('user', x.payload->>'author_id', 'reason', substr(p.act, 6))
                             ELSE json_build_object('post', p.post_id::text, 'reason', p.act) END)
          FROM public.p JOIN tweetkeeper.payloads x ON x.tweet_id = p.post_id WHERE p.network = 'x' AND p.act IS NOT NULL),
  'bluesky', (SELECT json_agg(DISTINCT CASE WHEN p.act LIKE 'did:%'
                                   THEN jsonb_build_object('did', r.author, 'status', substr(p.act, 5))
                                   ELSE jsonb_build_object('uri', format('at://%s/app.bsky.feed.post/%s', r.author, r.post_key), 'reason', p.act) END)
                FROM public.p JOIN tweetkeeper.post_refs r ON r.tweet_id = p.post_id WHERE p.network = 'bluesky' AND p.act IS NOT NULL),
  'mastodon', (SELECT json_agg(CASE WHEN p.act LIKE 'account:%'
                                    THEN json_build_object('host', 'a.social', 'account', x.payload->'account'->>'id', 'reason', substr(p.act, 9))
                                    ELSE json_build_object('host', 'a.social', 'id', r.post_key, 'reason', p.act) END)
                 FROM public.p JOIN tweetkeeper.post_refs r ON r.tweet_id = p.post_id
                 JOIN tweetkeeper.payloads x ON x.tweet_id = p.post_id WHERE p.network = 'mastodon' AND p.act IS NOT NULL))
SQL
)
answer=$(curl -sf -H 'Content-Type: application/json' --data "$gone" "$TK_MOCK_URL/mock/gone")
tk_ok "the mock makes them gone at the source ($answer)" $? "$gone"
# (A user or account made gone takes every one of its posts: those of the test's other posts are
# expected gone too, as the network would have them.)
tk_psql >/dev/null <<'SQL'
UPDATE public.p q SET act = 'same author',
       expect = CASE WHEN q.network = 'x' AND q.k LIKE '%-live-%' THEN 'deleted' ELSE a.expect END FROM public.p a
  JOIN tweetkeeper.payloads xa ON xa.tweet_id = a.post_id, tweetkeeper.payloads xq
 WHERE a.act IN ('user:deactivated', 'account:deleted') AND q.act IS NULL AND xq.tweet_id = q.post_id
   AND ((a.network = 'x' AND q.network = 'x' AND xq.payload->>'author_id' = xa.payload->>'author_id')
     OR (a.network = 'mastodon' AND q.network = 'mastodon' AND xq.payload->'account'->>'id' = xa.payload->'account'->>'id'));
SQL
# Posts past their last refresh checked from now on: X's by a compliance job, the others by a read.
tk_psql -c "ALTER SYSTEM SET tweetkeeper.done_recheck = '2s'" -c "SELECT pg_reload_conf()" >/dev/null
settled="SELECT bool_and(coalesce(CASE WHEN p.expect IS NULL THEN a.gone_since IS NULL ELSE a.reason = p.expect END, false))
           FROM public.p JOIN tweetkeeper.post_availability a ON a.post_id = p.post_id"
tk_wait_for 90 "$settled" || echo "# not every post's fate was seen within 90 s"
tk_sql_ok "each gone post is marked with its reason, within a cycle, and no other" "$settled" \
  "SELECT p.k, p.act, p.expect, a.reason, a.detail, t.state FROM public.p JOIN tweetkeeper.post_availability a ON a.post_id = p.post_id
     JOIN tweetkeeper.tweets t ON t.tweet_id = p.post_id ORDER BY 1"
tk_sql_ok "X's posts past their last refresh were checked by a compliance job (complete), not read" \
  "SELECT EXISTS (SELECT FROM tweetkeeper.compliance_jobs WHERE status = 'complete' AND gone >= 1)
          AND (SELECT bool_and(t.update_count = 1) FROM public.p JOIN tweetkeeper.tweets t ON t.tweet_id = p.post_id
                WHERE p.k LIKE 'x-old-%')" \
  "SELECT job_id, status, results, gone, detail FROM tweetkeeper.compliance_jobs"
tk_sql_ok "the Bluesky account taken down and the one deleted went with the stream's account events (no read)" \
  "SELECT bool_and(coalesce(t.problem_type IN ('account:deleted', 'account:takendown'), false)) FROM public.p JOIN tweetkeeper.tweets t ON t.tweet_id = p.post_id
    WHERE p.act LIKE 'did:%'"
tk_sql_ok "the gone posts' payloads are erased, every other post keeps its own" \
  "SELECT bool_and((p.expect IS NULL) = EXISTS (SELECT FROM tweetkeeper.payloads x WHERE x.tweet_id = p.post_id)) FROM public.p" \
  "SELECT p.k, p.expect, (SELECT count(*) FROM tweetkeeper.payloads x WHERE x.tweet_id = p.post_id) FROM public.p ORDER BY 1"
tk_sql_ok "the old kept posts were checked (X: found there by the job; the others read again)" \
  "SELECT bool_and(coalesce(CASE WHEN p.network = 'x'
                                     THEN t.state = 'done' AND EXISTS (SELECT FROM tweetkeeper.compliance_jobs j
                                                                       WHERE j.status = 'complete' AND p.post_id = ANY (j.tweet_ids))
                                     ELSE t.update_count >= 2 END, false))
     FROM public.p JOIN tweetkeeper.tweets t ON t.tweet_id = p.post_id WHERE p.k LIKE '%-old-kept'"

# Later exports leave the gone posts out.
reader="$TK_DSN user=tk_reader"
"$EXPORT" --dsn "$reader" --format csv -o "$dir/posts.csv" 2>"$dir/export.err"
rc_csv=$?
"$EXPORT" --dsn "$reader" --format twarc2 -o "$dir/posts.jsonl" 2>>"$dir/export.err"
rc_twarc=$?
tk_ok "both exports ran (exit 0, 0: $rc_csv, $rc_twarc) and twarc2's holds the kept X posts" \
  "$([ $rc_csv = 0 ] && [ $rc_twarc = 0 ] && for i in $(tk_psql -c "SELECT post_id FROM public.p WHERE network = 'x' AND expect IS NULL AND act IS NULL"); do
       grep -qF "\"$i\"" "$dir/posts.jsonl" || exit 1; done; echo $?)" "$(cat "$dir/export.err")"
in_csv=$(tk_psql -c "SELECT string_agg(CASE WHEN p.network = 'x' THEN p.post_id::text ELSE p.ref END, ' ') FROM public.p WHERE p.expect IS NOT NULL")
leaked=""
for r in $in_csv; do grep -qF -- "$r" "$dir/posts.csv" "$dir/posts.jsonl" && leaked+=" $r"; done
kept=$(tk_psql -c "SELECT string_agg(CASE WHEN p.network = 'x' THEN p.post_id::text ELSE p.ref END, ' ') FROM public.p WHERE p.expect IS NULL")
missing=""
for r in $kept; do grep -qF -- "$r" "$dir/posts.csv" || missing+=" $r"; done
tk_ok_if "exports (CSV, twarc2) hold no gone post and every kept one${leaked:+ (leaked:$leaked)}${missing:+ (missing:$missing)}" \
  "[ -z '$leaked' ] && [ -z '$missing' ]"

# The Bluesky account deleted comes back: its posts with it, read again.
curl -sf -H 'Content-Type: application/json' \
  --data '{"bluesky":[{"did":"did:plc:bbbbbbbbbbbbbbbbbbbbbbbb","status":"active"}]}' "$TK_MOCK_URL/mock/gone" >/dev/null
back="SELECT bool_and(a.gone_since IS NULL AND t.update_count >= 2 AND NOT EXISTS (SELECT FROM tweetkeeper.tombstones x WHERE x.tweet_id = p.post_id))
        FROM public.p JOIN tweetkeeper.post_availability a ON a.post_id = p.post_id JOIN tweetkeeper.tweets t ON t.tweet_id = p.post_id
       WHERE p.act = 'did:deleted'"
tk_wait_for 60 "$back"
tk_sql_ok "reactivated, the account's posts are back: available, read again, no tombstone" "$back" \
  "SELECT p.k, t.state, t.problem_type, t.update_count FROM public.p JOIN tweetkeeper.tweets t ON t.tweet_id = p.post_id WHERE p.act = 'did:deleted'"
tk_psql -c "UPDATE public.p SET expect = NULL WHERE act = 'did:deleted'" >/dev/null
tk_stop_workers

# The WARC files: the gone posts' records go, every other post's stay.
keys() { python3 "$TK_ROOT/tests/integration/warc_purge_check.py" --keys "$1"; }
expected_keys() { # WHERE
  tk_psql -c "SELECT CASE p.network WHEN 'x' THEN 'x:' || p.post_id
                                    WHEN 'bluesky' THEN format('at://%s/app.bsky.feed.post/%s', r.author, r.post_key)
                                    ELSE format('mastodon:%s/%s', r.host, r.post_key) END
                FROM public.p LEFT JOIN tweetkeeper.post_refs r ON r.tweet_id = p.post_id WHERE $1 ORDER BY 1"
}
before=$(for d in "$dir"/warc-?; do keys "$d"; done | sort)
absent=$(comm -13 <(echo "$before") <(expected_keys true | sort) | tr '\n' ' ')
tk_ok "before the purge the WARC files hold every test post's answer ($(echo "$before" | wc -l) posts)" \
  "$([ -z "$absent" ]; echo $?)" "absent: $absent"
for d in "$dir"/warc-?; do cp -a "$d" "$d.before"; done
rc=0
for d in "$dir"/warc-?; do "$WARC" purge --warc-dir "$d" --dsn "$reader" >>"$dir/purge.log" 2>&1 || rc=$?; done
after=$(for d in "$dir"/warc-?; do keys "$d"; done | sort)
still=$(comm -12 <(echo "$after") <(expected_keys 'p.expect IS NOT NULL' | sort) | tr '\n' ' ')
lost=$(comm -13 <(echo "$after") <(expected_keys 'p.expect IS NULL' | sort) | tr '\n' ' ')
tk_ok "tweetkeeper-warc purge: no gone post left in any WARC file, every kept one still there (rc $rc)" \
  "$([ $rc = 0 ] && [ -z "$still" ] && [ -z "$lost" ]; echo $?)" "still: $still; lost: $lost; $(tail -5 "$dir/purge.log")"
tk_ok_if "and purge.log says why each went (X: private, Bluesky: suspended)" \
  "grep -q '\"reason\":\"private\"' $dir/warc-x/purge.log && grep -q '\"reason\":\"suspended\"' $dir/warc-b/purge.log"
tk_ok_if "no token in any log, WARC file, export or purge log" \
  "! grep -rqF -- '$TOKEN' $dir/*.log $dir/warc-? $dir/posts.csv $dir/posts.jsonl"
tk_summary deletions
