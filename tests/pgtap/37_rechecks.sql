-- Posts past their last refresh checked for deletion (sql/replaceable/41_rechecks.sql): X's by
-- compliance jobs (a credential's job under its worker's lease; the attacks a worker-only role
-- could make on it first, each once succeeded and is refused or changes nothing), Bluesky's and
-- Mastodon's by reads (maintenance()), and what it costs (rechecks).
\ir lib/begin.sql
SELECT plan(31);

CREATE TEMP VIEW other_session AS
  SELECT pid, backend_start FROM pg_stat_activity
   WHERE backend_type IN ('autovacuum launcher', 'logical replication launcher') ORDER BY pid LIMIT 1;
GRANT SELECT ON other_session TO PUBLIC;
SELECT tweetkeeper.add_credential('mine', 450, interval '15 minutes');
SELECT tweetkeeper.add_credential('theirs', 450, interval '15 minutes');

-- Five X posts done 40 days ago (1..5, with payloads, 4's with a location), one done yesterday (6),
-- one still scheduled (7); two Bluesky posts and a Mastodon status done 40 days ago.
SELECT tweetkeeper.schedule_tweets(ARRAY[1228393702244134911, 1228393702244134912, 1228393702244134913,
                                         1228393702244134914, 1228393702244134915, 1228393702244134916,
                                         1228393702244134917]);
SELECT tweetkeeper.schedule_posts(ARRAY[
  'https://bsky.app/profile/did:plc:aaaaaaaaaaaaaaaaaaaaaaaa/post/3l6oveex3ii2a',
  'https://bsky.app/profile/did:plc:aaaaaaaaaaaaaaaaaaaaaaaa/post/3l6oveex3ii2b',
  'https://m.example/@ann/113000000000000004']);
CREATE TEMP TABLE p AS
  SELECT (1228393702244134910 + k)::bigint AS id, k::text AS k FROM generate_series(1, 7) k
  UNION ALL SELECT r.tweet_id, CASE WHEN r.network = 'bluesky' THEN 'b' || right(r.post_key, 1) ELSE 'm' END
    FROM tweetkeeper.post_refs r;
GRANT SELECT ON p TO PUBLIC;
UPDATE tweetkeeper.tweets SET state = 'done', due_at = NULL, created_at = now() - interval '70 days',
       updated_at = now() - interval '40 days', update_count = 3
 WHERE tweet_id IN (SELECT id FROM p WHERE k <> '7');
UPDATE tweetkeeper.tweets SET updated_at = now() - interval '1 day' WHERE tweet_id = (SELECT id FROM p WHERE k = '6');
UPDATE tweetkeeper.tweets SET updated_at = now() - interval '41 days' WHERE tweet_id IN (SELECT id FROM p WHERE k IN ('1', '2'));
INSERT INTO tweetkeeper.payloads (tweet_id, seen_at, lease_id, content_hash, payload)
  SELECT id, now() - interval '40 days', 0, decode(md5(k), 'hex'),
         jsonb_build_object('id', id::text, 'text', 'post ' || k) || CASE WHEN k = '4' THEN '{"geo": {"place_id": "01a9"}}'::jsonb ELSE '{}'::jsonb END
    FROM p WHERE k ~ '^[1-5]$';
CREATE FUNCTION pg_temp.states() RETURNS TABLE (k text, state text, problem_type text, payloads bigint)
  LANGUAGE sql AS $$
  SELECT p.k, t.state::text, t.problem_type, (SELECT count(*) FROM tweetkeeper.payloads x WHERE x.tweet_id = p.id)
    FROM p JOIN tweetkeeper.tweets t ON t.tweet_id = p.id ORDER BY p.k $$;
CREATE TEMP TABLE before AS SELECT * FROM pg_temp.states();

-- What it costs, before anything is checked.
SELECT results_eq($$SELECT network, host, done_posts, due_now, checks_30d, requests_30d, dollars_30d FROM tweetkeeper.rechecks ORDER BY 1, 2$$,
  $$VALUES ('bluesky', '', 2::bigint, 2::bigint, 2::numeric, 1::numeric, NULL::numeric),
           ('mastodon', 'm.example', 1, 1, 1, 1, NULL), ('x', '', 6, 5, 6, 1, 0.00)$$,
  'rechecks: the posts past their last refresh, those due, and a 30-day cycle''s checks, requests and price');
SET LOCAL tweetkeeper.compliance_price = 0.01;
SELECT is((SELECT dollars_30d FROM tweetkeeper.rechecks WHERE network = 'x'), 0.06, '... at a price per id, if X names one');

-- A job of another session: theirs, running.
SET LOCAL ROLE tweetkeeper_worker;
CREATE TEMP TABLE theirs AS SELECT * FROM tweetkeeper.compliance_claim('w2', 'theirs', 2);
RESET ROLE;
UPDATE tweetkeeper.compliance_jobs c SET lease_pid = o.pid, lease_started = o.backend_start, x_job_id = '1372966999991541762',
       status = 'created' FROM other_session o WHERE c.credential = 'theirs';
SELECT is((SELECT tweet_ids FROM theirs), ARRAY(SELECT id FROM p WHERE k IN ('1', '2') ORDER BY id),
          'another worker''s job holds the two longest unchecked X posts');

-- Attacks, as the worker role.
SET LOCAL ROLE tweetkeeper_worker;
SELECT is_empty($$SELECT * FROM tweetkeeper.compliance_claim('w', 'theirs')$$, 'a job another session runs is not taken');
SELECT throws_ok($$SELECT tweetkeeper.store_compliance_results((SELECT job_id FROM theirs), (SELECT tweet_ids FROM theirs),
                     ARRAY['deleted', 'deleted'])$$, '55000', NULL, 'nor can its results be stored by another');
SELECT throws_ok($$SELECT tweetkeeper.compliance_update((SELECT job_id FROM theirs), '1372966999991541762', 'failed', 'x')$$,
                 '55000', NULL, 'nor can it be failed by another');
CREATE TEMP TABLE mine AS SELECT * FROM tweetkeeper.compliance_claim('w', 'mine', 100000, '10 minutes');
SELECT is((SELECT cardinality(tweet_ids) FROM mine), 3, 'my job: the three X posts due and in no other job');
SELECT throws_ok($$SELECT tweetkeeper.store_compliance_results((SELECT job_id FROM mine), '{}', '{}')$$,
                 '55000', NULL, 'results before X made the job: 55000');
SELECT lives_ok($$SELECT tweetkeeper.compliance_update((SELECT job_id FROM mine), '1425543269983784962', 'created')$$,
                'X made it');
SELECT is(tweetkeeper.store_compliance_results((SELECT job_id FROM mine),
            ARRAY[(SELECT id FROM p WHERE k = '7'), (SELECT id FROM p WHERE k = 'b' || 'a'), (SELECT id FROM p WHERE k = '1')],
            ARRAY['deleted', 'deleted', 'deleted']), 0,
          'results naming posts outside the job (a scheduled post, a Bluesky post, another job''s) change nothing');
RESET ROLE;
SELECT results_eq('SELECT * FROM pg_temp.states()', 'SELECT * FROM before', '... no post changed');
SELECT is((SELECT status FROM tweetkeeper.compliance_jobs WHERE job_id = (SELECT job_id FROM mine)), 'complete',
          '... and the job is complete (one result file a job)');

-- A real cycle: a job of posts 3, 4, 5 again (their last check set back 40 days).
UPDATE tweetkeeper.tweets SET rechecked_at = now() - interval '40 days' WHERE tweet_id IN (SELECT id FROM p WHERE k IN ('3', '4', '5'));
SET LOCAL ROLE tweetkeeper_worker;
CREATE TEMP TABLE job AS SELECT * FROM tweetkeeper.compliance_claim('w', 'mine', 100000, '10 minutes');
SELECT is((SELECT tweet_ids FROM job), ARRAY(SELECT id FROM p WHERE k IN ('3', '4', '5') ORDER BY id), 'a new job of 3, 4, 5');
SELECT is((SELECT tweet_ids FROM tweetkeeper.compliance_claim('w', 'mine', 100000, '10 minutes')), (SELECT tweet_ids FROM job),
          'claimed again: the same open job (resumed, not a second)');
SELECT lives_ok($$SELECT tweetkeeper.compliance_update((SELECT job_id FROM job), '1425543269983784963', 'in_progress')$$, 'in progress');
SELECT throws_ok($$SELECT tweetkeeper.compliance_update((SELECT job_id FROM job), '99', 'in_progress')$$,
                 '22023', NULL, 'X''s job id never changes');
SELECT throws_ok($$SELECT tweetkeeper.compliance_update((SELECT job_id FROM job), '1425543269983784963', 'complete')$$,
                 '22023', NULL, 'complete only with the results');
SELECT is(tweetkeeper.store_compliance_results((SELECT job_id FROM job),
            ARRAY[(SELECT id FROM p WHERE k = '3'), (SELECT id FROM p WHERE k = '4'), (SELECT id FROM p WHERE k = '3')],
            ARRAY['protected', 'scrub_geo', 'protected']), 1, 'X: 3 protected, 4''s location scrubbed; 5 not named');
RESET ROLE;
SELECT results_eq($$SELECT k, state, problem_type, payloads FROM pg_temp.states() WHERE k IN ('3', '4', '5')$$,
  $$VALUES ('3', 'unavailable', 'x-compliance:protected', 0::bigint), ('4', 'done', NULL, 1), ('5', 'done', NULL, 1)$$,
  '3 is unavailable and its payload erased; 4 and 5 stay');
SELECT is((SELECT payload ? 'geo' FROM tweetkeeper.payloads WHERE tweet_id = (SELECT id FROM p WHERE k = '4')), false,
          '4''s payload lost its location');
SELECT ok((SELECT bool_and(rechecked_at > now() - interval '1 minute') FROM tweetkeeper.tweets WHERE tweet_id IN (SELECT id FROM p WHERE k IN ('4', '5'))),
          '4 and 5 were found there now');
SELECT is((SELECT reason FROM tweetkeeper.post_availability WHERE post_id = (SELECT id FROM p WHERE k = '3')), 'private',
          'post_availability: private');
SELECT results_eq($$SELECT status, results, gone FROM tweetkeeper.compliance_jobs WHERE job_id = (SELECT job_id FROM job)$$,
  $$VALUES ('complete', 3, 1)$$, 'the job: complete, three results, one post gone');
SET LOCAL ROLE tweetkeeper_worker;
SELECT is_empty($$SELECT * FROM tweetkeeper.compliance_claim('w', 'mine')$$, 'nothing else due: no job');
SELECT throws_ok($$SELECT * FROM tweetkeeper.compliance_claim('w', '')$$, '22023', NULL, 'an empty credential name: 22023');
RESET ROLE;
SET LOCAL tweetkeeper.done_recheck = 0;
UPDATE tweetkeeper.tweets SET rechecked_at = now() - interval '40 days' WHERE tweet_id = (SELECT id FROM p WHERE k = '5');
SET LOCAL ROLE tweetkeeper_worker;
SELECT is_empty($$SELECT * FROM tweetkeeper.compliance_claim('w', 'mine')$$, 'done_recheck 0: never');
RESET ROLE;
SET LOCAL tweetkeeper.done_recheck = '30d';
-- A job X would not create (refused, rate-limited): failed, its posts wait a day, not a POST a poll.
SET LOCAL ROLE tweetkeeper_worker;
CREATE TEMP TABLE refused AS SELECT * FROM tweetkeeper.compliance_claim('w', 'mine');
SELECT throws_ok($$SELECT tweetkeeper.compliance_update((SELECT job_id FROM refused), NULL, 'created')$$,
                 '22023', NULL, 'created without X''s job id: 22023');
SELECT lives_ok($$SELECT tweetkeeper.compliance_update((SELECT job_id FROM refused), NULL, 'failed', 'X would not create it: HTTP 403')$$,
                'a job X would not create is failed');
SELECT is_empty($$SELECT * FROM tweetkeeper.compliance_claim('w', 'mine')$$, '... and its post waits a day: no job again at once');
RESET ROLE;

-- Bluesky and Mastodon: due for a read.
SELECT is(tweetkeeper.maintenance() >= interval '0', true, 'maintenance runs');
SELECT results_eq($$SELECT k, state::text, delay FROM p JOIN tweetkeeper.tweets t ON t.tweet_id = p.id WHERE k IN ('ba', 'bb', 'm') ORDER BY k$$,
  $$VALUES ('ba', 'scheduled'::text, interval '15 minutes'), ('bb', 'scheduled', '15 minutes'), ('m', 'scheduled', '15 minutes')$$,
  '... the Bluesky and Mastodon posts past their last refresh are due for a read');

SELECT * FROM finish();
ROLLBACK;
