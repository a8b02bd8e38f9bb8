-- Freshest-first when short (tweetkeeper.claim_order = lateness): due tweets are served by how
-- late they are relative to their own delay (young: per second of it too), index-driven; watched tweets come first; watch()
-- and unwatch() with their errors; expired watches return to the age schedule.
\ir lib/begin.sql
SELECT plan(44);
SET LOCAL tweetkeeper.buffer_ttl = 0;
DELETE FROM tweetkeeper.age_policy;
INSERT INTO tweetkeeper.age_policy VALUES ('10 minutes', '5 seconds'), ('30 days', '1 hour');

CREATE FUNCTION pg_temp.id(age interval, n integer) RETURNS bigint LANGUAGE sql AS
  $$ SELECT (((extract(epoch FROM now() - age) * 1000)::bigint - 1288834974657) << 22) + n $$;
CREATE FUNCTION pg_temp.claim(size integer) RETURNS bigint[] LANGUAGE sql AS
  $$ SELECT tweet_ids FROM tweetkeeper.claim_batch('w', size) $$;

SELECT is(current_setting('tweetkeeper.claim_order'), 'lateness', 'lateness is the default order');
SELECT throws_ok($$SET tweetkeeper.claim_order = 'random'$$, '22023', NULL, 'an unknown order is refused');

-- A young tweet (delay 5 s) due 10 s ago is 2 delays late; an old one (delay 1 h) due 30 min
-- ago is half a delay late, though due much longer.
SELECT tweetkeeper.schedule_tweets(ARRAY[pg_temp.id('1 minute', 1), pg_temp.id('2 days', 2)]);
SELECT results_eq($$SELECT delay FROM tweetkeeper.tweets ORDER BY created_at DESC$$,
  $$VALUES (interval '5 seconds'), (interval '1 hour')$$, 'scheduling records each tweet''s delay');
UPDATE tweetkeeper.tweets SET due_at = now() - interval '10 seconds' WHERE tweet_id = pg_temp.id('1 minute', 1);
UPDATE tweetkeeper.tweets SET due_at = now() - interval '30 minutes' WHERE tweet_id = pg_temp.id('2 days', 2);
SAVEPOINT s;
SELECT is(pg_temp.claim(1), ARRAY[pg_temp.id('1 minute', 1)], 'lateness: the young tweet, 2 delays late, first');
ROLLBACK TO s;
SET LOCAL tweetkeeper.claim_order = due;
SELECT is(pg_temp.claim(1), ARRAY[pg_temp.id('2 days', 2)], 'due: the oldest due first');
ROLLBACK TO s;
-- young: lateness per second of delay. The old tweet 3 delays late (3 / 3600) waits behind the
-- young one 2 delays late (2 / 5), which lateness would not do (below); 2,000 delays late
-- (2000 / 3600 = 0.56 > 0.4), it goes first: nothing starves.
SET LOCAL tweetkeeper.claim_order = young;
UPDATE tweetkeeper.tweets SET due_at = now() - interval '3 hours' WHERE tweet_id = pg_temp.id('2 days', 2);
SELECT is(pg_temp.claim(1), ARRAY[pg_temp.id('1 minute', 1)], 'young: a young tweet 2 delays late before an old one 3 late');
ROLLBACK TO s;
SET LOCAL tweetkeeper.claim_order = young;
UPDATE tweetkeeper.tweets SET due_at = now() - interval '2000 hours' WHERE tweet_id = pg_temp.id('2 days', 2);
SELECT is(pg_temp.claim(1), ARRAY[pg_temp.id('2 days', 2)], 'young: an old tweet 2,000 delays late goes first (nothing starves)');
ROLLBACK TO s;
SET LOCAL tweetkeeper.claim_order = lateness;
-- Nothing starves: the old tweet, 3 delays late, goes before the young one, 2 delays late.
UPDATE tweetkeeper.tweets SET due_at = now() - interval '3 hours' WHERE tweet_id = pg_temp.id('2 days', 2);
SELECT is(pg_temp.claim(1), ARRAY[pg_temp.id('2 days', 2)], 'lateness: an old tweet 3 delays late before a young one 2 late');
SELECT is(pg_temp.claim(1), ARRAY[pg_temp.id('1 minute', 1)], 'then the young one');
SELECT is(pg_temp.claim(1), NULL, 'then nothing is due');
ROLLBACK TO s;
SELECT is(pg_temp.claim(100), ARRAY[pg_temp.id('2 days', 2), pg_temp.id('1 minute', 1)],
  'a batch takes all due tweets (ids in due order)');
SELECT is(tweetkeeper.complete_batch((SELECT max(lease_id) FROM tweetkeeper.batches),
  jsonb_build_array(jsonb_build_object('id', pg_temp.id('1 minute', 1)), jsonb_build_object('id', pg_temp.id('2 days', 2)))), 2,
  'complete');
