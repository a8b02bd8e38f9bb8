-- History that stays bounded: metric_history partitioned by observed_at (partitions ahead, the
-- default partition as a safety net whose rows move out), observations identical to the previous
-- one not stored again, retention by whole partitions with a daily rollup, housekeeping() and
-- its records, and every error path. (pg_cron itself: tests/integration/housekeeping.sh.)
\ir lib/begin.sql
SELECT plan(44);
\ir lib/plan_of.sql
SET LOCAL tweetkeeper.buffer_ttl = 0;

CREATE FUNCTION pg_temp.id(age interval, n integer) RETURNS bigint LANGUAGE sql AS
  $$ SELECT (((extract(epoch FROM now() - age) * 1000)::bigint - 1288834974657) << 22) + n $$;
-- Claims every due tweet and answers each with these counts; returns how many were stored.
CREATE FUNCTION pg_temp.refresh(likes bigint, impressions bigint DEFAULT 100) RETURNS integer LANGUAGE sql AS $$
  UPDATE tweetkeeper.tweets SET due_at = now() - interval '1 minute' WHERE due_at IS NOT NULL;
  SELECT tweetkeeper.complete_batch(c.lease_id,
           (SELECT jsonb_agg(jsonb_build_object('id', x, 'like_count', likes, 'retweet_count', 1,
                                                'impression_count', impressions))
              FROM unnest(c.tweet_ids) x))
    FROM tweetkeeper.claim_batch('w', 100) c $$;
CREATE FUNCTION pg_temp.rows_in(rel regclass) RETURNS bigint LANGUAGE plpgsql AS
  $$ DECLARE n bigint; BEGIN EXECUTE format('SELECT count(*) FROM %s', rel) INTO n; RETURN n; END $$;

-- The table
SELECT is((SELECT relkind::text FROM pg_class WHERE oid = 'tweetkeeper.metric_history_hot'::regclass), 'p',
  'metric_history_hot is a partitioned table');
SELECT is((SELECT pg_get_partkeydef('tweetkeeper.metric_history_hot'::regclass)), 'RANGE (observed_at)',
  'partitioned by range of observed_at');
SELECT is((SELECT pg_get_expr(relpartbound, oid) FROM pg_class WHERE oid = 'tweetkeeper.metric_history_default'::regclass),
  'DEFAULT', 'with a default partition as the safety net');
SELECT col_is_pk('tweetkeeper', 'metric_history_default', ARRAY['tweet_id', 'observed_at', 'lease_id'],
  'each partition''s primary key reads a tweet''s history in time order');
SELECT is(current_setting('tweetkeeper.history_partition'), '1d', 'partitions are one day long by default');
SELECT throws_ok($$SET tweetkeeper.history_partition = '10s'$$, '22023', NULL, 'a partition shorter than a minute is refused');
SELECT throws_ok($$SET tweetkeeper.history_retention = '-1'$$, '22023', NULL, 'a negative retention is refused');

-- With no partition yet (no housekeeping has run in this transaction), observations are kept in
-- the default partition; create_partitions() gives them their own.
SELECT tweetkeeper.schedule_tweets(ARRAY(SELECT pg_temp.id('2 hours', g) FROM generate_series(1, 10) g));
SELECT is(pg_temp.refresh(5), 10, 'ten tweets refreshed');
SELECT is(pg_temp.rows_in('tweetkeeper.metric_history_default'), 10::bigint, 'their observations wait in the default partition');
SET LOCAL tweetkeeper.history_partition = '1h';
SELECT cmp_ok(tweetkeeper.create_partitions(), '>=', 2, 'create_partitions() creates the current hour''s partition and the next');
SELECT is(pg_temp.rows_in('tweetkeeper.metric_history_default'), 0::bigint, 'and moves the waiting rows out of the default partition');
SELECT is((SELECT count(*) FROM tweetkeeper.metric_history), 10::bigint, 'no row lost on the way');
SELECT ok((SELECT bool_and(starts <= now() AND ends > now()) FROM tweetkeeper.history_partitions
            WHERE starts <= now() AND ends > now()) AND
          (SELECT count(*) = 1 FROM tweetkeeper.history_partitions WHERE starts <= now() AND ends > now()),
  'exactly one partition covers now');
