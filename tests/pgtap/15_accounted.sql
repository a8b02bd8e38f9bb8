-- Every id accounted for: an id the answer leaves out (neither found nor an error) is put off,
-- by its delay doubled at each omission in a row, and is 'missing' after
-- tweetkeeper.missing_after of them; a count the answer does not give keeps the last known one;
-- a count that is none (negative, absurd, or what the worker says is no number) is not stored.
\ir lib/begin.sql
SELECT plan(47);
SET LOCAL tweetkeeper.buffer_ttl = 0;
SET LOCAL tweetkeeper.history_keep_unchanged = off;
DELETE FROM tweetkeeper.age_policy;
INSERT INTO tweetkeeper.age_policy (max_age, delay) VALUES ('30 days', '1 hour');

-- Four tweets two days old (delay 1 hour), ids 1..4.
SELECT tweetkeeper.schedule_tweet(g, now() - interval '2 days') FROM generate_series(1, 4) g;
CREATE FUNCTION pg_temp.claim() RETURNS bigint LANGUAGE sql AS $$
  UPDATE tweetkeeper.tweets SET due_at = now() - interval '1 minute' WHERE due_at IS NOT NULL;
  SELECT lease_id FROM tweetkeeper.claim_batch('w', 100) $$;
CREATE FUNCTION pg_temp.obs(ids bigint[], likes bigint DEFAULT 10) RETURNS jsonb LANGUAGE sql AS $$
  SELECT coalesce(jsonb_agg(jsonb_build_object('id', i, 'retweet_count', 1, 'reply_count', 2, 'like_count', likes,
                                               'quote_count', 3, 'bookmark_count', 4, 'impression_count', 5)), '[]')
    FROM unnest(ids) i $$;
CREATE TEMP TABLE t AS SELECT * FROM tweetkeeper.tweets LIMIT 0;
CREATE FUNCTION pg_temp.t(id bigint) RETURNS tweetkeeper.tweets LANGUAGE sql AS
  $$ SELECT * FROM tweetkeeper.tweets WHERE tweet_id = id $$;

SELECT is((tweetkeeper.settings()).missing_after, 3, 'missing_after is 3 by default');
SELECT throws_ok($$SET tweetkeeper.missing_after = 0$$, '22023', NULL, 'missing_after below 1 is refused');

-- 1. Answer: 1 found, 2 deleted, 3 and 4 left out.
SELECT is(tweetkeeper.complete_batch(pg_temp.claim(), pg_temp.obs('{1}'),
  '[{"id":2,"type":"resource-not-found","detail":"gone"}]'), 2, 'an answer about 2 of 4 ids stores 2');
SELECT results_eq($$SELECT tweet_id, state::text, omissions, due_at - now(), delay, problem_type, problem_detail
                      FROM tweetkeeper.tweets WHERE tweet_id IN (3, 4) ORDER BY 1$$,
  $$VALUES (3::bigint, 'scheduled', 1, interval '1 hour', interval '1 hour', 'omitted', 'left out of 1 answer(s) in a row'),
           (4::bigint, 'scheduled', 1, interval '1 hour', interval '1 hour', 'omitted', 'left out of 1 answer(s) in a row')$$,
  'the ids left out are put off by their delay, not handed back due now, and say why');
SELECT is((SELECT lease_id FROM tweetkeeper.tweets WHERE tweet_id = 3), NULL, 'and are no longer leased');
SELECT is((SELECT omitted FROM tweetkeeper.batches ORDER BY lease_id DESC LIMIT 1), 2, 'the batch counts 2 ids left out');
SELECT is((SELECT ids_left_out FROM tweetkeeper.batch_stats WHERE window_name = 'last minute'), 2::bigint,
  'batch_stats shows them');
SELECT is((SELECT omissions FROM tweetkeeper.tweets WHERE tweet_id = 1), 0, 'the found tweet has none');

-- 2. Left out again: twice the delay; then a third time: missing, rechecked like unavailable.
SELECT is(tweetkeeper.complete_batch(pg_temp.claim(), pg_temp.obs('{1}')), 1, 'a second answer leaves out 3 and 4 again');
SELECT is((pg_temp.t(3)).due_at - now(), interval '2 hours', 'the second omission in a row doubles the wait');
SELECT is((pg_temp.t(3)).omissions, 2, 'two in a row');
SELECT is(tweetkeeper.complete_batch(pg_temp.claim(), pg_temp.obs('{1,4}')), 2, 'the third answer gives 4 again');
SELECT results_eq($$SELECT state::text, omissions, due_at - now(), delay, problem_type FROM tweetkeeper.tweets WHERE tweet_id = 3$$,
  $$VALUES ('missing', 3, interval '7 days', interval '7 days', 'omitted')$$,
  'the third omission in a row: missing, rechecked after unavailable_recheck (7 days)');
