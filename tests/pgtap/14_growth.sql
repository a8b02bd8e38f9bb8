-- The queue's recurring work reads no table in full after the queue grew under it. Sessions
-- that live long (workers, the background worker) cache their plans while the queue is small,
-- when a sequential scan is right; a bulk import then grows tweets far faster than autovacuum
-- analyzes it, and a plan kept from then would read every tweet at every claim and tick (the
-- import of make bench-import ran at 60% speed with the background worker doing so).
-- Counted with pg_stat_xact_user_tables.seq_scan: this transaction's own scans of tweets.
\ir lib/begin.sql
SELECT plan(16);
SET LOCAL tweetkeeper.buffer_ttl = 0;

CREATE FUNCTION pg_temp.seq_scans() RETURNS bigint LANGUAGE sql AS
  $$ SELECT seq_scan FROM pg_stat_xact_user_tables WHERE relid = 'tweetkeeper.tweets'::regclass $$;
CREATE FUNCTION pg_temp.full_scans_of(q text) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE before bigint := pg_temp.seq_scans();
BEGIN
  EXECUTE q;
  RETURN pg_temp.seq_scans() - before;
END $$;
CREATE FUNCTION pg_temp.ids(age interval, step_ms integer, n integer) RETURNS bigint[] LANGUAGE sql AS
  $$ SELECT ARRAY(SELECT (((extract(epoch FROM now() - age) * 1000)::bigint + i * step_ms
                          - 1288834974657) << 22) + i FROM generate_series(1, n) i) $$;
CREATE FUNCTION pg_temp.complete_all() RETURNS integer LANGUAGE plpgsql AS $$
DECLARE n integer := 0; b record;
BEGIN
  FOR b IN SELECT * FROM tweetkeeper.batches WHERE outcome IS NULL LOOP
    n := n + tweetkeeper.complete_batch(b.lease_id,
      (SELECT jsonb_agg(jsonb_build_object('id', x, 'like_count', 7)) FROM unnest(b.tweet_ids) x));
  END LOOP;
  RETURN n;
END $$;

-- 1. Plans made on an empty queue, then on a small one: six calls of each (PostgreSQL may
--    switch to a generic plan after five), six rounds of claiming and completing 150 tweets.
SELECT tweetkeeper.maintenance() FROM generate_series(1, 6);
SELECT tweetkeeper.claim_batch('w', 100) FROM generate_series(1, 6);
SELECT tweetkeeper.schedule_tweets(pg_temp.ids('25 days', 1000, 150));
DO $$
DECLARE b record;
BEGIN
  FOR round IN 1..6 LOOP
    UPDATE tweetkeeper.tweets SET due_at = now() - interval '1 minute';
    FOR b IN SELECT * FROM tweetkeeper.claim_batch('w', 100) UNION ALL SELECT * FROM tweetkeeper.claim_batch('w', 100) LOOP
      PERFORM tweetkeeper.complete_batch(b.lease_id,
        (SELECT jsonb_agg(jsonb_build_object('id', x, 'like_count', round)) FROM unnest(b.tweet_ids) x));
    END LOOP;
  END LOOP;
  SET LOCAL tweetkeeper.claim_order = due;
  FOR round IN 1..6 LOOP
    UPDATE tweetkeeper.tweets SET due_at = now() - interval '1 minute';
    PERFORM tweetkeeper.claim_batch('w', 100);
    PERFORM tweetkeeper.release_batch(lease_id) FROM tweetkeeper.batches WHERE outcome IS NULL;
  END LOOP;
  RESET tweetkeeper.claim_order;
END $$;
SELECT is((SELECT count(*) FROM tweetkeeper.tweets WHERE like_count = 6), 150::bigint,
          'six rounds on a small queue, all completed');
UPDATE tweetkeeper.tweets SET due_at = now() + interval '1 day';  -- out of the way

-- 2. The queue grows one tweet at a time (schedule_tweet, as a trigger would), unanalyzed:
--    maintenance() plans its reads of tweets at every call.
SELECT count(*) FROM unnest(pg_temp.ids('20 days', 300, 5000)) id WHERE tweetkeeper.schedule_tweet(id);
SELECT is((SELECT reltuples FROM pg_class WHERE oid = 'tweetkeeper.tweets'::regclass), -1::real,
          'tweets has not been analyzed');
SELECT is(pg_temp.full_scans_of('SELECT tweetkeeper.maintenance()'), 0::bigint,
          'maintenance() on 5,150 tweets, 5,000 of them due, reads none in full');

-- 3. A bulk load (schedule_tweets) that outgrows the statistics analyzes the table, and every
--    session's plans are made again.
SELECT tweetkeeper.schedule_tweets(pg_temp.ids('19 days', 20, 20000));
SELECT cmp_ok((SELECT reltuples FROM pg_class WHERE oid = 'tweetkeeper.tweets'::regclass), '>', 20000::real,
              'schedule_tweets analyzed the table it had outgrown');
SELECT is(pg_temp.full_scans_of($$SELECT tweetkeeper.claim_batch('w', 100)$$), 0::bigint,
          'claim_batch (lateness) reads none in full');
SET LOCAL tweetkeeper.claim_order = due;
SELECT is(pg_temp.full_scans_of($$SELECT tweetkeeper.claim_batch('w', 100)$$), 0::bigint,
          'claim_batch (due) reads none in full');
RESET tweetkeeper.claim_order;
SELECT is(pg_temp.full_scans_of('SELECT pg_temp.complete_all()'), 0::bigint,
          'complete_batch reads none in full');
SELECT is((SELECT count(*) FROM tweetkeeper.tweets WHERE like_count = 7), 200::bigint,
          'and stored both batches');
SELECT is(pg_temp.full_scans_of('SELECT tweetkeeper.maintenance()'), 0::bigint,
          'maintenance() reads none in full');
SELECT reltuples AS analyzed FROM pg_class WHERE oid = 'tweetkeeper.tweets'::regclass \gset
SELECT is(tweetkeeper.schedule_tweets(pg_temp.ids('18 days', 20, 100)), 100::bigint,
          'a small call adds its tweets');
-- (An ANALYZE now would count the 100 new ones: the statistics must be those of before.)
SELECT is((SELECT reltuples FROM pg_class WHERE oid = 'tweetkeeper.tweets'::regclass), :analyzed::real,
          'without analyzing again (the statistics are recent)');

-- 4. Ended watches: along tweets_watch_end_idx, at most 1,000 per call, the next tick at once.
SELECT tweetkeeper.watch(pg_temp.ids('19 days', 20, 1003), interval '1 minute', interval '1 hour');
UPDATE tweetkeeper.tweets SET watch_until = now() - interval '1 second' WHERE watch_until IS NOT NULL;
UPDATE tweetkeeper.tweets SET due_at = now() + interval '1 hour';  -- nothing else to tick for
SELECT ok(tweetkeeper.maintenance() <= interval '0', 'maintenance() with 1,003 ended watches asks for another tick at once');
SELECT is((SELECT count(*) FROM tweetkeeper.tweets WHERE watch_until IS NOT NULL), 3::bigint,
          'having ended 1,000 of them');
SELECT is(pg_temp.full_scans_of('SELECT tweetkeeper.maintenance()'), 0::bigint,
          'the next call reads none in full');
SELECT is((SELECT count(*) FROM tweetkeeper.tweets WHERE watch_until IS NOT NULL), 0::bigint,
          'and ends the rest');
SELECT cmp_ok(tweetkeeper.maintenance(), '>', interval '50 minutes', 'then it sleeps until the next due tweet');

SELECT * FROM finish();
ROLLBACK;
