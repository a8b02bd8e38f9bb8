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

# The proxy and the partitions p0 and p1 (tests/lib/common.sh: tk_partitions_start).
tk_partitions_start 2 -c tweetkeeper.buffer_ttl=1s -c tweetkeeper.lease_ttl=30s || exit 1
dsn0=${TK_PART_DSNS[0]}
dsn1=${TK_PART_DSNS[1]}
node() { tk_part "$@"; }
tk_sql_ok "the proxy's cluster: p0 holds the even slots, p1 the odd" \
  "SELECT array_agg(node || ':' || (SELECT bool_and(s % 2 = CASE node WHEN 'p0' THEN 0 ELSE 1 END) FROM unnest(slots) s)
                    ORDER BY node) = '{p0:true,p1:true}' FROM tweetkeeper.cluster"
tk_sql_ok "every table and sequence of tweetkeeper_proxy is marked for pg_dump (pg_extension_config_dump)" \
  "SELECT count(*) >= 5 AND bool_and(c.oid = ANY (e.extconfig))
     FROM pg_extension e JOIN pg_depend d ON d.refobjid = e.oid AND d.deptype = 'e'
     JOIN pg_class c ON c.oid = d.objid AND c.relkind IN ('r', 'S') WHERE e.extname = 'tweetkeeper_proxy'" \
  "SELECT c.oid::regclass, c.oid = ANY (e.extconfig) FROM pg_extension e JOIN pg_depend d ON d.refobjid = e.oid AND d.deptype = 'e'
     JOIN pg_class c ON c.oid = d.objid AND c.relkind IN ('r', 'S') WHERE e.extname = 'tweetkeeper_proxy'"
tk_ok_if "each node knows its name and its 32 slots" \
  '[ "$(node 0 -c "SELECT node, length(replace(slots::text, '\''0'\'', '\'''\'')) FROM tweetkeeper.partition")" = "p0|32" ] &&
   [ "$(node 1 -c "SELECT node, length(replace(slots::text, '\''0'\'', '\'''\'')) FROM tweetkeeper.partition")" = "p1|32" ]'

# The policy, through the proxy, the same on both nodes (the fast one of the other suites); a
# policy a node refuses changes none.
digest=$(tk_psql -c "SELECT tweetkeeper.replace_age_policy(ARRAY[interval '5 minutes', '2 hours', '30 days'],
                                                           ARRAY[interval '6 seconds', '15 seconds', '1 day'])" 2>&1)
tk_ok_if "the policy pushed through the proxy is every node's" \
  '[ "$(node 0 -c "SELECT tweetkeeper.policy_digest()")" = "$digest" ] && [ "$(node 1 -c "SELECT tweetkeeper.policy_digest()")" = "$digest" ] &&
   [ "$(tk_psql -c "SELECT count(DISTINCT digest) || '\'' '\'' || min(digest) FROM tweetkeeper.policy_status")" = "1 $digest" ] &&
   [ "$(node 1 -c "SELECT string_agg(delay::text, '\'','\'' ORDER BY max_age) FROM tweetkeeper.age_policy")" = "00:00:06,00:00:15,1 day" ]'
refused=$(tk_psql -c "SELECT tweetkeeper.replace_age_policy(ARRAY[interval '1 hour'], ARRAY[interval '2 years'])" 2>&1)
tk_ok_if "a policy the nodes refuse is refused, and no node changed" \
  '[[ $refused == *age_policy* ]] && [ "$(node 0 -c "SELECT tweetkeeper.policy_digest()")" = "$digest" ] &&
   [ "$(node 1 -c "SELECT tweetkeeper.policy_digest()")" = "$digest" ]' 
