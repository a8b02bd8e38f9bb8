-- schedule_tweet, schedule_tweets, schedule_from_trigger: the ways a tweet gets tracked.
\ir lib/begin.sql
SELECT plan(36);

-- 1595000000000000000 was created 2022-11-22 10:23:28.323 UTC (Snowflake).
SELECT is(tweetkeeper.snowflake_time(1595000000000000000), timestamptz '2022-11-22 10:23:28.323+00',
  'snowflake_time decodes the id');
SELECT is(tweetkeeper.schedule_tweet(1595000000000000000), true, 'a new tweet is scheduled');
SELECT row_eq($$SELECT created_at, state::text, due_at, update_count FROM tweetkeeper.tweets
                WHERE tweet_id = 1595000000000000000$$,
  ROW(timestamptz '2022-11-22 10:23:28.323+00', 'scheduled'::text,
      timestamptz '2022-11-22 10:25:28.323+00', 0),
  'created_at comes from the id; the first refresh is one first-bucket delay later');

UPDATE tweetkeeper.tweets SET due_at = now() + interval '1 hour', update_count = 3
 WHERE tweet_id = 1595000000000000000;
SELECT is(tweetkeeper.schedule_tweet(1595000000000000000), false, 'scheduling again says it was tracked');
SELECT row_eq($$SELECT due_at, update_count FROM tweetkeeper.tweets WHERE tweet_id = 1595000000000000000$$,
  ROW(now() + interval '1 hour', 3), 'scheduling again neither resets nor duplicates');

SELECT is(tweetkeeper.schedule_tweet(42, timestamptz '2008-01-01 00:00+00'), true,
  'a pre-Snowflake id with an explicit created_at');
SELECT is((SELECT due_at FROM tweetkeeper.tweets WHERE tweet_id = 42),
  timestamptz '2008-01-01 00:02+00', 'its first refresh is due (long ago: at once)');
SELECT is(tweetkeeper.schedule_tweet(1595000000000000007, now() - interval '10 minutes'), true,
  'an explicit created_at wins over the id');
SELECT is((SELECT due_at FROM tweetkeeper.tweets WHERE tweet_id = 1595000000000000007),
  now() - interval '8 minutes', 'and sets the first due time');

SELECT throws_ok($$SELECT tweetkeeper.schedule_tweet(NULL)$$, '22004', 'tweet_id must not be NULL', 'NULL id');
SELECT throws_ok($$SELECT tweetkeeper.schedule_tweet(0)$$, '22023', 'tweet_id must be positive, got 0', 'zero id');
SELECT throws_ok($$SELECT tweetkeeper.schedule_tweet(-5, now())$$, '22023', 'tweet_id must be positive, got -5', 'negative id');
SELECT throws_ok($$SELECT tweetkeeper.schedule_tweet(20)$$, '22023',
  'tweet id 20 predates Snowflake ids and encodes no creation time', 'a pre-Snowflake id without created_at');
SELECT throws_ok($$SELECT tweetkeeper.schedule_tweet(7, now() + interval '1 hour')$$, '22023', NULL,
  'created_at in the future');
SELECT throws_ok($$SELECT tweetkeeper.schedule_tweet(9223372036854775807)$$, '22023', NULL,
  'an id whose time is in the future');
SELECT throws_ok($$SELECT tweetkeeper.schedule_tweet(7, timestamptz '2001-01-01')$$, '22023', NULL,
  'created_at before Twitter existed');
SELECT is((SELECT count(*) FROM tweetkeeper.tweets), 3::bigint, 'refused calls tracked nothing');

-- In bulk.
SELECT throws_ok($$SELECT tweetkeeper.schedule_tweets(ARRAY[1595000000000000001, 1595000000000000002,
  1595000000000000001])$$, '22023',
  'tweet_ids contains 1 duplicate element(s), e.g. 1595000000000000001 appears 2 times',
  'a repeated id inside one array is refused, naming it');
SELECT is((SELECT count(*) FROM tweetkeeper.tweets WHERE tweet_id IN (1595000000000000001, 1595000000000000002)),
  0::bigint, 'and nothing of that array is scheduled');
