#!/usr/bin/env bash
# Partitions behind PL/Proxy (issue 51), on real nodes: three PostgreSQL clusters on this machine,
# a proxy database (tweetkeeper_proxy, Debian's PL/Proxy) and two partitions (complete
# tweetkeeper nodes). Posts of every network are scheduled through the proxy; each lands on the
# node that holds its slot, and only there; a node refuses a post of another's slot (TKP01); a bad
# URL is refused before any node is asked; follows go to the node of slot 0, which hands the posts
# it does not hold over, and the proxy delivers them. Workers of every network, connected to the
# partitions directly (none to the proxy), refresh every post.
set -uo pipefail
source "$(dirname "$0")/../lib/common.sh"
tk_workdir partitions

# The proxy: tk_pg_start's cluster (psql reaches it by default), without the tweetkeeper library
# preloaded (it holds no queue); the partitions p0 and p1 beside it.
tk_pg_start "$dir" -c shared_preload_libraries= || exit 1
for i in 0 1; do
  tk_node_start "p$i" $((5433 + i)) -c tweetkeeper.buffer_ttl=1s -c tweetkeeper.lease_ttl=30s || exit 1
  tk_node_psql "p$i" $((5433 + i)) >/dev/null <<SQL || exit 1
CREATE EXTENSION tweetkeeper;
CREATE ROLE tk_worker_login LOGIN IN ROLE tweetkeeper_worker;
$(tk_fast_policy_sql)
SQL
done
dsn0=$(tk_node_dsn p0 5433)
dsn1=$(tk_node_dsn p1 5434)
node() { tk_node_psql "p$1" $((5433 + $1)) "${@:2}"; }
tk_psql >/dev/null <<SQL || exit 1
CREATE EXTENSION tweetkeeper_proxy CASCADE;
SELECT * FROM tweetkeeper.create_cluster(ARRAY['p0', 'p1'], ARRAY['$dsn0', '$dsn1']);
SQL
tk_sql_ok "the proxy's cluster: p0 holds the even slots, p1 the odd" \
  "SELECT array_agg(node || ':' || (SELECT bool_and(s % 2 = CASE node WHEN 'p0' THEN 0 ELSE 1 END) FROM unnest(slots) s)
                    ORDER BY node) = '{p0:true,p1:true}' FROM tweetkeeper.cluster"
tk_ok_if "each node knows its name and its 32 slots" \
  '[ "$(node 0 -c "SELECT node, length(replace(slots::text, '\''0'\'', '\'''\'')) FROM tweetkeeper.partition")" = "p0|32" ] &&
   [ "$(node 1 -c "SELECT node, length(replace(slots::text, '\''0'\'', '\'''\'')) FROM tweetkeeper.partition")" = "p1|32" ]'

# Posts of every network, through the proxy: X by id, Bluesky by DID and by handle, Mastodon.
# (The ids, made once, kept on the proxy: public.x_ids, public.follow_ids.)
scheduled=$(tk_psql <<SQL
CREATE TABLE public.x_ids AS SELECT unnest($(tk_snowflake_sql '1 minute' 201 0)) AS id;
-- (The follower's posts: four of each node's slots, p0 holding the even slots and p1 the odd.)
CREATE TABLE public.follow_ids AS
  SELECT id FROM (SELECT id, row_number() OVER (PARTITION BY tweetkeeper.partition_hash('x', '', id::text) & 1 ORDER BY id) AS k
                    FROM unnest($(tk_snowflake_sql '30 seconds' 64 0)) AS id) x WHERE k <= 4;
SELECT tweetkeeper.schedule_tweets(ARRAY(SELECT id FROM public.x_ids ORDER BY id LIMIT 200))
     + tweetkeeper.schedule_tweet((SELECT max(id) FROM public.x_ids))::int;
$(tk_tid_sql)
SELECT tweetkeeper.schedule_posts(ARRAY(
  SELECT format('https://bsky.app/profile/%s/post/%s', CASE WHEN g % 5 = 0 THEN 'alice.example.com' ELSE 'did:plc:z72i7hdynmk6r22z27h6tvur' END,
                public.tid(now() - interval '1 minute' + g * interval '1 ms', g))
    FROM generate_series(1, 80) g))
     + tweetkeeper.schedule_posts(ARRAY(
  SELECT format('https://a.social/@u/%s', ((extract(epoch FROM now() - interval '1 minute') * 1000)::bigint << 16) + g)
    FROM generate_series(1, 40) g));
SQL
)
tk_ok_if "the proxy scheduled every post (201 X, 120 others)" '[ "$scheduled" = "$(printf "201\n120")" ]'
count_on() { node "$1" -c "SELECT count(*) FROM tweetkeeper.tweets"; }
stray_on() { # posts a node holds outside its slots
  node "$1" -c "SELECT count(*) FROM tweetkeeper.tweets t, tweetkeeper.partition p
                 WHERE get_bit(p.slots, coalesce(tweetkeeper.url_partition_hash(
                         (SELECT r.url FROM tweetkeeper.post_refs r WHERE r.tweet_id = t.tweet_id)),
                         tweetkeeper.partition_hash('x', '', t.tweet_id::text)) & 63) = 0"
}
c0=$(count_on 0) c1=$(count_on 1)
tk_ok_if "each post is on one node: $c0 + $c1 = 321, both nodes hold some" '[ $((c0 + c1)) = 321 ] && [ "$c0" -gt 50 ] && [ "$c1" -gt 50 ]'
tk_ok_if "and on the node that holds its slot (none elsewhere)" '[ "$(stray_on 0)" = 0 ] && [ "$(stray_on 1)" = 0 ]'
for net in x bluesky mastodon; do
  tk_ok_if "both nodes hold $net posts" \
    '[ "$(node 0 -c "SELECT count(*) > 0 FROM tweetkeeper.posts WHERE network = '\''$net'\''")" = t ] &&
     [ "$(node 1 -c "SELECT count(*) > 0 FROM tweetkeeper.posts WHERE network = '\''$net'\''")" = t ]'
