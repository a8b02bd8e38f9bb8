-- A lease belongs to the session that claimed it, a batch is settled once, and a worker cannot
-- change what the SECURITY DEFINER functions do: each attempt, made as the worker role, fails or
-- changes nothing, and says why. (Another live session is played by the autovacuum or logical
-- replication launcher, whose pid and start time a batch's claimer columns are set to; a gone one
-- by a pid no process has.)
\ir lib/begin.sql
SELECT plan(27);

SET LOCAL tweetkeeper.buffer_ttl = 0;
SET LOCAL tweetkeeper.spending = 'burst';  -- claims one after the other, not one every 2 s
SELECT tweetkeeper.add_credential('c1', 450, interval '15 minutes');
SELECT tweetkeeper.schedule_tweet(2000 + g, now() - interval '2 hours') FROM generate_series(1, 8) g;
CREATE TEMP TABLE got (what text, lease bigint, n int, ids bigint[]);
GRANT ALL ON got TO PUBLIC;
CREATE TEMP VIEW other_session AS
  SELECT pid, backend_start FROM pg_stat_activity
   WHERE backend_type IN ('autovacuum launcher', 'logical replication launcher') ORDER BY pid LIMIT 1;
GRANT SELECT ON other_session TO PUBLIC;

SET LOCAL ROLE tweetkeeper_worker;
INSERT INTO got SELECT 'a', lease_id, cardinality(tweet_ids), tweet_ids FROM tweetkeeper.claim_batch('w', 2, 'x-v2', ARRAY['c1']);
INSERT INTO got SELECT 'b', lease_id, cardinality(tweet_ids), tweet_ids FROM tweetkeeper.claim_batch('w', 2, 'x-v2', ARRAY['c1']);
INSERT INTO got SELECT 'c', lease_id, cardinality(tweet_ids), tweet_ids FROM tweetkeeper.claim_batch('w', 2, 'x-v2', ARRAY['c1']);
RESET ROLE;
SELECT is((SELECT count(*) FROM got WHERE n = 2), 3::bigint, 'the worker claimed three batches of two');

-- Batch a: claimed, as far as the database knows, by another session that is alive.
UPDATE tweetkeeper.batches b SET claimer_pid = o.pid, claimer_started = o.backend_start
  FROM other_session o WHERE b.lease_id = (SELECT lease FROM got WHERE what = 'a');
CREATE TEMP TABLE before_a AS SELECT * FROM tweetkeeper.batches WHERE lease_id = (SELECT lease FROM got WHERE what = 'a');
CREATE TEMP TABLE cred_before AS SELECT * FROM tweetkeeper.credentials;
SET LOCAL ROLE tweetkeeper_worker;
SELECT throws_ok(format($$SELECT tweetkeeper.complete_batch(%s, '[{"id":2001,"like_count":5}]')$$,
                        (SELECT lease FROM got WHERE what = 'a')),
                 '42501', NULL, 'completing another live session''s batch is refused (42501)');
SELECT throws_ok(format($$SELECT tweetkeeper.release_batch(%s, 'mine now', 'rejected')$$,
                        (SELECT lease FROM got WHERE what = 'a')),
                 '42501', NULL, 'releasing it, with a refusal for its credential, is refused (42501)');
RESET ROLE;
SELECT set_eq($$SELECT * FROM tweetkeeper.batches WHERE lease_id = (SELECT lease FROM got WHERE what = 'a')$$,
              $$SELECT * FROM before_a$$, 'the other session''s batch is as it was');
SELECT set_eq($$SELECT * FROM tweetkeeper.credentials$$, $$SELECT * FROM cred_before$$,
              'its credential is as it was (not rejected)');
SELECT is((SELECT count(*) FROM tweetkeeper.tweets WHERE lease_id = (SELECT lease FROM got WHERE what = 'a')),
          2::bigint, 'its tweets are still leased to it');

