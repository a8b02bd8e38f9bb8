-- What pg_dump keeps (every table and sequence of users' data; the age policy only where it is
-- the user's), and abandoned batches: the session that claimed a batch, and maintenance()
-- handing back the batches whose session is gone.
\ir lib/begin.sql
SELECT plan(27);

-- Backups ------------------------------------------------------------------------------------
SELECT set_eq(
  $$SELECT c.relname::text FROM pg_extension e, unnest(e.extconfig) AS r(oid) JOIN pg_class c ON c.oid = r.oid
     WHERE e.extname = 'tweetkeeper'$$,
  $$SELECT c.relname::text FROM pg_class c JOIN pg_depend d ON d.classid = 'pg_class'::regclass AND d.objid = c.oid
     JOIN pg_extension e ON d.refobjid = e.oid AND e.extname = 'tweetkeeper' AND d.deptype = 'e'
     WHERE c.relkind IN ('r', 'p', 'S')$$,
  'every table and sequence of the extension is dumped by pg_dump');
SELECT is((SELECT x.cond FROM pg_extension e, unnest(e.extconfig, e.extcondition) AS x(oid, cond)
            WHERE e.extname = 'tweetkeeper' AND x.oid = 'tweetkeeper.age_policy'::regclass),
  'WHERE source = ''user''', 'the age policy is dumped only where it is the user''s');
SELECT is((SELECT count(*) FROM tweetkeeper.age_policy WHERE source = 'extension'), 5::bigint,
  'CREATE EXTENSION''s five rows are the extension''s');

SAVEPOINT policy;
INSERT INTO tweetkeeper.age_policy (max_age, delay) VALUES (interval '90 days', interval '7 days');
SELECT results_eq($$SELECT source, count(*) FROM tweetkeeper.age_policy GROUP BY source$$,
  $$VALUES ('user', 6::bigint)$$, 'an insert keeps the defaults and makes the whole policy the user''s');
ROLLBACK TO SAVEPOINT policy;
UPDATE tweetkeeper.age_policy SET delay = interval '1 hour' WHERE max_age = interval '1 day';
SELECT results_eq($$SELECT source, count(*) FROM tweetkeeper.age_policy GROUP BY source$$,
  $$VALUES ('user', 5::bigint)$$, 'an update makes the whole policy the user''s');
ROLLBACK TO SAVEPOINT policy;
DELETE FROM tweetkeeper.age_policy WHERE max_age = interval '7 days';
SELECT results_eq($$SELECT source, count(*) FROM tweetkeeper.age_policy GROUP BY source$$,
  $$VALUES ('user', 4::bigint)$$, 'a delete makes the rest of the policy the user''s');
ROLLBACK TO SAVEPOINT policy;
UPDATE tweetkeeper.age_policy SET source = 'extension' WHERE max_age = interval '1 day';
SELECT is((SELECT count(*) FROM tweetkeeper.age_policy WHERE source = 'user'), 5::bigint,
  'setting source by hand cannot hide an edit from pg_dump');
ROLLBACK TO SAVEPOINT policy;
-- What a restore sends: the user's whole policy, each row marked as the user's.
INSERT INTO tweetkeeper.age_policy (max_age, delay, source) VALUES
  (interval '1 hour', interval '10 minutes', 'user'), (interval '30 days', interval '1 day', 'user');
SELECT results_eq($$SELECT max_age, delay, source FROM tweetkeeper.age_policy ORDER BY max_age$$,
  $$VALUES (interval '1 hour', interval '10 minutes', 'user'), (interval '30 days', interval '1 day', 'user')$$,
  'restored rows replace the rows CREATE EXTENSION inserted, same keys included');
SELECT is(tweetkeeper.next_delay(now() - interval '30 minutes'), interval '10 minutes',
  'and the restored policy is the one in force');
ROLLBACK TO SAVEPOINT policy;
SELECT throws_ok($$INSERT INTO tweetkeeper.age_policy VALUES (interval '2 days', interval '1 day', 'mine')$$,
  '23514', NULL, 'source is extension or user');

-- Sessions -----------------------------------------------------------------------------------
SELECT is(tweetkeeper_internal.backend_start(),
  (SELECT backend_start FROM pg_stat_activity WHERE pid = pg_backend_pid()),
  'backend_start() is pg_stat_activity.backend_start of this session');
SELECT ok(tweetkeeper.backend_alive(pg_backend_pid(), tweetkeeper_internal.backend_start()), 'this session is alive');
SELECT ok(NOT tweetkeeper.backend_alive(pg_backend_pid(), tweetkeeper_internal.backend_start() - interval '1 microsecond'),
  'the same pid with another start time is another session (a reused pid)');
SELECT ok(NOT tweetkeeper.backend_alive(2147483647, now()), 'a pid that does not exist is not alive');
SELECT is(tweetkeeper.backend_alive(NULL, now()), NULL, 'backend_alive is strict');

-- Abandoned batches --------------------------------------------------------------------------
SET LOCAL tweetkeeper.buffer_ttl = '0';
SELECT tweetkeeper.schedule_tweet(5000 + g, now() - interval '2 hours') FROM generate_series(1, 10) g;
CREATE TEMP TABLE mine AS SELECT * FROM tweetkeeper.claim_batch('alive', 5);
CREATE TEMP TABLE gone AS SELECT * FROM tweetkeeper.claim_batch('dead', 5);
SELECT ok((SELECT claimer_pid = pg_backend_pid() AND claimer_started = tweetkeeper_internal.backend_start()
             FROM tweetkeeper.batches WHERE lease_id = (SELECT lease_id FROM mine)),
  'a batch records the session that claimed it');
-- The second batch's session "ended": the same pid, but a start time no live session has.
UPDATE tweetkeeper.batches SET claimer_started = claimer_started - interval '1 day'
 WHERE lease_id = (SELECT lease_id FROM gone);
SELECT is(tweetkeeper.maintenance(), interval '0', 'with batches in flight, maintenance asks for a tick');
SELECT results_eq($$SELECT worker, outcome FROM tweetkeeper.batches ORDER BY lease_id$$,
  $$VALUES ('alive', NULL::text), ('dead', 'abandoned')$$,
  'maintenance hands back the batch whose session is gone, and only that one');
SELECT ok((SELECT bool_and(t.lease_id IS NULL AND t.due_at = b.oldest_due_at)
             FROM tweetkeeper.tweets t, tweetkeeper.batches b
            WHERE b.worker = 'dead' AND t.tweet_id = ANY (b.tweet_ids)),
  'its tweets are claimable at once, at their place in the queue (due since the oldest was)');
SELECT is((SELECT abandoned FROM tweetkeeper.batch_stats WHERE window_name = 'last minute'), 1::bigint,
  'batch_stats counts abandoned batches');
-- Its worker lived on, reconnected and completes: fenced, nothing stored, still abandoned.
SELECT is(tweetkeeper.complete_batch((SELECT lease_id FROM gone),
  (SELECT jsonb_agg(jsonb_build_object('id', x, 'like_count', 99)) FROM unnest((SELECT tweet_ids FROM gone)) x)),
  0, 'a late complete of an abandoned batch stores nothing');
SELECT ok((SELECT bool_and(like_count IS NULL AND update_count = 0) FROM tweetkeeper.tweets
            WHERE tweet_id IN (SELECT unnest(tweet_ids) FROM gone)), 'and its tweets are untouched');
SELECT is((SELECT outcome FROM tweetkeeper.batches WHERE worker = 'dead'), 'abandoned', 'and the batch stays abandoned');
SELECT is((SELECT count(*) FROM tweetkeeper.claim_batch('next', 5)), 1::bigint, 'another worker claims those tweets');

-- Behind a pooler in transaction mode the setting turns this off.
SET LOCAL tweetkeeper.reclaim_abandoned = off;
UPDATE tweetkeeper.batches SET claimer_started = claimer_started - interval '1 day' WHERE worker = 'next';
SELECT ok(tweetkeeper.maintenance() > interval '0', 'without reclaim_abandoned, maintenance sleeps until the next lease expiry');
SELECT is((SELECT outcome FROM tweetkeeper.batches WHERE worker = 'next'), NULL, 'and abandons nothing');
RESET tweetkeeper.reclaim_abandoned;

-- Nothing in flight and nothing scheduled: maintenance lets the worker sleep.
DELETE FROM tweetkeeper.batches;
DELETE FROM tweetkeeper.tweets;
SELECT is(tweetkeeper.maintenance(), NULL, 'with nothing scheduled, maintenance says nothing will change');

SELECT * FROM finish();
ROLLBACK;
