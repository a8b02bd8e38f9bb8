-- Paced spending (tweetkeeper.spending = even, the default): a credential's requests are spread
-- evenly over its window, one every window_length / requests_per_window, whichever worker
-- claims; the window's own limit still holds; burst spends as 0.1.0 did.
\ir lib/begin.sql
SELECT plan(20);
SET LOCAL tweetkeeper.buffer_ttl = 0;

SELECT tweetkeeper.schedule_tweet(1000 + g, now() - interval '2 hours') FROM generate_series(1, 40) g;
CREATE TEMP TABLE c (n serial, lease_id bigint, tweet_ids bigint[], credential text, wait_until timestamptz, wait_reason text);
CREATE FUNCTION pg_temp.claim(size integer DEFAULT 2) RETURNS SETOF c LANGUAGE sql AS $$
  INSERT INTO c (lease_id, tweet_ids, credential, wait_until, wait_reason)
  SELECT lease_id, tweet_ids, credential, wait_until, wait_reason FROM tweetkeeper.claim_batch('w', size) RETURNING * $$;

SELECT is(current_setting('tweetkeeper.spending'), 'even', 'even spending is the default');
SELECT throws_ok($$SET tweetkeeper.spending = 'fast'$$, '22023', NULL, 'an unknown spending mode is refused');

SELECT tweetkeeper.add_credential('p', 4, interval '1 minute');  -- one request every 15 s
SELECT isnt((SELECT lease_id FROM pg_temp.claim()), NULL, 'the first request goes out at once');
SELECT is((SELECT paced_until FROM tweetkeeper.credentials), now() + interval '15 seconds',
  'and sets the pace: the next one 15 s later');
SELECT row_eq($$SELECT lease_id, wait_until, wait_reason FROM pg_temp.claim()$$,
  ROW(NULL::bigint, now() + interval '15 seconds', 'paced: p active (one request every 00:00:15)'::text),
  'the next claim waits for the pace, and says it is the pace');
SELECT is((SELECT count(*) FROM tweetkeeper.tweets WHERE lease_id IS NOT NULL), 2::bigint, 'and claims no tweet');

-- Behind the pace within a window (the window began 45 s ago, 2 requests sent): the third may
-- go now, the next no sooner than half a pace later.
UPDATE tweetkeeper.credentials SET window_reset_at = now() + interval '15 seconds', remaining = 2,
  window_started_at = now() - interval '45 seconds',
  paced_until = now() - interval '30 seconds';
SELECT isnt((SELECT lease_id FROM pg_temp.claim()), NULL, 'behind the pace: the next request at once');
SELECT is((SELECT paced_until FROM tweetkeeper.credentials), now() + interval '7.5 seconds',
  'and catching up goes at most at twice the pace');
-- An hour idle: the window is over; a new one starts, and nothing was saved up.
UPDATE tweetkeeper.credentials SET window_reset_at = now() - interval '1 hour', paced_until = now() - interval '1 hour';
SELECT isnt((SELECT lease_id FROM pg_temp.claim()), NULL, 'after an hour, the next request');
SELECT is((SELECT paced_until FROM tweetkeeper.credentials), now() + interval '15 seconds',
  'an hour idle saves up no burst: one request per 15 s again');

-- Two credentials: the claim takes the one whose pace allows it.
SELECT tweetkeeper.add_credential('q', 4, interval '1 minute');
SELECT is((SELECT credential FROM pg_temp.claim()), 'q', 'a paced credential is skipped for one that may send');

-- Burst: as fast as tweets are due, but never past the window.
SET LOCAL tweetkeeper.spending = burst;
SELECT is((SELECT credential FROM pg_temp.claim()), 'p', 'burst ignores the pace');
SELECT pg_temp.claim();
SELECT pg_temp.claim();
SELECT is((SELECT count(*) FROM c WHERE lease_id IS NOT NULL), 7::bigint, 'three claims in a row, no pace');
SELECT results_eq($$SELECT name, remaining FROM tweetkeeper.credentials ORDER BY name$$,
  $$VALUES ('p', 1), ('q', 2)$$, 'each window counts its requests: p 3 of 4 in its new window, q 2 of 4');