SELECT results_eq($$SELECT delay, due_at FROM tweetkeeper.tweets ORDER BY created_at DESC$$,
  $$VALUES (interval '5 seconds', now() + interval '5 seconds'), (interval '1 hour', now() + interval '1 hour')$$,
  'completion reschedules by age and records the delay');
ROLLBACK TO s;

-- Watched tweets.
SELECT is(tweetkeeper.watch(ARRAY[pg_temp.id('2 days', 2), pg_temp.id('2 days', 3)], '1 minute', '1 hour'), 2::bigint,
  'watch: two tweets, one not tracked yet');
SELECT is((SELECT count(*) FROM tweetkeeper.tweets WHERE tweet_id = pg_temp.id('2 days', 3)), 1::bigint, 'the untracked one is tracked now');
SELECT results_eq($$SELECT tweet_id, every, until FROM tweetkeeper.watches$$,
  $$VALUES (pg_temp.id('2 days', 2), interval '1 minute', now() + interval '1 hour'),
           (pg_temp.id('2 days', 3), interval '1 minute', now() + interval '1 hour')$$, 'the watches view lists both');
SELECT is((SELECT delay FROM tweetkeeper.tweets WHERE tweet_id = pg_temp.id('2 days', 3)), interval '1 minute',
  'a watched tweet''s delay is the watch''s interval');
SELECT ok((SELECT due_at <= now() FROM tweetkeeper.tweets WHERE tweet_id = pg_temp.id('2 days', 3)),
  'never fetched and long due: it stays due now');
UPDATE tweetkeeper.tweets SET due_at = now() - interval '1 second' WHERE tweet_id = pg_temp.id('2 days', 3);
UPDATE tweetkeeper.tweets SET due_at = now() + interval '1 hour' WHERE tweet_id = pg_temp.id('2 days', 2);
SELECT is(pg_temp.claim(1), ARRAY[pg_temp.id('2 days', 3)], 'a watched tweet 1 s late comes before a young one 2 delays late');
SELECT is(tweetkeeper.complete_batch((SELECT max(lease_id) FROM tweetkeeper.batches),
  jsonb_build_array(jsonb_build_object('id', pg_temp.id('2 days', 3)))), 1, 'complete the watched tweet');
SELECT row_eq($$SELECT due_at, watch_until FROM tweetkeeper.tweets WHERE tweet_id = pg_temp.id('2 days', 3)$$,
  ROW(now() + interval '1 minute', now() + interval '1 hour'), 'next refresh one interval later, watch unchanged');
SELECT is(tweetkeeper.watch(ARRAY[pg_temp.id('2 days', 3)], '2 minutes', '3 hours'), 1::bigint, 'renew');
SELECT row_eq($$SELECT every, until FROM tweetkeeper.watches WHERE tweet_id = pg_temp.id('2 days', 3)$$,
  ROW(interval '2 minutes', now() + interval '3 hours'), 'a renewal extends the watch and takes the new interval');
SELECT tweetkeeper.watch(ARRAY[pg_temp.id('2 days', 3)], '2 minutes', '10 minutes');
SELECT is((SELECT until FROM tweetkeeper.watches WHERE tweet_id = pg_temp.id('2 days', 3)), now() + interval '3 hours',
  'a shorter renewal does not shorten it');

-- unwatch and expiry: back to the age schedule.
SELECT is(tweetkeeper.unwatch(ARRAY[pg_temp.id('2 days', 3), 42]), 1::bigint, 'unwatch: one was watched');
SELECT row_eq($$SELECT watch_until, delay, due_at FROM tweetkeeper.tweets WHERE tweet_id = pg_temp.id('2 days', 3)$$,
  ROW(NULL::timestamptz, interval '1 hour', now() + interval '1 hour'), 'back on its age schedule: an hour after its last refresh');
UPDATE tweetkeeper.tweets SET watch_until = now() - interval '1 second' WHERE tweet_id = pg_temp.id('2 days', 2);
SELECT is((SELECT count(*) FROM tweetkeeper.watches), 0::bigint, 'an expired watch is not listed');
SELECT tweetkeeper.maintenance();
SELECT row_eq($$SELECT watch_every, watch_until, delay FROM tweetkeeper.tweets WHERE tweet_id = pg_temp.id('2 days', 2)$$,
  ROW(NULL::interval, NULL::timestamptz, interval '1 hour'), 'maintenance ends an expired watch');

-- A tweet past the last bucket (done) is revived by a watch; a deleted one is not watched.
SELECT tweetkeeper.schedule_tweet(pg_temp.id('40 days', 4));
UPDATE tweetkeeper.tweets SET state = 'done', due_at = NULL, updated_at = now() - interval '1 day'
 WHERE tweet_id = pg_temp.id('40 days', 4);
UPDATE tweetkeeper.tweets SET state = 'deleted', due_at = NULL WHERE tweet_id = pg_temp.id('1 minute', 1);
SELECT is(tweetkeeper.watch(ARRAY[pg_temp.id('40 days', 4), pg_temp.id('1 minute', 1)], '30 seconds', '5 minutes'), 1::bigint,
  'a done tweet can be watched, a deleted one not');
