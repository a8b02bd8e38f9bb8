-- Compacted history: closed partitions of metric_history_hot packed into metric_history_compact
-- (one row per post and UTC week), metric_history reading back every observation unchanged
-- (NULL counts, extremes, several partitions of one week merged), idempotent and atomic,
-- writes through the view, retention and rollups on compacted weeks, housekeeping() and the
-- codec's errors.
\ir lib/begin.sql
SELECT plan(34);

-- Observations of three posts over the last 20 days, every 5 hours (written straight in, as a
-- long-running system would have them: they land in the default partition, and
-- create_partitions() gives them partitions), some counts NULL, one at the extremes; and one of
-- this very minute, in a partition that is not closed yet.
INSERT INTO tweetkeeper.metric_history (tweet_id, lease_id, observed_at, retweet_count, reply_count, like_count,
                                        quote_count, bookmark_count, impression_count)
SELECT p, 1000 * p + g, now() - interval '20 days' + g * interval '5 hours',
       g, CASE WHEN g % 3 = 0 THEN NULL ELSE g / 2 END, 10 * g + p, NULL, 0,
       CASE WHEN p = -5 THEN (CASE WHEN g % 2 = 0 THEN 9223372036854775807 ELSE -9223372036854775808 END)
            ELSE 1000 * g END
  FROM generate_series(0, 90) g, (VALUES (7), (8), (-5)) AS t(p)
UNION ALL
SELECT 9, 1, now(), 1, 2, 3, 4, 5, 6;
SELECT ok(tweetkeeper.create_partitions() > 10, 'the old observations get partitions of their own');
CREATE TEMP TABLE before AS SELECT * FROM tweetkeeper.metric_history;
SELECT is((SELECT count(*) FROM before), 274::bigint, 'metric_history holds every observation');

-- Compaction
SELECT throws_ok($$SELECT tweetkeeper.compact_history(0)$$, '22023', NULL, 'max_partitions must be at least 1');
SAVEPOINT interrupted;
SELECT ok(tweetkeeper.compact_history(1000) > 0, 'compaction (inside a savepoint, undone next)');
ROLLBACK TO SAVEPOINT interrupted;
SELECT is((SELECT count(*) FROM tweetkeeper.metric_history_compact), 0::bigint,
  'a compaction that did not commit (a killed run) left nothing compacted ...');
SELECT set_eq($$SELECT * FROM tweetkeeper.metric_history$$, $$SELECT * FROM before$$, '... and lost nothing');
SELECT is(tweetkeeper.compact_history(10), 10, 'compaction takes at most max_partitions partitions');
SELECT ok(tweetkeeper.compact_history(1000) > 0, 'and the rest of the closed ones next');
SELECT is((SELECT count(*) FROM tweetkeeper.history_partitions
            WHERE ends <= tweetkeeper.history_span(now() - interval '1 hour')), 0::bigint,
  'every partition of a week past is compacted and gone');
SELECT ok((SELECT count(*) FROM tweetkeeper.history_partitions WHERE ends > now()) > 0,
  'the partitions of this week stay');
SELECT ok((SELECT count(*) FROM tweetkeeper.metric_history_hot WHERE tweet_id = 9) = 1,
  'an observation of this minute stays hot');
SELECT is((SELECT count(*) FROM tweetkeeper.metric_history_compact c
            WHERE c.span_start <> tweetkeeper.history_span(c.span_start)), 0::bigint,
  'compacted rows are UTC weeks');
SELECT is((SELECT count(*) FROM tweetkeeper.metric_history_compact),
          (SELECT count(DISTINCT (b.tweet_id, tweetkeeper.history_span(b.observed_at))) FROM before b
            WHERE NOT EXISTS (SELECT FROM tweetkeeper.metric_history_hot h
                               WHERE (h.tweet_id, h.observed_at, h.lease_id) = (b.tweet_id, b.observed_at, b.lease_id))),
  'one row per post and week, several partitions of a week merged into it');
SELECT set_eq($$SELECT * FROM tweetkeeper.metric_history$$, $$SELECT * FROM before$$,
  'metric_history reads back every observation exactly (NULL counts and extremes too)');
SELECT results_eq($$SELECT observed_at, like_count FROM tweetkeeper.metric_history WHERE tweet_id = 7 ORDER BY observed_at$$,
                  $$SELECT observed_at, like_count FROM before WHERE tweet_id = 7 ORDER BY observed_at$$,
  'one post''s history in time order');
SELECT is(tweetkeeper.compact_history(), 0, 'compacting again finds nothing: idempotent');
SELECT set_eq($$SELECT * FROM tweetkeeper.metric_history$$, $$SELECT * FROM before$$, 'and changes nothing');

-- Writes through the view: an insert goes to the hot table; a delete finds the observation
-- wherever it is.
SELECT lives_ok($$DELETE FROM tweetkeeper.metric_history WHERE tweet_id = 8 AND lease_id IN (8000, 8045)$$,
  'compacted observations can be deleted through metric_history');
