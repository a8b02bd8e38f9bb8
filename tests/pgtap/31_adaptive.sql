-- The adaptive refresh policy in the completion (issue 50): which posts follow it
-- (tweetkeeper.refresh_policy, set_refresh_policy()), the next due time it gives, the state it
-- keeps, why_due(), and forecast(). (What it decides is unit-tested with the function itself:
-- tests/unit/extension_adaptive_test.cpp; here, that the completion applies it.)
\ir lib/begin.sql
SELECT plan(30);
SET LOCAL tweetkeeper.buffer_ttl = 0;

CREATE FUNCTION pg_temp.id(age interval, n integer) RETURNS bigint LANGUAGE sql AS
  $$ SELECT (((extract(epoch FROM now() - age) * 1000)::bigint - 1288834974657) << 22) + n $$;
-- Claims what is due (made due first) and completes it with these counts for every post.
CREATE FUNCTION pg_temp.read(ids bigint[], likes bigint, views bigint DEFAULT 0) RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
  lease bigint;
BEGIN
  UPDATE tweetkeeper.tweets SET due_at = now() - interval '1 second' WHERE tweet_id = ANY (ids);
  SELECT lease_id INTO lease FROM tweetkeeper.claim_batch('w', 100);
  RETURN tweetkeeper.complete_batch(lease, (SELECT jsonb_agg(jsonb_build_object('id', i, 'retweet_count', 0,
    'reply_count', 0, 'like_count', likes, 'quote_count', 0, 'bookmark_count', 0, 'impression_count', views))
    FROM unnest(ids) i));
END $$;

SELECT is(current_setting('tweetkeeper.refresh_policy'), 'age', 'the age table is the default policy');
SELECT throws_ok($$SET tweetkeeper.refresh_policy = 'x:fast'$$, '22023', NULL, 'an unknown policy is refused');
SELECT throws_ok($$SET tweetkeeper.refresh_policy = 'x:adaptive,x:age'$$, '22023', NULL, 'a network named twice is refused');

-- On the age table nothing changes: the post is due one age delay later, no state kept.
SELECT tweetkeeper.schedule_tweet(pg_temp.id('1 day 1 hour', 1));
SELECT is(pg_temp.read(ARRAY[pg_temp.id('1 day 1 hour', 1)], 10), 1, 'read on the age table');
SELECT results_eq($$SELECT due_at, adaptive_state FROM tweetkeeper.tweets$$,
  $$VALUES (now() + interval '6 hours', NULL::bigint)$$, 'age: due one age delay later (6 h at a day old), no adaptive state');
SELECT results_eq($$SELECT policy, reason, gap FROM tweetkeeper.why_due()$$,
  $$VALUES ('age', 'age table', interval '6 hours')$$, 'why_due: age table, every 6 h');

-- Adaptive for X: the next read is the policy's. Moving fast (10 more likes in the second since
-- the last read): the age table's pace.
SET LOCAL tweetkeeper.refresh_policy = 'x:adaptive';
UPDATE tweetkeeper.tweets SET updated_at = now() - interval '1 hour';
SELECT is(pg_temp.read(ARRAY[pg_temp.id('1 day 1 hour', 1)], 20), 1, 'read on the adaptive policy');
SELECT results_eq($$SELECT due_at, state::text FROM tweetkeeper.tweets$$,
  $$VALUES (now() + interval '6 hours', 'scheduled')$$, 'adaptive, moving: due at the age table''s pace');
-- (moved_at_age is kept to the minute)
SELECT results_eq($$SELECT policy, reason, gap, moved_at_age > interval '24 hours 58 minutes' AND moved_at_age <= interval '25 hours'
                     FROM tweetkeeper.why_due()$$,
  $$VALUES ('adaptive', 'age table', interval '6 hours', true)$$,
  'why_due: adaptive, at the age table''s pace, moved at its age now');