SELECT row_eq($$SELECT state::text, due_at FROM tweetkeeper.tweets WHERE tweet_id = pg_temp.id('40 days', 4)$$,
  ROW('scheduled'::text, now() - interval '1 day' + interval '30 seconds'), 'the done tweet is due again');
SELECT tweetkeeper.unwatch(ARRAY[pg_temp.id('40 days', 4)]);
SELECT row_eq($$SELECT state::text, due_at FROM tweetkeeper.tweets WHERE tweet_id = pg_temp.id('40 days', 4)$$,
  ROW('done'::text, NULL::timestamptz), 'unwatched, it is done again');

-- Unreasonable arguments.
SELECT throws_ok($$SELECT tweetkeeper.watch(NULL)$$, '22004', NULL, 'watch: NULL ids');
SELECT throws_ok($$SELECT tweetkeeper.watch(ARRAY[1595000000000000001, NULL])$$, '22004', NULL, 'watch: a NULL id');
SELECT throws_ok($$SELECT tweetkeeper.watch(ARRAY[1595000000000000001], NULL)$$, '22004', NULL, 'watch: NULL interval');
SELECT throws_ok($$SELECT tweetkeeper.watch(ARRAY[1595000000000000001], '5 seconds')$$, '22023',
  'every must be between 10 seconds and 1 day, got 00:00:05', 'watch: every 5 s is too often');
SELECT throws_ok($$SELECT tweetkeeper.watch(ARRAY[1595000000000000001], '2 days', '10 days')$$, '22023', NULL, 'watch: every 2 days');
SELECT throws_ok($$SELECT tweetkeeper.watch(ARRAY[1595000000000000001], '1 minute', '0')$$, '22023', NULL, 'watch: for 0');
SELECT throws_ok($$SELECT tweetkeeper.watch(ARRAY[1595000000000000001], '1 minute', '40 days')$$, '22023', NULL, 'watch: for 40 days');
SELECT throws_ok($$SELECT tweetkeeper.watch(ARRAY[1595000000000000001], '1 hour', '10 minutes')$$, '22023',
  'every (01:00:00) is longer than the watch itself (00:10:00)', 'watch: every longer than the watch');
SELECT throws_ok($$SELECT tweetkeeper.watch(ARRAY[20])$$, '22023', NULL, 'watch: a pre-Snowflake id is refused as schedule_tweets does');
SELECT throws_ok($$SELECT tweetkeeper.unwatch(NULL)$$, '22004', NULL, 'unwatch: NULL ids');

-- The lateness claim is index-driven even as a generic plan: a loose scan of the delays, then
-- per delay at most max_size rows of tweets_lateness_idx; no sequential scan.
INSERT INTO tweetkeeper.tweets (tweet_id, created_at, due_at, delay)
SELECT 100000 + g, now() - interval '1 day', now() - g * interval '1 second', interval '1 hour' * (g % 5 + 1)
  FROM generate_series(1, 20000) g;
ANALYZE tweetkeeper.tweets;
SET LOCAL plan_cache_mode = force_generic_plan;
PREPARE lateness_scan(int, bigint[]) AS
  WITH RECURSIVE d(delay) AS (
     (SELECT t.delay FROM tweetkeeper.tweets t WHERE t.due_at IS NOT NULL AND t.tweet_id > 0
       ORDER BY t.delay LIMIT 1)
     UNION ALL
     SELECT (SELECT t.delay FROM tweetkeeper.tweets t
              WHERE t.due_at IS NOT NULL AND t.tweet_id > 0 AND t.delay > d.delay ORDER BY t.delay LIMIT 1)
       FROM d WHERE d.delay IS NOT NULL)
  SELECT c.tweet_id, extract(epoch FROM now() - c.due_at) / greatest(extract(epoch FROM d.delay), 1)
    FROM d CROSS JOIN LATERAL (
      SELECT t.tweet_id, t.due_at FROM tweetkeeper.tweets t
       WHERE t.due_at IS NOT NULL AND t.tweet_id > 0 AND (t.delay, t.due_at) >= (d.delay, '-infinity'::timestamptz)
         AND (t.delay, t.due_at) <= (d.delay, now()) AND t.tweet_id <> ALL ($2)
       ORDER BY t.delay, t.due_at LIMIT $1) c
   WHERE d.delay IS NOT NULL;
\ir lib/plan_of.sql
SELECT matches(pg_temp.plan_of($$EXECUTE lateness_scan(100, '{}')$$), 'Index (Only )?Scan using tweets_lateness_idx',
  'the lateness scan walks tweets_lateness_idx');
SELECT doesnt_match(pg_temp.plan_of($$EXECUTE lateness_scan(100, '{}')$$), 'Seq Scan', 'with no full scan');
SELECT is(cardinality(pg_temp.claim(100)), 100, 'and a claim over 20,000 due tweets takes a full batch');

SELECT * FROM finish();
ROLLBACK;
