-- What tracking costs: one tweet's life under the current policy (tweet_cost), a forecast for the
-- queue (forecast), and what the registered credentials give against it (the capacity view).

-- One tweet from its creation to its last refresh under the current policy: the refreshes (ages
-- first_delay, then + the delay of the age reached, until past the last bucket), the requests
-- they are a share of (100 tweets per request), the billed reads (distinct UTC days with a
-- refresh, averaged over the hour of day the tweet was made) and their price.
CREATE OR REPLACE FUNCTION tweet_cost(price_per_read numeric DEFAULT 0.005, OUT refreshes integer,
                           OUT requests numeric, OUT billed_reads numeric, OUT cost numeric,
                           OUT tracked_for interval)
  LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  age interval := tweetkeeper.first_delay();
  d interval;
  ages double precision[] := '{}';
BEGIN
  IF price_per_read IS NULL OR price_per_read < 0 THEN
    RAISE EXCEPTION 'price_per_read must be 0 or more, got %', coalesce(price_per_read::text, 'NULL')
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  LOOP
    ages := ages || extract(epoch FROM age)::double precision;
    IF cardinality(ages) > 1000000 THEN
      RAISE EXCEPTION 'the age policy refreshes a tweet more than 1,000,000 times over its life'
        USING ERRCODE = 'program_limit_exceeded';
    END IF;
    SELECT p.delay INTO d FROM tweetkeeper.age_policy p WHERE p.max_age > age ORDER BY p.max_age LIMIT 1;
    EXIT WHEN d IS NULL;
    age := age + d;
  END LOOP;
  refreshes := cardinality(ages);
  requests := round(refreshes / 100.0, 2);
  SELECT round(avg(n), 1) INTO billed_reads
    FROM (SELECT count(DISTINCT floor((h * 3600 + 1800 + a) / 86400)) AS n
            FROM generate_series(0, 23) h, unnest(ages) a GROUP BY h) x;
  cost := round(billed_reads * price_per_read, 4);
  tracked_for := justify_interval(age);
END $$;
COMMENT ON FUNCTION tweet_cost(numeric) IS
  'What one tweet costs over its life under the current age policy: refreshes, requests (a '
  'share of 100 per request), billed reads (X bills a post once per UTC day) and their price.';

-- forecast()'s part off the age schedule, from t0 to t1 (today: t0's UTC day). X's watched
-- tweets: every `every` while the watch lasts, billed once a day. Unavailable and missing ones:
-- rechecked once when due (an error or left out, not billed). X's followers (follow_requests):
-- each followed account's timeline read at the pace they keep now (from its last read to its
-- next, poll_after - checked_at); the posts they find are tweets, in forecast()'s arrivals,
-- billed as those are.
CREATE OR REPLACE FUNCTION tweetkeeper_internal.forecast_off_schedule(t0 timestamptz, t1 timestamptz, today date,
                                                 OUT refreshes numeric, OUT billed_reads numeric,
                                                 OUT follow_requests numeric)
  LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  max_gap double precision := extract(epoch FROM current_setting('tweetkeeper.adaptive_max_gap')::interval);
