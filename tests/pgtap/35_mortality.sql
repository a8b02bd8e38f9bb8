-- Mortality (sql/replaceable/76_mortality.sql): post_availability, mortality_by_age and
-- mortality_by_date against values worked out by hand from this file's own posts; and a post
-- turning missing (left out of answers) gets its tombstone and loses its payloads once.
\ir lib/begin.sql
SELECT plan(13);

-- Collection c: four X posts made 2026-01-01 10:00 UTC, each with its own fate.
--   p1 available, last seen 2026-01-20;
--   p2 seen 12:00, found deleted 2026-01-02 10:00;
--   p3 seen 2026-01-04 10:00, found hidden (not authorized) 2026-01-09 10:00;
--   p4 never seen, found missing (omitted) 10:05.
-- And p5, in no collection: made an hour ago, not read yet (unknown until it is).
INSERT INTO tweetkeeper.tweets (tweet_id, created_at, state, due_at, delay, updated_at, problem_type, problem_at) VALUES
  (1001, '2026-01-01 10:00+00', 'done', NULL, NULL, '2026-01-20 00:00+00', NULL, NULL),
  (1002, '2026-01-01 10:00+00', 'deleted', NULL, NULL, '2026-01-01 12:00+00', 'resource-not-found', '2026-01-02 10:00+00'),
  (1003, '2026-01-01 10:00+00', 'unavailable', now() + interval '1 day', '1 day', '2026-01-04 10:00+00',
   'not-authorized-for-resource', '2026-01-09 10:00+00'),
  (1004, '2026-01-01 10:00+00', 'missing', now() + interval '1 day', '1 day', NULL, 'omitted', '2026-01-01 10:05+00'),
  (1005, now() - interval '1 hour', 'scheduled', now() + interval '1 minute', '1 minute', NULL, NULL, NULL);
INSERT INTO tweetkeeper.tombstones (tweet_id, reason, observed_at, gone_since) VALUES
  (1002, 'resource-not-found', '2026-01-02 10:00+00', '2026-01-02 10:00+00'),
  -- (rechecked since: observed_at is the last time, gone_since the first)
  (1003, 'not-authorized-for-resource', '2026-02-09 10:00+00', '2026-01-09 10:00+00'),
  (1004, 'omitted', '2026-01-01 10:05+00', '2026-01-01 10:05+00');
SELECT tweetkeeper.collect('c', ARRAY[1001, 1002, 1003, 1004]::bigint[]);

SELECT results_eq($$SELECT post_id, network, gone_since, reason, detail FROM tweetkeeper.post_availability ORDER BY post_id$$,
  $$VALUES (1001::bigint, 'x', NULL::timestamptz, NULL::text, NULL::text),
           (1002, 'x', timestamptz '2026-01-02 10:00+00', 'deleted', 'resource-not-found'),
           (1003, 'x', timestamptz '2026-01-09 10:00+00', 'hidden', 'not-authorized-for-resource'),
           (1004, 'x', timestamptz '2026-01-01 10:05+00', 'missing', 'omitted'),
           (1005, 'x', NULL, NULL, NULL)$$,
  'post_availability: since when each is gone (the first time found, not the last) and why');

-- By age. At 1 hour p4 is missing, the others seen after; at 1 day p2 is deleted; at 7 days p3
-- was last seen at 3 days and found gone at 8: unknown; 30 days and older have not come for p5.
SELECT results_eq($$SELECT age, posts, available, gone, unknown, share_available, deleted, hidden, missing
                      FROM tweetkeeper.mortality_by_age WHERE collection = 'c' ORDER BY age$$,
  $$VALUES (interval '1 hour', 4::bigint, 3::bigint, 1::bigint, 0::bigint, 0.7500, 0::bigint, 0::bigint, 1::bigint),
           (interval '1 day', 4, 2, 2, 0, 0.5000, 1, 0, 1),
           (interval '7 days', 4, 1, 2, 1, 0.3333, 1, 0, 1),
           (interval '30 days', 4, 1, 3, 0, 0.2500, 1, 1, 1),
           (interval '90 days', 4, 1, 3, 0, 0.2500, 1, 1, 1),
           (interval '365 days', 4, 1, 3, 0, 0.2500, 1, 1, 1)$$
  || CASE WHEN now() < '2027-01-01 10:00+00' THEN ' LIMIT 5' ELSE '' END,
  'mortality_by_age for c: each age the posts have reached');
SELECT results_eq($$SELECT posts, available, unknown FROM tweetkeeper.mortality_by_age WHERE collection IS NULL AND age = '1 hour'$$,
  $$VALUES (5::bigint, 3::bigint, 1::bigint)$$, 'all posts (collection NULL): p5 too, an hour old, not read yet: unknown');
SELECT results_eq($$SELECT posts FROM tweetkeeper.mortality_by_age WHERE collection IS NULL AND age = '1 day'$$,
  $$VALUES (4::bigint)$$, '... and at 1 day without p5, which has not reached it');

-- By date, at the end of each UTC day.
SELECT results_eq($$SELECT day, posts, available, gone, unknown, share_available, deleted, hidden, missing
                      FROM tweetkeeper.mortality_by_date WHERE collection = 'c' AND day IN ('2026-01-01', '2026-01-02', '2026-01-05',
                                                                                            '2026-01-09', '2026-03-01')
                     ORDER BY day$$,
  $$VALUES (date '2026-01-01', 4::bigint, 2::bigint, 1::bigint, 1::bigint, 0.6667, 0::bigint, 0::bigint, 1::bigint),
           (date '2026-01-02', 4, 2, 2, 0, 0.5000, 1, 0, 1),
           (date '2026-01-05', 4, 1, 2, 1, 0.3333, 1, 0, 1),
           (date '2026-01-09', 4, 1, 3, 0, 0.2500, 1, 1, 1),
           (date '2026-03-01', 4, 1, 3, 0, 0.2500, 1, 1, 1)$$,
  'mortality_by_date for c: p2 unknown on its first night, then deleted; p3 unknown from the 5th, hidden from the 9th');
