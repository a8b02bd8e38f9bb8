-- The worker's API: claim (batches, buffer TTL, oldest first), complete (metrics, history,
-- reschedule, problems, hand-back), release, fencing of stale leases, and every error path.
\ir lib/begin.sql
SELECT plan(47);
SET LOCAL tweetkeeper.buffer_ttl = '5s';
SET LOCAL tweetkeeper.lease_ttl = '2min';

-- 150 tweets, two hours old (refreshed every 30 minutes), due 118 minutes ago and later.
SELECT tweetkeeper.schedule_tweet(1000 + g, now() - interval '2 hours' + g * interval '1 second')
  FROM generate_series(1, 150) g;

CREATE TEMP TABLE claims (n int, lease_id bigint, tweet_ids bigint[]);
INSERT INTO claims SELECT 1, lease_id, tweet_ids FROM tweetkeeper.claim_batch('w1', 100);
SELECT is((SELECT tweet_ids FROM claims WHERE n = 1), ARRAY(SELECT 1000 + g FROM generate_series(1, 100) g)::bigint[],
  'a full batch of 100, oldest due first');
SELECT is((SELECT count(*) FROM tweetkeeper.tweets
            WHERE lease_id = (SELECT lease_id FROM claims WHERE n = 1) AND due_at = now() + interval '2 min'),
  100::bigint, 'claimed tweets carry the lease and are hidden until it expires');
SELECT row_eq($$SELECT worker, size, outcome FROM tweetkeeper.batches WHERE lease_id = (SELECT lease_id FROM claims WHERE n = 1)$$,
  ROW('w1'::text, 100, NULL::text), 'the batch is recorded as in flight');

INSERT INTO claims SELECT 2, lease_id, tweet_ids FROM tweetkeeper.claim_batch('w2', 100);
SELECT is((SELECT cardinality(tweet_ids) FROM claims WHERE n = 2), 50,
  'a partial batch goes out when its oldest tweet has waited the buffer TTL');
SELECT is_empty($$SELECT * FROM tweetkeeper.claim_batch('w1', 100)$$, 'nothing due: nothing claimed');

-- A tweet due right now waits for company until the buffer TTL has passed.
SELECT tweetkeeper.schedule_tweet(2001, now() - interval '2 minutes');
SELECT is_empty($$SELECT * FROM tweetkeeper.claim_batch('w1', 100)$$,
  'a partial batch younger than the buffer TTL is not handed out');
SET LOCAL tweetkeeper.buffer_ttl = 0;
INSERT INTO claims SELECT 3, lease_id, tweet_ids FROM tweetkeeper.claim_batch('w1', 100);
SELECT is((SELECT tweet_ids FROM claims WHERE n = 3), ARRAY[2001]::bigint[], 'with buffer_ttl 0 it is');
SET LOCAL tweetkeeper.buffer_ttl = '5s';

-- Complete batch 1: 97 observed, one deleted, one hidden, one the API said nothing about.
SELECT is(tweetkeeper.complete_batch((SELECT lease_id FROM claims WHERE n = 1),
  (SELECT jsonb_agg(jsonb_build_object('id', 1000 + g, 'retweet_count', g, 'like_count', 2 * g,
                                       'reply_count', NULL, 'impression_count', 10 * g))
     FROM generate_series(1, 97) g),
  '[{"id":1098,"type":"resource-not-found","detail":"Could not find tweet with ids: [1098]."},
    {"id":1099,"type":"not-authorized-for-resource","detail":"Sorry, you are not authorized"},
    {"id":555,"type":"resource-not-found","detail":"not in this batch"}]'),
  99, 'complete_batch stores 97 observations and 2 problems');
SELECT is((SELECT count(*) FROM tweetkeeper.metric_history WHERE lease_id = (SELECT lease_id FROM claims WHERE n = 1)),
  97::bigint, 'one history row per observation');