BEGIN
  follow_requests := coalesce((
    SELECT sum(extract(epoch FROM t1 - t0) / greatest(extract(epoch FROM f.poll_after - f.checked_at), 1))
      FROM tweetkeeper.followed_accounts f
     WHERE f.network = 'x' AND f.status = 'following' AND f.checked_at IS NOT NULL AND f.poll_after > f.checked_at), 0);
  refreshes := coalesce((SELECT sum(extract(epoch FROM least(t1, t.watch_until) - t0) / extract(epoch FROM t.watch_every))
                           FROM tweetkeeper.tweets t WHERE t.watch_until > t0 AND t.tweet_id > 0), 0)
             + coalesce((SELECT count(*) FROM tweetkeeper.tweets t
                          WHERE t.state IN ('unavailable', 'missing') AND t.due_at < t1 AND t.tweet_id > 0), 0);
  billed_reads := coalesce((
    SELECT sum(CASE WHEN u::date = today AND t.billed_on = today THEN 0 ELSE 1 END)
      FROM tweetkeeper.tweets t,
           generate_series(date_trunc('day', t0 AT TIME ZONE 'UTC'), least(t1, t.watch_until) AT TIME ZONE 'UTC',
                           interval '1 day') u
     WHERE t.watch_until > t0 AND t.tweet_id > 0), 0);
  -- Posts on the adaptive policy, as if they stay quiet: read when due, then after the gap they
  -- chose doubled at each read up to tweetkeeper.adaptive_max_gap (one that moves is read more
  -- often, up to its age table's pace; one done is not read). A read on a UTC day is billed once.
  SELECT refreshes + coalesce(sum(a.n), 0),
         billed_reads + coalesce(sum(least(a.n, days - CASE WHEN a.billed_on = today THEN 1 ELSE 0 END)), 0)
    INTO refreshes, billed_reads
    FROM (SELECT t.billed_on,
                 tweetkeeper_internal.quiet_reads(extract(epoch FROM t1 - greatest(t.due_at, t0))::double precision,
                   extract(epoch FROM coalesce(tweetkeeper_internal.adaptive_gap(t.adaptive_state), t.delay))::double precision,
                   max_gap) AS n
            FROM tweetkeeper.tweets t
           WHERE t.state = 'scheduled' AND t.tweet_id > 0 AND tweetkeeper_internal.adaptive_on(t, t0) AND t.due_at < t1) a,
         (SELECT ((t1 AT TIME ZONE 'UTC')::date - (t0 AT TIME ZONE 'UTC')::date + 1) AS days) d;
END $$;

-- How many reads a quiet adaptive post gets in `span` seconds from its next one: that one, then
-- gaps of `gap` doubled at each read (2 gap, 4 gap, ...) up to `max_gap`.
CREATE OR REPLACE FUNCTION tweetkeeper_internal.quiet_reads(span double precision, gap double precision,
                                                   max_gap double precision) RETURNS double precision
  LANGUAGE plpgsql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  g double precision := greatest(gap, 1);
  c double precision := greatest(max_gap, g);
  doubling integer;      -- reads whose gap is still doubling, under max_gap
  doubled double precision;  -- the time those take
BEGIN
  IF span < 0 THEN
    RETURN 0;
  END IF;
  doubling := greatest(ceil(ln(c / g) / ln(2))::integer - 1, 0);
  doubled := g * (2 ^ (doubling + 1) - 2);
  IF span < doubled THEN
    RETURN 1 + floor(ln(span / g + 2) / ln(2)) - 1;
  END IF;
  RETURN 1 + doubling + floor((span - doubled) / c);
END $$;

-- What the queue will need from now to now + span (expected values, from each tracked tweet's
-- age and the policy, the watches, and new tweets arriving at the rate of the last day: tweets
-- created in the last 24 hours, per second), and the timeline reads of X's followers of accounts.
-- X's tweets only (tweet_id > 0): X bills by the
-- post and asks 100 per request; Bluesky's and Mastodon's posts cost nothing and go 25 or 20 a
-- request, and are not in this forecast. (SECURITY DEFINER, as every granted function that calls
-- the internal steps, which are granted to no one: forecast_off_schedule().)
CREATE OR REPLACE FUNCTION forecast(span interval, OUT refreshes numeric, OUT requests numeric,
                         OUT billed_reads numeric)
  LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  s record := tweetkeeper.settings();
  t0 timestamptz := now();
  t1 timestamptz := now() + span;
  today date := (now() AT TIME ZONE 'UTC')::date;
  first interval;
  last interval;
  arrivals numeric;  -- new tweets per second lately
  span_s numeric := extract(epoch FROM span);
  rf numeric;
  bl numeric;
  w record;
BEGIN
  IF span IS NULL OR span <= interval '0' OR span > interval '1 year' THEN
    RAISE EXCEPTION 'span must be more than 0 and at most a year, got %', coalesce(span::text, 'NULL')
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  first := tweetkeeper.first_delay();
  last := (SELECT max(p.max_age) FROM tweetkeeper.age_policy p);
  -- New tweets: those created in the last day, per second of it (a bulk load of older tweets is
  -- not a stream of new ones).
  arrivals := (SELECT count(*) FROM tweetkeeper.tweets t WHERE t.created_at > now() - interval '1 day'
                 AND t.tweet_id > 0) / 86400.0;

  WITH g AS MATERIALIZED (
    -- Tracked tweets on their age schedule, by minute of creation; then the expected arrivals.
    SELECT date_trunc('minute', t.created_at) AS c, count(*)::numeric AS n,
           count(*) FILTER (WHERE t.billed_on = today)::numeric AS n_billed,
           count(*) FILTER (WHERE t.due_at <= t0)::numeric AS n_due
      FROM tweetkeeper.tweets t WHERE t.state = 'scheduled' AND t.watch_until IS NULL AND t.tweet_id > 0
       AND NOT tweetkeeper_internal.adaptive_for(t.endpoint, t.refresh_policy) GROUP BY 1
    UNION ALL
    SELECT t0 + (k + 0.5) * (span / 60), arrivals * span_s / 60, 0, 0
      FROM generate_series(0, 59) k WHERE arrivals > 0),
  p AS (
    SELECT coalesce(lag(a.max_age) OVER (ORDER BY a.max_age), interval '0') AS lo, a.max_age AS hi, a.delay
      FROM tweetkeeper.age_policy a),
  days AS (  -- UTC days, whatever the session's time zone (and its DST changes)
    SELECT greatest(t0, d.d0) AS s0, least(t1, d.d1) AS s1, d.is_today
      FROM (SELECT u AT TIME ZONE 'UTC' AS d0, (u + interval '1 day') AT TIME ZONE 'UTC' AS d1,
                   u::date = today AS is_today
              FROM generate_series(date_trunc('day', t0 AT TIME ZONE 'UTC'), t1 AT TIME ZONE 'UTC',
                                   interval '1 day') u) d
     WHERE least(t1, d.d1) > greatest(t0, d.d0))
  SELECT
    -- Refreshes: 1/delay integrated over the ages each group passes through in the window (from
    -- its first refresh on), plus its last refresh past the last bucket, plus half a refresh for
    -- each overdue tweet (fetched at once, then on its delay).
    coalesce((SELECT sum(g.n * greatest(extract(epoch FROM least(t1 - g.c, p.hi)
                                        - greatest(greatest(t0, g.c + first) - g.c, p.lo)), 0)
                         / extract(epoch FROM p.delay)) FROM g, p), 0)
    -- (a tweet already past it, such as a backlog of old tweets just scheduled, gets it now)
    + coalesce((SELECT sum(g.n) FROM g WHERE g.c + last < t1), 0)
    + coalesce((SELECT sum(g.n_due) FROM g WHERE g.c + last >= t0), 0) * 0.5,
    -- Billed reads: per UTC day the window covers, each tweet alive then is read at least once
    -- with probability min(1, its time in that day / its delay there); today only if not read
    -- yet today. Past the last bucket, its last refresh.
    coalesce((SELECT sum(CASE WHEN days.is_today THEN g.n - g.n_billed ELSE g.n END
                         * CASE WHEN x.age >= last
                                  THEN (CASE WHEN greatest(t0, g.c + last) >= days.s0
                                              AND greatest(t0, g.c + last) < days.s1 THEN 1 ELSE 0 END)
                                ELSE least(1, extract(epoch FROM days.s1 - x.start) / extract(epoch FROM
                                     (SELECT p.delay FROM p WHERE p.hi > x.age ORDER BY p.hi LIMIT 1))) END)
                FROM g, days,
                     LATERAL (SELECT greatest(days.s0, g.c + first) AS start,
                                     greatest(days.s0, g.c + first) - g.c AS age) x
               WHERE x.start < days.s1), 0)
    INTO rf, bl;
  w := tweetkeeper_internal.forecast_off_schedule(t0, t1, today);
  rf := rf + w.refreshes;
  bl := bl + w.billed_reads;

  refreshes := round(rf, 1);
  -- Full batches when enough is due; otherwise a partial batch every buffer TTL at the most.
  requests := round(least(rf, greatest(rf / 100, span_s / greatest(extract(epoch FROM s.buffer_ttl), 1))), 1);
  -- X's followers' timeline reads (forecast_off_schedule()).
  requests := requests + round(w.follow_requests, 1);
  billed_reads := round(bl, 1);
END $$;
COMMENT ON FUNCTION forecast(interval) IS
  'What the tracked and watched tweets, and new ones at the rate of the last day, will need from '
  'now to now + span: refreshes, requests and billed reads (expected values). X''s tweets only, '
  'and the timeline reads of X''s followers at their current pace.';

CREATE OR REPLACE VIEW capacity AS
WITH f AS (
  SELECT h.requests AS req_h, d.requests AS req_d, m.requests AS req_m,
         h.billed_reads AS bil_h, d.billed_reads AS bil_d, m.billed_reads AS bil_m,
         tweetkeeper.next_month_utc() AS month_end
    FROM tweetkeeper.forecast(interval '1 hour') h, tweetkeeper.forecast(interval '1 day') d,
         tweetkeeper.forecast(tweetkeeper.next_month_utc() - now()) m),
pr AS (
  SELECT c.provider, count(*) AS credentials, avg(c.price_per_read) AS price,
         min(c.window_length) AS window_length,
         -- Requests the credentials can send from now (or from when a waiting or capped one may
         -- again) to the end of each span.
         coalesce(sum(c.requests_per_window * greatest(extract(epoch FROM now() + interval '1 hour' - u.at), 0)
             / extract(epoch FROM c.window_length)), 0) AS cap_h,
         coalesce(sum(c.requests_per_window * greatest(extract(epoch FROM now() + interval '1 day' - u.at), 0)
             / extract(epoch FROM c.window_length)), 0) AS cap_d,
         coalesce(sum(c.requests_per_window * greatest(extract(epoch FROM (SELECT month_end FROM f) - u.at), 0)
             / extract(epoch FROM c.window_length)), 0) AS cap_m,
         -- Billed reads left under the monthly caps; NULL when a usable credential has none.
         CASE WHEN bool_and(c.monthly_cap IS NOT NULL OR c.status = 'rejected') THEN
           sum(CASE WHEN c.status = 'rejected' THEN 0
                    ELSE greatest(c.monthly_cap - CASE WHEN c.month_start < date_trunc('month', now(), 'UTC')
                                                       THEN 0 ELSE c.month_used END, 0) END) END AS billed_left
    FROM tweetkeeper.credentials c
    -- A rejected credential gives nothing (at is NULL, so is its share, and sum() skips it).
    CROSS JOIN LATERAL (SELECT CASE WHEN c.status = 'active' THEN now()
                                    WHEN c.status = 'rejected' THEN NULL
                                    ELSE greatest(c.status_until, now()) END AS at) u
   GROUP BY c.provider
  UNION ALL
  SELECT 'x-v2', 0, 0.005, NULL, NULL, NULL, NULL, NULL
   WHERE NOT EXISTS (SELECT 1 FROM tweetkeeper.credentials))
SELECT pr.provider,
       round(f.req_h) AS requests_next_hour, round(f.req_d) AS requests_next_day,
       round(f.req_m) AS requests_to_month_end,
       round(f.bil_h) AS billed_reads_next_hour, round(f.bil_d) AS billed_reads_next_day,
       round(f.bil_m) AS billed_reads_to_month_end,
       round(f.bil_d * pr.price, 2) AS cost_next_day, round(f.bil_m * pr.price, 2) AS cost_to_month_end,
       floor(pr.cap_h) AS capacity_next_hour, floor(pr.cap_d) AS capacity_next_day,
       floor(pr.cap_m) AS capacity_to_month_end, pr.billed_left AS billed_reads_left_this_month,
       CASE WHEN pr.credentials = 0
              THEN 'unknown: no credentials registered (tweetkeeper.add_credential says what a token may send)'
            WHEN f.req_h > pr.cap_h
              THEN format('short by %s requests per %s', ceil((f.req_h - pr.cap_h)
                          * extract(epoch FROM pr.window_length) / 3600), pr.window_length)
            WHEN pr.billed_left IS NOT NULL AND f.bil_m > pr.billed_left
              THEN format('monthly cap runs out on %s', to_char((now() + (pr.billed_left / f.bil_m)
                          * (f.month_end - now())) AT TIME ZONE 'UTC', 'YYYY-MM-DD'))
            ELSE 'enough' END AS verdict
  FROM pr, f
 ORDER BY pr.provider;
COMMENT ON VIEW capacity IS
  'Per provider: the requests and billed reads the queue needs in the next hour, day and until '
  'the end of the month (forecast()), their cost, what the registered credentials can give, and '
  'a verdict: enough, short by N requests per window, or the day the monthly cap runs out.';