SELECT ok((SELECT bool_and(date_part('minute', starts) = 0 AND ends - starts = interval '1 hour')
             FROM tweetkeeper.history_partitions), 'partitions are aligned hours');
SELECT ok((SELECT max(ends) >= now() + interval '2 hours' FROM tweetkeeper.history_partitions),
  'they reach at least two partitions ahead');
SELECT is(tweetkeeper.create_partitions(), 0, 'a second run creates nothing (idempotent)');
SELECT matches((SELECT result FROM tweetkeeper.housekeeping_runs WHERE task = 'partitions'),
  '^0 partitions created', 'each run is recorded in housekeeping_runs');

-- A changed length applies from the last partition on: never an overlap, never a gap ahead.
SET LOCAL tweetkeeper.history_partition = '25min';
SELECT lives_ok($$SELECT tweetkeeper.create_partitions()$$, 'a new partition length is taken up');
SELECT is_empty($$SELECT * FROM tweetkeeper.history_partitions a JOIN tweetkeeper.history_partitions b
                   ON a.partition < b.partition AND a.starts < b.ends AND b.starts < a.ends$$,
  'partitions of different lengths never overlap');
SET LOCAL tweetkeeper.history_partition = '1h';

-- A tweet's history is read from the key of each partition and of the compacted history, never
-- by a scan (the planner is told to avoid sequential scans: these tables are too small to need
-- it); only its own rows are sorted.
SET LOCAL enable_seqscan = off;
SELECT doesnt_match(pg_temp.plan_of(format('SELECT * FROM tweetkeeper.metric_history WHERE tweet_id = %s ORDER BY observed_at',
                                           pg_temp.id('2 hours', 1))),
  'Seq Scan', 'one tweet''s history comes from the indexes');
RESET enable_sort;
RESET enable_seqscan;

-- Unchanged observations: not stored again, unless tweetkeeper.history_keep_unchanged.
SELECT is(pg_temp.refresh(5), 10, 'the same counts again');
SELECT is((SELECT count(*) FROM tweetkeeper.metric_history), 10::bigint, 'are not stored again');
SELECT ok((SELECT bool_and(update_count = 2 AND updated_at = now()) FROM tweetkeeper.tweets),
  'yet the tweets say they were checked (update_count, updated_at)');
SELECT is(pg_temp.refresh(5, 101), 10, 'one count changed');
SELECT is((SELECT count(*) FROM tweetkeeper.metric_history), 20::bigint, 'is stored');
SET LOCAL tweetkeeper.history_keep_unchanged = on;
SELECT is(pg_temp.refresh(5, 101), 10, 'the same counts with history_keep_unchanged');
SELECT is((SELECT count(*) FROM tweetkeeper.metric_history), 30::bigint, 'are stored');
SET LOCAL tweetkeeper.history_keep_unchanged = off;
SELECT tweetkeeper.schedule_tweet(pg_temp.id('3 hours', 99));
UPDATE tweetkeeper.tweets SET due_at = now() - interval '1 minute' WHERE tweet_id = pg_temp.id('3 hours', 99);
SELECT is((SELECT tweetkeeper.complete_batch(c.lease_id, jsonb_build_array(jsonb_build_object('id', pg_temp.id('3 hours', 99))))
             FROM tweetkeeper.claim_batch('w', 100) c), 1, 'a first observation without any count');
SELECT is((SELECT count(*) FROM tweetkeeper.metric_history WHERE tweet_id = pg_temp.id('3 hours', 99)), 1::bigint,
  'is stored all the same: it is the first');