SELECT row_eq($$SELECT retweet_count, like_count, reply_count, impression_count FROM tweetkeeper.metric_history WHERE tweet_id = 1005$$,
  ROW(5::bigint, 10::bigint, NULL::bigint, 50::bigint), 'history holds the observed counts');
SELECT row_eq($$SELECT state::text, due_at, lease_id, update_count, retweet_count, updated_at FROM tweetkeeper.tweets WHERE tweet_id = 1005$$,
  ROW('scheduled'::text, now() + interval '30 minutes', NULL::bigint, 1, 5::bigint, now()),
  'an observed tweet gets its counts and its next due time by age (2 hours old: 30 minutes)');
SELECT row_eq($$SELECT state::text, due_at, lease_id, problem_type FROM tweetkeeper.tweets WHERE tweet_id = 1098$$,
  ROW('deleted'::text, NULL::timestamptz, NULL::bigint, 'resource-not-found'::text), 'resource-not-found: deleted, not requested again');
SELECT row_eq($$SELECT state::text, due_at, problem_type, problem_at FROM tweetkeeper.tweets WHERE tweet_id = 1099$$,
  ROW('unavailable'::text, now() + interval '7 days', 'not-authorized-for-resource'::text, now()),
  'not-authorized: unavailable, asked again after unavailable_recheck (7 days)');
SELECT row_eq($$SELECT state::text, due_at, lease_id, update_count FROM tweetkeeper.tweets WHERE tweet_id = 1100$$,
  ROW('scheduled'::text, now() + interval '30 minutes', NULL::bigint, 0),
  'an id the API said nothing about is put off by its delay, not handed back due now (15_accounted.sql)');
SELECT is((SELECT state::text FROM tweetkeeper.tweets WHERE tweet_id = 555), NULL, 'a problem for an id outside the batch changes nothing');
SELECT row_eq($$SELECT outcome, stored FROM tweetkeeper.batches WHERE lease_id = (SELECT lease_id FROM claims WHERE n = 1)$$,
  ROW('completed'::text, 99), 'the batch is recorded as completed');

-- A second completion of the same lease is fenced off.
SELECT is(tweetkeeper.complete_batch((SELECT lease_id FROM claims WHERE n = 1),
  '[{"id":1001,"retweet_count":999}]'), 0, 'completing a lease twice stores nothing');
SELECT is((SELECT retweet_count FROM tweetkeeper.tweets WHERE tweet_id = 1001), 1::bigint, 'and overwrites nothing');
SELECT is((SELECT count(*) FROM tweetkeeper.metric_history WHERE tweet_id = 1001), 1::bigint, 'and adds no history');
SELECT row_eq($$SELECT outcome, stored, billed, tweets_read FROM tweetkeeper.batches
                WHERE lease_id = (SELECT lease_id FROM claims WHERE n = 1)$$,
  ROW('completed'::text, 99, 97, 97),
  'and leaves the batch''s record as the first completion made it (a worker repeats a call its broken connection left unsettled)');

-- Batch 2's lease expires and another worker takes the tweets over: the late result is refused.
UPDATE tweetkeeper.tweets SET due_at = now() - interval '1 minute'
 WHERE lease_id = (SELECT lease_id FROM claims WHERE n = 2);
INSERT INTO claims SELECT 4, lease_id, tweet_ids FROM tweetkeeper.claim_batch('w3', 100);
SELECT is((SELECT ARRAY(SELECT unnest(tweet_ids) ORDER BY 1) FROM claims WHERE n = 4),
  ARRAY(SELECT 1100 + g FROM generate_series(1, 50) g)::bigint[],
  'expired tweets are claimable again (not the one left out)');
SELECT is(tweetkeeper.complete_batch((SELECT lease_id FROM claims WHERE n = 2),
  (SELECT jsonb_agg(jsonb_build_object('id', id, 'retweet_count', 7)) FROM unnest((SELECT tweet_ids FROM claims WHERE n = 2)) id)),
  0, 'the stale lease stores nothing');