-- Quiet (the same counts): the gap doubles (12 h, under a quarter of its age: 6 h 15 min, so that),
-- aligned on the clock.
UPDATE tweetkeeper.tweets SET updated_at = now() - interval '6 hours';
SELECT is(pg_temp.read(ARRAY[pg_temp.id('1 day 1 hour', 1)], 20), 1, 'read again, quiet');
-- (Unless that falls after midnight UTC with today's rest at least the floor: then before
-- midnight, on the day X has already billed; which one depends on the time of day the test runs.)
SELECT ok((SELECT CASE w.reason
                    WHEN 'quiet' THEN t.due_at >= now() + interval '6 hours 15 minutes'
                                  AND t.due_at < now() + interval '6 hours 15 minutes' * 1.25
                    -- (15 minutes before it, in whole seconds from now)
                    WHEN 'same UTC day' THEN t.due_at - (date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC')
                                             BETWEEN interval '23 hours 45 minutes' AND interval '23 hours 45 minutes 1 second'
                                         AND t.due_at - now() >= interval '6 hours' END
             FROM tweetkeeper.tweets t, tweetkeeper.why_due() w),
  'quiet: due after a quarter of its age (6 h 15 min), aligned up to a quarter more (or before midnight UTC)');
SELECT results_eq($$SELECT policy, reason IN ('quiet', 'same UTC day') FROM tweetkeeper.why_due()$$,
  $$VALUES ('adaptive', true)$$, 'why_due: quiet');
SELECT is((SELECT gap FROM tweetkeeper.why_due()), (SELECT due_at - now() FROM tweetkeeper.tweets),
  'why_due''s gap is the time to its next read');
-- Then it moves again after a quiet spell: back on the age table at once. (Its reads above all
-- ran at one now(); the spell is written as the policy would have kept it: a first read 13 hours
-- ago, a quiet one 7 hours ago.)
UPDATE tweetkeeper.tweets SET updated_at = now() - interval '7 hours',
       adaptive_state = tweetkeeper_internal.adaptive_step(now() - interval '7 hours', created_at, now() - interval '13 hours',
                          interval '30 minutes', ARRAY[0, 0, 20, 0, 0, 0]::bigint[], ARRAY[0, 0, 20, 0, 0, 0]::bigint[],
                          tweetkeeper_internal.adaptive_step(now() - interval '13 hours', created_at, NULL, interval '30 minutes',
                            NULL, ARRAY[0, 0, 20, 0, 0, 0]::bigint[], NULL, false), false);
SELECT is(pg_temp.read(ARRAY[pg_temp.id('1 day 1 hour', 1)], 400), 1, 'read again, revived');
SELECT results_eq($$SELECT t.due_at, w.reason FROM tweetkeeper.tweets t, tweetkeeper.why_due() w$$,
  $$VALUES (now() + interval '6 hours', 'revived')$$, 'a revival is back on the age table');

-- A post no one engaged with, quiet for 2 days (tweetkeeper.adaptive_stop_quiet): done.
SELECT tweetkeeper.schedule_tweet(pg_temp.id('5 days', 2));
SELECT is(pg_temp.read(ARRAY[pg_temp.id('5 days', 2)], 0, 80), 1, 'a post with views only, read');
UPDATE tweetkeeper.tweets SET updated_at = now() - interval '3 days', adaptive_state = (SELECT adaptive_state FROM tweetkeeper.tweets
  WHERE tweet_id = pg_temp.id('5 days', 2)) WHERE tweet_id = pg_temp.id('5 days', 2);
SELECT is(pg_temp.read(ARRAY[pg_temp.id('5 days', 2)], 0, 80), 1, 'read again: nothing moved');
SELECT ok((SELECT state = 'scheduled' FROM tweetkeeper.tweets WHERE tweet_id = pg_temp.id('5 days', 2)),
  'not done yet: quiet since its first read, just now');
UPDATE tweetkeeper.tweets SET updated_at = now() - interval '3 days',
       adaptive_state = tweetkeeper_internal.adaptive_step(now() - interval '3 days', now() - interval '5 days', NULL, interval '6 hours',
                          NULL, ARRAY[0, 0, 0, 0, 0, 80]::bigint[], NULL, true)
 WHERE tweet_id = pg_temp.id('5 days', 2);
SELECT is(pg_temp.read(ARRAY[pg_temp.id('5 days', 2)], 0, 80), 1, 'read 3 days after a quiet first read');
SELECT results_eq($$SELECT t.state::text, t.due_at, w.reason, w.gap FROM tweetkeeper.tweets t, tweetkeeper.why_due(ARRAY[t.tweet_id]) w
                     WHERE t.tweet_id = pg_temp.id('5 days', 2)$$,
  $$VALUES ('done', NULL::timestamptz, 'done', NULL::interval)$$, 'quiet for 3 days with no engagement: done early, no next read');

-- A watch wins while it lasts; a post's own policy wins over its network's.
SELECT tweetkeeper.watch(ARRAY[pg_temp.id('1 day 1 hour', 1)], '1 minute', '1 hour');
SELECT is(pg_temp.read(ARRAY[pg_temp.id('1 day 1 hour', 1)], 400), 1, 'a watched adaptive post, read');
SELECT results_eq($$SELECT t.due_at, w.policy FROM tweetkeeper.tweets t, tweetkeeper.why_due(ARRAY[t.tweet_id]) w
                     WHERE t.tweet_id = pg_temp.id('1 day 1 hour', 1)$$,
  $$VALUES (now() + interval '1 minute', 'watch')$$, 'a watch wins over the adaptive policy');
SELECT tweetkeeper.unwatch(ARRAY[pg_temp.id('1 day 1 hour', 1)]);
SELECT is(tweetkeeper.set_refresh_policy(ARRAY[pg_temp.id('1 day 1 hour', 1), 12345], 'age'), 1::bigint,
  'set_refresh_policy: one tracked post changed');
SELECT results_eq($$SELECT policy FROM tweetkeeper.why_due(ARRAY[$$ || pg_temp.id('1 day 1 hour', 1) || $$])$$,
  $$VALUES ('age')$$, 'a post''s own policy wins over its network''s');
SELECT throws_ok($$SELECT tweetkeeper.set_refresh_policy(ARRAY[1], 'fast')$$, '22023',
  'policy must be age, adaptive or NULL (its network''s), got fast', 'set_refresh_policy: an unknown policy');
SELECT throws_ok($$SELECT tweetkeeper.set_refresh_policy(NULL, 'age')$$, '22004', NULL, 'set_refresh_policy: NULL ids');

-- Per network: a Bluesky and a Mastodon post follow their own network's policy.
SELECT tweetkeeper.schedule_post('https://bsky.app/profile/did:plc:z72i7hdynmk6r22z27h6tvur/post/3l6oveex3ii2n');
SELECT tweetkeeper.schedule_post('https://mastodon.example/@someone/114000000000000000');
SET LOCAL tweetkeeper.refresh_policy = 'bluesky:adaptive';
SELECT results_eq($$SELECT network, policy FROM tweetkeeper.why_due() WHERE network <> 'x' ORDER BY network$$,
  $$VALUES ('bluesky', 'adaptive'), ('mastodon', 'age')$$, 'bluesky:adaptive: Bluesky''s posts adaptive, Mastodon''s not');
SET LOCAL tweetkeeper.refresh_policy = 'mastodon:adaptive, x:age';
SELECT results_eq($$SELECT network, policy FROM tweetkeeper.why_due() WHERE network <> 'x' ORDER BY network$$,
  $$VALUES ('bluesky', 'age'), ('mastodon', 'adaptive')$$, 'mastodon:adaptive: Mastodon''s posts adaptive, Bluesky''s not');
SET LOCAL tweetkeeper.refresh_policy = 'x:adaptive';

-- forecast() counts adaptive posts at their own pace: 50 quiet posts, each with a gap of 12 hours
-- chosen (the next one 24 h), due in an hour, are read once each in the next day, where the age
-- table would read them every 6 hours.
DELETE FROM tweetkeeper.tweets;
SELECT tweetkeeper.schedule_tweets(ARRAY(SELECT pg_temp.id('3 days', g) FROM generate_series(1, 50) g));
UPDATE tweetkeeper.tweets SET due_at = now() + interval '1 hour', billed_on = NULL,
       adaptive_state = tweetkeeper_internal.adaptive_step(now(), now() - interval '3 days', now() - interval '1 day',
                          interval '6 hours', ARRAY[0, 0, 5, 0, 0, 80]::bigint[], ARRAY[0, 0, 5, 0, 0, 80]::bigint[],
                          NULL, false);  -- (x false: a gap of 12 h whatever the time of day, no move before midnight)
SELECT is((SELECT refreshes FROM tweetkeeper.forecast('1 day')), 50.0, 'forecast: 50 quiet adaptive posts, one read each in a day');
SET LOCAL tweetkeeper.refresh_policy = 'age';
SELECT ok((SELECT refreshes >= 150 FROM tweetkeeper.forecast('1 day')), 'the same posts on the age table: every 6 hours');

SELECT * FROM finish();
ROLLBACK;
