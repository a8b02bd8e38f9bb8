\echo Use "ALTER EXTENSION tweetkeeper UPDATE TO '0.3.0'" to load this file. \quit

-- 0.2.0 -> 0.3.0. 0.3.0's install script is built from the parts in sql/src/ instead of one
-- file, with the same statements in the same order except for what is changed below. Each
-- change to the extension's SQL in 0.3.0 adds its statements here.
--  * create_partitions() locks metric_history EXCLUSIVE (not SHARE UPDATE EXCLUSIVE) while it
--    attaches a partition, so a completion can no longer fail with SQLSTATE 23514 on
--    metric_history_default when a partition for now is created while it stores.
--  * parse_post_url(): X, Bluesky and Mastodon post URLs read into network, author and key.
--  * Posts of Bluesky and Mastodon in tweets, keyed by negative ids (post_refs names them):
--    tweets.endpoint, X's claim indexes and claim_batch() restricted to X's positive ids,
--    maintenance()'s wake-up likewise; schedule_post(), schedule_posts(), the posts view.

CREATE OR REPLACE FUNCTION create_partitions() RETURNS integer
  LANGUAGE plpgsql SECURITY DEFINER
  SET search_path = pg_catalog, pg_temp SET TimeZone = 'UTC' SET DateStyle = 'ISO, YMD'
  SET lock_timeout = '2s' AS $$
DECLARE
  s record := tweetkeeper.settings();
  len double precision := extract(epoch FROM s.history_partition);
  ahead interval := greatest(2 * s.history_partition, 2 * s.housekeeping_interval, interval '1 hour');
  slot timestamptz;
  lo timestamptz;
  hi timestamptz;
  bound timestamptz;
  part text;
  created integer := 0;
  moved bigint := 0;
  n bigint;
  locked boolean := false;
BEGIN
  -- One housekeeping task at a time (pg_cron runs its jobs side by side), and the parent locked
  -- before any partition, as readers and completions lock them: no lock cycle, no deadlock.
  PERFORM pg_advisory_xact_lock(hashtext('tweetkeeper.housekeeping'));
  FOR slot IN
    SELECT DISTINCT to_timestamp(floor(extract(epoch FROM d.observed_at) / len) * len)
      FROM tweetkeeper.metric_history_default d
    UNION
    SELECT to_timestamp(floor(extract(epoch FROM g) / len) * len)
      FROM generate_series(now(), now() + ahead, s.history_partition) g
    ORDER BY 1
  LOOP
    lo := slot;
    hi := to_timestamp(extract(epoch FROM slot) + len);
    LOOP  -- a partition covering lo: start after it
      SELECT p.ends INTO bound FROM tweetkeeper.history_partitions p WHERE p.starts <= lo AND p.ends > lo;
      EXIT WHEN NOT FOUND;
      lo := bound;
    END LOOP;
    SELECT min(p.starts) INTO bound FROM tweetkeeper.history_partitions p WHERE p.starts > lo AND p.starts < hi;
    hi := least(hi, bound);
    CONTINUE WHEN lo >= hi;
    IF NOT locked THEN
      LOCK TABLE tweetkeeper.metric_history IN EXCLUSIVE MODE;  -- no completion in flight across the ATTACH
      locked := true;
    END IF;
    part := 'metric_history_' || to_char(lo, 'YYYYMMDD_HH24MISS');
    EXECUTE format('CREATE TABLE tweetkeeper.%1$I (LIKE tweetkeeper.metric_history,
                      CONSTRAINT %2$I PRIMARY KEY (tweet_id, observed_at, lease_id))', part, part || '_pkey');
    EXECUTE format('WITH m AS (DELETE FROM tweetkeeper.metric_history_default
                                WHERE observed_at >= $1 AND observed_at < $2 RETURNING *)
                    INSERT INTO tweetkeeper.%I SELECT * FROM m', part) USING lo, hi;
    GET DIAGNOSTICS n = ROW_COUNT;
    moved := moved + n;
    EXECUTE format('ALTER TABLE tweetkeeper.metric_history ATTACH PARTITION tweetkeeper.%I FOR VALUES FROM (%L) TO (%L)',
                   part, lo, hi);
    created := created + 1;
  END LOOP;
  PERFORM tweetkeeper.record_housekeeping('partitions',
    format('%s partitions created, %s rows moved out of the default partition', created, moved));
  RETURN created;
END $$;