SELECT is((SELECT count(*) FROM tweetkeeper.tweets WHERE tweet_id BETWEEN 1101 AND 1150
            AND lease_id = (SELECT lease_id FROM claims WHERE n = 4) AND retweet_count IS NULL),
  50::bigint, 'the new lease still holds its tweets, unchanged');
SELECT is(tweetkeeper.complete_batch((SELECT lease_id FROM claims WHERE n = 4),
  (SELECT jsonb_agg(jsonb_build_object('id', id, 'retweet_count', 8)) FROM unnest((SELECT tweet_ids FROM claims WHERE n = 4)) id)),
  50, 'the new lease completes');

-- Release hands a batch back unharmed.
SELECT is(tweetkeeper.release_batch((SELECT lease_id FROM claims WHERE n = 3), 'API answered 503'), 1, 'release hands back the batch');
SELECT row_eq($$SELECT state::text, due_at, lease_id, update_count FROM tweetkeeper.tweets WHERE tweet_id = 2001$$,
  ROW('scheduled'::text, now(), NULL::bigint, 0), 'a released tweet is due again now, untouched');
SELECT row_eq($$SELECT outcome, reason FROM tweetkeeper.batches WHERE lease_id = (SELECT lease_id FROM claims WHERE n = 3)$$,
  ROW('released'::text, 'API answered 503'::text), 'the release is recorded with its reason');
SELECT is(tweetkeeper.complete_batch((SELECT lease_id FROM claims WHERE n = 3), '[{"id":2001,"retweet_count":1}]'),
  0, 'a released lease cannot complete any more');

-- A tweet past the last bucket gets one observation and is done; an unknown problem is kept.
SELECT tweetkeeper.schedule_tweet(3001, now() - interval '40 days');
SELECT tweetkeeper.schedule_tweet(3002, now() - interval '3 hours');
SET LOCAL tweetkeeper.buffer_ttl = 0;
INSERT INTO claims SELECT 5, lease_id, tweet_ids FROM tweetkeeper.claim_batch('w1', 100);
SET LOCAL tweetkeeper.buffer_ttl = '5s';
SELECT is((SELECT tweet_ids FROM claims WHERE n = 5), ARRAY[3001, 3002, 2001]::bigint[],
  'the next batch takes every due tweet, oldest due first');
SELECT is(tweetkeeper.complete_batch((SELECT lease_id FROM claims WHERE n = 5),
  '[{"id":3001,"like_count":4},{"id":2001,"like_count":1},{"id":2001,"like_count":2}]',
  '[{"id":3002,"type":"something-new","detail":"a problem we do not know"}]'), 3,
  'duplicates in an answer count once');
SELECT row_eq($$SELECT state::text, due_at, like_count FROM tweetkeeper.tweets WHERE tweet_id = 3001$$,
  ROW('done'::text, NULL::timestamptz, 4::bigint), 'a tweet older than the last bucket is observed once, then done');
SELECT row_eq($$SELECT state::text, due_at, problem_type, problem_detail FROM tweetkeeper.tweets WHERE tweet_id = 3002$$,
  ROW('scheduled'::text, now() + interval '30 minutes', 'something-new'::text, 'a problem we do not know'::text),
  'an unknown problem is recorded and the tweet stays on its schedule');