SELECT results_eq($$SELECT state::text, omissions, problem_type, like_count FROM tweetkeeper.tweets WHERE tweet_id = 4$$,
  $$VALUES ('scheduled', 0, NULL::text, 10::bigint)$$, 'an answer that gives it again resets the count and the problem');
SELECT is((SELECT tweets FROM tweetkeeper.queue_stats WHERE state = 'missing'), 1::bigint, 'queue_stats counts missing tweets');
SELECT is(tweetkeeper.complete_batch(pg_temp.claim(), pg_temp.obs('{1,4}')), 2, 'a missing tweet left out at its recheck');
SELECT results_eq($$SELECT state::text, omissions, due_at - now() FROM tweetkeeper.tweets WHERE tweet_id = 3$$,
  $$VALUES ('missing', 4, interval '7 days')$$, 'stays missing, rechecked a week later');
SELECT is(tweetkeeper.complete_batch(pg_temp.claim(), pg_temp.obs('{1,3,4}')), 3, 'a missing tweet found again');
SELECT results_eq($$SELECT state::text, omissions, due_at - now(), problem_type FROM tweetkeeper.tweets WHERE tweet_id = 3$$,
  $$VALUES ('scheduled', 0, interval '1 hour', NULL::text)$$, 'is back on its schedule');

-- 3. A per-id error accounts for an id too; the wait never exceeds unavailable_recheck.
SET LOCAL tweetkeeper.unavailable_recheck = '90min';
SELECT is(tweetkeeper.complete_batch(pg_temp.claim(), pg_temp.obs('{1}')), 1, 'left out: 3 and 4');
SELECT is(tweetkeeper.complete_batch(pg_temp.claim(), pg_temp.obs('{1}')), 1, 'left out again');
SELECT is((pg_temp.t(3)).due_at - now(), interval '90 minutes', 'the doubled wait is capped by unavailable_recheck');
SELECT is(tweetkeeper.complete_batch(pg_temp.claim(), pg_temp.obs('{1}'),
  '[{"id":3,"type":"resource-unavailable","detail":"x"},{"id":4,"type":"some-new-problem","detail":"y"}]'), 3,
  'errors for both');
SELECT results_eq($$SELECT tweet_id, state::text, omissions FROM tweetkeeper.tweets WHERE tweet_id IN (3, 4) ORDER BY 1$$,
  $$VALUES (3::bigint, 'unavailable', 0), (4::bigint, 'scheduled', 0)$$, 'an error is an answer: the count starts over');
RESET tweetkeeper.unavailable_recheck;

-- The wait is never shorter than the tweet's delay, even with a shorter unavailable_recheck,
-- and never overflows, however many omissions (missing_after up to 100).
SET LOCAL tweetkeeper.unavailable_recheck = '10min';
SET LOCAL tweetkeeper.missing_after = 100;
SELECT is(tweetkeeper.complete_batch(pg_temp.claim(), pg_temp.obs('{1}')), 1, 'left out with a 10-minute recheck');
SELECT is((pg_temp.t(4)).due_at - now(), interval '1 hour', 'still waits its delay (1 hour)');
UPDATE tweetkeeper.tweets SET omissions = 95, delay = interval '1 year' WHERE tweet_id = 4;
SET LOCAL tweetkeeper.unavailable_recheck = '7d';
SELECT is(tweetkeeper.complete_batch(pg_temp.claim(), pg_temp.obs('{1}')), 1, 'the 96th omission in a row');
SELECT results_eq($$SELECT omissions, due_at - now() FROM tweetkeeper.tweets WHERE tweet_id = 4$$,
  $$VALUES (96, interval '1 hour' * 0 + interval '7 days')$$, 'waits unavailable_recheck: 2^95 hours does not overflow');
RESET tweetkeeper.unavailable_recheck;
RESET tweetkeeper.missing_after;
SELECT is(tweetkeeper.complete_batch(pg_temp.claim(), pg_temp.obs('{1,4}')), 2, 'found again');

-- 4. missing_after 1; a watched tweet left out waits its watch interval, doubled, and its
--    watch ends when it is missing.
SELECT tweetkeeper.watch('{4}', interval '5 minutes', interval '1 day');
SET LOCAL tweetkeeper.missing_after = 2;
SELECT is(tweetkeeper.complete_batch(pg_temp.claim(), pg_temp.obs('{1}')), 1, 'a watched tweet left out');
SELECT results_eq($$SELECT due_at - now(), watch_every FROM tweetkeeper.tweets WHERE tweet_id = 4$$,
  $$VALUES (interval '5 minutes', interval '5 minutes')$$, 'waits one watch interval, still watched');
