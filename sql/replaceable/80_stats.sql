-- Stats for operators: the queue by state, the batches of the last windows, each credential's
-- quota, and what the API was asked and billed per day.

-- One row per network and state: X's first (and X's only, as before 0.3.0, until posts of another
-- network are tracked), then bluesky and mastodon once they have posts.
CREATE OR REPLACE VIEW queue_stats AS
WITH c AS (
  SELECT CASE WHEN t.endpoint IS NULL THEN 'x' WHEN t.endpoint LIKE 'mastodon:%' THEN 'mastodon'
              ELSE 'bluesky' END AS network,
         t.state,
         count(*) AS tweets,
         count(*) FILTER (WHERE t.due_at <= now()) AS due_now,
         count(*) FILTER (WHERE t.lease_id IS NOT NULL AND t.due_at > now()) AS in_flight,
         max(now() - t.due_at) FILTER (WHERE t.due_at <= now()) AS max_lateness,
         avg(now() - t.due_at) FILTER (WHERE t.due_at <= now()) AS avg_lateness,
         min(t.due_at) FILTER (WHERE t.due_at > now() AND t.lease_id IS NULL) AS next_due_at
    FROM tweetkeeper.tweets t
   GROUP BY 1, 2
)
SELECT s.state,
       coalesce(c.tweets, 0) AS tweets,
       coalesce(c.due_now, 0) AS due_now,
       coalesce(c.in_flight, 0) AS in_flight,
       c.max_lateness, c.avg_lateness, c.next_due_at,
       n.network
  FROM (SELECT 'x' AS network UNION SELECT c.network FROM c) n
 CROSS JOIN unnest(enum_range(NULL::tweetkeeper.tweet_state)) AS s(state)
  LEFT JOIN c ON c.network = n.network AND c.state = s.state
 ORDER BY n.network <> 'x', n.network, s.state;
COMMENT ON VIEW queue_stats IS
  'Tracked posts by network (x, bluesky, mastodon) and state: how many, how many are due now, how '
  'many are claimed by a worker, and how late the overdue ones are.';