-- Errors.
SELECT throws_ok($$SELECT * FROM tweetkeeper.claim_batch(NULL)$$, '22023', 'worker must be a non-empty name', 'claim: NULL worker');
SELECT throws_ok($$SELECT * FROM tweetkeeper.claim_batch('w', 0)$$, '22023', 'max_size must be between 1 and 100, got 0', 'claim: size 0');
SELECT throws_ok($$SELECT * FROM tweetkeeper.claim_batch('w', 101)$$, '22023', 'max_size must be between 1 and 100, got 101', 'claim: size 101');
SELECT throws_ok($$SELECT * FROM tweetkeeper.claim_batch('w', NULL)$$, '22023', 'max_size must be between 1 and 100, got NULL', 'claim: NULL size');
SELECT throws_ok($$SELECT tweetkeeper.complete_batch(NULL, '[]')$$, '22004', NULL, 'complete: NULL lease');
SELECT throws_ok($$SELECT tweetkeeper.complete_batch(1, NULL)$$, '22004', NULL, 'complete: NULL observations');
SELECT throws_ok($$SELECT tweetkeeper.complete_batch(1, '{"id":1}')$$, '22023',
  'observations and problems must be JSON arrays', 'complete: not an array');
SELECT throws_ok($$SELECT tweetkeeper.complete_batch((SELECT lease_id FROM claims WHERE n = 5), '[{"id":"abc"}]')$$, '22P02', NULL,
  'complete: a malformed id');
SELECT is(tweetkeeper.complete_batch(987654321, '[]'), 0, 'complete: an unknown lease stores nothing');
SELECT throws_ok($$SELECT tweetkeeper.complete_batch(1, (SELECT jsonb_agg(jsonb_build_object('id', g)) FROM generate_series(1, 1001) g))$$,
  '54000', NULL, 'complete: an answer far larger than a batch is refused');
SELECT throws_ok($$SELECT tweetkeeper.release_batch(NULL)$$, '22004', NULL, 'release: NULL lease');
SELECT is(tweetkeeper.release_batch(987654321), 0, 'release: an unknown lease releases nothing');

-- The claim is index-driven even as a generic plan (as PL/pgSQL may cache it).
INSERT INTO tweetkeeper.tweets (tweet_id, created_at, due_at, delay)
SELECT 100000 + g, now() - interval '1 day', now() + g * interval '1 second', interval '1 hour' * (g % 5 + 1)
  FROM generate_series(1, 20000) g;
ANALYZE tweetkeeper.tweets;
SET LOCAL plan_cache_mode = force_generic_plan;
-- The claim's locking read of one delay's due tweets, as claim_batch() writes it.
PREPARE claim_scan(interval, int) AS
  SELECT t.tweet_id, t.due_at FROM tweetkeeper.tweets t
   WHERE t.due_at IS NOT NULL AND t.tweet_id > 0
     AND (t.delay, t.due_at) >= ($1, '-infinity'::timestamptz) AND (t.delay, t.due_at) <= ($1, now())
   ORDER BY t.delay, t.due_at LIMIT $2 FOR UPDATE SKIP LOCKED;
\ir lib/plan_of.sql
SELECT matches(pg_temp.plan_of($$EXECUTE claim_scan('1 hour', 100)$$), 'Index Scan using tweets_lateness_idx',
  'the claim scan walks the lateness index');
SELECT doesnt_match(pg_temp.plan_of($$EXECUTE claim_scan('1 hour', 100)$$), 'Seq Scan|Sort', 'with no sort and no full scan');

-- Their statements run on generic plans whose estimates grow with the queue: compiled by LLVM at
-- every call once past jit_above_cost (15 ms of a 20 ms claim at 5,000,000 posts).
SELECT is(
  (SELECT array_agg(p.proname::text ORDER BY p.proname) FROM pg_proc p
    WHERE p.pronamespace = 'tweetkeeper'::regnamespace AND 'jit=off' = ANY (p.proconfig)
      AND p.proname IN ('claim_batch', 'claim_posts', 'complete_batch', 'release_batch', 'complete_handles',
                        'claim_wait', 'maintenance')),
  ARRAY['claim_batch', 'claim_posts', 'claim_wait', 'complete_batch', 'complete_handles', 'maintenance', 'release_batch'],
  'the workers'' claims, completions and releases, claim_wait() and maintenance() run without JIT');

SELECT * FROM finish();
ROLLBACK;
