-- The queue's upkeep, called by the background worker on every tick (maintenance()): expired and
-- abandoned leases, purged batch records, ended watches, and how long it may sleep.

-- When X's tweets are next claimable, by claim_batch()'s own test (a full batch, or a partial
-- one past the buffer TTL), read as the claim reads them: each delay of the scheduled tweets
-- from its head (delay_heads()), then its oldest due. at: now() when a batch is claimable now
-- (n_due: how many tweets, at most 100), else the moment the oldest due tweet has
-- waited the buffer TTL or the next tweet falls due (a head in the future; one that is not
-- belongs to a delay that has no tweet left); NULL when nothing is scheduled. maintenance()
-- notifies by it; claim_wait() tells a worker whose claim found nothing.
CREATE OR REPLACE FUNCTION tweetkeeper_internal.x_claimable(OUT at timestamptz, OUT n_due integer) LANGUAGE plpgsql
  SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  s record := tweetkeeper.settings();
  delays interval[];
  heads timestamptz[];
  n integer;
  oldest timestamptz;
BEGIN
  SELECT h.delays, h.heads INTO delays, heads FROM tweetkeeper_internal.delay_heads() h;
  -- (EXECUTEd, so planned at every call: see maintenance().)
  EXECUTE $q$
    SELECT count(*), min(c.due_at)
      FROM (SELECT c.due_at
              FROM unnest($1, $2) AS d(delay, head) CROSS JOIN LATERAL (
                SELECT t.due_at FROM tweetkeeper.tweets t
                 WHERE t.due_at IS NOT NULL AND t.tweet_id > 0
                   AND (t.delay, t.due_at) >= (d.delay, d.head)
                   AND (t.delay, t.due_at) <= (d.delay, now())
                 ORDER BY t.delay, t.due_at LIMIT 100) c
             ORDER BY c.due_at LIMIT 100) AS c$q$ INTO n, oldest USING delays, heads;
  IF n >= 100 OR (n > 0 AND oldest <= now() - s.buffer_ttl) THEN
    at := now();
    n_due := n;
    RETURN;
  END IF;
  at := CASE WHEN n > 0 THEN oldest + s.buffer_ttl
             ELSE (SELECT min(h.head) FROM unnest(heads) AS h(head) WHERE h.head > now()) END;
END $$;
COMMENT ON FUNCTION tweetkeeper_internal.x_claimable() IS
  'When X''s tweets are next claimable by claim_batch()''s test: now() (with how many), a moment '
  'to come, or NULL when nothing is scheduled.';

-- When a claim of `provider` may next find something, as far as the queue says now: now() when
-- a batch is claimable, NULL when nothing is scheduled. A worker's claim asks it, in the same
-- statement, when it claimed nothing, and the worker sleeps until then (at most its poll
-- interval; a NOTIFY wakes it sooner): no fixed poll when the moment is known. X: x_claimable().
-- Bluesky and Mastodon (maintenance() notifies their workers by it too): the first 100 posts of
-- their endpoints in due order, per endpoint claimable now when a full batch of them is due,
-- else once the oldest due has waited the buffer TTL (a partial batch), else when the next
-- falls due; a server that asked us to wait, from the moment it said; one that wants a token
-- left out (nothing changes for it until a token is given). A leased post's due time is its
-- lease's expiry.
CREATE OR REPLACE FUNCTION claim_wait(provider text) RETURNS timestamptz
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp SET jit = off AS $$
DECLARE
  s record := tweetkeeper.settings();
  at timestamptz;
  eps text[];
  dues timestamptz[];
