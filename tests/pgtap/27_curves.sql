-- Curves (issue 39): metrics_at() and the view lifespans, on observations this test writes, recent
-- and compacted, X and Bluesky. Every expected value is worked out by hand from those observations
-- (written beside each check), not from the code under test.
\ir lib/begin.sql
SET LOCAL TimeZone = 'UTC';
SELECT plan(29);

-- Posts made on Monday 2026-01-05 00:00 UTC, observed after 10 min, 1 h, 6 h and 2 days, and last
-- observed (unchanged since the 2 days') after 3 days: 1001 and 1002 (X, 1002's history to be
-- compacted), -7 (Bluesky: no bookmarks), 1003 (X, still refreshed, its last observation a change),
-- 1004 (X, never observed).
INSERT INTO tweetkeeper.tweets (tweet_id, created_at, state, due_at, delay, updated_at, update_count, endpoint)
VALUES (1001, '2026-01-05 00:00Z', 'done', NULL, NULL, '2026-01-08 00:00Z', 5, NULL),
       (1002, '2026-01-05 00:00Z', 'done', NULL, NULL, '2026-01-08 00:00Z', 5, NULL),
       (-7, '2026-01-05 00:00Z', 'done', NULL, NULL, '2026-01-08 00:00Z', 5, 'bluesky'),
       (1003, '2026-01-05 00:00Z', 'scheduled', '2027-01-01', '1 day', '2026-01-07 00:00Z', 5, NULL),
       (1004, '2026-01-05 00:00Z', 'scheduled', '2027-01-01', '1 day', NULL, 0, NULL);
INSERT INTO tweetkeeper.metric_history (tweet_id, lease_id, observed_at, retweet_count, reply_count, like_count,
                                        quote_count, bookmark_count, impression_count)
SELECT p.id, 10 * o.n + abs(p.id), '2026-01-05 00:00Z'::timestamptz + o.age, o.rt, 1, o.li, 0,
       CASE WHEN p.id < 0 THEN NULL ELSE 0 END, o.im
  FROM (VALUES (1001), (1002), (-7), (1003)) p(id),
       (VALUES (1, interval '10 minutes', 2, 10, 100), (2, interval '1 hour', 5, 40, 1000),
               (3, interval '6 hours', 9, 90, 5000), (4, interval '2 days', 10, 100, 8000)) o(n, age, rt, li, im);
SELECT ok(tweetkeeper.create_partitions() >= 0 AND tweetkeeper.compact_history(1000) > 0,
          'the January observations are compacted (closed partitions)');
SELECT is((SELECT count(*) FROM tweetkeeper.metric_history_hot WHERE tweet_id IN (1001, 1002, -7, 1003)), 0::bigint,
          'no observation of them is left uncompacted');
-- Post 1001's history back in the hot table as recent rows would be (1002's stays compacted).
INSERT INTO tweetkeeper.metric_history_hot (tweet_id, lease_id, observed_at, retweet_count, reply_count, like_count,
                                            quote_count, bookmark_count, impression_count)
SELECT tweet_id, lease_id, observed_at, retweet_count, reply_count, like_count, quote_count, bookmark_count, impression_count
  FROM tweetkeeper.metric_history WHERE tweet_id = 1001;
DELETE FROM tweetkeeper.metric_history_compact WHERE tweet_id = 1001;
SELECT is((SELECT count(*) FROM tweetkeeper.metric_history_hot WHERE tweet_id = 1001), 4::bigint,
          '1001''s four observations are hot, 1002''s compacted');

CREATE TEMP TABLE m AS
SELECT * FROM tweetkeeper.metrics_at(ARRAY[1001, 1002, -7, 1004, 999],
  ARRAY['5 minutes', '10 minutes', '35 minutes', '1 day', '60 hours', '3 days', '4 days']::interval[]);

SELECT is((SELECT count(*) FROM m), 28::bigint, 'a row per tracked post and age (999 is not tracked)');
-- 5 min: before the first observation; from 0 at the creation to 10 at 10 min: 5.
SELECT is((SELECT (like_count, like_interpolated, observed_before, observed_after)::text FROM m WHERE post_id = 1001 AND age = '5 minutes'),
          '(,5,,"2026-01-05 00:10:00+00")', 'before the first observation: none at or before it; 5 likes interpolated from 0 at the creation');
-- 10 min: exactly an observation.
SELECT is((SELECT (like_count, like_interpolated, retweet_count, impression_interpolated)::text FROM m WHERE post_id = 1001 AND age = '10 minutes'),
          '(10,10,2,100)', 'at an observation: its counts, both ways');
-- 35 min: halfway from 10 min (10 likes, 2 retweets, 100 views) to 1 h (40, 5, 1000).
SELECT is((SELECT (like_count, like_interpolated, retweet_interpolated, impression_interpolated, observed_before, observed_after)::text
             FROM m WHERE post_id = 1001 AND age = '35 minutes'),
          '(10,25,3.5,550,"2026-01-05 00:10:00+00","2026-01-05 01:00:00+00")',
          'between observations: the earlier one''s counts, the interpolated halfway values, and both times');
-- 1 day: 18 h into the 42 h from 6 h (90 likes) to 2 days (100): 90 + 10 * 18 / 42.
SELECT is((SELECT round(like_interpolated::numeric, 6) FROM m WHERE post_id = 1001 AND age = '1 day'),
          round(90 + 10 * 18 / 42.0, 6), 'a day: 94.285714 likes interpolated');
-- 60 h: after the last change (2 days), before the last observation (3 days): the counts stood.
SELECT is((SELECT (like_count, like_interpolated, observed_before, observed_after)::text FROM m WHERE post_id = 1001 AND age = '60 hours'),
          '(100,100,"2026-01-07 00:00:00+00","2026-01-08 00:00:00+00")',
          'between the last change and the last observation: the counts stood, to the last observation');
