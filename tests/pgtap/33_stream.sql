-- Stream counts (sql/replaceable/38_stream.sql): the Jetstream reader's lease, adoption of a post
-- from a read, its flushes (counts, history, records, position), reads that only reconcile and
-- their differences, the put-off reads, a stale stream and a gap; and the attacks a worker-only
-- role could make on it (each once succeeded and is refused or changes nothing).
\ir lib/begin.sql
SELECT plan(45);

SET LOCAL tweetkeeper.buffer_ttl = 0;
CREATE TEMP VIEW other_session AS
  SELECT pid, backend_start FROM pg_stat_activity
   WHERE backend_type IN ('autovacuum launcher', 'logical replication launcher') ORDER BY pid LIMIT 1;
GRANT SELECT ON other_session TO PUBLIC;

-- Three Bluesky posts (a, b, c) an hour old and a Mastodon status.
SELECT tweetkeeper.schedule_posts(ARRAY(
  SELECT format('https://bsky.app/profile/did:plc:z72i7hdynmk6r22z27h6tvur/post/3l6oveex3ii2%s', k)
    FROM unnest(ARRAY['a', 'b', 'c']) k
  UNION ALL SELECT 'https://a.social/@u/113284726341234501'));
CREATE TEMP TABLE p AS
  SELECT CASE WHEN r.network = 'bluesky' THEN right(r.post_key, 1) ELSE 'm' END AS k, r.tweet_id AS id
    FROM tweetkeeper.post_refs r;
GRANT SELECT ON p TO PUBLIC;
UPDATE tweetkeeper.tweets SET due_at = now() - interval '1 minute', created_at = now() - interval '1 hour';
CREATE FUNCTION pg_temp.id(k text) RETURNS bigint LANGUAGE sql AS $$ SELECT id FROM p WHERE p.k = $1 $$;
-- A getPosts answer for the batch: the same counts (reposts, replies, likes, quotes) for each.
CREATE FUNCTION pg_temp.answer(lease bigint, ids bigint[], c bigint[], as_of timestamptz) RETURNS jsonb LANGUAGE sql AS $$
  SELECT jsonb_agg(jsonb_build_object('id', i, 'retweet_count', c[1], 'reply_count', c[2], 'like_count', c[3],
                                      'quote_count', c[4], 'as_of', as_of)) FROM unnest(ids) i $$;
CREATE FUNCTION pg_temp.read_all(c bigint[], as_of timestamptz) RETURNS integer LANGUAGE plpgsql AS $$
DECLARE b record;
BEGIN
  UPDATE tweetkeeper.tweets SET due_at = now() - interval '1 minute' WHERE endpoint = 'bluesky';
  SELECT * INTO b FROM tweetkeeper.claim_posts('w', 25, 'bluesky');
  RETURN tweetkeeper.complete_batch(b.lease_id, pg_temp.answer(b.lease_id, b.tweet_ids, c, as_of));
END $$;
CREATE FUNCTION pg_temp.flush(pos bigint, ids bigint[] DEFAULT '{}', ats timestamptz[] DEFAULT '{}', counts bigint[] DEFAULT '{}',
                              keys bigint[] DEFAULT '{}', key_ids bigint[] DEFAULT '{}', kinds smallint[] DEFAULT '{}',
                              gone bigint[] DEFAULT '{}', read_ids bigint[] DEFAULT '{}',
                              read_as_ofs timestamptz[] DEFAULT '{}', results text[] DEFAULT '{}', diffs bigint[] DEFAULT '{}')
  RETURNS bigint[] LANGUAGE sql AS $$
  SELECT tweetkeeper.store_stream_counts(pos, 10, 2, ids, ats, counts, keys, key_ids, kinds, gone, read_ids, read_as_ofs,
                                         results, diffs) $$;
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA pg_temp TO PUBLIC;
CREATE FUNCTION pg_temp.us(t timestamptz) RETURNS bigint LANGUAGE sql AS $$ SELECT (extract(epoch FROM t) * 1e6)::bigint $$;

-- Off: no reader may take the stream, and reads store as ever.
SELECT throws_ok($$SELECT * FROM tweetkeeper.stream_take('r')$$, '55000', 'stream counts are off',
                 'stream counts off (the default): stream_take() refuses, 55000');
SET LOCAL tweetkeeper.bluesky_stream_counts = on;

-- The lease: one reader at a time; the others' calls are refused.
UPDATE tweetkeeper.stream_state SET lease_pid = 0;  -- (no row yet: made by the first take)
SET LOCAL ROLE tweetkeeper_worker;
SELECT is((SELECT position_us IS NULL AND NOT gap FROM tweetkeeper.stream_take('r')), true,
          'a reader takes the stream: no position yet (live), no gap');