BEGIN
  IF provider IS NULL OR provider NOT IN ('bluesky', 'mastodon') THEN
    SELECT c.at INTO at FROM tweetkeeper_internal.x_claimable() c;
    RETURN at;
  END IF;
  -- The sample: each a query of tweets alone,
  -- along tweets_endpoint_due_idx per Bluesky endpoint, tweets_mastodon_due_idx for Mastodon.
  -- (EXECUTEd, so planned at every call: see maintenance().)
  IF provider = 'bluesky' THEN
    EXECUTE $q$
      SELECT array_agg(t.endpoint), array_agg(t.due_at)
        FROM ((SELECT t.endpoint, t.due_at FROM tweetkeeper.tweets t
                WHERE t.due_at IS NOT NULL AND t.tweet_id < 0 AND t.endpoint COLLATE "C" = 'bluesky'
                ORDER BY t.endpoint COLLATE "C", t.due_at LIMIT 100)
              UNION ALL
              (SELECT t.endpoint, t.due_at FROM tweetkeeper.tweets t
                WHERE t.due_at IS NOT NULL AND t.tweet_id < 0 AND t.endpoint COLLATE "C" = 'bluesky-handle'
                ORDER BY t.endpoint COLLATE "C", t.due_at LIMIT 100)) AS t$q$ INTO eps, dues;
  ELSE
    EXECUTE $q$
      SELECT array_agg(t.endpoint), array_agg(t.due_at)
        FROM (SELECT t.endpoint, t.due_at FROM tweetkeeper.tweets t
               WHERE t.due_at IS NOT NULL AND t.tweet_id < 0 AND starts_with(t.endpoint, 'mastodon:')
               ORDER BY t.due_at LIMIT 100) AS t$q$ INTO eps, dues;
  END IF;
  -- (claimable since a moment past: now)
  SELECT CASE WHEN min(g.at) IS NOT NULL THEN greatest(min(g.at), now()) END INTO at FROM (
    SELECT greatest(CASE WHEN count(*) FILTER (WHERE x.due_at <= now())
                              >= tweetkeeper_internal.endpoint_batch_max(x.endpoint, coalesce(bool_or(e.single_status), false))
                         THEN now()
                         ELSE min(CASE WHEN x.due_at <= now() THEN x.due_at + s.buffer_ttl ELSE x.due_at END) END,
                    min(CASE WHEN e.status = 'waiting' THEN e.status_until END)) AS at
      FROM unnest(eps, dues) AS x(endpoint, due_at)
      LEFT JOIN tweetkeeper.endpoints e ON e.endpoint = x.endpoint
     WHERE NOT coalesce(e.status = 'needs-token' AND coalesce(e.status_until > now(), true), false)
     GROUP BY x.endpoint) g;
  RETURN at;
END $$;
COMMENT ON FUNCTION claim_wait(text) IS
  'When a claim of this provider that found nothing may next find something (NULL: nothing '
  'scheduled): what a worker sleeps until, a NOTIFY waking it sooner.';

