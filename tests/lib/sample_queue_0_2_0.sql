-- What 0.2.0 adds to a queue, made only through 0.2.0's SQL API, on top of sample_queue.sql (run
-- that first): a live watch, observations rolled up into metric_daily by retention, a day of usage
-- in daily_usage from a purged batch, history partitions, and housekeeping's records. Independent
-- of the time of day: the old observations are ten days old, retention keeps seven.
-- Run with psql -v ON_ERROR_STOP=1 as a superuser, in a database with tweetkeeper 0.2.0.
\set QUIET on
-- Ten of the 2-hour-old tweets are watched every minute for a day.
SELECT tweetkeeper.watch(ARRAY(SELECT id FROM sample_ids WHERE grp = 'young' ORDER BY id LIMIT 10),
                         interval '1 minute', interval '1 day');
-- Observations of ten days ago, as a system running then would have stored them: they wait in the
-- default partition, move into partitions of their own, and retention rolls them up and drops them.
INSERT INTO tweetkeeper.metric_history (tweet_id, lease_id, observed_at, like_count, impression_count)
SELECT id, 0, date_trunc('day', now() - interval '10 days') + h * interval '1 hour', h, 10 * h
  FROM sample_ids, generate_series(0, 3) h
 WHERE grp = 'young';
SELECT tweetkeeper.create_partitions();
SET tweetkeeper.history_retention = '7d';
SELECT tweetkeeper.apply_retention();
-- The completed batch of 45-day-old tweets, finished a month ago: maintenance() purges it into
-- daily_usage.
UPDATE tweetkeeper.batches SET claimed_at = now() - interval '30 days', finished_at = now() - interval '30 days'
 WHERE outcome = 'completed' AND lease_id = (SELECT min(lease_id) FROM tweetkeeper.batches);
SELECT tweetkeeper.maintenance();