SELECT is((SELECT count(*) FROM tweetkeeper.metric_history WHERE tweet_id = 8), 89::bigint,
  'exactly those two are gone');
SELECT set_eq($$SELECT * FROM tweetkeeper.metric_history WHERE tweet_id <> 8$$,
              $$SELECT * FROM before WHERE tweet_id <> 8$$, 'the others untouched');

-- Retention by whole compacted weeks, rolled up per post and UTC day.
SET LOCAL tweetkeeper.history_retention = '36h';
SELECT is(tweetkeeper.compact_history(), 0, 'with a retention under two weeks nothing is compacted');
SELECT matches((SELECT result FROM tweetkeeper.housekeeping_runs WHERE task = 'compaction'), 'shorter than two weeks',
  'and it says why');
SET LOCAL tweetkeeper.history_retention = '10d';
SELECT lives_ok($$SELECT tweetkeeper.apply_retention()$$, 'retention runs over compacted history');
SELECT is((SELECT count(*) FROM tweetkeeper.metric_history_compact
            WHERE span_start + interval '7 days' <= now() - interval '10 days'), 0::bigint,
  'every compacted week older than the retention is dropped');
SELECT is((SELECT count(*) FROM tweetkeeper.metric_history WHERE tweet_id = 7),
          (SELECT count(*) FROM before WHERE tweet_id = 7
             AND tweetkeeper.history_span(observed_at) + interval '7 days' > now() - interval '10 days'),
  'the weeks that reach into the retention stay whole');
SELECT is((SELECT sum(observations) FROM tweetkeeper.metric_daily WHERE tweet_id = 7),
          (SELECT count(*) FROM before WHERE tweet_id = 7
             AND tweetkeeper.history_span(observed_at) + interval '7 days' <= now() - interval '10 days'),
  'the dropped observations are rolled up per day');

-- Retention finds the old weeks from an index, not by reading every compacted row: each
-- housekeeping run asks, and most runs find nothing to drop.
INSERT INTO tweetkeeper.metric_history_compact (tweet_id, span_start, packed)
SELECT 100000 + g, tweetkeeper.history_span(now() - (g % 20) * interval '7 days'),
       tweetkeeper.pack_history(ARRAY[now() - (g % 20) * interval '7 days'], ARRAY[g]::bigint[], '{1}', '{2}',
                                '{3}', '{4}', '{5}', '{6}')
  FROM generate_series(1, 20000) g;
ANALYZE tweetkeeper.metric_history_compact;
SET LOCAL plan_cache_mode = force_generic_plan;
PREPARE oldest_week AS SELECT min(c.span_start) FROM tweetkeeper.metric_history_compact c;
\ir lib/plan_of.sql
SELECT matches(pg_temp.plan_of('EXECUTE oldest_week'), 'Index Only Scan using metric_history_compact_span_idx',
  'retention finds the oldest compacted week by index');
SELECT doesnt_match(pg_temp.plan_of('EXECUTE oldest_week'), 'Seq Scan', 'with no full scan');
RESET plan_cache_mode;
DELETE FROM tweetkeeper.metric_history_compact;
DELETE FROM tweetkeeper.housekeeping_runs;
SELECT is(tweetkeeper.apply_retention(), 0, 'retention with no compacted history');
SELECT matches((SELECT result FROM tweetkeeper.housekeeping_runs WHERE task = 'retention'), '^nothing older than',
  'says there is nothing to drop');

-- The codec's refusals.
SELECT throws_ok($$SELECT * FROM tweetkeeper.unpack_history('\x0201'::bytea)$$, 'XX001', NULL,
  'packed history it cannot read is an error, never wrong rows');
SELECT throws_ok($$SELECT tweetkeeper.pack_history(ARRAY[now()], ARRAY[1, 2]::bigint[], NULL, NULL, NULL, NULL, NULL, NULL)$$,
  '22023', NULL, 'arrays of different lengths are refused');
-- Bounded both ways (a post's week has about 10,000 observations at the very most): a 10 MB value
-- whose header says it holds more is refused by its header; so is packing more.
SELECT throws_ok($$SELECT count(*) FROM tweetkeeper.unpack_history('\x01c1843d'::bytea || convert_to(repeat(' ', 10485760), 'UTF8'))$$,
  'XX001', 'packed history holds 1000001 observations; at most 1000000', 'a packed history of 10 MB saying it holds more than a million');
SELECT throws_ok($$SELECT tweetkeeper.pack_history((SELECT array_agg(now() + i * interval '1 second') FROM generate_series(1, 1000001) i),
                                                   NULL, NULL, NULL, NULL, NULL, NULL, NULL)$$,
  '54000', 'pack_history: 1000001 observations in one packed span; at most 1000000', 'packing more than a million observations');

SELECT * FROM finish();
ROLLBACK;