SELECT is(tweetkeeper.complete_batch(pg_temp.claim(), pg_temp.obs('{1}')), 1, 'and left out again');
SELECT results_eq($$SELECT state::text, watch_every, watch_until FROM tweetkeeper.tweets WHERE tweet_id = 4$$,
  $$VALUES ('missing', NULL::interval, NULL::timestamptz)$$, 'missing after missing_after (2): the watch ends');
-- A watch that expires while its tweet is in flight ends when the answer leaves it out, too.
SELECT tweetkeeper.watch('{1}', interval '5 minutes', interval '1 day');
SELECT pg_temp.claim() AS lease \gset
UPDATE tweetkeeper.tweets SET watch_until = now() - interval '1 second' WHERE tweet_id = 1;
SELECT is(tweetkeeper.complete_batch(:lease, '[]'), 0, 'a watched tweet whose watch ran out in flight, left out');
SELECT results_eq($$SELECT watch_every, due_at - now() FROM tweetkeeper.tweets WHERE tweet_id = 1$$,
  $$VALUES (NULL::interval, interval '1 hour')$$, 'its watch ends, and it waits its age delay');

-- 5. Counts: one the answer does not give keeps the last known value; history says not reported.
SELECT is(tweetkeeper.complete_batch(pg_temp.claim(),
  '[{"id":1,"retweet_count":1,"reply_count":2,"like_count":11,"quote_count":3}]'), 1, 'an answer without two counts');
SELECT results_eq($$SELECT like_count, bookmark_count, impression_count FROM tweetkeeper.tweets WHERE tweet_id = 1$$,
  $$VALUES (11::bigint, 4::bigint, 5::bigint)$$, 'the counts it did not give keep their last values');
SELECT results_eq($$SELECT like_count, bookmark_count, impression_count FROM tweetkeeper.metric_history
                     WHERE tweet_id = 1 ORDER BY observed_at DESC, lease_id DESC LIMIT 1$$,
  $$VALUES (11::bigint, NULL::bigint, NULL::bigint)$$, 'history records them as not reported (NULL)');
SELECT is(tweetkeeper.complete_batch(pg_temp.claim(), '[{"id":1,"like_count":11}]'), 1,
  'an answer with only an unchanged count');
SELECT is((SELECT count(*) FROM tweetkeeper.metric_history WHERE tweet_id = 1), 2::bigint,
  'changes nothing: no history row');

-- 6. A count that is none: not stored, the last known kept, the tweet's problem says so.
SELECT is(tweetkeeper.complete_batch(pg_temp.claim(),
  '[{"id":1,"like_count":-5,"retweet_count":1000000000001,"reply_count":7,"invalid":"quote_count \"12\""}]'), 1,
  'an answer with a negative, an absurd and a string count');
SELECT results_eq($$SELECT like_count, retweet_count, reply_count, quote_count, problem_type, problem_detail
                      FROM tweetkeeper.tweets WHERE tweet_id = 1$$,
  $$VALUES (11::bigint, 1::bigint, 7::bigint, 3::bigint, 'invalid-count',
            'not stored, the last known kept: quote_count "12", retweet_count 1000000000001, like_count -5')$$,
  'stores the good count, keeps the last known of the others, and records the problem');
SELECT results_eq($$SELECT like_count, retweet_count, reply_count FROM tweetkeeper.metric_history
                     WHERE tweet_id = 1 ORDER BY observed_at DESC, lease_id DESC LIMIT 1$$,
  $$VALUES (NULL::bigint, NULL::bigint, 7::bigint)$$, 'history holds only the good count');
SELECT is(tweetkeeper.complete_batch(pg_temp.claim(), pg_temp.obs('{1}', 12)), 1, 'a good answer');
SELECT results_eq($$SELECT like_count, problem_type FROM tweetkeeper.tweets WHERE tweet_id = 1$$,
  $$VALUES (12::bigint, NULL::text)$$, 'clears the problem');
SELECT is(tweetkeeper.complete_batch(pg_temp.claim(), '[{"id":1,"like_count":1000000000000}]'), 1,
  'a trillion');
SELECT is((pg_temp.t(1)).like_count, 1000000000000::bigint, 'is still a count');

SELECT * FROM finish();
ROLLBACK;