SELECT is(tweetkeeper.schedule_tweets(ARRAY[1595000000000000001, 1595000000000000002,
  1595000000000000000]), 2::bigint,
  'schedule_tweets counts the new ones; tracked ids are left as they are');
SELECT is((SELECT count(*) FROM tweetkeeper.tweets WHERE tweet_id IN (1595000000000000001, 1595000000000000002)),
  2::bigint, 'each once');
SELECT is(tweetkeeper.schedule_tweets('{}'), 0::bigint, 'an empty array schedules nothing');
SELECT throws_ok($$SELECT tweetkeeper.schedule_tweets(NULL)$$, '22004', 'tweet_ids must not be NULL', 'NULL array');
SELECT throws_ok($$SELECT tweetkeeper.schedule_tweets(ARRAY[1595000000000000003, NULL])$$, '22004',
  'tweet_ids[2] is NULL', 'a NULL element, by position');
SELECT throws_ok($$SELECT tweetkeeper.schedule_tweets(ARRAY[1595000000000000004, -1])$$, '22023',
  'tweet_id must be positive, got -1', 'a negative element');
SELECT throws_ok($$SELECT tweetkeeper.schedule_tweets(ARRAY[1595000000000000005, 9223372036854775807])$$, '22023', NULL,
  'an element whose time is in the future');
SELECT throws_ok($$SELECT tweetkeeper.schedule_tweets(ARRAY[1595000000000000006, 99])$$, '22023', NULL,
  'a pre-Snowflake element');
SELECT is((SELECT count(*) FROM tweetkeeper.tweets WHERE tweet_id BETWEEN 1595000000000000003 AND 1595000000000000006),
  0::bigint, 'a refused array schedules none of its ids');

SELECT is(tweetkeeper.schedule_tweets(ARRAY(SELECT 1595000000000000000 + g FROM generate_series(100, 20099) g)),
  20000::bigint, '20,000 ids in one call');
SET LOCAL tweetkeeper.max_ids_per_call = 1000;
SELECT throws_ok($$SELECT tweetkeeper.schedule_tweets(ARRAY(SELECT 1595000000000000000 + g FROM generate_series(30000, 31000) g))$$,
  '54000', 'tweet_ids has 1001 elements, more than tweetkeeper.max_ids_per_call (1000)',
  'an array over tweetkeeper.max_ids_per_call is refused');
RESET tweetkeeper.max_ids_per_call;

-- An empty policy can schedule nothing sensible: say so.
DELETE FROM tweetkeeper.age_policy;
SELECT throws_ok($$SELECT tweetkeeper.schedule_tweet(1595000000000000009)$$, '55000', NULL,
  'scheduling with an empty policy is refused');
SELECT throws_ok($$SELECT tweetkeeper.schedule_tweets(ARRAY[1595000000000000009])$$, '55000', NULL,
  'bulk scheduling with an empty policy is refused');
INSERT INTO tweetkeeper.age_policy VALUES (interval '30 days', interval '1 day');

-- From a trigger on the user's own table.
CREATE TABLE public.my_tweets (id bigint PRIMARY KEY, body text);
CREATE TRIGGER track AFTER INSERT ON public.my_tweets
  FOR EACH ROW EXECUTE FUNCTION tweetkeeper.schedule_from_trigger('id');
INSERT INTO public.my_tweets VALUES (1595000000000000100, 'a'), (1595000000000000101, 'b');
SELECT is((SELECT count(*) FROM tweetkeeper.tweets WHERE tweet_id IN (1595000000000000100, 1595000000000000101)),
  2::bigint, 'rows inserted into a table with the trigger are tracked');
SELECT throws_ok($$INSERT INTO public.my_tweets VALUES (-3, 'bad')$$, '22023', NULL,
  'a bad id in the user table is refused with the same error');
CREATE TABLE public.other (x int);
CREATE TRIGGER track AFTER INSERT ON public.other
  FOR EACH ROW EXECUTE FUNCTION tweetkeeper.schedule_from_trigger('id');
SELECT throws_ok($$INSERT INTO public.other VALUES (1)$$, '42703', NULL,
  'a trigger naming a missing column says so');
SELECT is((SELECT count(*) FROM public.my_tweets), 2::bigint, 'the refused insert left the user table whole');

SELECT * FROM finish();
ROLLBACK;