RESET ROLE;
UPDATE tweetkeeper.stream_state s SET lease_pid = o.pid, lease_started = o.backend_start FROM other_session o;
SET LOCAL ROLE tweetkeeper_worker;
SELECT is_empty($$SELECT * FROM tweetkeeper.stream_take('thief')$$, 'another session''s lease running: no row');
SELECT throws_ok($$SELECT pg_temp.flush(1)$$, '55000', 'the stream is not leased by this session',
                 'attack: a flush without the lease is refused, 55000');
SELECT throws_ok($$SELECT * FROM tweetkeeper.stream_held_posts()$$, '55000', NULL,
                 'attack: the posts without the lease, 55000');
SELECT throws_ok($$SELECT * FROM tweetkeeper.stream_reads_due(now())$$, '55000', NULL,
                 'attack: the reads without the lease, 55000');
RESET ROLE;
UPDATE tweetkeeper.stream_state SET lease_pid = 999999;  -- its session gone (a killed reader)
SET LOCAL ROLE tweetkeeper_worker;
SELECT is((SELECT count(*) FROM tweetkeeper.stream_take('r2')), 1::bigint,
          'a lease whose session is gone is taken over before it runs out');
RESET ROLE;
UPDATE tweetkeeper.stream_state s SET lease_pid = o.pid, lease_started = o.backend_start FROM other_session o;
UPDATE tweetkeeper.stream_state SET lease_until = now() - interval '1 second';
SET LOCAL ROLE tweetkeeper_worker;
SELECT is((SELECT count(*) FROM tweetkeeper.stream_take('r', '30 seconds')), 1::bigint, 'a lease run out is taken over');
RESET ROLE;
SELECT is((SELECT lease_owner || ' ' || (lease_until - now())::text FROM tweetkeeper.stream_state), 'r 00:00:30',
          'held by r for 30 s');

-- Not flushed yet: the stream is not live, a read stores its counts as ever and waits for no one.
SELECT is(pg_temp.read_all('{1,2,10,1}', now() - interval '1 second'), 3, 'a read of the three posts');
SELECT is((SELECT count(*) FROM tweetkeeper.stream_reads), 0::bigint, 'the stream not live yet: no read waits for it');
SELECT is(pg_temp.flush(pg_temp.us(now() - interval '5 seconds')), '{}'::bigint[], 'the reader''s first flush');
SELECT is((SELECT live FROM tweetkeeper.stream_stats), true, 'the stream is live');

-- Live: a read waits for the reader, as of its answer's Date; its counts are stored (not adopted yet).
SELECT is(pg_temp.read_all('{1,2,11,1}', now() - interval '2 seconds'), 3, 'a second read');
SELECT results_eq($$SELECT p.k, x.counts, x.as_of FROM tweetkeeper.stream_reads x JOIN p ON p.id = x.tweet_id ORDER BY 1$$,
  $$SELECT k, '{1,2,11,1}'::bigint[], now() - interval '2 seconds' FROM unnest(ARRAY['a', 'b', 'c']) k$$,
  'each read waits in stream_reads with its counts and as_of');
SELECT is((SELECT like_count FROM tweetkeeper.tweets WHERE tweet_id = pg_temp.id('a')), 11::bigint,
          'not counted by the stream yet: the read stored its counts');
SET LOCAL ROLE tweetkeeper_worker;
SELECT is((SELECT count(*) FROM tweetkeeper.stream_reads_due(now() - interval '3 seconds')), 0::bigint,
          'a read as of after the reader''s position is not due yet');
SELECT is((SELECT string_agg(did || '/' || rkey || ' ' || counted, ',' ORDER BY rkey)
             FROM tweetkeeper.stream_reads_due(now())),
          'did:plc:z72i7hdynmk6r22z27h6tvur/3l6oveex3ii2a false,did:plc:z72i7hdynmk6r22z27h6tvur/3l6oveex3ii2b false,did:plc:z72i7hdynmk6r22z27h6tvur/3l6oveex3ii2c false',
          'once passed: each with its DID, record key, and not counted yet');
-- The reader adopts a and b, and asks for c again; and tries to adopt the Mastodon status and X.
SELECT is(pg_temp.flush(pg_temp.us(now()), read_ids => ARRAY[pg_temp.id('a'), pg_temp.id('b'), pg_temp.id('c'),
                                                               pg_temp.id('m')],
                        read_as_ofs => array_fill(now() - interval '2 seconds', ARRAY[4]),
                        results => '{adopt,adopt,again,adopt}', diffs => array_fill(0::bigint, ARRAY[16])),
          '{}'::bigint[], 'a flush adopting a and b, c read again');