-- The ends of batch leases (maintenance()'s first step; the lease core: sql/replaceable/40_claim.sql).
-- Batches whose claiming session is gone (the worker was killed or lost its connection) come back
-- at once, at their place in the queue: due since the oldest of them was (abandon_batch(); with
-- reclaim, tweetkeeper.reclaim_abandoned). A worker that reconnects and completes such a batch
-- later stores nothing: its lease is off the tweets. Leases that ran out are recorded expired
-- (their tweets are already due again: due_at was the expiry). Batch records older than
-- retention go; the requests they answered stay counted in daily_usage (count_usage()).
CREATE OR REPLACE FUNCTION tweetkeeper_internal.end_leases(reclaim boolean, retention interval) RETURNS void
  LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  gone record;
  purged jsonb;
BEGIN
  IF reclaim THEN
    FOR gone IN WITH f AS MATERIALIZED (
                  SELECT b.lease_id, b.claimer_pid, b.claimer_started FROM tweetkeeper.batches b
                   WHERE b.outcome IS NULL AND b.claimer_pid IS NOT NULL)
                SELECT f.lease_id FROM f WHERE NOT tweetkeeper.backend_alive(f.claimer_pid, f.claimer_started) LOOP
      PERFORM tweetkeeper_internal.abandon_batch(gone.lease_id);
    END LOOP;
  END IF;
  UPDATE tweetkeeper.batches SET outcome = 'expired', finished_at = now(), stored = 0
   WHERE outcome IS NULL AND expires_at < now();
  -- (What was deleted is summed here, then counted.)
  WITH g AS (
    DELETE FROM tweetkeeper.batches WHERE finished_at < now() - retention
    RETURNING finished_at, provider, credential, tweets_read, billed
  )
  SELECT coalesce(jsonb_agg(jsonb_build_array(x.day, x.provider, x.credential, x.requests, x.tweets_read, x.billed)), '[]')
    INTO purged
    FROM (SELECT (g.finished_at AT TIME ZONE 'UTC')::date AS day, coalesce(g.provider, 'x-v2') AS provider,
                 coalesce(g.credential, '') AS credential, count(*) AS requests, sum(g.tweets_read) AS tweets_read,
                 sum(coalesce(g.billed, 0)) AS billed
            FROM g WHERE g.tweets_read IS NOT NULL
           GROUP BY 1, 2, 3) x;
  PERFORM tweetkeeper_internal.count_usage(purged);
END $$;

-- Returns how long the background worker may sleep before anything can change: 0 for a tick
-- (a batch is claimable now, or batches are in flight and their workers may die), otherwise
-- until the next tweet becomes claimable or the next lease expires; NULL when nothing is
-- scheduled. When a batch is claimable now, it notifies the idle workers on the channel
-- tweetkeeper_due (a hint: workers poll as well, slowly). SECURITY DEFINER: an admin may run it,
-- and its steps are tweetkeeper_internal's, which no role but the owner may call.
CREATE OR REPLACE FUNCTION maintenance() RETURNS interval LANGUAGE plpgsql SECURITY DEFINER
  SET search_path = pg_catalog, pg_temp SET jit = off AS $$
DECLARE
  s record := tweetkeeper.settings();  -- also loads the module, which defines the setting
  reclaim boolean := current_setting('tweetkeeper.reclaim_abandoned')::boolean;
  n_due integer;
  next_due timestamptz;
  next_expiry timestamptz;
  next_watch_end timestamptz;
  notified boolean := false;
  network text;
  posts_at timestamptz;
BEGIN
  -- The statements below whose best plan depends on the table's size are EXECUTEd, so planned
  -- at every call, not cached (the min() lookups of batches and watches follow a partial index
  -- whatever the statistics):
  -- the background worker calls this all day in one session, from the first tick on an empty
  -- queue, and a plan made then (a sequential scan, right for an empty table) would be kept
  -- until the next ANALYZE, reading every tweet at every tick while an import fills the queue.
  -- Planning them costs well under a millisecond.
  PERFORM tweetkeeper_internal.end_leases(reclaim, s.batch_retention);
  -- Watches that ran out: back to the age schedule (those in flight when their batch completes).
  -- In order and at most 1,000 a call (the next tick comes at once while more have ended), along
  -- tweets_watch_end_idx.
  EXECUTE $q$
    SELECT tweetkeeper_internal.stop_watching(ARRAY(
      SELECT t.tweet_id FROM tweetkeeper.tweets t
       WHERE t.watch_until IS NOT NULL AND t.watch_until <= now() AND t.lease_id IS NULL
       ORDER BY t.watch_until LIMIT 1000))$q$;

  -- Bluesky's and Mastodon's posts past their last refresh due for a check (tweetkeeper.done_recheck):
  -- due now for a read (X's are checked by compliance jobs), a thousand a tick.
  PERFORM tweetkeeper_internal.recheck_done_posts(1000);
  -- A batch claimable now (x_claimable(): claim_batch()'s own test; claim_wait() for Bluesky's
  -- and Mastodon's posts): the idle workers of that network are told, X's with how many tweets,
  -- the others with the network's name (each worker listens for its own).
  SELECT c.at, c.n_due INTO next_due, n_due FROM tweetkeeper_internal.x_claimable() c;
  IF next_due <= now() THEN
    PERFORM pg_notify('tweetkeeper_due', n_due::text);
    notified := true;
    next_due := NULL;
  END IF;
  FOREACH network IN ARRAY ARRAY['bluesky', 'mastodon'] LOOP
    posts_at := tweetkeeper.claim_wait(network);
    IF posts_at <= now() THEN
      PERFORM pg_notify('tweetkeeper_due', network);
      notified := true;
    ELSE
      next_due := least(next_due, posts_at);
    END IF;
  END LOOP;
  IF notified THEN
    RETURN interval '0';
  END IF;
  SELECT min(b.expires_at) INTO next_expiry FROM tweetkeeper.batches b WHERE b.outcome IS NULL;
  IF next_expiry IS NOT NULL AND reclaim THEN
    RETURN interval '0';
  END IF;
  -- (next_due, above: when a batch of any network is next claimable.)
  SELECT min(t.watch_until) INTO next_watch_end FROM tweetkeeper.tweets t WHERE t.watch_until IS NOT NULL;
  RETURN least(next_due, next_expiry, next_watch_end) - now();
END $$;
COMMENT ON FUNCTION maintenance() IS
  'Hands back batches whose worker is gone, marks expired leases, purges old batch records, '
  'notifies tweetkeeper_due when a batch is claimable; returns how long nothing can change. Run '
  'by the background worker.';
