-- The age policy and next_delay: seeded buckets, boundaries, the stop, bad rows, the cache.
\ir lib/begin.sql
SELECT plan(24);

SELECT results_eq(
  $$SELECT max_age, delay FROM tweetkeeper.age_policy ORDER BY max_age$$,
  $$VALUES (interval '18 minutes', interval '2 minutes'), (interval '60 minutes', interval '5 minutes'),
           (interval '1 day', interval '30 minutes'), (interval '7 days', interval '6 hours'),
           (interval '30 days', interval '1 day')$$,
  'the policy is seeded with the specification''s buckets');

SELECT is(tweetkeeper.next_delay(now()), interval '2 minutes', 'a new tweet: the first bucket');
SELECT is(tweetkeeper.next_delay(now() - interval '17 minutes 59 seconds'), interval '2 minutes', 'just under 18 minutes');
SELECT is(tweetkeeper.next_delay(now() - interval '18 minutes'), interval '5 minutes', 'exactly 18 minutes is the next bucket');
SELECT is(tweetkeeper.next_delay(now() - interval '3 hours'), interval '30 minutes', '3 hours');
SELECT is(tweetkeeper.next_delay(now() - interval '2 days'), interval '6 hours', '2 days');
SELECT is(tweetkeeper.next_delay(now() - interval '29 days 23 hours'), interval '1 day', 'just under 30 days');
SELECT is(tweetkeeper.next_delay(now() - interval '30 days'), NULL::interval, '30 days: no more refreshes');
SELECT is(tweetkeeper.next_delay(now() - interval '3 years'), NULL::interval, 'years old: no more refreshes');
SELECT is(tweetkeeper.next_delay(now() + interval '1 hour'), interval '2 minutes', 'a future created_at counts as age 0');
SELECT is(tweetkeeper.next_delay(NULL), NULL::interval, 'NULL in, NULL out');
SELECT throws_ok($$SELECT tweetkeeper.next_delay('infinity')$$, '22023',
  'created_at must be a finite timestamp', 'infinity is refused');

-- Edits take effect at once, in this session too (the trigger reloads the cached policy).
UPDATE tweetkeeper.age_policy SET delay = interval '1 minute' WHERE max_age = interval '18 minutes';
SELECT is(tweetkeeper.next_delay(now()), interval '1 minute', 'an edited delay is seen at once');
INSERT INTO tweetkeeper.age_policy VALUES (interval '90 days', interval '7 days');
SELECT is(tweetkeeper.next_delay(now() - interval '40 days'), interval '7 days', 'a new bucket is seen at once');
DELETE FROM tweetkeeper.age_policy WHERE max_age = interval '90 days';
SELECT is(tweetkeeper.next_delay(now() - interval '40 days'), NULL::interval, 'a deleted bucket is gone at once');

SELECT throws_ok($$UPDATE tweetkeeper.age_policy SET delay = interval '0' WHERE max_age = interval '1 day'$$,
  '23514', NULL, 'a zero delay is refused');
SELECT throws_ok($$INSERT INTO tweetkeeper.age_policy VALUES (interval '2 hours', interval '-5 minutes')$$,
  '23514', NULL, 'a negative delay is refused');
SELECT throws_ok($$INSERT INTO tweetkeeper.age_policy VALUES (interval '-1 hour', interval '5 minutes')$$,
  '23514', NULL, 'a negative max_age is refused');
SELECT throws_ok($$INSERT INTO tweetkeeper.age_policy VALUES (interval '1 hour', interval '1 minute')$$,
  '23505', NULL, 'a duplicate max_age is refused, even spelt differently (60 minutes = 1 hour)');
SELECT throws_ok($$INSERT INTO tweetkeeper.age_policy VALUES (interval '1 hour', NULL)$$,
  '23502', NULL, 'a NULL delay is refused');
-- The backend reads the policy whole on every edit: it holds at most 1,000 rows (SECURITY.md).
SELECT lives_ok($$INSERT INTO tweetkeeper.age_policy SELECT interval '1000 days' + g * interval '1 day', interval '1 day'
                   FROM generate_series(1, 995) g$$, 'a policy of 1,000 rows is taken');
SELECT throws_ok($$INSERT INTO tweetkeeper.age_policy VALUES (interval '5000 days', interval '1 day')$$,
  '22023', 'age_policy has 1001 rows; at most 1000', 'its 1,001st row is refused (22023), saying why');
DELETE FROM tweetkeeper.age_policy WHERE max_age > interval '1000 days';
SELECT is((SELECT count(*) FROM tweetkeeper.age_policy), 5::bigint, 'refused edits left the policy whole');

TRUNCATE tweetkeeper.age_policy;
SELECT is(tweetkeeper.next_delay(now()), NULL::interval, 'an empty policy refreshes nothing');

SELECT * FROM finish();
ROLLBACK;
