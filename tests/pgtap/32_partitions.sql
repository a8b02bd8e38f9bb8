-- Partitions (issue 51): the hash that places a post, a node made a partition of some slots, its
-- refusal of every post another node holds (TKP01, nothing scheduled), and the hand-over of posts
-- that arrive from inside its own work (an edit's newest version, a followed account's post),
-- which must never fail the completion or the follower's call that found them.
\ir lib/begin.sql
SELECT plan(59);
SET LOCAL tweetkeeper.buffer_ttl = 0;

-- The hash is a contract between the proxy and every node, across releases: these values were
-- computed when it was made, and must never change (a changed hash strands every post).
SELECT is(tweetkeeper.partition_hash('x', '', '1460323737035677698'), -1005761382, 'an X post''s hash, as made');
SELECT is(tweetkeeper.url_partition_hash('https://bsky.app/profile/alice.bsky.social/post/3l2sbq2owqk2a'), -1116311372,
  'a Bluesky post''s hash, as made');
SELECT is(tweetkeeper.url_partition_hash('https://mastodon.social/@Gargron/109404444215281488'), -300222638,
  'a Mastodon post''s hash, as made');
-- Every spelling of a post is placed alike; the author's name plays no part (a handle resolved to
-- a DID later keeps the post where it is).
SELECT is(tweetkeeper.url_partition_hash('https://twitter.com/i/web/status/1460323737035677698'),
  tweetkeeper.partition_hash('x', '', '1460323737035677698'), 'an X post by id and by URL: one place');
SELECT is(tweetkeeper.url_partition_hash('https://bsky.app/profile/did:plc:abcdefghijklmnopqrstuvwx/post/3l2sbq2owqk2a'),
  tweetkeeper.url_partition_hash('https://bsky.app/profile/alice.bsky.social/post/3l2sbq2owqk2a'),
  'a Bluesky post by handle and by DID: one place');
SELECT is(tweetkeeper.url_partition_hash('https://mastodon.social/users/Gargron/statuses/109404444215281488'),
  tweetkeeper.url_partition_hash('https://mastodon.social/@Gargron/109404444215281488'), 'a Mastodon post in both forms: one place');
SELECT isnt(tweetkeeper.url_partition_hash('https://example.social/@Gargron/109404444215281488'),
  tweetkeeper.url_partition_hash('https://mastodon.social/@Gargron/109404444215281488'),
  'the same status id on another server is another post');
SELECT throws_ok($$SELECT tweetkeeper.url_partition_hash('https://example.com/nothing')$$, '22023', NULL,
  'a URL that names no post: 22023');

-- X ids of a few hours ago, and which of them fall in slots 0..31 ("low") or 32..63 ("high").
CREATE TEMP TABLE ids AS
  SELECT id, (tweetkeeper.partition_hash('x', '', id::text) & 63) < 32 AS low
    FROM (SELECT (((extract(epoch FROM now() - interval '3 hours') * 1000)::bigint - 1288834974657) << 22) + g AS id
            FROM generate_series(1, 64) g) x;
CREATE FUNCTION pg_temp.ids(lo boolean, n integer) RETURNS bigint[] LANGUAGE sql AS
  $$ SELECT (array_agg(id ORDER BY id))[1:n] FROM ids WHERE low = lo $$;
CREATE FUNCTION pg_temp.id(lo boolean, k integer) RETURNS bigint LANGUAGE sql AS
  $$ SELECT (pg_temp.ids(lo, k))[k] $$;
CREATE FUNCTION pg_temp.newest_high() RETURNS bigint LANGUAGE sql AS $$ SELECT max(id) FROM ids WHERE NOT low $$;
GRANT SELECT ON ids TO PUBLIC;
SELECT ok(cardinality(pg_temp.ids(true, 4)) = 4 AND cardinality(pg_temp.ids(false, 4)) = 4,
  'the ids fall in both halves (the test needs four of each)');

-- Alone (no partition row): every post is this node's.
SELECT is(tweetkeeper.schedule_tweets(pg_temp.ids(false, 2)), 2::bigint, 'alone, a node schedules every post');
SELECT throws_ok($$SELECT tweetkeeper.set_partition('p0', ARRAY[0, 64])$$, '22023', 'slots[2] is 64: a slot is 0 to 63',
  'a slot past 63 is refused');