CREATE FUNCTION parse_post_url(url text, OUT network text, OUT host text, OUT author text,
                               OUT post_key text, OUT created_at timestamptz, OUT canonical text)
  RETURNS record AS 'MODULE_PATHNAME', 'tk_parse_post_url' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION parse_post_url(text) IS
  'Reads a post URL: X (https://x.com/<user>/status/<id>, twitter.com, /i/web/status/<id>), '
  'Bluesky (https://bsky.app/profile/<handle or DID>/post/<rkey>, at://<handle or DID>/'
  'app.bsky.feed.post/<rkey>) or Mastodon (https://<host>/@<user>/<id>, https://<host>/users/'
  '<user>/statuses/<id>). Returns the network (x, bluesky, mastodon), the host (Mastodon), the '
  'author, the post''s key, its creation time where the key encodes one (for Bluesky an estimate) '
  'and one canonical spelling. 22023, naming the value and the fault, for anything else.';
REVOKE ALL ON FUNCTION parse_post_url(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION parse_post_url(text) TO tweetkeeper_reader;

-- Posts of every network in tweets. The CHECK reads every row once (under the ALTER's lock); the
-- indexes are built again with X's predicate, as a fresh install has them.
ALTER TABLE tweets DROP CONSTRAINT tweets_id_positive,
  ADD COLUMN endpoint text,
  ADD CONSTRAINT tweets_key_network CHECK ((tweet_id > 0) = (endpoint IS NULL));
DROP INDEX tweets_due_idx, tweets_lateness_idx, tweets_watched_idx;
CREATE INDEX tweets_due_idx ON tweets (due_at) WHERE due_at IS NOT NULL AND tweet_id > 0;
CREATE INDEX tweets_lateness_idx ON tweets (delay, due_at) WHERE due_at IS NOT NULL AND tweet_id > 0;
CREATE INDEX tweets_watched_idx ON tweets (due_at) WHERE watch_until IS NOT NULL AND tweet_id > 0;
CREATE INDEX tweets_endpoint_due_idx ON tweets (endpoint, due_at) WHERE due_at IS NOT NULL AND tweet_id < 0;

CREATE OR REPLACE FUNCTION claim_batch(worker text, max_size integer DEFAULT 100,
                            provider text DEFAULT 'x-v2', credentials text[] DEFAULT NULL)
  RETURNS TABLE (lease_id bigint, tweet_ids bigint[], credential text, wait_until timestamptz,
                 wait_reason text)
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  s record := tweetkeeper.settings();
  ids bigint[];
  oldest timestamptz;
  lease bigint;
  cred text;
  quota_mode boolean;
  w record;
  today date := (now() AT TIME ZONE 'UTC')::date;
  read_today text[];  -- per read of a claimed tweet this UTC day: the credential that read it
  billable integer;
  burst boolean := current_setting('tweetkeeper.spending') = 'burst';
  by_due boolean := current_setting('tweetkeeper.claim_order') = 'due';
  held bigint[];
  got bigint[];
  group_delays interval[];
  group_sizes bigint[];
  wanted bigint;
  skipped bigint := 0;
BEGIN
  IF worker IS NULL OR worker = '' THEN
    RAISE EXCEPTION 'worker must be a non-empty name' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF max_size IS NULL OR max_size < 1 OR max_size > 100 THEN
    RAISE EXCEPTION 'max_size must be between 1 and 100, got %', coalesce(max_size::text, 'NULL')
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF provider IS NULL OR provider NOT IN ('x-v2', 'x-v1.1') THEN
    RAISE EXCEPTION 'provider must be x-v2 or x-v1.1, got %', coalesce(provider, 'NULL')
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  -- Which due tweets: watched ones first (tweets_watched_idx), then by tweetkeeper.claim_order.
  --  * lateness (default): the most overdue relative to their own delay, (now - due_at) / delay,
  --    so that under a shortage every tweet's interval stretches by about the same factor and
  --    young tweets stay close to their schedule; nothing starves, as a waiting tweet's lateness
  --    only grows. Index-driven: a loose scan of tweets_lateness_idx (delay, due_at) finds the
  --    few distinct delays, each gives at most max_size of its most overdue tweets, and only
  --    those (delays x max_size rows) are ranked. That ranking, read without locks, says how
  --    many tweets to take from each delay; they are then locked per delay, most overdue first,
  --    skipping those another claim holds, so concurrent claims take successive slices.
  --  * due: the oldest due first (tweets_due_idx), 0.1.0's order.
  -- X's tweets only (tweet_id > 0, as X's indexes): other networks' posts are not X's to send.
  held := ARRAY(SELECT t.tweet_id FROM tweetkeeper.tweets t
                 WHERE t.watch_until IS NOT NULL AND t.due_at <= now() AND t.tweet_id > 0
                 ORDER BY t.due_at LIMIT max_size FOR UPDATE SKIP LOCKED);
  IF cardinality(held) < max_size AND by_due THEN
    held := held || ARRAY(SELECT t.tweet_id FROM tweetkeeper.tweets t
                           WHERE t.due_at <= now() AND t.tweet_id > 0 AND t.tweet_id <> ALL (held)
                           ORDER BY t.due_at LIMIT max_size - cardinality(held) FOR UPDATE SKIP LOCKED);
  ELSIF cardinality(held) < max_size THEN
    SELECT coalesce(array_agg(r.delay), '{}'), coalesce(array_agg(r.n), '{}'), coalesce(sum(r.n), 0)
      INTO group_delays, group_sizes, wanted
      FROM (SELECT x.delay, count(*) AS n FROM (
              WITH RECURSIVE d(delay) AS (
                 (SELECT t.delay FROM tweetkeeper.tweets t WHERE t.due_at IS NOT NULL AND t.tweet_id > 0
                   ORDER BY t.delay LIMIT 1)
                 UNION ALL
                 SELECT (SELECT t.delay FROM tweetkeeper.tweets t
                          WHERE t.due_at IS NOT NULL AND t.tweet_id > 0 AND t.delay > d.delay
                          ORDER BY t.delay LIMIT 1)
                   FROM d WHERE d.delay IS NOT NULL)
              SELECT d.delay
                FROM d CROSS JOIN LATERAL (
                  -- A range of tweets_lateness_idx written as row comparisons, not delay = d.delay:
                  -- with an equality the planner may walk tweets_due_idx instead, filtering on the
                  -- delay, which for a rare delay reads past every other due tweet (0.5 s at 1M).
                  SELECT t.due_at FROM tweetkeeper.tweets t
                   WHERE t.due_at IS NOT NULL AND t.tweet_id > 0
                     AND (t.delay, t.due_at) >= (d.delay, '-infinity'::timestamptz)
                     AND (t.delay, t.due_at) <= (d.delay, now()) AND t.tweet_id <> ALL (held)
                   ORDER BY t.delay, t.due_at LIMIT max_size - cardinality(held)) c
               WHERE d.delay IS NOT NULL
               ORDER BY extract(epoch FROM now() - c.due_at) / greatest(extract(epoch FROM d.delay), 1) DESC
               LIMIT max_size - cardinality(held)) x
             GROUP BY x.delay) r;
    got := ARRAY(SELECT c.tweet_id
                   FROM unnest(group_delays, group_sizes) AS g(delay, n)
                   CROSS JOIN LATERAL (
                     SELECT t.tweet_id FROM tweetkeeper.tweets t
                      WHERE t.due_at IS NOT NULL AND t.tweet_id > 0
                        AND (t.delay, t.due_at) >= (g.delay, '-infinity'::timestamptz)
                        AND (t.delay, t.due_at) <= (g.delay, now()) AND t.tweet_id <> ALL (held)
                      ORDER BY t.delay, t.due_at LIMIT g.n FOR UPDATE SKIP LOCKED) c);
    skipped := wanted - cardinality(got);
    held := held || got;
  END IF;
  SELECT array_agg(t.tweet_id ORDER BY t.due_at), min(t.due_at) INTO ids, oldest
    FROM tweetkeeper.tweets t WHERE t.tweet_id = ANY (held);
  -- A partial batch waits for the buffer TTL. One that found part of its tweets held by a claim
  -- still in progress is left to that claim: sending both halves would spend two requests on one
  -- batch's worth of tweets. A claim commits in milliseconds, so that deference ends a second
  -- past the buffer TTL: a lock held longer (an operator's open transaction) must not stall
  -- every partial batch behind it.
  IF ids IS NULL OR (cardinality(ids) < max_size
                     AND (oldest > now() - s.buffer_ttl
                          OR (skipped > 0 AND oldest > now() - s.buffer_ttl - interval '1 second'))) THEN
    RETURN;
  END IF;

  -- X bills a post once per UTC day: a tweet this credential already read today costs nothing.
  SELECT coalesce(array_agg(r.name), '{}') INTO read_today
    FROM tweetkeeper.tweets t CROSS JOIN LATERAL unnest(t.billed_by) AS r(name)
   WHERE t.tweet_id = ANY (ids) AND t.billed_on = today;
  quota_mode := EXISTS (SELECT 1 FROM tweetkeeper.credentials c WHERE c.provider = claim_batch.provider);
  IF quota_mode THEN
    -- The least recently used credential with quota, so that all of them are used. The row
    -- lock serialises claims on one credential; the WHERE clause is rechecked under it. The
    -- monthly cap counts billed reads, reserved here and settled by complete or release. Even
    -- spending (tweetkeeper.spending) also waits for the credential's pace, one request every
    -- window_length / requests_per_window whichever worker sends it (paced_until).
    UPDATE tweetkeeper.credentials c
       SET remaining = CASE WHEN c.window_reset_at IS NULL OR c.window_reset_at <= now()
                            THEN c.requests_per_window ELSE c.remaining END - 1,
           window_reset_at = CASE WHEN c.window_reset_at IS NULL OR c.window_reset_at <= now()
                                  THEN now() + c.window_length ELSE c.window_reset_at END,
           window_started_at = CASE WHEN c.window_reset_at IS NULL OR c.window_reset_at <= now()
                                    THEN now() ELSE c.window_started_at END,
           month_used = CASE WHEN c.month_start < date_trunc('month', now(), 'UTC') THEN 0
                             ELSE c.month_used END
                        + cardinality(ids) - cardinality(array_positions(read_today, c.name)),
           month_start = date_trunc('month', now(), 'UTC'),
           status = 'active', status_reason = NULL, status_until = NULL,
           requests = c.requests + 1, last_used_at = clock_timestamp(),
           -- The k-th request of a window goes no earlier than k paces after our first request
           -- of it (window_started_at, never later than the API's start, unlike its reset,
           -- which the API rounds up), so a busy credential sends exactly its limit in every
           -- window; one that fell behind catches up at no more than twice the pace.
           paced_until = greatest(
             CASE WHEN c.window_reset_at IS NULL OR c.window_reset_at <= now()
                  THEN now() + c.window_length / c.requests_per_window
                  ELSE coalesce(c.window_started_at, c.window_reset_at - c.window_length)
                       + (c.requests_per_window - c.remaining + 1) * (c.window_length / c.requests_per_window) END,
             now() + c.window_length / c.requests_per_window / 2)
     WHERE c.name = (
       SELECT x.name FROM tweetkeeper.credentials x
        WHERE x.provider = claim_batch.provider
          AND (claim_batch.credentials IS NULL OR x.name = ANY (claim_batch.credentials))
          AND (x.status = 'active' OR (x.status IN ('waiting', 'capped') AND x.status_until <= now()))
          AND (x.remaining > 0 OR x.window_reset_at <= now())
          AND (x.monthly_cap IS NULL
               OR CASE WHEN x.month_start < date_trunc('month', now(), 'UTC') THEN 0 ELSE x.month_used END
                  + cardinality(ids) - cardinality(array_positions(read_today, x.name)) <= x.monthly_cap)
          AND (burst OR x.paced_until IS NULL OR x.paced_until <= now())
        ORDER BY x.last_used_at NULLS FIRST
        LIMIT 1
        FOR UPDATE)
       AND (c.remaining > 0 OR c.window_reset_at <= now())
       AND (burst OR c.paced_until IS NULL OR c.paced_until <= now())
    RETURNING c.name INTO cred;
    IF cred IS NULL THEN
      -- A credential whose monthly cap is used up (by settled reads, not reservations of
      -- batches in flight) is capped until next month, as X blocks it, and credential_stats says so.
      UPDATE tweetkeeper.credentials x
         SET status = 'capped', status_until = tweetkeeper.next_month_utc(),
             status_reason = format('monthly cap reached: %s of %s billed reads used', x.month_used,
                                    x.monthly_cap)
       WHERE x.provider = claim_batch.provider AND x.status = 'active'
         AND x.month_start = date_trunc('month', now(), 'UTC')
         AND x.month_used - (SELECT coalesce(sum(b.billable), 0) FROM tweetkeeper.batches b
                              WHERE b.credential = x.name AND b.outcome IS NULL) >= x.monthly_cap;
      -- Due tweets, no quota: say until when and why, so the worker can sleep that long. A
      -- reason starting with "paced:" means the first credential free again waits only for
      -- its even pace: normal work, not a shortage.
      SELECT min(v.until) AS until,
             CASE WHEN (array_agg(v.paced ORDER BY v.until))[1] THEN 'paced: ' ELSE '' END
               || string_agg(v.why, ', ' ORDER BY v.name) AS why
        INTO w
        FROM tweetkeeper.credentials x
        CROSS JOIN LATERAL (
          SELECT cardinality(ids) - cardinality(array_positions(read_today, x.name)) AS need,
                 x.status = 'active' AND x.monthly_cap IS NOT NULL
                   AND x.month_start = date_trunc('month', now(), 'UTC') AS capped_month) n
        CROSS JOIN LATERAL (
          SELECT x.name,
                 CASE WHEN x.status <> 'active' THEN x.status_until
                      WHEN n.capped_month AND x.month_used + n.need > x.monthly_cap
                        THEN tweetkeeper.next_month_utc()
                      WHEN x.remaining <= 0 AND x.window_reset_at > now() THEN x.window_reset_at
                      ELSE greatest(x.paced_until, now()) END AS until,
                 x.status = 'active' AND NOT (n.capped_month AND x.month_used + n.need > x.monthly_cap)
                   AND NOT (x.remaining <= 0 AND x.window_reset_at > now()) AS paced,
                 format('%s %s%s', x.name, x.status,
                        CASE WHEN x.status <> 'active' THEN ': ' || coalesce(x.status_reason, '')
                             WHEN n.capped_month AND x.month_used + n.need > x.monthly_cap
                               THEN format(' (monthly cap: %s of %s billed reads left, the batch needs %s)',
                                           x.monthly_cap - x.month_used, x.monthly_cap, n.need)
                             WHEN x.remaining <= 0 AND x.window_reset_at > now() THEN ' (window used up)'
                             ELSE format(' (one request every %s)', x.window_length / x.requests_per_window)
                        END) AS why) v
       WHERE x.provider = claim_batch.provider
         AND (claim_batch.credentials IS NULL OR x.name = ANY (claim_batch.credentials));
      RETURN QUERY SELECT NULL::bigint, NULL::bigint[], NULL::text,
        greatest(coalesce(w.until, now() + interval '1 minute'), now()),
        coalesce(w.why, format('none of this worker''s credentials (%s) is registered for %s',
                               array_to_string(claim_batch.credentials, ', '), claim_batch.provider));
      RETURN;
    END IF;
  END IF;

  billable := cardinality(ids) - cardinality(array_positions(read_today, coalesce(cred, '')));
  lease := nextval('tweetkeeper.lease_id_seq');
  UPDATE tweetkeeper.tweets t SET due_at = now() + s.lease_ttl, lease_id = lease
   WHERE t.tweet_id = ANY (ids);
  INSERT INTO tweetkeeper.batches (lease_id, worker, tweet_ids, size, oldest_due_at, claimed_at,
                                   expires_at, credential, claimer_pid, claimer_started, billable,
                                   provider)
  VALUES (lease, worker, ids, cardinality(ids), oldest, now(), now() + s.lease_ttl, cred,
          pg_backend_pid(), tweetkeeper.backend_start(), billable, claim_batch.provider);
  RETURN QUERY SELECT lease, ids, cred, NULL::timestamptz, NULL::text;
END $$;

CREATE OR REPLACE FUNCTION maintenance() RETURNS interval LANGUAGE plpgsql AS $$
DECLARE
  s record := tweetkeeper.settings();  -- also loads the module, which defines the setting
  reclaim boolean := current_setting('tweetkeeper.reclaim_abandoned')::boolean;
  n_due integer;
  oldest timestamptz;
  next_due timestamptz;
  next_expiry timestamptz;
  next_watch_end timestamptz;
BEGIN
  -- The three statements below whose best plan depends on the table's size are EXECUTEd, so
  -- planned at every call, not cached (the min() lookups further down follow a partial index
  -- whatever the statistics):
  -- the background worker calls this all day in one session, from the first tick on an empty
  -- queue, and a plan made then (a sequential scan, right for an empty table) would be kept
  -- until the next ANALYZE, reading every tweet at every tick while an import fills the queue.
  -- Planning them costs well under a millisecond.
  --
  -- Batches whose claiming session is gone (the worker was killed or lost its connection) come
  -- back at once, at their place in the queue: due since the oldest of them was. A worker that
  -- reconnects and completes such a batch later stores nothing: its lease is off the tweets.
  IF reclaim THEN
    EXECUTE $q$
      WITH gone AS (
        UPDATE tweetkeeper.batches b SET outcome = 'abandoned', finished_at = now(), stored = 0
         WHERE b.outcome IS NULL AND b.claimer_pid IS NOT NULL
           AND NOT tweetkeeper.backend_alive(b.claimer_pid, b.claimer_started)
        RETURNING b.lease_id, b.tweet_ids, b.oldest_due_at
      )
      UPDATE tweetkeeper.tweets t SET due_at = g.oldest_due_at, lease_id = NULL
        FROM gone g
       WHERE t.tweet_id = ANY (g.tweet_ids) AND t.lease_id = g.lease_id$q$;
  END IF;
  -- Watches that ran out: back to the age schedule (those in flight when their batch completes).
  -- In order and at most 1,000 a call (the next tick comes at once while more have ended), along
  -- tweets_watch_end_idx.
  EXECUTE $q$
    SELECT tweetkeeper.stop_watching(ARRAY(
      SELECT t.tweet_id FROM tweetkeeper.tweets t
       WHERE t.watch_until IS NOT NULL AND t.watch_until <= now() AND t.lease_id IS NULL
       ORDER BY t.watch_until LIMIT 1000))$q$;
  -- Leases that ran out: their tweets are already due again (due_at was the expiry); record it.
  UPDATE tweetkeeper.batches SET outcome = 'expired', finished_at = now(), stored = 0
   WHERE outcome IS NULL AND expires_at < now();
  -- Old batch records go; the requests they answered stay counted in daily_usage.
  WITH gone AS (
    DELETE FROM tweetkeeper.batches WHERE finished_at < now() - s.batch_retention
    RETURNING finished_at, provider, credential, tweets_read, billed
  )
  INSERT INTO tweetkeeper.daily_usage AS u (day, provider, credential, requests, tweets_read, billed_reads)
  SELECT (g.finished_at AT TIME ZONE 'UTC')::date, coalesce(g.provider, 'x-v2'), coalesce(g.credential, ''),
         count(*), sum(g.tweets_read), sum(coalesce(g.billed, 0))
    FROM gone g WHERE g.tweets_read IS NOT NULL
   GROUP BY 1, 2, 3
  ON CONFLICT (day, provider, credential) DO UPDATE
     SET requests = u.requests + excluded.requests, tweets_read = u.tweets_read + excluded.tweets_read,
         billed_reads = u.billed_reads + excluded.billed_reads;

  -- The same test as claim_batch: a full batch, or a partial one past the buffer TTL. (X's tweets:
  -- posts of other networks wait for their own workers, which poll.)
  EXECUTE $q$
    SELECT count(*), min(d.due_at)
      FROM (SELECT t.due_at FROM tweetkeeper.tweets t WHERE t.due_at <= now() AND t.tweet_id > 0
             ORDER BY t.due_at LIMIT 100) AS d$q$ INTO n_due, oldest;
  IF n_due >= 100 OR (n_due > 0 AND oldest <= now() - s.buffer_ttl) THEN
    PERFORM pg_notify('tweetkeeper_due', n_due::text);
    RETURN interval '0';
  END IF;
  SELECT min(b.expires_at) INTO next_expiry FROM tweetkeeper.batches b WHERE b.outcome IS NULL;
  IF next_expiry IS NOT NULL AND reclaim THEN
    RETURN interval '0';
  END IF;
  IF n_due > 0 THEN
    next_due := oldest + s.buffer_ttl;
  ELSE
    SELECT min(t.due_at) INTO next_due FROM tweetkeeper.tweets t WHERE t.due_at > now() AND t.tweet_id > 0;
  END IF;
  SELECT min(t.watch_until) INTO next_watch_end FROM tweetkeeper.tweets t WHERE t.watch_until IS NOT NULL;
  RETURN least(next_due, next_expiry, next_watch_end) - now();
END $$;

-- Posts of other networks: what names each on its network, under the negative id that keys it in
-- tweets (see the key's comment in 20_queue_tables.sql). X's tweets have no row here: their id
-- says everything.
CREATE TABLE post_refs (
  tweet_id bigint NOT NULL,      -- tweetkeeper.post_id(identity, seed), negative
  network text NOT NULL,         -- bluesky, mastodon
  host text NOT NULL,            -- Mastodon: the server that holds the status; Bluesky: ''
  author text NOT NULL,          -- Bluesky: the DID, or the handle until it is resolved; Mastodon: the user
  post_key text NOT NULL,        -- Bluesky: the record key; Mastodon: the status id on host
  url text NOT NULL,             -- where a person sees it
  CONSTRAINT post_refs_pkey PRIMARY KEY (tweet_id),
  CONSTRAINT post_refs_id_negative CHECK (tweet_id < 0),
  CONSTRAINT post_refs_network_known CHECK (network IN ('bluesky', 'mastodon'))
);
SELECT pg_catalog.pg_extension_config_dump('post_refs', '');
COMMENT ON TABLE post_refs IS
  'Posts of Bluesky and Mastodon: the author, key and URL behind the negative tweet_id that keys '
  'them in tweets.';

-- What names a post on its network, whatever URL it came in: the DID (or handle) and record key
-- on Bluesky, the server and status id on Mastodon (ids are per server; the user is not needed).
CREATE FUNCTION post_identity(network text, host text, author text, post_key text) RETURNS text
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  RETURN CASE network WHEN 'bluesky' THEN 'bluesky ' || author || ' ' || post_key
                      WHEN 'mastodon' THEN 'mastodon ' || host || ' ' || post_key END;

-- The id of a post of another network: a 63-bit hash of its identity, negative. A different post
-- already holding that id (a collision: about one in 10^10 among a million posts) moves the later
-- one to the next seed; post_ref_id() probes the seeds in order.
CREATE FUNCTION post_id(identity text, seed integer) RETURNS bigint
  LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
  RETURN -1 - (hashtextextended(identity, seed) & 9223372036854775807);

-- The id of the post named by (network, host, author, post_key): the first seed whose id is free
-- or this post's; known: post_refs has it; tracked: tweets has it too (an operator may have
-- deleted the tweets row).
CREATE FUNCTION post_ref_id(network text, host text, author text, post_key text,
                            OUT tweet_id bigint, OUT known boolean, OUT tracked boolean)
  LANGUAGE plpgsql STABLE AS $$
DECLARE
  identity text := tweetkeeper.post_identity(network, host, author, post_key);
  other text;
BEGIN
  FOR seed IN 0..1000 LOOP
    tweet_id := tweetkeeper.post_id(identity, seed);
    SELECT tweetkeeper.post_identity(r.network, r.host, r.author, r.post_key) INTO other
      FROM tweetkeeper.post_refs r WHERE r.tweet_id = post_ref_id.tweet_id;
    known := FOUND;
    IF NOT FOUND OR other = identity THEN
      tracked := known AND EXISTS (SELECT 1 FROM tweetkeeper.tweets t WHERE t.tweet_id = post_ref_id.tweet_id);
      RETURN;
    END IF;
  END LOOP;
  RAISE EXCEPTION 'no free id for post %', identity USING ERRCODE = 'internal_error';
END $$;

-- Where the post's refreshes go: tweets.endpoint.
CREATE FUNCTION post_endpoint(network text, host text, author text) RETURNS text
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  RETURN CASE network WHEN 'bluesky' THEN CASE WHEN author LIKE 'did:%' THEN 'bluesky' ELSE 'bluesky-handle' END
                      WHEN 'mastodon' THEN 'mastodon:' || host END;

-- Starts tracking the post of a URL; see the COMMENT. The creation time: the caller's, else the
-- key's (X's and Mastodon's ids; Bluesky's record key, an estimate, no later than now), else
-- now (a post whose key tells nothing is treated as new until its first answer says its age).
CREATE FUNCTION schedule_post(url text, created_at timestamptz DEFAULT NULL)
  RETURNS boolean LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  p record;
  r record;
  c timestamptz;
BEGIN
  IF url IS NULL THEN
    RAISE EXCEPTION 'url must not be NULL' USING ERRCODE = 'null_value_not_allowed';
  END IF;
  p := tweetkeeper.parse_post_url(url);
  IF p.network = 'x' THEN
    RETURN tweetkeeper.schedule_tweet(p.post_key::bigint, created_at);
  END IF;
  IF created_at > now() + interval '1 minute' THEN
    RAISE EXCEPTION 'post % has created_at % in the future', url, created_at
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  c := coalesce(created_at, least(p.created_at, now()), now());
  LOOP
    r := tweetkeeper.post_ref_id(p.network, coalesce(p.host, ''), p.author, p.post_key);
    IF r.tracked THEN
      RETURN false;
    END IF;
    EXIT WHEN r.known;
    -- Another session may take the id first (the same post: then it is tracked; another one
    -- hashed alike: then the next seed is this post's): look again.
    INSERT INTO tweetkeeper.post_refs (tweet_id, network, host, author, post_key, url)
    VALUES (r.tweet_id, p.network, coalesce(p.host, ''), p.author, p.post_key,
            CASE p.network WHEN 'bluesky' THEN format('https://bsky.app/profile/%s/post/%s', p.author, p.post_key)
                           ELSE p.canonical END)
    ON CONFLICT ON CONSTRAINT post_refs_pkey DO NOTHING;
    EXIT WHEN FOUND;
  END LOOP;
  INSERT INTO tweetkeeper.tweets (tweet_id, created_at, due_at, delay, endpoint)
  VALUES (r.tweet_id, c, c + tweetkeeper.first_delay(), tweetkeeper.age_delay(c),
          tweetkeeper.post_endpoint(p.network, p.host, p.author))
  ON CONFLICT ON CONSTRAINT tweets_pkey DO NOTHING;
  RETURN FOUND;
END $$;
COMMENT ON FUNCTION schedule_post(text, timestamptz) IS
  'Starts tracking the post of a URL (see parse_post_url for the forms): an X post as '
  'schedule_tweet, a Bluesky or Mastodon post under a negative id (post_refs). Returns false, '
  'changing nothing, if the post is tracked already, whatever URL it came by.';

-- Many URLs in one statement, all or nothing; a repeated post (in any spelling) counts once.
-- Each pass reads the URLs again (parse_post_url is a few microseconds): nothing to keep between.
CREATE FUNCTION schedule_posts(urls text[]) RETURNS bigint
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  max_ids integer;
  bad record;
  msg text;
  added bigint := 0;
  u text;
BEGIN
  IF urls IS NULL THEN
    RAISE EXCEPTION 'urls must not be NULL' USING ERRCODE = 'null_value_not_allowed';
  END IF;
  PERFORM tweetkeeper.first_delay();  -- refuses an empty policy; loads the module's settings
  max_ids := current_setting('tweetkeeper.max_ids_per_call')::integer;
  IF cardinality(urls) > max_ids THEN
    RAISE EXCEPTION 'urls has % elements, more than tweetkeeper.max_ids_per_call (%)',
      cardinality(urls), max_ids
      USING ERRCODE = 'program_limit_exceeded', HINT = 'Split the array into several calls.';
  END IF;
  SELECT a.i INTO bad FROM unnest(urls) WITH ORDINALITY AS a(url, i) WHERE a.url IS NULL LIMIT 1;
  IF FOUND THEN
    RAISE EXCEPTION 'urls[%] is NULL', bad.i USING ERRCODE = 'null_value_not_allowed';
  END IF;
  -- Every URL read first: nothing is scheduled if any is bad. On a refusal, the first bad one is
  -- read again alone, to name its position.
  BEGIN
    PERFORM count(*) FROM unnest(urls) AS a(url), tweetkeeper.parse_post_url(a.url) AS p;
  EXCEPTION WHEN invalid_parameter_value THEN
    FOR bad IN SELECT a.url, a.i FROM unnest(urls) WITH ORDINALITY AS a(url, i) LOOP
      BEGIN
        PERFORM tweetkeeper.parse_post_url(bad.url);
      EXCEPTION WHEN invalid_parameter_value THEN
        GET STACKED DIAGNOSTICS msg = MESSAGE_TEXT;
        RAISE EXCEPTION 'urls[%]: %', bad.i, msg USING ERRCODE = 'invalid_parameter_value';
      END;
    END LOOP;
    RAISE;
  END;
  -- X: ids that schedule_tweets would refuse, named with their position; then the ids, each once.
  SELECT a.i, p.post_key, p.created_at INTO bad
    FROM unnest(urls) WITH ORDINALITY AS a(url, i), tweetkeeper.parse_post_url(a.url) AS p
   WHERE p.network = 'x' AND (p.created_at IS NULL OR p.created_at > now() + interval '1 minute')
   ORDER BY a.i LIMIT 1;
  IF FOUND THEN
    RAISE EXCEPTION 'urls[%]: tweet %', bad.i,
      CASE WHEN bad.created_at IS NULL
           THEN bad.post_key || ' predates Snowflake ids and encodes no creation time'
           ELSE format('%s has created_at %s in the future', bad.post_key, bad.created_at) END
      USING ERRCODE = 'invalid_parameter_value',
            HINT = 'Schedule it alone with its creation time: tweetkeeper.schedule_post(url, created_at).';
  END IF;
  added := tweetkeeper.schedule_tweets(ARRAY(
    SELECT DISTINCT p.post_key::bigint
      FROM unnest(urls) AS a(url), tweetkeeper.parse_post_url(a.url) AS p WHERE p.network = 'x'));
  -- Other networks: each post once (its first spelling), by schedule_post.
  FOR u IN SELECT (array_agg(a.url ORDER BY a.i))[1]
             FROM unnest(urls) WITH ORDINALITY AS a(url, i), tweetkeeper.parse_post_url(a.url) AS p
            WHERE p.network <> 'x'
            GROUP BY tweetkeeper.post_identity(p.network, coalesce(p.host, ''), p.author, p.post_key)
            ORDER BY min(a.i) LOOP
    IF tweetkeeper.schedule_post(u) THEN
      added := added + 1;
    END IF;
  END LOOP;
  RETURN added;
END $$;
COMMENT ON FUNCTION schedule_posts(text[]) IS
  'schedule_post for many URLs in one statement, all or nothing (at most '
  'tweetkeeper.max_ids_per_call); a post given twice, in any spelling, counts once. Returns how '
  'many were new. 22023 names the first bad URL and its position.';

-- Every tracked post of every network, as people name them.
CREATE VIEW posts AS
SELECT t.tweet_id AS post_id,
       coalesce(r.network, 'x') AS network,
       coalesce(r.url, 'https://x.com/i/web/status/' || t.tweet_id) AS url,
       r.author,
       t.state,
       t.created_at,
       t.like_count, t.retweet_count, t.reply_count, t.quote_count, t.bookmark_count,
       t.impression_count,
       t.update_count,
       t.updated_at,
       CASE WHEN t.lease_id IS NULL THEN t.due_at END AS due_at,
       t.lease_id IS NOT NULL AS in_flight,
       t.problem_type,
       t.problem_detail
  FROM tweets t LEFT JOIN post_refs r ON r.tweet_id = t.tweet_id AND t.tweet_id < 0;
COMMENT ON VIEW posts IS
  'Every tracked post of every network (x, bluesky, mastodon): its URL, state, latest counts '
  '(NULL: not reported by its network) and refresh times. due_at is NULL while a batch holds it.';

REVOKE ALL ON FUNCTION post_identity(text, text, text, text), post_id(text, integer),
  post_ref_id(text, text, text, text), post_endpoint(text, text, text),
  schedule_post(text, timestamptz), schedule_posts(text[]) FROM PUBLIC;
GRANT SELECT ON post_refs, posts TO tweetkeeper_reader;
GRANT EXECUTE ON FUNCTION schedule_post(text, timestamptz), schedule_posts(text[]) TO tweetkeeper_admin;
GRANT DELETE ON post_refs TO tweetkeeper_admin;