done
again=$(tk_psql -c "SELECT tweetkeeper.schedule_tweets(ARRAY(SELECT id FROM public.x_ids))" 2>&1)
tk_ok_if "scheduled again through the proxy: nothing new" '[ "$again" = 0 ]'
bad=$(tk_psql -c "SELECT tweetkeeper.schedule_posts(ARRAY['https://a.social/@u/1', 'https://example.com/nothing'])" 2>&1)
tk_ok_if "a bad URL is refused by the proxy before any node takes its share" \
  '[[ $bad == *"not a post URL"* ]] && [ $(( $(count_on 0) + $(count_on 1) )) = 321 ]' 
# Straight to a node, a post of the other's slot: refused.
other=$(node 0 -c "SELECT id FROM unnest($(tk_snowflake_sql '2 minutes' 64 0)) id, tweetkeeper.partition p
                    WHERE get_bit(p.slots, tweetkeeper.partition_hash('x', '', id::text) & 63) = 0 LIMIT 1")
refused=$(node 0 -c "\\set VERBOSITY verbose" -c "SELECT tweetkeeper.schedule_tweet($other)" 2>&1)
tk_ok_if "a node refuses a post another holds: TKP01, naming it" '[[ $refused == *TKP01*"post $other is in slot"*"which partition p0 does not hold"* ]]' "$refused"

# Follows: on the node of slot 0 only; the posts it finds that p1 holds are handed over.
tk_psql -c "SELECT tweetkeeper.follow('https://x.com/jack')" >/dev/null
tk_ok_if "a follow through the proxy lands on p0 alone" \
  '[ "$(node 0 -c "SELECT count(*) FROM tweetkeeper.followed_accounts")" = 1 ] && [ "$(node 1 -c "SELECT count(*) FROM tweetkeeper.followed_accounts")" = 0 ]'
follow_ids=$(tk_psql -c "SELECT array_agg(id) FROM public.follow_ids")
found=$(node 0 <<SQL
UPDATE tweetkeeper.followed_accounts SET account_id = '12', status = 'following' RETURNING follow_id AS follow \gset
SET ROLE tk_worker_login;
SELECT count(*) FROM tweetkeeper.claim_follows('f', 'x', 10);
SELECT tweetkeeper.store_follow_posts(:follow,
  ARRAY(SELECT 'https://x.com/jack/status/' || id FROM unnest('$follow_ids'::bigint[]) id),
  ARRAY(SELECT now() - interval '30 seconds' FROM generate_series(1, 8)), NULL, now(), now() + interval '1 hour');
SQL
)
waiting=$(node 0 -c "SELECT count(*) FROM tweetkeeper.handovers")
tk_ok_if "the follower's 8 posts are found; the 4 p1 holds wait on p0" '[ "$(tail -1 <<<"$found")" = 8 ] && [ "$waiting" = 4 ]'
delivered=$(tk_psql -c "SELECT tweetkeeper.deliver_handovers()")
tk_ok_if "the proxy delivers them to p1 ($delivered), and p0 forgets them" \
  '[ "$delivered" = "$waiting" ] && [ "$(node 0 -c "SELECT count(*) FROM tweetkeeper.handovers")" = 0 ] &&
   [ "$(node 1 -c "SELECT count(*) FROM tweetkeeper.tweets WHERE tweet_id = ANY ('\''$follow_ids'\''::bigint[])")" = "$waiting" ]'
tk_ok_if "delivering again: nothing waits" '[ "$(tk_psql -c "SELECT tweetkeeper.deliver_handovers()")" = 0 ]'
total=$(( $(count_on 0) + $(count_on 1) ))

# Workers of every network on each partition, connected to it alone.
export TWEETKEEPER_BEARER_TOKEN=partitions-test-token
# (Nothing deleted or protected: every post is answered for; one X post in 7 was edited, whose
# newest version has an id of its own, which may belong to the other node.)
tk_mock_start "$dir/mock.log" --deleted-every 0 --protected-every 0 --edited-every 7 || exit 1
for i in 0 1; do
  d="$(tk_node_dsn "p$i" $((5433 + i))) user=tk_worker_login"
  "$TK_WORKER" --dsn "$d" --api-url "$TK_MOCK_URL" --name "x-p$i" --poll-interval 200 >"$dir/x-p$i.log" 2>&1 &
  TK_PIDS+=($!)
  env -u TWEETKEEPER_BEARER_TOKEN "$TK_WORKER" --provider bluesky --dsn "$d" --api-url "$TK_MOCK_URL" --name "bsky-p$i" \
    --poll-interval 200 >"$dir/bsky-p$i.log" 2>&1 &
  TK_PIDS+=($!)
  env -u TWEETKEEPER_BEARER_TOKEN "$TK_WORKER" --provider mastodon --instance "a.social=$TK_MOCK_URL/mastodon/a.social" \
    --dsn "$d" --name "masto-p$i" --poll-interval 200 >"$dir/masto-p$i.log" 2>&1 &
  TK_PIDS+=($!)
done
# Every post read: the scheduled ones twice (or once, when their answer said they are older than
# their key told and the next read is a day away: the mock backdates some Bluesky posts), the
# edited ones (done, their newest version tracked instead) at least once.
read_twice() {
  [ "$(node "$1" -c "SELECT bool_and(update_count >= 2 OR state <> 'scheduled' OR (update_count = 1 AND due_at > now() + interval '1 hour'))
                       FROM tweetkeeper.tweets")" = t ]
}
tk_wait_until 120 read_twice 0
tk_wait_until 120 read_twice 1
for i in 0 1; do
  read_twice $i
  tk_ok "every post on p$i was read twice by p$i's own workers" $? \
    "$(node "$i" -c "SELECT endpoint, state, tweet_id, update_count, due_at - now(), problem_type FROM tweetkeeper.tweets WHERE update_count < 2 AND state = 'scheduled'")"
done
edited=$(( $(node 0 -c "SELECT count(*) FROM tweetkeeper.edits") + $(node 1 -c "SELECT count(*) FROM tweetkeeper.edits") ))
waiting=$(( $(node 0 -c "SELECT count(*) FROM tweetkeeper.handovers") + $(node 1 -c "SELECT count(*) FROM tweetkeeper.handovers") ))
delivered=$(tk_psql -c "SELECT tweetkeeper.deliver_handovers()")
tracked_newest() { # the edits' newest versions each node tracks
  node "$1" -c "SELECT count(*) FROM tweetkeeper.tweets WHERE tweet_id = ANY ('$(node 0 -c "SELECT array_agg(newest_id) FROM tweetkeeper.edits")'::bigint[] || '$(node 1 -c "SELECT array_agg(newest_id) FROM tweetkeeper.edits")'::bigint[])"
}
tk_ok_if "$edited edited posts: the newest versions of another node's slots ($waiting) delivered there, none lost" \
  '[ "$edited" -gt 2 ] && [ "$waiting" -gt 0 ] && [ "$delivered" = "$waiting" ] && [ $(( $(tracked_newest 0) + $(tracked_newest 1) )) = "$edited" ] &&
   [ "$(stray_on 0)" = 0 ] && [ "$(stray_on 1)" = 0 ]'
tk_ok_if "no worker connected to the proxy" '[ "$(tk_psql -c "SELECT count(*) FROM pg_stat_activity WHERE application_name LIKE '\''%tweetkeeper%'\''")" = 0 ]'
tk_ok_if "nothing was lost: $total posts, and the $edited newest versions" '[ $(( $(count_on 0) + $(count_on 1) )) = $((total + edited)) ]'

tk_summary partitions