SELECT throws_ok($$SELECT tweetkeeper.set_partition('p 0', ARRAY[0])$$, '22023', NULL, 'a partition name with a space is refused');
SELECT throws_ok($$SELECT tweetkeeper.set_partition('p0', ARRAY(SELECT generate_series(0, 31)))$$, '55006',
  'partition p0 tracks 2 post(s) of slots outside {0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31}',
  'a node cannot give up slots whose posts it still tracks');
DELETE FROM tweetkeeper.tweets;
SELECT is(tweetkeeper.set_partition('p0', ARRAY(SELECT generate_series(0, 31))), ARRAY(SELECT generate_series(0, 31)),
  'p0 now holds slots 0 to 31');
SELECT is((SELECT node FROM tweetkeeper.partition), 'p0', 'and knows its name');

-- A credential shared by the partitions: this one, holding 32 of 64 slots, keeps half its window
-- and cap, rounded down (the nodes together never more than the credential's).
SELECT tweetkeeper.add_credential('shared', 15, interval '15 minutes', 101);
SELECT is((SELECT format('%s %s %s', requests_per_window, remaining, monthly_cap) FROM tweetkeeper.credentials WHERE name = 'shared'),
  '7 7 50', 'add_credential on a partition of half the slots: half the window and half the cap, rounded down');

-- Every way in refuses a post of another slot, and schedules nothing of a call that holds one.
SELECT is(tweetkeeper.schedule_tweet(pg_temp.id(true, 1)), true, 'a post of its own slots is scheduled');
SELECT throws_ok(format('SELECT tweetkeeper.schedule_tweet(%s)', pg_temp.id(false, 1)), 'TKP01',
  format('post %s is in slot %s of 64, which partition p0 does not hold', pg_temp.id(false, 1),
         tweetkeeper.partition_hash('x', '', pg_temp.id(false, 1)::text) & 63),
  'schedule_tweet: another slot''s post is refused, naming its slot and this partition');
SELECT throws_ok(format('SELECT tweetkeeper.schedule_tweets(%L)', ARRAY[pg_temp.id(true, 2), pg_temp.id(true, 3)] || pg_temp.ids(false, 1)), 'TKP01', NULL,
  'schedule_tweets: one post of another slot refuses the call');
SELECT throws_ok(format('SELECT tweetkeeper.schedule_post(%L)', 'https://x.com/a/status/' || pg_temp.id(false, 1)), 'TKP01', NULL,
  'schedule_post of an X URL: refused alike');
SELECT throws_ok(format('SELECT tweetkeeper.schedule_posts(%L)', ARRAY['https://x.com/a/status/' || pg_temp.id(true, 2),
                                                                      'https://x.com/a/status/' || pg_temp.id(false, 1)]),
  'TKP01', NULL, 'schedule_posts: refused alike');
SELECT throws_ok(format('SELECT tweetkeeper.watch(%L)', pg_temp.ids(false, 1)), 'TKP01', NULL, 'watch: refused alike');
SELECT is((SELECT count(*) FROM tweetkeeper.tweets), 1::bigint, 'none of the refused calls scheduled anything');
-- Another network: a Bluesky post by its record key's slot.
CREATE TEMP TABLE bsky AS
  SELECT 'https://bsky.app/profile/alice.bsky.social/post/3l2sbq2owqk' || k AS url,
         (tweetkeeper.url_partition_hash('https://bsky.app/profile/alice.bsky.social/post/3l2sbq2owqk' || k) & 63) < 32 AS low
    FROM unnest(ARRAY['2a', '2b', '2c', '2d', '2e', '2f', '2g', '2h', '2i', '2j', '2k', '2l']) k;
SELECT ok((SELECT bool_or(low) AND bool_or(NOT low) FROM bsky), 'the Bluesky posts fall in both halves (the test needs both)');
SELECT is(tweetkeeper.schedule_posts(ARRAY(SELECT url FROM bsky WHERE low)), (SELECT count(*) FROM bsky WHERE low),
  'schedule_posts: Bluesky posts of its own slots are scheduled');
SELECT throws_ok(format('SELECT tweetkeeper.schedule_post(%L)', (SELECT min(url) FROM bsky WHERE NOT low)), 'TKP01', NULL,
  'schedule_post: a Bluesky post of another slot is refused');

-- From inside the node's work nothing is refused: an edit's newest version of another slot is
-- handed over, and the completion that found it stands.
CREATE FUNCTION pg_temp.complete_with_edit(newest bigint) RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
  l bigint;
BEGIN
  UPDATE tweetkeeper.tweets SET due_at = now() - interval '1 minute' WHERE tweet_id > 0;
  SELECT lease_id INTO l FROM tweetkeeper.claim_batch('w', 100);
  RETURN tweetkeeper.complete_batch(l, jsonb_build_array(jsonb_build_object('id', pg_temp.id(true, 1), 'like_count', 3,
                                                                          'newest_id', newest)));
END $$;
SELECT is(pg_temp.complete_with_edit(pg_temp.newest_high()), 1, 'a completion naming an edit of another slot completes');
SELECT results_eq($$SELECT url, created_at, reason FROM tweetkeeper.handovers$$,
  format($$VALUES ('https://x.com/i/web/status/%s', tweetkeeper.snowflake_time(%s), 'edit')$$, pg_temp.newest_high(), pg_temp.newest_high()),
  'the newest version is handed over, by URL and creation time');
SELECT is((SELECT format('%s %s', state, problem_type) FROM tweetkeeper.tweets WHERE tweet_id = pg_temp.id(true, 1)),
  'done edited', 'the edited post is done as on one node');
SELECT ok(NOT EXISTS (SELECT FROM tweetkeeper.tweets WHERE tweet_id = pg_temp.newest_high()), 'and the newest version is not tracked here');

-- A followed account's posts: its own slots' tracked, the others' handed over, all counted found.
INSERT INTO tweetkeeper.followed_accounts (network, host, handle, account_id, url, status)
  VALUES ('x', '', 'b', '783214', 'https://x.com/b', 'following');
SET LOCAL ROLE tweetkeeper_worker;
CREATE TEMP TABLE claimed AS SELECT * FROM tweetkeeper.claim_follows('f1', 'x', 10);
SELECT is(tweetkeeper.store_follow_posts((SELECT follow_id FROM claimed),
  ARRAY['https://x.com/b/status/' || pg_temp.id(true, 4), 'https://x.com/b/status/' || pg_temp.id(false, 2)],
  ARRAY[now() - interval '3 hours', now() - interval '3 hours'], NULL, now(), now() + interval '1 minute'), 2::bigint,
  'store_follow_posts: both posts found');
SELECT throws_ok($$SELECT * FROM tweetkeeper.take_handovers()$$, '42501', NULL, 'a worker may not take hand-overs');
RESET ROLE;
SELECT results_eq($$SELECT tweet_id FROM tweetkeeper.tweets WHERE tweet_id > 0 ORDER BY 1$$,
  format('VALUES (%s::bigint), (%s)', pg_temp.id(true, 1), pg_temp.id(true, 4)), 'the own slot''s post is tracked here');
SELECT results_eq($$SELECT url, reason, collection FROM tweetkeeper.take_handovers() ORDER BY reason$$,
  format($$VALUES ('https://x.com/i/web/status/%s', 'edit', NULL), ('https://x.com/b/status/%s', 'follow', 'https://x.com/b')$$,
         pg_temp.newest_high(), pg_temp.id(false, 2)),
  'the other is waiting for the proxy, beside the edit, with its account''s collection');
SELECT is(tweetkeeper.drop_handovers(ARRAY(SELECT url FROM tweetkeeper.handovers)), 2::bigint, 'delivered hand-overs are dropped');

-- A slot's move, both sides on this one node: its posts held (out), deleted with their rows,
-- taken in again parked and set free: every row as it was.
CREATE TEMP TABLE k AS SELECT tweetkeeper.partition_hash('x', '', pg_temp.id(true, 4)::text) & 63 AS slot;
UPDATE tweetkeeper.tweets SET like_count = 7 WHERE tweet_id = pg_temp.id(true, 4);
INSERT INTO tweetkeeper.metric_history_hot (tweet_id, lease_id, observed_at, like_count)
  VALUES (pg_temp.id(true, 4), 1, now(), 7);
SELECT tweetkeeper.collect('moved along', ARRAY[pg_temp.id(true, 4)]);
CREATE TEMP VIEW memberships AS
  SELECT string_agg(concat_ws(' ', c.name, c.kind, c.created_at, p.added_at), ',') AS m
    FROM tweetkeeper.collection_posts p JOIN tweetkeeper.collections c ON c.name = p.collection
   WHERE p.tweet_id = pg_temp.id(true, 4);
CREATE TEMP TABLE was_in AS SELECT m FROM memberships;
CREATE TEMP TABLE was AS
  SELECT (SELECT md5(string_agg(t::text, ',' ORDER BY t.tweet_id)) FROM tweetkeeper.tweets t
           WHERE tweetkeeper.partition_hash('x', '', t.tweet_id::text) & 63 = (SELECT slot FROM k)) AS tweets,
         (SELECT md5(string_agg(h::text, ',')) FROM tweetkeeper.metric_history_hot h WHERE h.tweet_id = pg_temp.id(true, 4)) AS history;
-- The moves' steps are the superuser's: move_in writes every kind of row (history, payloads).
SET LOCAL ROLE tweetkeeper_admin;
SELECT throws_ok($$SELECT tweetkeeper.move_in(0, 99, '{"tweets": []}')$$, '42501', NULL, 'the admin may not take posts in (move_in)');
SELECT throws_ok($$SELECT tweetkeeper.set_partition('p9', ARRAY[1])$$, '42501', NULL, 'nor make this node a partition');
RESET ROLE;
CREATE TEMP TABLE out1 AS SELECT * FROM tweetkeeper.move_out((SELECT slot FROM k), 7, NULL, 1000);
SELECT ok((SELECT posts >= 1 AND last_id IS NULL FROM out1)
          AND (SELECT bool_and(lease_id = -7) FROM tweetkeeper.tweets WHERE tweet_id = pg_temp.id(true, 4)),
  'move_out: the slot''s posts held by the move (read to the slot''s end)');
SELECT is((SELECT posts FROM tweetkeeper.move_out((SELECT slot FROM k), 7, NULL, 1000)), (SELECT posts FROM out1),
  'move_out again for the same move: what it holds, no more');
SELECT throws_ok(format('SELECT tweetkeeper.collect(''late'', ARRAY[%s::bigint])', pg_temp.id(true, 4)), '55006',
  format('post_ids[1]: post %s is moving to another node (move 7)', pg_temp.id(true, 4)),
  'a post held by a move joins no collection here (its rows are sent): 55006, to be asked again');
DELETE FROM tweetkeeper.collection_posts WHERE tweet_id = pg_temp.id(true, 4) AND collection = 'https://x.com/b';
SET LOCAL ROLE tweetkeeper_worker;
SELECT tweetkeeper.store_follow_posts((SELECT follow_id FROM claimed), ARRAY['https://x.com/b/status/' || pg_temp.id(true, 4)],
  ARRAY[now() - interval '3 hours'], NULL, now(), now() + interval '1 minute');
RESET ROLE;
SELECT results_eq(format($$SELECT h.reason, h.collection, (SELECT count(*) FROM tweetkeeper.collection_posts c WHERE c.tweet_id = %s)
                             FROM tweetkeeper.handovers h WHERE h.url = 'https://x.com/b/status/%s'$$, pg_temp.id(true, 4), pg_temp.id(true, 4)),
  $$VALUES ('follow', 'https://x.com/b', 1::bigint)$$,
  'a followed account''s post found while it moves: handed over with the collection, to join it where it lands');
DELETE FROM tweetkeeper.handovers;
INSERT INTO tweetkeeper.collection_posts (collection, tweet_id) VALUES ('https://x.com/b', pg_temp.id(true, 4));
SELECT is(tweetkeeper.move_step(7, 'release'), (SELECT posts FROM out1), 'move_step release lets them go');
CREATE TEMP TABLE out2 AS SELECT * FROM tweetkeeper.move_out((SELECT slot FROM k), 8, NULL, 1000);
SELECT is(tweetkeeper.move_step(8, 'done'), (SELECT posts FROM out2), 'move_step done deletes the posts a move holds');
SELECT ok(NOT EXISTS (SELECT FROM tweetkeeper.tweets WHERE tweet_id = pg_temp.id(true, 4))
          AND NOT EXISTS (SELECT FROM tweetkeeper.metric_history_hot WHERE tweet_id = pg_temp.id(true, 4)),
  '... with their history');
-- (The node it goes to does not know its collection yet.)
DELETE FROM tweetkeeper.collections WHERE name = 'moved along';
SELECT is(tweetkeeper.move_in((SELECT slot FROM k), 8, (SELECT rows FROM out2)), (SELECT posts FROM out2),
  'move_in takes them in, parked');
SELECT is((SELECT m FROM memberships), (SELECT m FROM was_in), '... in their collections, made where missing');
SELECT is(tweetkeeper.move_step(8, 'unpark'), (SELECT posts FROM out2), 'move_step unpark sets them free');
SELECT is((SELECT (SELECT md5(string_agg(t::text, ',' ORDER BY t.tweet_id)) FROM tweetkeeper.tweets t
                    WHERE tweetkeeper.partition_hash('x', '', t.tweet_id::text) & 63 = (SELECT slot FROM k))
                  || (SELECT md5(string_agg(h::text, ',')) FROM tweetkeeper.metric_history_hot h WHERE h.tweet_id = pg_temp.id(true, 4))),
  (SELECT tweets || history FROM was), 'every row as it was, and no move left (moves_here)');

SELECT throws_ok($$SELECT tweetkeeper.move_step(9, 'finish')$$, '22023', NULL, 'move_step: an unknown step is refused');

-- The whole policy replaced at once (what the proxy pushes to every node): a dry run checks and
-- keeps nothing; the digest is the rows'.
CREATE TEMP TABLE d0 AS SELECT tweetkeeper.policy_digest() AS d;
SELECT is(tweetkeeper.replace_age_policy(ARRAY[interval '1 hour', '3 days'], ARRAY[interval '1 minute', '1 hour'], true),
  (SELECT d FROM d0), 'replace_age_policy: a dry run returns the digest of the policy as it was');
SELECT is((SELECT count(*) FROM tweetkeeper.age_policy), 5::bigint, '... and keeps nothing of the new one');
SELECT isnt(tweetkeeper.replace_age_policy(ARRAY[interval '1 hour', '3 days'], ARRAY[interval '1 minute', '1 hour']),
  (SELECT d FROM d0), 'replaced: another digest');
SELECT results_eq($$SELECT max_age, delay, source FROM tweetkeeper.age_policy ORDER BY max_age$$,
  $$VALUES (interval '1 hour', interval '1 minute', 'user'), (interval '3 days', interval '1 hour', 'user')$$,
  '... the new rows, the user''s');
SELECT throws_ok($$SELECT tweetkeeper.replace_age_policy(ARRAY[interval '1 hour'], ARRAY[interval '-1 minute'], true)$$,
  '23514', NULL, 'a delay age_policy refuses is refused, dry run or not');

-- A setting of this database, as the proxy pushes it: a dry run keeps nothing; a bad value and a
-- setting of the server are refused.
CREATE TEMP TABLE s0 AS SELECT tweetkeeper.settings_digest() AS d;
SELECT is(tweetkeeper.set_setting('tweetkeeper.missing_after', '5', true), (SELECT d FROM s0),
  'set_setting: a dry run changes nothing');
SELECT throws_ok($$SELECT tweetkeeper.set_setting('tweetkeeper.missing_after', '0', true)$$, '22023', NULL,
  'a value the setting refuses is refused');
SELECT throws_ok($$SELECT tweetkeeper.set_setting('tweetkeeper.housekeeping_interval', '60', true)$$, '22023',
  'tweetkeeper.housekeeping_interval is not a tweetkeeper setting a database may set', 'a setting of the server is refused');

-- Alone again: every post is its own.
SELECT is(cardinality(tweetkeeper.set_partition(NULL, NULL)), 64, 'set_partition(NULL, NULL): alone, all 64 slots');
SELECT is(tweetkeeper.schedule_tweet(pg_temp.id(false, 3)), true, 'and it schedules any post again');
SELECT * FROM finish();
ROLLBACK;