RESET ROLE;
SELECT results_eq($$SELECT p.k FROM tweetkeeper.stream_posts s JOIN p ON p.id = s.tweet_id ORDER BY 1$$,
                  $$VALUES ('a'), ('b')$$, 'the stream counts a and b (a post without a read waiting is not adopted)');
SELECT is((SELECT due_at FROM tweetkeeper.tweets WHERE tweet_id = pg_temp.id('c')), now(), 'c is due now');
SELECT is((SELECT count(*) FROM tweetkeeper.stream_reads), 0::bigint, 'the reads handled are gone');

-- Counts: a moved (history at its event's time, lease 0), a record kept; X and c are not the stream's.
-- a follows the adaptive policy: the stream's move is its decision's observation.
SELECT tweetkeeper.set_refresh_policy(ARRAY[pg_temp.id('a')], 'adaptive');
CREATE TEMP TABLE adaptive_before AS SELECT tweet_id, adaptive_state FROM tweetkeeper.tweets;
SET LOCAL ROLE tweetkeeper_worker;
SELECT is(pg_temp.flush(pg_temp.us(now()) + 1, ids => ARRAY[pg_temp.id('a'), pg_temp.id('c'), 1460323737035677699],
                        ats => ARRAY[now() - interval '500 ms', now(), now()]::timestamptz[],
                        counts => '{1,2,12,1, 9,9,9,9, 9,9,9,9}',
                        keys => '{101,102}', key_ids => ARRAY[pg_temp.id('a'), pg_temp.id('c')], kinds => '{3,3}'),
          ARRAY[pg_temp.id('c'), 1460323737035677699],
          'attack: counts of a post the stream does not count (and an X post) are not stored, their ids come back');
RESET ROLE;
SELECT results_eq($$SELECT p.k, t.like_count FROM tweetkeeper.tweets t JOIN p ON p.id = t.tweet_id WHERE p.k <> 'm' ORDER BY 1$$,
                  $$VALUES ('a', 12::bigint), ('b', 11), ('c', 11)$$, 'a''s likes are the stream''s, c''s unchanged');
SELECT results_eq($$SELECT lease_id, observed_at, like_count FROM tweetkeeper.metric_history_hot
                     WHERE tweet_id = pg_temp.id('a') AND lease_id = 0$$,
                  $$VALUES (0::bigint, now() - interval '500 ms', 12::bigint)$$, 'its history: at its event''s time, lease 0');
SELECT is((SELECT tweetkeeper_internal.adaptive_quiet_since(t.adaptive_state) || ' ' || (b.adaptive_state IS NULL)
             FROM tweetkeeper.tweets t JOIN adaptive_before b USING (tweet_id) WHERE t.tweet_id = pg_temp.id('a')),
          '00:59:00 true', 'the adaptive policy took the stream''s move as the post moving (its age when it moved: '
                           'the event''s, 59 min 59.5 s, to the minute)');
SELECT tweetkeeper.set_refresh_policy(ARRAY[pg_temp.id('a')], NULL);
SELECT is((SELECT count(*) FROM tweetkeeper.tweets t JOIN adaptive_before b USING (tweet_id)
            WHERE t.tweet_id <> pg_temp.id('a') AND t.adaptive_state IS DISTINCT FROM b.adaptive_state), 0::bigint,
          'no other post''s adaptive state changed');
SELECT results_eq($$SELECT record_key, kind FROM tweetkeeper.stream_records$$, $$VALUES (101::bigint, 3::smallint)$$,
                  'the record counted for a is kept, none for c');
SELECT is((SELECT events || ' ' || counted FROM tweetkeeper.stream_stats), '30 6', 'events read and counted add up');

-- A read of a counted post only reconciles: its counts stay the stream's, it waits, its next read
-- is tweetkeeper.stream_reconcile_factor times further off.
SET LOCAL tweetkeeper.stream_reconcile_factor = 10;
SELECT is(pg_temp.read_all('{1,2,13,1}', now()), 3, 'a third read');
SELECT results_eq($$SELECT p.k, t.like_count, t.due_at - now() FROM tweetkeeper.tweets t JOIN p ON p.id = t.tweet_id WHERE p.k <> 'm' ORDER BY 1$$,
  $$SELECT * FROM (VALUES ('a', 12::bigint), ('b', 11), ('c', 13)) v,
        LATERAL (SELECT CASE WHEN v.column1 = 'c' THEN 1 ELSE 10 END * tweetkeeper.next_delay(now() - interval '1 hour')) d$$,
  'a and b keep the stream''s counts and wait ten delays; c stored its read''s');
SELECT is((SELECT count(*) FROM tweetkeeper.stream_reads), 3::bigint, 'the three reads wait for the reader');
SET LOCAL ROLE tweetkeeper_worker;
SELECT is(pg_temp.flush(pg_temp.us(now()) + 2, read_ids => ARRAY[pg_temp.id('a'), pg_temp.id('b')],
                        read_as_ofs => ARRAY[now(), now()]::timestamptz[], results => '{compared,compared}',
                        diffs => '{0,0,1,0, 0,0,0,0}'), '{}'::bigint[], 'the reader compared a (one like off) and b');
RESET ROLE;
SELECT results_eq($$SELECT p.k, s.reconciled, s.differed, s.difference, s.last_differences
                     FROM tweetkeeper.stream_accuracy s JOIN p ON p.id = s.tweet_id ORDER BY 1$$,
  $$VALUES ('a', 1, 1, 1::bigint, '{0,0,1,0}'::bigint[]), ('b', 1, 0, 0::bigint, NULL)$$,
  'stream_accuracy: per post, reads compared, how many differed and by how much');
SELECT is((SELECT reconciled || ' ' || differed || ' ' || difference FROM tweetkeeper.stream_stats), '2 1 1',
          'stream_stats: in total');

-- Records deleted are forgotten; a position going back is refused.
SET LOCAL ROLE tweetkeeper_worker;
SELECT is(pg_temp.flush(pg_temp.us(now()) + 3, gone => '{101,999}'), '{}'::bigint[], 'a flush forgetting a record');
SELECT throws_ok($$SELECT pg_temp.flush(5)$$, '22023', NULL, 'a position before the stored one: 22023');
SELECT throws_ok($$SELECT pg_temp.flush(pg_temp.us(now()) + 4, ids => ARRAY[pg_temp.id('a')], ats => ARRAY[now()], counts => '{1,2}')$$,
                 '22023', NULL, 'misaligned arrays: 22023');
RESET ROLE;
SELECT is((SELECT count(*) FROM tweetkeeper.stream_records), 0::bigint, 'the record is gone');

-- Stale: the reader has not flushed for longer than tweetkeeper.stream_stale_after; a read stores
-- its counts again and its post leaves the stream.
UPDATE tweetkeeper.stream_state SET flushed_at = now() - interval '61 seconds';
SELECT is(pg_temp.read_all('{1,2,20,1}', now()), 3, 'a read while the stream is stale');
SELECT results_eq($$SELECT p.k, t.like_count, s.tweet_id IS NOT NULL FROM tweetkeeper.tweets t JOIN p ON p.id = t.tweet_id AND p.k <> 'm'
                     LEFT JOIN tweetkeeper.stream_posts s ON s.tweet_id = t.tweet_id ORDER BY 1$$,
  $$VALUES ('a', 20::bigint, false), ('b', 20, false), ('c', 20, false)$$,
  'the reads stored their counts, and the posts left the stream');

-- A gap: the position older than the replay window; every counted post is read again at once.
UPDATE tweetkeeper.stream_state SET flushed_at = now();
SELECT is(pg_temp.read_all('{1,2,21,1}', now()), 3, 'a read');
SELECT pg_temp.flush(pg_temp.us(now()) + 5, read_ids => ARRAY[pg_temp.id('a')], read_as_ofs => ARRAY[now()],
                     results => '{adopt}', diffs => '{0,0,0,0}');
UPDATE tweetkeeper.tweets SET due_at = now() + interval '1 hour' WHERE tweet_id = pg_temp.id('a');
UPDATE tweetkeeper.stream_state SET position_us = pg_temp.us(now() - interval '36 hours');
INSERT INTO tweetkeeper.stream_records VALUES (777, pg_temp.id('c'), 3);
UPDATE tweetkeeper.tweets SET state = 'done', due_at = NULL WHERE tweet_id = pg_temp.id('c');
SELECT is((SELECT position_us IS NULL AND gap FROM tweetkeeper.stream_take('r')), true,
          'a position older than the replay window: a gap, read live');
SELECT results_eq($$SELECT (SELECT due_at FROM tweetkeeper.tweets WHERE tweet_id = pg_temp.id('a')),
                           (SELECT count(*) FROM tweetkeeper.stream_posts), (SELECT gaps FROM tweetkeeper.stream_state)$$,
                  $$VALUES (now(), 0::bigint, 1)$$, 'the post it counted is due now, the stream counts none, the gap is counted');
SELECT is((SELECT count(*) FROM tweetkeeper.stream_records WHERE record_key = 777), 0::bigint,
          'the records of a post done since are gone');

SELECT * FROM finish();
ROLLBACK;