# A setting, the same way: every node's database has it; a bad value or a setting a database may
# not set is refused, and no node changed.
set=$(tk_psql -c "SELECT tweetkeeper.set_setting('tweetkeeper.history_keep_unchanged', 'on')" 2>&1)
setting_on() { node "$1" -c "SELECT count(*) FROM pg_db_role_setting s, unnest(s.setconfig) c
                              WHERE s.setdatabase = (SELECT oid FROM pg_database WHERE datname = current_database())
                                AND c = 'tweetkeeper.history_keep_unchanged=on'"; }
tk_ok_if "a setting set through the proxy is every node's" \
  '[ "$(setting_on 0)$(setting_on 1)" = 11 ] && [ "$(tk_psql -c "SELECT count(DISTINCT digest) FROM tweetkeeper.settings_status")" = 1 ]' 
bad_value=$(tk_psql -c "SELECT tweetkeeper.set_setting('tweetkeeper.payloads', 'everything')" 2>&1)
bad_name=$(tk_psql -c "SELECT tweetkeeper.set_setting('tweetkeeper.tick_interval', '1s')" 2>&1)
tk_ok_if "a bad value, or a setting of the server, is refused and no node changed" \
  '[[ $bad_value == *payloads* ]] && [[ $bad_name == *"not a tweetkeeper setting a database may set"* ]] &&
   [ "$(tk_psql -c "SELECT count(DISTINCT digest) || '\'' '\'' || min(digest) FROM tweetkeeper.settings_status")" = "1 $set" ]'

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
tk_psql -c "SELECT tweetkeeper.collect_posts('again', ARRAY(SELECT 'https://x.com/i/web/status/' || id FROM public.x_ids))" >/dev/null
# (Into a collection: each node puts the posts it holds in, under the same name.)
in_again() { node "$1" -c "SELECT count(*) FROM tweetkeeper.collection_posts c JOIN tweetkeeper.tweets t USING (tweet_id)
                            WHERE c.collection = 'again'"; }
tk_ok_if "... and all 201 are in the collection named, each on its own node ($(in_again 0) + $(in_again 1))" \
  '[ $(( $(in_again 0) + $(in_again 1) )) = 201 ] && [ "$(in_again 0)" -gt 0 ] && [ "$(in_again 1)" -gt 0 ]'
mortality=$(tk_psql -c "SELECT posts, available, unknown FROM tweetkeeper.mortality_by_date
                         WHERE collection = 'again' AND day = (now() AT TIME ZONE 'UTC')::date" 2>&1)
tk_ok_if "the proxy's mortality_by_date counts the collection's posts on every node, none read yet ($mortality)" \
  '[ "$mortality" = "201|0|201" ]'
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
in_follow() { node "$1" -c "SELECT count(*) || ' ' || min(c.kind) FROM tweetkeeper.collection_posts p
                             JOIN tweetkeeper.collections c ON c.name = p.collection WHERE p.collection = 'https://x.com/jack'"; }
tk_ok_if "... each in the account's collection on the node that holds it ($(in_follow 0); $(in_follow 1))" \
  '[ "$(in_follow 0)" = "4 follow" ] && [ "$(in_follow 1)" = "4 follow" ]'
tk_ok_if "delivering again: nothing waits" '[ "$(tk_psql -c "SELECT tweetkeeper.deliver_handovers()")" = 0 ]'
total=$(( $(count_on 0) + $(count_on 1) ))

# Workers of every network, connected to the partitions directly: one process per network given
# both partitions (--dsn twice: its slots on each claim from that node alone). (A partition's own
# workers, given its DSN alone, come with p2 below.)
export TWEETKEEPER_BEARER_TOKEN=partitions-test-token
# (Nothing deleted or protected: every post is answered for; one X post in 7 was edited, whose
# newest version has an id of its own, which may belong to the other node.)
tk_mock_start "$dir/mock.log" --deleted-every 0 --protected-every 0 --edited-every 7 || exit 1
both=(--dsn "$dsn0 user=tk_worker_login" --dsn "$dsn1 user=tk_worker_login")
"$TK_WORKER" "${both[@]}" --api-url "$TK_MOCK_URL" --name x-both --poll-interval 200 >"$dir/x-both.log" 2>&1 &
TK_PIDS+=($!)
env -u TWEETKEEPER_BEARER_TOKEN "$TK_WORKER" --provider bluesky "${both[@]}" --api-url "$TK_MOCK_URL" --name bsky-both \
  --poll-interval 200 >"$dir/bsky-both.log" 2>&1 &
TK_PIDS+=($!)
env -u TWEETKEEPER_BEARER_TOKEN "$TK_WORKER" --provider mastodon --instance "a.social=$TK_MOCK_URL/mastodon/a.social" \
  "${both[@]}" --name masto-both --poll-interval 200 >"$dir/masto-both.log" 2>&1 &
TK_PIDS+=($!)
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
  tk_ok "every post on p$i was read twice by workers connected to p$i" $? \
    "$(node "$i" -c "SELECT endpoint, state, tweet_id, update_count, due_at - now(), problem_type FROM tweetkeeper.tweets WHERE update_count < 2 AND state = 'scheduled'")"
  # On its schedule: every observation (all are kept: history_keep_unchanged, set above through
  # the proxy) came within its delay and 5 s of the one before.
  gaps=$(tk_gaps_sql)
  late=$(node "$i" -c "$gaps SELECT count(*) FILTER (WHERE gap > delay + interval '5 seconds') || ' of ' || count(*) FROM gaps WHERE gap IS NOT NULL")
  tk_ok "p$i: every refresh on schedule (late by more than 5 s: $late)" "$([[ $late == "0 of "* ]] && [ "${late#* of }" -gt 100 ]; echo $?)" \
    "$(node "$i" -c "$gaps SELECT tweet_id, gap, delay FROM gaps WHERE gap > delay + interval '5 seconds' ORDER BY gap DESC LIMIT 5")"
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
tk_ok_if "a worker given two partitions runs slots on each" 'tk_log_has "$dir/x-both.log" "started: 4 slots \(2 on each of 2 databases\)"'
both_read() { # the batches the x-both worker completed on node $1
  node "$1" -c "SELECT count(*) FROM tweetkeeper.batches WHERE worker = 'x-both' AND outcome = 'completed'"
}
tk_ok_if "and completes batches on both ($(both_read 0) on p0, $(both_read 1) on p1)" '[ "$(both_read 0)" -gt 0 ] && [ "$(both_read 1)" -gt 0 ]'
tk_ok_if "no worker connected to the proxy" '[ "$(tk_psql -c "SELECT count(*) FROM pg_stat_activity WHERE application_name LIKE '\''%tweetkeeper%'\''")" = 0 ]'
tk_ok_if "nothing was lost: $total posts, and the $edited newest versions" '[ $(( $(count_on 0) + $(count_on 1) )) = $((total + edited)) ]'

# A partition SIGKILLed with its workers running, and started again: its workers wait for it as
# for any restarting PostgreSQL, p0 goes on meanwhile, and nothing of p1 is lost.
# (Its postmaster runs under runuser, which reaps it when it dies, as an init system would: a
# killed postmaster nobody reaps stays a zombie, and its lock file refuses the next start.)
reads_on() { node "$1" -c "SELECT coalesce(sum(update_count), 0) FROM tweetkeeper.tweets"; }
p1_up() { psql -X -h "$dir/p1" -p 5434 -U postgres -d tweetkeeper -c 'SELECT 1' >/dev/null 2>&1; }
p1_start_reaped() {
  (cd / && exec runuser -u postgres -- "$(pg_config --bindir)/postgres" -D "$dir/p1/data" \
     -c tweetkeeper.buffer_ttl=1s -c tweetkeeper.lease_ttl=30s >>"$dir/p1/server.log" 2>&1) &
  p1_runuser=$!
  tk_wait_until 60 p1_up
}
"$TK_ROOT/scripts/pg-cluster.sh" stop "$dir/p1"
p1_start_reaped || { echo "p1 did not start again" >&2; exit 1; }
before1=$(count_on 1) reads0=$(reads_on 0)
kill -9 "$(head -1 "$dir/p1/data/postmaster.pid")"
wait "$p1_runuser"
more_reads_on_0() { [ "$(reads_on 0)" -gt $((reads0 + 20)) ]; }
tk_wait_until 60 more_reads_on_0
tk_ok "p0 went on while p1 was down" $?
p1_start_reaped || { tail -5 "$dir/p1/server.log" >&2; exit 1; }
reads1=$(reads_on 1)
more_reads_on_1() { [ "$(reads_on 1)" -gt $((reads1 + 20)) ]; }
tk_wait_until 60 more_reads_on_1
tk_ok "p1's workers read it again once it was back" $? "$(tail -5 "$dir/x-both.log")"
tk_ok_if "nothing of p1 was lost ($before1 posts)" '[ "$(count_on 1)" = "$before1" ]'

# Growing, while the workers run: a third partition, p2, joins with no slot and its own workers;
# rebalance() moves slots to it, in batches of 20 posts (many batches under the workers' claims).
# Nothing is lost, every post ends on the node of its slot, none is read by two nodes at once.
tk_node_start p2 5435 -c tweetkeeper.buffer_ttl=1s -c tweetkeeper.lease_ttl=30s || exit 1
tk_part 2 -c "CREATE EXTENSION tweetkeeper" -c "CREATE ROLE tk_worker_login LOGIN IN ROLE tweetkeeper_worker" >/dev/null 2>&1
dsn2=$(tk_node_dsn p2 5435)
all=$(( $(count_on 0) + $(count_on 1) ))
tk_psql -c "SELECT tweetkeeper.add_node('p2', '$dsn2')" >/dev/null
tk_part 2 -c "SELECT tweetkeeper.replace_age_policy(ARRAY[interval '5 minutes', '2 hours', '30 days'],
                                                   ARRAY[interval '6 seconds', '15 seconds', '1 day'])" >/dev/null
"$TK_WORKER" --dsn "$dsn2 user=tk_worker_login" --api-url "$TK_MOCK_URL" --name x-p2 --poll-interval 200 >"$dir/x-p2.log" 2>&1 &
TK_PIDS+=($!)
env -u TWEETKEEPER_BEARER_TOKEN "$TK_WORKER" --provider bluesky --dsn "$dsn2 user=tk_worker_login" --api-url "$TK_MOCK_URL" \
  --name bsky-p2 --poll-interval 200 >"$dir/bsky-p2.log" 2>&1 &
TK_PIDS+=($!)
env -u TWEETKEEPER_BEARER_TOKEN "$TK_WORKER" --provider mastodon --instance "a.social=$TK_MOCK_URL/mastodon/a.social" \
  --dsn "$dsn2 user=tk_worker_login" --name masto-p2 --poll-interval 200 >"$dir/masto-p2.log" 2>&1 &
TK_PIDS+=($!)
# The first rebalance() is cut short mid-move: its proxy session is terminated while a slot's
# move is under way and has moved some posts (its batches commit one by one); the second finishes
# (or undoes) what the first left and goes on. (A slot's move is a moment between two moves; the
# terminate is asked only while one is under way, in the statement that looks, and a cut that
# still lands between two moves, the move having ended meanwhile, is tried again: make check
# once saw one.)
cut_mid_move() { # one try: rebalance() in the background, terminated mid-move; true if it was
  PGAPPNAME=rebalance-cut tk_psql -c "CALL tweetkeeper.rebalance(20)" >>"$dir/rebalance-cut.log" 2>&1 &
  cut=$!
  TK_PIDS+=($cut)
  terminate_mid_move() {
    [ "$(tk_psql -c "SELECT count(*) FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity
                                            WHERE application_name = 'rebalance-cut'
                                              AND EXISTS (SELECT FROM tweetkeeper.moves
                                                           WHERE state = 'moving' AND posts_moved > 0)) x")" = 1 ]
  }
  tk_wait_until 60 terminate_mid_move
  was_moving=$?
  tk_wait_exit "$cut" 30
  [ "$was_moving" = 0 ] && [ "$TK_RC" != 0 ] &&
    [ "$(tk_psql -c "SELECT count(*) FROM tweetkeeper.moves WHERE state = 'moving'")" -ge 1 ]
}
tries=0
until cut_mid_move || [ $((tries += 1)) -ge 5 ]; do :; done
tk_ok_if "the first rebalance() was cut short mid-move (exit $TK_RC, after $((tries + 1)) tries)" \
  '[ "$was_moving" = 0 ] && [ "$TK_RC" != 0 ] && [ "$(tk_psql -c "SELECT count(*) FROM tweetkeeper.moves WHERE state = '\''moving'\''")" -ge 1 ]'
# (Judged by its exit and its errors: PL/Proxy may say NOTICE "dropping stale conn" when it
# replaces a cached node connection, which is no failure.)
rebalanced=$(tk_psql -c "CALL tweetkeeper.rebalance(20)" 2>&1)
rc=$?
tk_ok "a second rebalance() went on and finished, while the workers ran (exit $rc)" \
  "$([ "$rc" = 0 ] && ! grep -q 'ERROR' <<<"$rebalanced"; echo $?)" "$rebalanced"
tk_sql_ok "p2 holds 21 slots now, p0 and p1 the rest (22 and 21)" \
  "SELECT array_agg(cardinality(slots) ORDER BY cardinality(slots)) = '{21,21,22}'
          AND min(cardinality(slots)) FILTER (WHERE node = 'p2') = 21 FROM tweetkeeper.cluster" \
  "SELECT node, cardinality(slots) FROM tweetkeeper.cluster"
moved=$(tk_psql -c "SELECT coalesce(sum(posts_moved), 0) FROM tweetkeeper.moves")
tk_ok_if "nothing lost: $all posts on three nodes, $moved of them moved" \
  '[ $(( $(count_on 0) + $(count_on 1) + $(count_on 2) )) = "$all" ] && [ "$moved" -gt 50 ]'
tk_ok_if "every post on the node of its slot" '[ "$(stray_on 0)$(stray_on 1)$(stray_on 2)" = 000 ]'
tk_ok_if "no move left a post held or parked" \
  '[ "$(node 0 -c "SELECT count(*) FROM tweetkeeper.tweets WHERE lease_id < 0")$(node 1 -c "SELECT count(*) FROM tweetkeeper.tweets WHERE lease_id < 0")$(node 2 -c "SELECT count(*) FROM tweetkeeper.tweets WHERE lease_id < 0")" = 000 ]'
read_on_2() { [ "$(node 2 -c "SELECT count(*) FROM tweetkeeper.batches WHERE outcome = 'completed'")" -gt 5 ]; }
tk_wait_until 60 read_on_2
tk_ok "p2's workers read the posts that moved there" $?
# No post read twice at once: its reads on every node (the proxy's batches: all three), each
# at least 3 s after the one before (its schedule: 6 s or more).
tk_sql_ok "no post was read by two nodes at once (every two reads of a post 3 s apart or more)" \
  "SELECT coalesce(min(gap), interval '1 day') >= interval '3 seconds' FROM (
     SELECT p.id, b.claimed_at - lag(b.finished_at) OVER (PARTITION BY p.id ORDER BY b.claimed_at) AS gap
       FROM tweetkeeper.batches b, unnest(b.tweet_ids) AS p(id) WHERE b.outcome = 'completed') x" \
  "SELECT p.id, b.claimed_at, b.finished_at, b.worker FROM tweetkeeper.batches b, unnest(b.tweet_ids) AS p(id)
    WHERE b.outcome = 'completed' ORDER BY 1, 2 LIMIT 20"

