-- queue_stats, batch_stats, maintenance(), settings, install facts.
\ir lib/begin.sql
SELECT plan(22);

SELECT is(tweetkeeper.preloaded(), true, 'the test cluster preloads tweetkeeper');
SELECT row_eq($$SELECT * FROM tweetkeeper.settings()$$,
  ROW(interval '5 seconds', interval '2 minutes', interval '1 hour', interval '7 days', interval '1 day',
      interval '0', true, false, interval '10 minutes', 3), 'default settings');
SET LOCAL tweetkeeper.buffer_ttl = '250ms';
SELECT is((SELECT buffer_ttl FROM tweetkeeper.settings()), interval '0.25 seconds', 'settings follow SET');
SELECT results_eq($$SELECT * FROM tweetkeeper.lease_settings()$$,
  $$SELECT buffer_ttl, lease_ttl, batch_retention, unavailable_recheck FROM tweetkeeper.settings()$$,
  'lease_settings(), the 0.1.0 name, still answers as settings() does');
SELECT throws_ok($$SET tweetkeeper.buffer_ttl = '-1s'$$, '22023', NULL, 'a negative buffer_ttl is refused');
SELECT throws_ok($$SET tweetkeeper.lease_ttl = '10ms'$$, '22023', NULL, 'a lease_ttl under a second is refused');

SELECT tweetkeeper.schedule_tweet(1000 + g, now() - interval '2 hours') FROM generate_series(1, 10) g;
SELECT tweetkeeper.schedule_tweet(2000 + g, now() - interval '1 minute') FROM generate_series(1, 5) g;
UPDATE tweetkeeper.tweets SET state = 'deleted', due_at = NULL WHERE tweet_id = 1010;
SELECT results_eq($$SELECT state::text, tweets, due_now, in_flight FROM tweetkeeper.queue_stats$$,
  $$VALUES ('scheduled', 14::bigint, 9::bigint, 0::bigint), ('done', 0, 0, 0), ('deleted', 1, 0, 0), ('unavailable', 0, 0, 0),
           ('missing', 0, 0, 0)$$,
  'queue_stats counts tweets by state and what is due');
SELECT is((SELECT max_lateness FROM tweetkeeper.queue_stats WHERE state = 'scheduled'),
  interval '1 hour 58 minutes', 'max_lateness is the oldest overdue tweet''s wait');
SELECT is((SELECT next_due_at FROM tweetkeeper.queue_stats WHERE state = 'scheduled'),
  now() + interval '1 minute', 'next_due_at is the next tweet not yet due');

CREATE TEMP TABLE c AS SELECT * FROM tweetkeeper.claim_batch('w1', 4);
SELECT is((SELECT in_flight FROM tweetkeeper.queue_stats WHERE state = 'scheduled'), 4::bigint, 'claimed tweets are in flight');
SELECT row_eq($$SELECT batches, in_flight, full_batches FROM tweetkeeper.batch_stats WHERE window_name = 'last minute'$$,
  ROW(1::bigint, 1::bigint, 0::bigint), 'batch_stats sees the batch in flight');

-- maintenance() marks expired leases and purges old records.
UPDATE tweetkeeper.batches SET expires_at = now() - interval '1 second';
INSERT INTO tweetkeeper.batches (lease_id, worker, tweet_ids, size, oldest_due_at, claimed_at, expires_at, finished_at, outcome, stored)
VALUES (-1, 'old', '{1}', 1, now() - interval '3 hours', now() - interval '3 hours', now() - interval '3 hours',
        now() - interval '2 hours', 'completed', 1);
SELECT lives_ok($$SELECT tweetkeeper.maintenance()$$, 'maintenance runs');
SELECT is((SELECT outcome FROM tweetkeeper.batches WHERE lease_id = (SELECT lease_id FROM c)), 'expired', 'an expired lease is recorded as expired');
SELECT is((SELECT count(*) FROM tweetkeeper.batches WHERE lease_id = -1), 0::bigint, 'records older than batch_retention are purged');
SELECT is((SELECT expired FROM tweetkeeper.batch_stats WHERE window_name = 'last minute'), 1::bigint, 'batch_stats counts expired batches');

SELECT has_index('tweetkeeper', 'tweets', 'tweets_lateness_idx', 'the claim index exists');
SELECT hasnt_index('tweetkeeper', 'tweets', 'tweets_due_idx', 'and only it: both claim orders read it');
-- The postmaster (re)starts the background worker within seconds of the database appearing.
CREATE FUNCTION pg_temp.maintenance_running() RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
  FOR i IN 1..100 LOOP
    PERFORM pg_stat_clear_snapshot();
    IF EXISTS (SELECT 1 FROM pg_stat_activity WHERE backend_type = 'tweetkeeper maintenance'
                  AND datname = current_database()) THEN
      RETURN true;
    END IF;
    PERFORM pg_sleep(0.1);
  END LOOP;
  RETURN false;
END $$;
SELECT ok(pg_temp.maintenance_running(),
  'the background worker runs in this database and shows in pg_stat_activity');
SELECT throws_ok($$SELECT tweetkeeper_internal.age_policy_changed()$$, '39P01',
  'tweetkeeper_internal.age_policy_changed() must be called as a trigger',
  'the policy trigger function cannot be called directly');
SELECT is((SELECT reloptions FROM pg_class WHERE oid = 'tweetkeeper.tweets'::regclass),
  ARRAY['fillfactor=70', 'vacuum_truncate=false'],
  'tweets leaves room for non-HOT updates on the same page, and vacuum does not truncate it');
SELECT is((SELECT reloptions FROM pg_class WHERE oid = 'tweetkeeper.batches'::regclass), ARRAY['vacuum_truncate=false'],
  'nor batches (make soak: the queue''s tables fill again within seconds)');

-- A system running for 10 s that stored 100 tweets: 10 a second in both windows, not 100 over a
-- whole hour (issue 10).
DELETE FROM tweetkeeper.batches;
INSERT INTO tweetkeeper.batches (lease_id, worker, tweet_ids, size, oldest_due_at, claimed_at, expires_at,
                                 finished_at, outcome, stored)
VALUES (900001, 'w', '{}', 100, now() - interval '11 seconds', now() - interval '10 seconds', now() + interval '1 minute',
        now() - interval '9 seconds', 'completed', 100);
SELECT results_eq($$SELECT window_name, tweets_per_second FROM tweetkeeper.batch_stats$$,
  $$VALUES ('last minute', 10.0), ('last hour', 10.0)$$,
  'tweets_per_second is over the time the kept batches cover, not the whole window');

SELECT * FROM finish();
ROLLBACK;