-- Batch b: its claimer is gone (a worker that reconnected calls from a new session).
UPDATE tweetkeeper.batches SET claimer_pid = 999999999
 WHERE lease_id = (SELECT lease FROM got WHERE what = 'b');
SET LOCAL ROLE tweetkeeper_worker;
INSERT INTO got SELECT 'b-late', NULL, tweetkeeper.complete_batch((SELECT lease FROM got WHERE what = 'b'),
  (SELECT jsonb_agg(jsonb_build_object('id', id, 'like_count', 7)) FROM unnest((SELECT ids FROM got WHERE what = 'b')) id));
RESET ROLE;
SELECT is((SELECT n FROM got WHERE what = 'b-late'), 0, 'a batch whose claimer is gone stores nothing when completed late');
SELECT is((SELECT outcome FROM tweetkeeper.batches WHERE lease_id = (SELECT lease FROM got WHERE what = 'b')),
          'abandoned', 'it is handed back (abandoned), as maintenance() would');
SELECT is((SELECT count(*) FROM tweetkeeper.tweets t, tweetkeeper.batches b
            WHERE b.lease_id = (SELECT lease FROM got WHERE what = 'b') AND t.tweet_id = ANY (b.tweet_ids)
              AND t.lease_id IS NULL AND t.due_at = b.oldest_due_at AND t.like_count IS DISTINCT FROM 7),
          2::bigint, 'its tweets are due again since their oldest was, their counts untouched');

-- Batch c: the worker's own, completed; then released and completed again.
SET LOCAL ROLE tweetkeeper_worker;
INSERT INTO got SELECT 'c-done', NULL, tweetkeeper.complete_batch((SELECT lease FROM got WHERE what = 'c'),
  (SELECT jsonb_agg(jsonb_build_object('id', id, 'like_count', 3)) FROM unnest((SELECT ids FROM got WHERE what = 'c')) id),
  '[]', '{"limit":450,"remaining":440,"reset":4102444800}');
RESET ROLE;
SELECT is((SELECT n FROM got WHERE what = 'c-done'), 2, 'the worker completes its own batch');
SELECT ok((SELECT window_reset_at <= now() + window_length FROM tweetkeeper.credentials WHERE name = 'c1'),
          'a reset in 2100 moves the credential''s window at most one window ahead');
CREATE TEMP TABLE before_c AS SELECT * FROM tweetkeeper.batches WHERE lease_id = (SELECT lease FROM got WHERE what = 'c');
CREATE TEMP TABLE cred_c AS SELECT * FROM tweetkeeper.credentials;
SET LOCAL ROLE tweetkeeper_worker;
INSERT INTO got SELECT 'c-release', NULL, tweetkeeper.release_batch((SELECT lease FROM got WHERE what = 'c'), 'again', 'rejected');
INSERT INTO got SELECT 'c-again', NULL, tweetkeeper.complete_batch((SELECT lease FROM got WHERE what = 'c'),
  '[{"id":2001,"like_count":99}]');
RESET ROLE;
SELECT is((SELECT n FROM got WHERE what = 'c-release'), 0, 'releasing a completed batch releases nothing');
SELECT is((SELECT n FROM got WHERE what = 'c-again'), 0, 'completing it again stores nothing');
SELECT set_eq($$SELECT * FROM tweetkeeper.batches WHERE lease_id = (SELECT lease FROM got WHERE what = 'c')$$,
              $$SELECT * FROM before_c$$, 'its record (outcome, stored, billed, reason) is as completed');
SELECT set_eq($$SELECT * FROM tweetkeeper.credentials$$, $$SELECT * FROM cred_c$$,
              'the late release''s refusal did not reach the credential');