# Reads through the proxy are one node's on the same data: a fourth cluster, "one", alone, is
# given every post's rows of the three partitions (no background worker: nothing changes them there),
# and the same reads, made through the proxy and on it, have the same md5.
for p in "${TK_PIDS[@]}"; do [ "$p" = "$TK_MOCK_PID" ] || kill -TERM "$p" 2>/dev/null; done
for p in "${TK_PIDS[@]}"; do [ "$p" = "$TK_MOCK_PID" ] || tk_wait_exit "$p" 30; done
tk_node_start one 5436 -c shared_preload_libraries= || exit 1
one() { tk_node_psql one 5436 "$@"; }
one -c "CREATE EXTENSION tweetkeeper" 2>/dev/null
one -c "SELECT tweetkeeper.replace_age_policy(ARRAY[interval '5 minutes', '2 hours', '30 days'],
                                              ARRAY[interval '6 seconds', '15 seconds', '1 day'])" >/dev/null
for t in tweets metric_history_hot metric_history_compact metric_daily post_refs payloads tombstones edits; do
  for i in 0 1 2; do
    node "$i" -c "COPY (SELECT * FROM tweetkeeper.$t) TO STDOUT" | one -c "COPY tweetkeeper.$t FROM STDIN"
  done
done
reads=(
  "SELECT * FROM tweetkeeper.posts ORDER BY post_id"
  "SELECT * FROM tweetkeeper.lifespans ORDER BY 1, 2, 3, 4, 5"
  "SELECT * FROM tweetkeeper.metrics_at(ARRAY(SELECT post_id FROM tweetkeeper.posts), ARRAY[interval '10 seconds', '1 minute', '2 minutes']) ORDER BY 1, 2"
  "SELECT * FROM tweetkeeper.why_due() ORDER BY 1"
  "SELECT state, network, tweets, in_flight FROM tweetkeeper.queue_stats"
  "SELECT * FROM tweetkeeper.metric_history ORDER BY 1, 2, 3"
)
for q in "${reads[@]}"; do
  via=$(tk_psql -c "SELECT md5(string_agg(r::text, E'\n')), count(*) FROM ($q) r")
  alone=$(one -c "SELECT md5(string_agg(r::text, E'\n')), count(*) FROM ($q) r")
  tk_ok_if "through the proxy as on one node: ${q:0:60}... (${via#*|} rows)" '[ "$via" = "$alone" ] && [ "${via#*|}" -gt 0 ]'