SELECT results_eq($$SELECT min(day), max(day), count(*) FROM tweetkeeper.mortality_by_date WHERE collection = 'c'$$,
  $$SELECT date '2026-01-01', (now() AT TIME ZONE 'UTC')::date, ((now() AT TIME ZONE 'UTC')::date - date '2026-01-01' + 1)::bigint$$,
  'a row a day from the first post''s day to today');
SELECT results_eq($$SELECT posts, available, unknown, gone FROM tweetkeeper.mortality_by_date WHERE collection IS NULL
                     AND day = (now() AT TIME ZONE 'UTC')::date$$,
  $$VALUES (5::bigint, 1::bigint, 1::bigint, 3::bigint)$$, 'all posts today: p1 available, p5 not read yet');

-- A post back (seen again) is available again: it loses its tombstone.
UPDATE tweetkeeper.tweets SET state = 'scheduled' WHERE tweet_id = 1003;
DELETE FROM tweetkeeper.tombstones WHERE tweet_id = 1003;
SELECT is((SELECT available FROM tweetkeeper.mortality_by_age WHERE collection = 'c' AND age = '30 days'), 2::bigint,
  'a post back is available again');

-- Turning missing: left out of tweetkeeper.missing_after answers in a row (as complete_batch()
-- calls put_off_omitted), a tombstone since the first time, payloads erased, once.
SET LOCAL tweetkeeper.missing_after = 2;
INSERT INTO tweetkeeper.payloads (tweet_id, seen_at, lease_id, content_hash, payload)
  VALUES (1005, now() - interval '30 minutes', 1, '\x00', '{"id": "1005"}');
UPDATE tweetkeeper.tweets SET lease_id = 77, payload_hash = '\x00' WHERE tweet_id = 1005;
CREATE FUNCTION pg_temp.omit(at timestamptz) RETURNS integer LANGUAGE sql AS $$
  SELECT tweetkeeper_internal.put_off_omitted(77, ARRAY[1005::bigint], 2, interval '1 day', at,
                                              ARRAY[interval '30 days'], ARRAY[interval '1 minute']) $$;
SELECT pg_temp.omit('2026-11-01 00:00+00');
SELECT is((SELECT count(*) FROM tweetkeeper.tombstones WHERE tweet_id = 1005), 0::bigint, 'left out once: not gone yet');
UPDATE tweetkeeper.tweets SET lease_id = 77 WHERE tweet_id = 1005;
SELECT pg_temp.omit('2026-11-02 00:00+00');
SELECT results_eq($$SELECT t.state::text, x.reason, x.gone_since, x.payloads_erased, t.payload_hash IS NULL,
                           (SELECT count(*) FROM tweetkeeper.payloads p WHERE p.tweet_id = 1005)
                      FROM tweetkeeper.tweets t JOIN tweetkeeper.tombstones x USING (tweet_id) WHERE t.tweet_id = 1005$$,
  $$VALUES ('missing', 'omitted', timestamptz '2026-11-02 00:00+00', 1, true, 0::bigint)$$,
  'left out twice: missing, a tombstone since then, its payload erased');
UPDATE tweetkeeper.tweets SET lease_id = 77 WHERE tweet_id = 1005;
SELECT pg_temp.omit('2026-11-03 00:00+00');
SELECT results_eq($$SELECT x.gone_since, x.observed_at FROM tweetkeeper.tombstones x WHERE x.tweet_id = 1005$$,
  $$VALUES (timestamptz '2026-11-02 00:00+00', timestamptz '2026-11-02 00:00+00')$$,
  'left out again while missing: the tombstone as it was (buried once)');
-- A post found gone again on a recheck (store_problems buries it each time): the tombstone's
-- observed_at moves, its gone_since stays.
SELECT tweetkeeper_internal.bury(ARRAY[1002::bigint], ARRAY['resource-not-found'], true, '2026-03-01 00:00+00');
SELECT results_eq($$SELECT gone_since, observed_at FROM tweetkeeper.tombstones WHERE tweet_id = 1002$$,
  $$VALUES (timestamptz '2026-01-02 10:00+00', timestamptz '2026-03-01 00:00+00')$$,
  'found gone again: since the first time, observed the last');
SET LOCAL tweetkeeper.deleted_payloads = 'keep';
SELECT tweetkeeper.schedule_tweets(ARRAY[1460323737035677698]);
INSERT INTO tweetkeeper.payloads (tweet_id, seen_at, lease_id, content_hash, payload)
  VALUES (1460323737035677698, now(), 1, '\x00', '{"id": "1460323737035677698"}');
UPDATE tweetkeeper.tweets SET lease_id = 78, omissions = 1, payload_hash = '\x00' WHERE tweet_id = 1460323737035677698;
SELECT tweetkeeper_internal.put_off_omitted(78, ARRAY[1460323737035677698], 2, interval '1 day', now(),
                                            ARRAY[interval '30 days'], ARRAY[interval '1 minute']);
SELECT results_eq($$SELECT x.payloads_erased, (SELECT count(*) FROM tweetkeeper.payloads p WHERE p.tweet_id = x.tweet_id)
                      FROM tweetkeeper.tombstones x WHERE x.tweet_id = 1460323737035677698$$,
  $$VALUES (0, 1::bigint)$$, 'under deleted_payloads = keep: a tombstone, the payload kept');

SELECT * FROM finish();
ROLLBACK;