SELECT is((SELECT like_interpolated FROM m WHERE post_id = 1001 AND age = '3 days'), 100::double precision,
          'at the last observation itself: its counts');
-- 4 days: past the last observation (3 days).
SELECT is((SELECT (like_count, like_interpolated, observed_before, observed_after)::text FROM m WHERE post_id = 1001 AND age = '4 days'),
          '(,,,)', 'past the last observation: NULL, never a guess');
SELECT is((SELECT count(*) FROM m WHERE post_id = 1004 AND like_interpolated IS NULL AND like_count IS NULL), 7::bigint,
          'a post never observed: NULL at every age');
-- Compacted history reads the same as recent.
SELECT is((SELECT count(*) FROM m a JOIN m b ON b.post_id = 1002 AND b.age = a.age
            WHERE a.post_id = 1001 AND (a.*)::text <> replace((b.*)::text, '(1002,', '(1001,')), 0::bigint,
          'a compacted post''s curve is the same as a recent one''s');
SELECT is((SELECT (like_interpolated, bookmark_count, bookmark_interpolated)::text FROM m WHERE post_id = -7 AND age = '35 minutes'),
          '(25,,)', 'Bluesky: the same curve; a count it does not report (bookmarks) stays NULL');
SELECT is((SELECT string_agg(age::text, ',' ORDER BY age) FROM m WHERE post_id = 1001), '00:05:00,00:10:00,00:35:00,1 day,60:00:00,3 days,4 days',
          'the ages asked, in order');

-- Bad input.
SELECT throws_ok($$SELECT * FROM tweetkeeper.metrics_at(ARRAY[1001], '{}')$$, '22023', 'ages must hold at least one age', 'no ages: 22023');
SELECT throws_ok($$SELECT * FROM tweetkeeper.metrics_at(ARRAY[1001], ARRAY['-1 hour']::interval[])$$, '22023',
                 'an age must not be negative: -01:00:00', 'a negative age: 22023 naming it');
SELECT throws_ok($$SELECT * FROM tweetkeeper.metrics_at(ARRAY[1001], ARRAY[NULL]::interval[])$$, '22023', NULL, 'a NULL age: 22023');
SELECT throws_ok($$SELECT * FROM tweetkeeper.metrics_at(NULL, ARRAY['1 hour']::interval[])$$, '22004', NULL, 'no posts: 22004');

-- lifespans. Likes of 1001 (latest 100): 50 is crossed between 1 h (40) and 6 h (90), a fifth of
-- the way: 2 h; 90 at 6 h itself. Retweets (latest 10): 5 at 1 h itself; 9 at 6 h itself.
SELECT is((SELECT (latest, age_50, age_90, still_changing)::text FROM tweetkeeper.lifespans WHERE post_id = 1001 AND metric = 'like_count'),
          '(100,02:00:00,06:00:00,f)', 'likes: latest 100, half by 2 h, nine tenths by 6 h, done');
SELECT is((SELECT (latest, age_50, age_90)::text FROM tweetkeeper.lifespans WHERE post_id = 1001 AND metric = 'retweet_count'),
          '(10,01:00:00,06:00:00)', 'retweets: half by 1 h, nine tenths by 6 h');
-- Views (latest 8000): 4000 between 1 h (1000) and 6 h (5000): 1 h + 5 h * 3000 / 4000 = 4 h 45 min;
-- 7200 between 6 h (5000) and 48 h (8000): 6 h + 42 h * 2200 / 3000 = 36 h 48 min.
SELECT is((SELECT (age_50, age_90)::text FROM tweetkeeper.lifespans WHERE post_id = 1001 AND metric = 'impression_count'),
          '(04:45:00,36:48:00)', 'views: half by 4 h 45 min, nine tenths by 36 h 48 min (interpolated)');
SELECT is((SELECT (latest, age_50)::text FROM tweetkeeper.lifespans WHERE post_id = 1001 AND metric = 'quote_count'),
          '(0,)', 'a count still 0: no ages');
SELECT is((SELECT string_agg(l.metric || '=' || l.age_90, ',' ORDER BY l.metric) FROM tweetkeeper.lifespans l WHERE post_id = 1002),
          (SELECT string_agg(l.metric || '=' || l.age_90, ',' ORDER BY l.metric) FROM tweetkeeper.lifespans l WHERE post_id = 1001),
          'compacted history: the same lifespans');
SELECT is((SELECT string_agg(metric, ',' ORDER BY metric) FROM tweetkeeper.lifespans WHERE post_id = -7),
          'impression_count,like_count,quote_count,reply_count,retweet_count', 'Bluesky: every count it reports, no bookmarks');
SELECT is((SELECT network FROM tweetkeeper.lifespans WHERE post_id = -7 LIMIT 1), 'bluesky', 'its network');
-- 1003 is still refreshed and its last observation (2 days, updated_at) changed its counts.
SELECT is((SELECT bool_and(still_changing) FROM tweetkeeper.lifespans WHERE post_id = 1003 AND metric IN ('like_count', 'retweet_count')),
          true, 'a post still refreshed whose last observation changed a count: still changing');
SELECT is((SELECT bool_or(still_changing) FROM tweetkeeper.lifespans WHERE post_id = 1003 AND metric = 'reply_count'),
          false, 'a count that stopped changing after the first observation: not changing');
SELECT is((SELECT count(*) FROM tweetkeeper.lifespans WHERE post_id = 1004), 0::bigint, 'a post never observed: no lifespans');

SELECT * FROM finish();
ROLLBACK;