SET LOCAL tweetkeeper.spending = even;
UPDATE tweetkeeper.credentials SET remaining = 0, paced_until = now() - interval '1 second';
SELECT alike((SELECT wait_reason FROM pg_temp.claim()), 'p active (window used up), q active (window used up)',
  'the pace never lets a credential pass its window');


-- Registered with more than the API allows: the API's limit (x-rate-limit-limit) is taken, so
-- the pace follows it instead of counting the API's used requests against the registered limit
-- (which held the credential back until the window's end).
SELECT tweetkeeper.add_credential('r', 100000, interval '15 minutes');
SELECT tweetkeeper_internal.record_quota('r', jsonb_build_object('limit', 3500, 'remaining', 3498,
                                                        'reset', extract(epoch FROM now() + interval '14 minutes')), NULL, NULL);
SELECT is((SELECT requests_per_window FROM tweetkeeper.credentials WHERE name = 'r'), 3500,
  'a smaller limit from the API replaces the registered one');
UPDATE tweetkeeper.credentials SET window_started_at = now() - interval '1 minute', window_reset_at = now() + interval '14 minutes'
 WHERE name = 'r';
UPDATE tweetkeeper.credentials SET status = 'rejected' WHERE name <> 'r';
SELECT pg_temp.claim();
SELECT cmp_ok((SELECT paced_until FROM tweetkeeper.credentials WHERE name = 'r'), '<', now() + interval '1 second',
  'and the next request is paced by it: not held back until the window ends');

-- A window ends with requests of it still in flight: a late one may reach the API in the API's
-- next window, so they count in our next one (q: 4 a minute, all of its batches claimed in the
-- window that has just ended, none finished; one of them left over from an earlier window).
UPDATE tweetkeeper.credentials SET status = 'active', remaining = 0, paced_until = NULL,
  window_started_at = now() - interval '59 seconds', window_reset_at = now() WHERE name = 'q';
UPDATE tweetkeeper.credentials SET status = 'rejected' WHERE name <> 'q';
UPDATE tweetkeeper.batches SET claimed_at = CASE WHEN lease_id = (SELECT min(lease_id) FROM tweetkeeper.batches WHERE credential = 'q')
                                                 THEN now() - interval '2 minutes' ELSE now() - interval '1 second' END
 WHERE credential = 'q';
CREATE TEMP TABLE q_flying AS
SELECT count(*) FILTER (WHERE claimed_at >= now() - interval '59 seconds') AS n, count(*) AS all_n
  FROM tweetkeeper.batches WHERE credential = 'q' AND outcome IS NULL;
SELECT isnt((SELECT lease_id FROM pg_temp.claim()), NULL, 'q''s next window: a request');
SELECT is((SELECT remaining FROM tweetkeeper.credentials WHERE name = 'q'),
          (SELECT CASE WHEN n >= 1 AND all_n > n THEN 4 - n::integer - 1 END FROM q_flying),
  'its requests of the window just ended still in flight count in the new one (not those of an earlier window)');
UPDATE tweetkeeper.credentials SET remaining = 0, window_reset_at = now(), paced_until = NULL,
  window_started_at = now() - interval '1 minute' WHERE name = 'q';
UPDATE tweetkeeper.batches SET claimed_at = now() - interval '1 second' WHERE credential = 'q';
INSERT INTO tweetkeeper.batches (lease_id, worker, tweet_ids, size, oldest_due_at, claimed_at, expires_at, credential,
                                 claimer_pid, claimer_started, billable, provider)
SELECT 900000 + g, 'w', '{}', 0, now(), now() - interval '1 second', now() + interval '1 minute', 'q', 0, now(), 0, 'x-v2'
  FROM generate_series(1, 4) g;
SELECT is((SELECT wait_reason FROM pg_temp.claim()) IS NOT NULL, true,
  'with as many in flight as the window allows, the new window has none left: the claim waits');

SELECT * FROM finish();
ROLLBACK;