done
# The tools, unchanged, against the proxy: tweetkeeper-export's files are one node's; the report
# is written.
export_bin=$TK_BUILD/worker/tweetkeeper-export
for f in "csv" "csv --history" "curves --ages 10s,1m,2m" "lifespans"; do
  # shellcheck disable=SC2086 # (the format's options, split on purpose)
  "$export_bin" --dsn "$TK_DSN" --format $f -o "$dir/via.out" 2>"$dir/export.err" &&
    "$export_bin" --dsn "$(tk_node_dsn one 5436)" --format $f -o "$dir/alone.out" 2>>"$dir/export.err"
  tk_ok "tweetkeeper-export --format $f through the proxy writes one node's file ($(wc -l <"$dir/via.out") lines)" \
    "$(cmp -s "$dir/via.out" "$dir/alone.out" && [ "$(wc -l <"$dir/via.out")" -gt 100 ]; echo $?)" "$(tail -3 "$dir/export.err")"
done
"$TK_BUILD/worker/tweetkeeper-report" --dsn "$TK_DSN" -o "$dir/report.html" 2>"$dir/report.err"
tk_ok "tweetkeeper-report through the proxy" $? "$(tail -3 "$dir/report.err")"
# And tweetkeeper-import: ids and URLs of every network, each to its node.
before=$(( $(count_on 0) + $(count_on 1) + $(count_on 2) ))
tk_psql -c "SELECT id::text FROM unnest($(tk_snowflake_sql '5 minutes' 30 0)) id
            UNION ALL SELECT format('https://a.social/@u/%s', ((extract(epoch FROM now() - interval '5 minutes') * 1000)::bigint << 16) + g)
              FROM generate_series(1, 10) g" >"$dir/import.txt"
"$TK_BUILD/worker/tweetkeeper-import" --dsn "$TK_DSN" --collection imported "$dir/import.txt" >"$dir/import.out" 2>&1
imported() { node "$1" -c "SELECT count(*) FROM tweetkeeper.collection_posts WHERE collection = 'imported'"; }
tk_ok "tweetkeeper-import --collection through the proxy: 40 posts, each on its node and in the collection there" \
  "$([ $? = 0 ] && [ $(( $(count_on 0) + $(count_on 1) + $(count_on 2) )) = $((before + 40)) ] && [ "$(stray_on 0)$(stray_on 1)$(stray_on 2)" = 000 ] &&
     [ $(( $(imported 0) + $(imported 1) + $(imported 2) )) = 40 ]; echo $?)" \
  "$(tail -3 "$dir/import.out"; head -3 "$dir/import.txt")"

tk_summary partitions
