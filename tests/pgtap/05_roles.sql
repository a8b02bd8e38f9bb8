-- Least privilege: what each role created by the extension can and cannot do.
\ir lib/begin.sql
SELECT plan(32);

SELECT has_role('tweetkeeper_worker');
SELECT has_role('tweetkeeper_reader');
SELECT has_role('tweetkeeper_admin');
CREATE ROLE tk_test_nobody NOLOGIN;
SET LOCAL tweetkeeper.buffer_ttl = 0;
SELECT tweetkeeper.schedule_tweet(1000 + g, now() - interval '2 hours') FROM generate_series(1, 5) g;
-- Results of the role sessions, collected for the assertions (the test runs as superuser).
CREATE TEMP TABLE got (what text, lease bigint, n int);
GRANT ALL ON got TO PUBLIC;

-- The worker: claim, complete, release; nothing else.
SET LOCAL ROLE tweetkeeper_worker;
INSERT INTO got SELECT 'claim', lease_id, cardinality(tweet_ids) FROM tweetkeeper.claim_batch('w', 2);
INSERT INTO got SELECT 'complete', NULL, tweetkeeper.complete_batch((SELECT lease FROM got WHERE what = 'claim'),
  '[{"id":1001,"like_count":1},{"id":1002,"like_count":2}]');
INSERT INTO got SELECT 'claim2', lease_id, cardinality(tweet_ids) FROM tweetkeeper.claim_batch('w', 2);
INSERT INTO got SELECT 'release', NULL, tweetkeeper.release_batch((SELECT lease FROM got WHERE what = 'claim2'), 'test');
SELECT throws_ok($$SELECT count(*) FROM tweetkeeper.tweets$$, '42501', NULL, 'worker cannot read tweets');
SELECT throws_ok($$SELECT * FROM tweetkeeper.queue_stats$$, '42501', NULL, 'worker cannot read the stats');
SELECT throws_ok($$SELECT count(*) FROM tweetkeeper.metric_history$$, '42501', NULL, 'worker cannot read the history');
SELECT throws_ok($$UPDATE tweetkeeper.age_policy SET delay = '1 minute'$$, '42501', NULL, 'worker cannot change the policy');
SELECT throws_ok($$SELECT tweetkeeper.schedule_tweet(1595000000000000000)$$, '42501', NULL, 'worker cannot schedule');
SELECT throws_ok($$SELECT tweetkeeper.maintenance()$$, '42501', NULL, 'worker cannot run maintenance');
SELECT throws_ok($$SELECT tweetkeeper.housekeeping()$$, '42501', NULL, 'worker cannot run the housekeeping');
SELECT throws_ok($$UPDATE tweetkeeper.tweets SET like_count = 0$$, '42501', NULL, 'worker cannot write tweets directly');
RESET ROLE;
SELECT is((SELECT n FROM got WHERE what = 'claim'), 2, 'worker can claim');
SELECT is((SELECT n FROM got WHERE what = 'complete'), 2, 'worker can complete');
SELECT is((SELECT n FROM got WHERE what = 'release'), 2, 'worker can release');
SELECT is((SELECT like_count FROM tweetkeeper.tweets WHERE tweet_id = 1002), 2::bigint, 'the worker''s results were stored');

-- The reader: stats and tables, read only.
SET LOCAL ROLE tweetkeeper_reader;
SELECT lives_ok($$SELECT * FROM tweetkeeper.queue_stats$$, 'reader can read queue_stats');
SELECT lives_ok($$SELECT * FROM tweetkeeper.batch_stats$$, 'reader can read batch_stats');
SELECT lives_ok($$SELECT count(*) FROM tweetkeeper.metric_history$$, 'reader can read the history');
SELECT lives_ok($$SELECT tweetkeeper.next_delay(now())$$, 'reader can ask next_delay');
SELECT throws_ok($$SELECT * FROM tweetkeeper.claim_batch('r')$$, '42501', NULL, 'reader cannot claim');
SELECT throws_ok($$INSERT INTO tweetkeeper.age_policy VALUES ('1 year', '1 week')$$, '42501', NULL, 'reader cannot change the policy');
SELECT throws_ok($$SELECT tweetkeeper.schedule_tweets(ARRAY[1595000000000000000])$$, '42501', NULL, 'reader cannot schedule');
SELECT throws_ok($$DELETE FROM tweetkeeper.tweets$$, '42501', NULL, 'reader cannot delete tweets');
SELECT lives_ok($$SELECT * FROM tweetkeeper.history_partitions, tweetkeeper.metric_daily, tweetkeeper.housekeeping_runs$$,
  'reader can read the partitions, the rollup and the housekeeping''s runs');
SELECT throws_ok($$SELECT tweetkeeper.create_partitions()$$, '42501', NULL, 'reader cannot create partitions');
RESET ROLE;

-- The admin: policy and scheduling.
SET LOCAL ROLE tweetkeeper_admin;
SELECT lives_ok($$UPDATE tweetkeeper.age_policy SET delay = '3 minutes' WHERE max_age = '18 minutes'$$, 'admin can change the policy');
SELECT lives_ok($$SELECT tweetkeeper.schedule_tweet(1595000000000000000)$$, 'admin can schedule');
SELECT throws_ok($$SELECT * FROM tweetkeeper.claim_batch('a')$$, '42501', NULL, 'admin is not a worker');
SELECT lives_ok($$SELECT tweetkeeper.housekeeping()$$, 'admin can run the housekeeping (partitions, retention)');
SELECT throws_ok($$SELECT tweetkeeper_internal.record_housekeeping('partitions', 'forged')$$, '42501', NULL,
  'admin cannot forge a housekeeping record');
RESET ROLE;

-- A role without grants reaches nothing.
SET LOCAL ROLE tk_test_nobody;
SELECT throws_ok($$SELECT * FROM tweetkeeper.queue_stats$$, '42501', NULL, 'a role without grants cannot read');
SELECT throws_ok($$SELECT tweetkeeper.schedule_tweet(1595000000000000000)$$, '42501', NULL, 'a role without grants cannot schedule');
RESET ROLE;

SELECT * FROM finish();
ROLLBACK;
