-- What tracking costs: tweet_cost() (one tweet's life), forecast() (the queue's next hours), and
-- the capacity view's verdicts.
\ir lib/begin.sql
SELECT plan(19);

-- The default policy: about 110 refreshes over 30 days, but X bills a post once per UTC day.
SELECT row_eq($$SELECT refreshes, billed_reads, cost FROM tweetkeeper.tweet_cost()$$,
  ROW(111, 31.0, 0.1550), 'default policy: 111 refreshes, 31 billed reads, $0.155 per tweet');
SELECT is((SELECT tracked_for FROM tweetkeeper.tweet_cost()), interval '30 days 3 minutes',
  'tracked until past 30 days');

-- A policy of one refresh an hour for a day: 24 refreshes over two UTC days.
DELETE FROM tweetkeeper.age_policy;
INSERT INTO tweetkeeper.age_policy VALUES ('1 day', '1 hour');
SELECT row_eq($$SELECT refreshes, requests, billed_reads, cost FROM tweetkeeper.tweet_cost(0.01)$$,
  ROW(24, 0.24, 2.0, 0.0200), 'hourly for a day: 24 refreshes, 0.24 requests, 2 billed reads, at 0.01 each');
SELECT throws_ok($$SELECT * FROM tweetkeeper.tweet_cost(-1)$$, '22023', 'price_per_read must be 0 or more, got -1',
  'tweet_cost: a negative price');
SELECT throws_ok($$SELECT * FROM tweetkeeper.tweet_cost(NULL)$$, '22023', NULL, 'tweet_cost: NULL price');

-- forecast() gives expected values with refresh times spread over the delay: ten tweets made 30
-- minutes ago (first refreshed at one hour of age, then hourly) spend the next hour's last half
-- at one refresh an hour: 5. (This cohort, made together, will in fact be refreshed at once, all
-- ten: a span shorter than the delay can be off by one refresh per tweet; longer ones are not.)
-- forecast() groups tweets by the minute they were made, so it takes them as up to a minute
-- older: 5 + 10 x (now's seconds) / 3600, up to 5.17 (it failed about one run in ten at 5.1).
SELECT tweetkeeper.schedule_tweet(1595000000000000000 + g, now() - interval '30 minutes') FROM generate_series(1, 10) g;
SELECT ok((SELECT refreshes BETWEEN 4.9 AND 5.2 FROM tweetkeeper.forecast('1 hour')),
  'forecast: 10 tweets x half an hour at one refresh an hour = 5 refreshes');
SELECT ok((SELECT billed_reads BETWEEN 4.9 AND 5.2 FROM tweetkeeper.forecast('1 hour')),
  'billed reads: the same half of them, each billed once');
-- A day: 23 hourly refreshes left in each life and its last one (240), plus ten new tweets
-- expected (ten were made in the last day), refreshed hourly from their first hour (~110).
SELECT ok((SELECT refreshes BETWEEN 340 AND 360 FROM tweetkeeper.forecast('1 day')),
  'forecast for a day: what is left of each life, plus the tweets expected to arrive');
SELECT throws_ok($$SELECT * FROM tweetkeeper.forecast('0')$$, '22023', NULL, 'forecast: an empty span');
SELECT throws_ok($$SELECT * FROM tweetkeeper.forecast(NULL)$$, '22023', NULL, 'forecast: NULL span');
SELECT throws_ok($$SELECT * FROM tweetkeeper.forecast('2 years')$$, '22023', NULL, 'forecast: more than a year');

-- Overdue tweets are owed a refresh now.
UPDATE tweetkeeper.tweets SET due_at = now() - interval '1 minute';
SELECT ok((SELECT refreshes BETWEEN 9.9 AND 10.2 FROM tweetkeeper.forecast('1 hour')),
  'overdue tweets add half a refresh each (fetched at once, then on their delay)');

-- A backlog of old tweets (past the last bucket, just scheduled): each is fetched once, billed once.
SAVEPOINT old;
SELECT tweetkeeper.schedule_tweets(ARRAY(SELECT (((extract(epoch FROM now() - interval '40 days') * 1000)::bigint
                                                   - 1288834974657) << 22) + g FROM generate_series(1, 100) g));
SELECT ok((SELECT refreshes BETWEEN 109.9 AND 110.2 AND billed_reads BETWEEN 104.9 AND 105.2 FROM tweetkeeper.forecast('1 hour')),
  'a backlog of 100 tweets past the last bucket: 100 more refreshes and billed reads');
ROLLBACK TO old;

-- capacity: no credentials, enough, short, the monthly cap.
SELECT alike((SELECT verdict FROM tweetkeeper.capacity), 'unknown: no credentials registered%',
  'without credentials the capacity is unknown');
SELECT tweetkeeper.add_credential('a', 450, interval '15 minutes');
SELECT is((SELECT verdict FROM tweetkeeper.capacity), 'enough', 'one credential of 450 per 15 minutes: enough');
SELECT is((SELECT capacity_next_hour FROM tweetkeeper.capacity), 1800::numeric, 'it can send 1,800 requests an hour');
SELECT tweetkeeper.watch(ARRAY(SELECT 1595000000000000000 + g FROM generate_series(1, 10) g), '10 seconds', '1 day');
UPDATE tweetkeeper.credentials SET requests_per_window = 1;
SELECT is((SELECT verdict FROM tweetkeeper.capacity),
  (SELECT format('short by %s requests per 00:15:00', ceil((requests_next_hour - 4) / 4)) FROM tweetkeeper.capacity),
  'ten tweets watched every 10 s need a request every buffer TTL; 1 per 15 minutes is short by the difference per window');
SELECT tweetkeeper.add_credential('r', 450, interval '15 minutes');
UPDATE tweetkeeper.credentials SET status = 'rejected' WHERE name = 'r';
SELECT is((SELECT capacity_next_hour FROM tweetkeeper.capacity), 4::numeric, 'a rejected credential gives nothing');
-- A cap whose 20 billed reads are used up runs out today, however little of the month is left
-- (the reads a cap of 20 allows last days, or seconds on a month's last day).
UPDATE tweetkeeper.credentials SET requests_per_window = 450, monthly_cap = 20, month_used = 20,
       month_start = date_trunc('month', now(), 'UTC') WHERE name = 'a';
SELECT is((SELECT verdict FROM tweetkeeper.capacity),
  'monthly cap runs out on ' || to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD'),
  'a cap of 20 billed reads, all used, runs out, and the verdict says when: today (UTC)');

SELECT * FROM finish();
ROLLBACK;
