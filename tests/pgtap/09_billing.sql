-- Billing-true accounting: X bills a post once per UTC day however often it is read, so monthly
-- caps, usage and cost count billed reads, reserved at the claim and settled by complete/release.
\ir lib/begin.sql
SELECT plan(32);
SET LOCAL tweetkeeper.buffer_ttl = 0;
-- Window accounting, request after request in one transaction: spend without the even pace
-- (10_pacing.sql tests the pace).
SET LOCAL tweetkeeper.spending = burst;

CREATE TEMP TABLE c (n serial, lease_id bigint, tweet_ids bigint[], credential text, wait_until timestamptz, wait_reason text);
CREATE FUNCTION pg_temp.claim() RETURNS bigint LANGUAGE sql AS $$
  INSERT INTO c (lease_id, tweet_ids, credential, wait_until, wait_reason)
  SELECT lease_id, tweet_ids, credential, wait_until, wait_reason FROM tweetkeeper.claim_batch('w', 100) RETURNING lease_id $$;
CREATE FUNCTION pg_temp.due_again() RETURNS void LANGUAGE sql AS $$
  UPDATE tweetkeeper.tweets SET due_at = now() - interval '1 second' WHERE state = 'scheduled' $$;

-- Without a registered credential: still counted, under the credential ''.
SELECT tweetkeeper.schedule_tweet(1000 + g, now() - interval '2 hours') FROM generate_series(1, 3) g;
SELECT is(tweetkeeper.complete_batch(pg_temp.claim(), '[{"id":1001},{"id":1002},{"id":1003}]'), 3, 'a batch without credential');
SELECT results_eq($$SELECT provider, credential, requests_today, tweets_read_today, billed_reads_today FROM tweetkeeper.usage_stats$$,
  $$VALUES ('x-v2', '', 1::numeric, 3::numeric, 3::numeric)$$, 'usage is counted without a credential too');
SELECT pg_temp.due_again();
SELECT is(tweetkeeper.complete_batch(pg_temp.claim(), '[{"id":1001},{"id":1002},{"id":1003}]'), 3, 'read again the same day');
SELECT results_eq($$SELECT requests_today, tweets_read_today, billed_reads_today FROM tweetkeeper.usage_stats$$,
  $$VALUES (2::numeric, 6::numeric, 3::numeric)$$, 'a post read twice in a UTC day is billed once');
SELECT is((SELECT cost_today FROM tweetkeeper.usage_stats WHERE credential = ''), 0.02,
  'usage_stats prices an unregistered token''s reads at X''s 0.005 (3 reads: 0.015, rounded)');

-- With a credential: the claim reserves what it may be billed, complete settles it.
SELECT tweetkeeper.add_credential('c1', 50, interval '15 minutes', 10, 'x-v2', 0.01);
SELECT throws_ok($$SELECT tweetkeeper.add_credential('c2', 5, interval '15 minutes', NULL, 'x-v2', -0.01)$$, '23514', NULL,
  'a negative price is refused');
SELECT pg_temp.due_again();
SELECT pg_temp.claim();
SELECT row_eq($$SELECT b.billable, c.month_used FROM tweetkeeper.batches b JOIN tweetkeeper.credentials c ON c.name = b.credential
                 WHERE b.lease_id = (SELECT max(lease_id) FROM c)$$, ROW(3, 3::bigint),
  'another credential has not read them today: the claim reserves 3 billed reads');
SELECT is(tweetkeeper.complete_batch((SELECT max(lease_id) FROM c), '[{"id":1001},{"id":1002}]',
  '[{"id":1003,"type":"resource-not-found","detail":"gone"}]'), 3, 'two found, one deleted');
SELECT row_eq($$SELECT b.billed, c.month_used FROM tweetkeeper.batches b JOIN tweetkeeper.credentials c ON c.name = b.credential
                 WHERE b.lease_id = (SELECT max(lease_id) FROM c)$$, ROW(2, 2::bigint),
  'complete settles to the found tweets: 2 billed, month_used 2');
SELECT results_eq($$SELECT billed_on, billed_by FROM tweetkeeper.tweets WHERE tweet_id IN (1001, 1002) ORDER BY tweet_id$$,
  $$VALUES ((now() AT TIME ZONE 'UTC')::date, ARRAY['', 'c1']), ((now() AT TIME ZONE 'UTC')::date, ARRAY['', 'c1'])$$,
  'each found tweet remembers the UTC day and the credentials that read it then (first none, then c1)');

SELECT pg_temp.due_again();
SELECT pg_temp.claim();
SELECT is((SELECT billable FROM tweetkeeper.batches WHERE lease_id = (SELECT max(lease_id) FROM c)), 0,
  'read again by the same credential the same day: nothing to reserve');
SELECT tweetkeeper.complete_batch((SELECT max(lease_id) FROM c), '[{"id":1001},{"id":1002}]');
SELECT row_eq($$SELECT requests_today, tweets_read_today, billed_reads_today, cost_today FROM tweetkeeper.usage_stats WHERE credential = 'c1'$$,
  ROW(2::numeric, 4::numeric, 2::numeric, 0.02), 'usage_stats: 2 requests, 4 reads, 2 billed, at 0.01 each');
SELECT row_eq($$SELECT month_used, month_cost FROM tweetkeeper.credential_stats WHERE name = 'c1'$$, ROW(2::bigint, 0.02),
  'credential_stats: billed reads this month and what they cost');