-- One row per window and network that has batches kept (X's always).
CREATE OR REPLACE VIEW batch_stats AS
WITH b AS (
  SELECT x.*, CASE WHEN x.provider IN ('bluesky', 'mastodon') THEN x.provider ELSE 'x' END AS network
    FROM tweetkeeper.batches x
)
SELECT w.window_name,
       count(b.lease_id) AS batches,
       coalesce(sum(b.stored), 0) AS tweets_stored,
       -- Per second of the window that the kept batches cover: a system that has run for ten
       -- minutes (or keeps ten minutes of batches) is not averaged over a whole hour.
       round(coalesce(sum(b.stored), 0)
             / greatest(extract(epoch FROM least(w.span, now() - f.first_claim)), 1), 1) AS tweets_per_second,
       round(avg(b.size), 1) AS avg_batch_size,
       -- Full: the most one request of its network takes (100 X ids, 25 Bluesky URIs, 20 statuses).
       -- (Spelt out: a reader may not execute the extension's functions.)
       count(b.lease_id) FILTER (WHERE b.size = CASE b.network WHEN 'x' THEN 100 WHEN 'bluesky' THEN 25 ELSE 20 END)
         AS full_batches,
       count(b.lease_id) FILTER (WHERE b.outcome = 'released') AS released,
       count(b.lease_id) FILTER (WHERE b.outcome = 'expired') AS expired,
       count(b.lease_id) FILTER (WHERE b.outcome IS NULL) AS in_flight,
       count(b.lease_id) FILTER (WHERE b.outcome = 'abandoned') AS abandoned,
       coalesce(sum(b.omitted), 0) AS ids_left_out,
       n.network,
       -- X posts found edited, each one's newest version tracked from then on: a read more per
       -- refresh (at most one per post of a batch).
       coalesce(sum(b.edits_followed), 0) AS edits_followed
  FROM (VALUES ('last minute', interval '1 minute'), ('last hour', interval '1 hour'))
         AS w(window_name, span)
 CROSS JOIN (SELECT 'x' AS network UNION SELECT b.network FROM b) n
 CROSS JOIN LATERAL (SELECT min(y.claimed_at) AS first_claim FROM b y WHERE y.network = n.network) f
  LEFT JOIN b ON b.network = n.network AND b.claimed_at > now() - w.span
 GROUP BY w.window_name, w.span, n.network, f.first_claim
 ORDER BY n.network <> 'x', n.network, w.span;
COMMENT ON VIEW batch_stats IS
  'Throughput of the last minute and hour per network: batches, posts stored per second, batch '
  'sizes, batches released by workers, expired, or abandoned (their worker''s session ended), '
  'ids the answers left out (neither found nor an error), and edited X posts whose newest '
  'version the answers made tracked.';


CREATE OR REPLACE VIEW credential_stats AS
SELECT c.name, c.provider, c.status, c.status_reason AS reason, c.status_until AS until,
       CASE WHEN c.window_reset_at IS NULL OR c.window_reset_at <= now()
            THEN c.requests_per_window ELSE c.remaining END AS remaining,
       c.requests_per_window, c.window_length,
       CASE WHEN c.window_reset_at > now() THEN c.window_reset_at END AS window_reset_at,
       CASE WHEN c.month_start < date_trunc('month', now(), 'UTC') THEN 0 ELSE c.month_used END
         AS month_used,
       c.monthly_cap, c.requests, c.last_used_at,
       (SELECT count(*) FROM tweetkeeper.batches b
         WHERE b.credential = c.name AND b.outcome = 'released') AS released_batches,
       c.price_per_read,
       round(CASE WHEN c.month_start < date_trunc('month', now(), 'UTC') THEN 0 ELSE c.month_used END
             * c.price_per_read, 2) AS month_cost
  FROM tweetkeeper.credentials c
 ORDER BY c.name;
COMMENT ON VIEW credential_stats IS
  'Each credential''s live quota and status, with the reason when it is waiting, capped or '
  'rejected, and its batches released (by the API''s refusals or failures) in the retention window. '
  'month_used counts billed reads (a post once per UTC day); month_cost prices them.';

CREATE OR REPLACE VIEW usage_stats AS
SELECT u.provider, u.credential,
       coalesce(sum(u.requests) FILTER (WHERE u.day = d.today), 0) AS requests_today,
       coalesce(sum(u.tweets_read) FILTER (WHERE u.day = d.today), 0) AS tweets_read_today,
       coalesce(sum(u.billed_reads) FILTER (WHERE u.day = d.today), 0) AS billed_reads_today,
       round(coalesce(sum(u.billed_reads) FILTER (WHERE u.day = d.today), 0)
             * coalesce(c.price_per_read, 0.005), 2) AS cost_today,
       sum(u.requests) AS requests_this_month,
       sum(u.tweets_read) AS tweets_read_this_month,
       sum(u.billed_reads) AS billed_reads_this_month,
       round(sum(u.billed_reads) * coalesce(c.price_per_read, 0.005), 2) AS cost_this_month
  FROM (SELECT (now() AT TIME ZONE 'UTC')::date AS today) d
  JOIN (SELECT x.day, x.provider, x.credential, x.requests, x.tweets_read, x.billed_reads
          FROM tweetkeeper.daily_usage x
        UNION ALL
        SELECT (b.finished_at AT TIME ZONE 'UTC')::date, coalesce(b.provider, 'x-v2'),
               coalesce(b.credential, ''), 1, b.tweets_read, coalesce(b.billed, 0)
          FROM tweetkeeper.batches b WHERE b.tweets_read IS NOT NULL) u
    ON u.day >= date_trunc('month', d.today)::date
  LEFT JOIN tweetkeeper.credentials c ON c.name = u.credential
 GROUP BY u.provider, u.credential, c.price_per_read
 ORDER BY u.provider, u.credential;
COMMENT ON VIEW usage_stats IS
  'What tracking costs: answered requests, tweets read, billed reads (a post once per UTC day) '
  'and their price, today and this month (UTC), per provider and credential (empty for a single '
  'unregistered token, priced at X''s 0.005 USD).';