-- Retention: observations of two whole UTC days, four and three days ago (written straight in,
-- as a long-running system would have them), are dropped with their partitions, rolled up per
-- tweet and UTC day. Both days ended at least 48 hours ago, whatever the time of day now, so all
-- of them are older than the 36 hours kept below (tests/pgtap/run.sh also runs this file with
-- the clock just before and after a UTC midnight).
INSERT INTO tweetkeeper.metric_history (tweet_id, lease_id, observed_at, like_count, impression_count)
SELECT 7, g, date_trunc('day', now() - interval '4 days', 'UTC') + g * interval '1 hour', g, 10 * g
  FROM generate_series(0, 23) g
UNION ALL
SELECT 7, 100 + g, date_trunc('day', now() - interval '3 days', 'UTC') + g * interval '2 hours', 100 + g, NULL
  FROM generate_series(0, 11) g;
SELECT is(tweetkeeper.apply_retention(), 0, 'retention 0 (the default) drops nothing');
SELECT matches((SELECT result FROM tweetkeeper.housekeeping_runs WHERE task = 'retention'), 'keeping everything',
  'and says so');
SET LOCAL tweetkeeper.history_retention = '36h';
SELECT is(tweetkeeper.apply_retention(), 36, 'retention drops the 36 hourly partitions older than 36 hours (whole, never row by row)');
SELECT is((SELECT count(*) FROM tweetkeeper.metric_history WHERE tweet_id = 7), 0::bigint,
  'the old observations are gone');
SELECT is((SELECT count(*) FROM tweetkeeper.metric_history WHERE tweet_id <> 7), 31::bigint, 'the recent ones stay');
SELECT results_eq($$SELECT day, observations, like_count, impression_count FROM tweetkeeper.metric_daily
                     WHERE tweet_id = 7 ORDER BY day$$,
  $$VALUES ((now() AT TIME ZONE 'UTC' - interval '4 days')::date, 24, 23::bigint, 230::bigint),
           ((now() AT TIME ZONE 'UTC' - interval '3 days')::date, 12, 111::bigint, NULL::bigint)$$,
  'each day is rolled up: how many observations, and the day''s last counts (merged across partitions)');
SELECT ok((SELECT min(starts) > now() - interval '36 hours' - interval '1 hour' FROM tweetkeeper.history_partitions),
  'no partition older than the retention is left');

-- housekeeping(): both tasks, each at most every if_older_than; the background worker's entry.
SELECT matches(tweetkeeper.housekeeping(), '^retention: .*; partitions: ', 'housekeeping() runs both tasks (retention first) and says what they did');
SELECT is(tweetkeeper.housekeeping(interval '1 hour'), '', 'tasks that ran within if_older_than are skipped');
SELECT throws_ok($$SELECT tweetkeeper.housekeeping(interval '-1 second')$$, '22023', NULL, 'a negative if_older_than is refused');
-- A task that fails (here: a stray table where its next partition goes) is recorded as failed,
-- does not stop the other, and is tried again next time even within if_older_than.
DO $$
DECLARE p text;  -- the name: a dropped table's regclass prints as its oid
BEGIN
  SELECT h.partition::text INTO p FROM tweetkeeper.history_partitions h ORDER BY h.starts DESC LIMIT 1;
  EXECUTE format('DROP TABLE %s', p);
  EXECUTE format('CREATE TABLE %s (x integer)', p);
END $$;
SELECT matches(tweetkeeper.housekeeping(), '^retention: .*; partitions: failed: .*already exists',
  'a failing task is reported, after the other ran');
SELECT matches((SELECT result FROM tweetkeeper.housekeeping_runs WHERE task = 'partitions'), '^failed: ',
  'and recorded as failed in housekeeping_runs');
SELECT matches(tweetkeeper.housekeeping(interval '1 hour'), '^partitions: failed: ',
  'a failed task is tried again within if_older_than; the one that succeeded is not');

-- pg_cron is not installed in this database.
SELECT throws_ok($$SELECT tweetkeeper.schedule_housekeeping()$$, '55000',
  'pg_cron is not installed in database ' || current_database(), 'schedule_housekeeping() needs pg_cron');
SELECT is(tweetkeeper.unschedule_housekeeping(), 0, 'unschedule_housekeeping() without pg_cron has nothing to remove');

SELECT * FROM finish();
ROLLBACK;