-- A new UTC day bills again; a failed request gives its reservation back.
UPDATE tweetkeeper.tweets SET billed_on = billed_on - 1;
SELECT pg_temp.due_again();
SELECT pg_temp.claim();
SELECT row_eq($$SELECT b.billable, c.month_used FROM tweetkeeper.batches b JOIN tweetkeeper.credentials c ON c.name = b.credential
                 WHERE b.lease_id = (SELECT max(lease_id) FROM c)$$, ROW(2, 4::bigint), 'read on an earlier UTC day: billed again');
SELECT is(tweetkeeper.release_batch((SELECT max(lease_id) FROM c), 'HTTP 503'), 2, 'the request failed');
SELECT is((SELECT month_used FROM tweetkeeper.credentials WHERE name = 'c1'), 2::bigint,
  'a failed request is billed nothing: the reservation is given back');
SELECT is(tweetkeeper.release_batch((SELECT max(lease_id) FROM c), 'again'), 0, 'released twice');
SELECT is((SELECT month_used FROM tweetkeeper.credentials WHERE name = 'c1'), 2::bigint, 'and given back once only');

-- The cap counts billed reads: reached, the credential says capped, and why.
UPDATE tweetkeeper.credentials SET monthly_cap = 2 WHERE name = 'c1';
SELECT is(pg_temp.claim(), NULL::bigint, 'no claim past the cap');
SELECT alike((SELECT wait_reason FROM c WHERE n = (SELECT max(n) FROM c)), 'c1 capped: monthly cap reached: 2 of 2 billed reads used',
  'the claim says it is the monthly cap, not the window');
SELECT row_eq($$SELECT status::text, reason, until FROM tweetkeeper.credential_stats WHERE name = 'c1'$$,
  ROW('capped'::text, 'monthly cap reached: 2 of 2 billed reads used'::text, date_trunc('month', now(), 'UTC') + interval '1 month'),
  'and the credential is capped until next month, saying so');

-- Purged batches move into daily_usage: the counts stay the same. (Two hours back may be last
-- month, so the check is on daily_usage's totals, not on this month's.)
SELECT results_eq($$SELECT requests_this_month, tweets_read_this_month, billed_reads_this_month FROM tweetkeeper.usage_stats ORDER BY credential$$,
  $$VALUES (2::numeric, 6::numeric, 3::numeric), (2::numeric, 4::numeric, 2::numeric)$$, 'usage before the purge');
UPDATE tweetkeeper.batches SET finished_at = now() - interval '2 hours';
SELECT tweetkeeper.maintenance();
SELECT is((SELECT count(*) FROM tweetkeeper.batches), 0::bigint, 'maintenance purged the old batches');
SELECT results_eq($$SELECT credential, sum(requests), sum(tweets_read), sum(billed_reads) FROM tweetkeeper.daily_usage
                    GROUP BY credential ORDER BY credential$$,
  $$VALUES ('', 2::numeric, 6::numeric, 3::numeric), ('c1', 2::numeric, 4::numeric, 2::numeric)$$,
  'and daily_usage holds the same counts, per credential');
SELECT is((SELECT count(*) FROM tweetkeeper.daily_usage), 2::bigint, 'one row per UTC day and credential');

-- Two credentials taking turns: each is billed a post once a day, however the turns go.
UPDATE tweetkeeper.credentials SET monthly_cap = NULL, status = 'active', status_until = NULL;
SELECT tweetkeeper.add_credential('c2', 50, interval '15 minutes');
CREATE FUNCTION pg_temp.read_with(cred text) RETURNS integer LANGUAGE sql AS $$
  UPDATE tweetkeeper.tweets SET due_at = now() - interval '1 second' WHERE state = 'scheduled';
  UPDATE tweetkeeper.credentials SET last_used_at = CASE WHEN name = cred THEN NULL ELSE now() END;
  SELECT tweetkeeper.complete_batch(pg_temp.claim(), '[{"id":1001},{"id":1002}]');
  SELECT billed FROM tweetkeeper.batches ORDER BY lease_id DESC LIMIT 1 $$;
SELECT is(pg_temp.read_with('c1'), 2, 'c1 reads two posts it read yesterday: billed');
SELECT is(pg_temp.read_with('c2'), 2, 'c2 reads them today too: billed to c2');
SELECT is(pg_temp.read_with('c1'), 0, 'c1 reads them again: nothing more');
SELECT is(pg_temp.read_with('c2'), 0, 'nor c2');
SELECT is((SELECT billed_by FROM tweetkeeper.tweets WHERE tweet_id = 1001), ARRAY['c1', 'c2'], 'both are remembered for the day');

-- Next month is UTC's, whatever the session's time zone.
SET LOCAL TIME ZONE 'America/Los_Angeles';
SELECT is(tweetkeeper.next_month_utc(), (date_trunc('month', now() AT TIME ZONE 'UTC') + interval '1 month') AT TIME ZONE 'UTC',
  'next_month_utc is midnight UTC on the 1st');
SELECT is(extract(day FROM tweetkeeper.next_month_utc() AT TIME ZONE 'UTC'), 1::numeric, 'on the 1st in UTC, not a Pacific day');

SELECT * FROM finish();
ROLLBACK;