-- An edit's newest id is followed only for a post of the lease, and only when newer than it.
CREATE TEMP TABLE newer AS SELECT (((extract(epoch FROM now() - interval '90 minutes') * 1000)::bigint - 1288834974657) << 22) AS id;
GRANT SELECT ON newer TO PUBLIC;
SET LOCAL ROLE tweetkeeper_worker;
INSERT INTO got SELECT 'e', lease_id, cardinality(tweet_ids), tweet_ids FROM tweetkeeper.claim_batch('w', 2, 'x-v2', ARRAY['c1']);
INSERT INTO got SELECT 'e-complete', NULL, tweetkeeper.complete_batch((SELECT lease FROM got WHERE what = 'e'), jsonb_build_array(
  jsonb_build_object('id', (SELECT ids[1] FROM got WHERE what = 'e'), 'like_count', 1, 'newest_id', 1000),
  jsonb_build_object('id', (SELECT ids[2] FROM got WHERE what = 'e'), 'like_count', 1, 'newest_id', (SELECT id FROM newer)),
  jsonb_build_object('id', 777, 'like_count', 1, 'newest_id', (SELECT id + 1 FROM newer))));
RESET ROLE;
SELECT is((SELECT n FROM got WHERE what = 'e-complete'), 2, 'the worker completes its batch (the id not of it left out)');
SELECT is((SELECT array_agg(tweet_id ORDER BY tweet_id) FROM tweetkeeper.tweets WHERE tweet_id > 1000000 OR tweet_id IN (777, 1000)),
          ARRAY[(SELECT id FROM newer)], 'only the newer id of a post of the lease is tracked (not an older one, not one of a post not in it)');
SELECT is((SELECT edits_followed FROM tweetkeeper.batches WHERE lease_id = (SELECT lease FROM got WHERE what = 'e')), 1,
          'and the batch counts that one');

-- A rate-limited release of the worker's own batch, with a reset years away: parked one window
-- at most.
SET LOCAL ROLE tweetkeeper_worker;
INSERT INTO got SELECT 'd', lease_id, cardinality(tweet_ids), tweet_ids FROM tweetkeeper.claim_batch('w', 2, 'x-v2', ARRAY['c1']);
INSERT INTO got SELECT 'd-release', NULL, tweetkeeper.release_batch((SELECT lease FROM got WHERE what = 'd'),
  'Too Many Requests', 'rate-limited', '{"limit":450,"remaining":0,"reset":4102444800}');
RESET ROLE;
SELECT is((SELECT n FROM got WHERE what = 'd-release'), 2, 'the worker releases its own batch, rate-limited');
SELECT ok((SELECT status = 'waiting' AND status_until <= now() + window_length FROM tweetkeeper.credentials WHERE name = 'c1'),
          'a 429 saying the window resets in 2100 parks the credential one window at most');

-- Settings that change what the SECURITY DEFINER functions do are not the worker's to set.
SET LOCAL ROLE tweetkeeper_worker;
SELECT throws_ok($$SET tweetkeeper.lease_ttl = '24h'$$, '42501', NULL, 'the worker cannot set lease_ttl');
SELECT throws_ok($$SET tweetkeeper.buffer_ttl = '1h'$$, '42501', NULL, 'the worker cannot set buffer_ttl');
SELECT throws_ok($$SET tweetkeeper.unavailable_recheck = '365d'$$, '42501', NULL, 'the worker cannot set unavailable_recheck');
SELECT throws_ok($$SET tweetkeeper.missing_after = 1$$, '42501', NULL, 'the worker cannot set missing_after');
SELECT throws_ok($$SET tweetkeeper.payloads = 'changed'$$, '42501', NULL, 'the worker cannot set payloads');
SELECT throws_ok($$SET tweetkeeper.deleted_payloads = 'keep'$$, '42501', NULL, 'the worker cannot set deleted_payloads');
SELECT throws_ok($$SET tweetkeeper.history_keep_unchanged = on$$, '42501', NULL, 'the worker cannot set history_keep_unchanged');
RESET ROLE;

SELECT * FROM finish();
ROLLBACK;
