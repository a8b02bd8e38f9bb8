-- API credentials: the functions that add and reset them (the tables:
-- sql/schema/25_credentials.sql; what the API says of their quota: sql/replaceable/45_quota.sql).

CREATE OR REPLACE FUNCTION add_credential(name text, requests_per_window integer,
                               window_length interval DEFAULT interval '15 minutes',
                               monthly_cap bigint DEFAULT NULL, provider text DEFAULT 'x-v2',
                               price_per_read numeric DEFAULT 0.005)
  RETURNS void LANGUAGE sql SET search_path = pg_catalog, pg_temp AS $$
  -- (On a partition, its share of the window and the cap: node_share(), docs/partitions.md.)
  INSERT INTO tweetkeeper.credentials (name, provider, requests_per_window, window_length,
                                       monthly_cap, remaining, price_per_read)
  VALUES (name, provider, tweetkeeper_internal.node_share(requests_per_window), window_length,
          tweetkeeper_internal.node_share(monthly_cap), tweetkeeper_internal.node_share(requests_per_window),
          price_per_read)
$$;
COMMENT ON FUNCTION add_credential(text, integer, interval, bigint, text, numeric) IS
  'Registers a credential: its name (as in the workers'' credentials file), requests per window, '
  'window length, optional monthly cap (billed reads), provider (x-v2 or x-v1.1) and price per '
  'billed read (X pay-per-use: 0.005 USD; 0 for a flat-rate plan). On a partition, the node keeps its '
  'share of the window and the cap (its slots'' 64ths), so that the nodes together never exceed them.';

CREATE OR REPLACE FUNCTION reset_credential(name text) RETURNS void LANGUAGE plpgsql
  SET search_path = pg_catalog, pg_temp AS $$
BEGIN
  UPDATE tweetkeeper.credentials c
     SET status = 'active', status_reason = NULL, status_until = NULL
   WHERE c.name = reset_credential.name;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'no credential named %', coalesce(name, 'NULL')
      USING ERRCODE = 'undefined_object';
  END IF;
END $$;
COMMENT ON FUNCTION reset_credential(text) IS
  'An operator''s word: a capped or rejected credential may be used again.';

-- The start of next month, UTC (monthly caps reset then), whatever the session's time zone: in
-- timestamptz arithmetic '+ 1 month' would follow the session's zone and its DST changes.
CREATE OR REPLACE FUNCTION next_month_utc() RETURNS timestamptz LANGUAGE sql STABLE
  RETURN (date_trunc('month', now() AT TIME ZONE 'UTC') + interval '1 month') AT TIME ZONE 'UTC';

-- X's billing rule, the one every read of X's posts follows (a refresh: store_observations(); a
-- follower's timeline read: record_follow_read(); a claim's reservation: lock_due_tweets(),
-- choose_credential(), quota_wait()): X bills a post once per UTC day and credential. A post's
-- row says which credentials read it on which UTC day (billed_on, billed_by; '' stands for a
-- token of no registered credential). (SQL expressions: inlined where they are used; their bodies
-- are bound when they are created, so they need no search_path.)
-- The credentials that read the post on `today`.
CREATE OR REPLACE FUNCTION tweetkeeper_internal.reads_today(billed_on date, billed_by text[], today date) RETURNS text[]
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  RETURN CASE WHEN billed_on = today THEN billed_by END;
-- Whether a read with `credential` on `today` is billed.
CREATE OR REPLACE FUNCTION tweetkeeper_internal.bills(billed_on date, billed_by text[], credential text, today date) RETURNS boolean
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  RETURN billed_on IS DISTINCT FROM today OR NOT coalesce(credential, '') = ANY (billed_by);
-- billed_by once `credential` read the post on `today`.
CREATE OR REPLACE FUNCTION tweetkeeper_internal.billed_by_after(billed_on date, billed_by text[], credential text, today date)
  RETURNS text[] LANGUAGE sql IMMUTABLE PARALLEL SAFE
  RETURN CASE WHEN billed_on IS DISTINCT FROM today THEN ARRAY[coalesce(credential, '')]
              WHEN coalesce(credential, '') = ANY (billed_by) THEN billed_by
              ELSE billed_by || coalesce(credential, '') END;
-- Of n_posts posts (read_today: per read of them this UTC day, the credential that read it), how
-- many a read with `credential` bills.
CREATE OR REPLACE FUNCTION tweetkeeper_internal.billable_reads(n_posts integer, read_today text[], credential text) RETURNS integer
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  RETURN n_posts - cardinality(array_positions(read_today, coalesce(credential, '')));

-- The one write of daily_usage: requests answered, posts read and billed reads added to their UTC
-- day, provider and credential; usage holds [day, provider, credential, requests, tweets_read,
-- billed_reads] rows (maintenance() for the batches it purges, record_follow_read() for a
-- follower's read).
CREATE OR REPLACE FUNCTION tweetkeeper_internal.count_usage(usage jsonb) RETURNS void
  LANGUAGE sql SET search_path = pg_catalog, pg_temp AS $$
  INSERT INTO tweetkeeper.daily_usage AS u (day, provider, credential, requests, tweets_read, billed_reads)
  SELECT (p->>0)::date, p->>1, p->>2, (p->>3)::bigint, (p->>4)::bigint, (p->>5)::bigint
    FROM jsonb_array_elements(usage) p
  ON CONFLICT ON CONSTRAINT daily_usage_pkey DO UPDATE
     SET requests = u.requests + excluded.requests, tweets_read = u.tweets_read + excluded.tweets_read,
         billed_reads = u.billed_reads + excluded.billed_reads $$;
