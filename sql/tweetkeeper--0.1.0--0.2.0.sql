\echo Use "ALTER EXTENSION tweetkeeper UPDATE TO '0.2.0'" to load this file. \quit

-- tweetkeeper 0.1.0 -> 0.2.0. Once 0.2.0 is released this file is never edited again; until
-- then, every change to sql/tweetkeeper.sql is also made here, and tests/upgrade/upgrade.sh checks
-- that an updated 0.1.0 database has exactly the schema of a fresh 0.2.0 install.
--  * Backups that restore: every table and sequence of users' data is dumped by pg_dump; the
--    age policy only where the user edited it (age_policy.source).
--  * Abandoned batches come back at once: batches record the session that claimed them, and
--    maintenance() hands back those whose session is gone (outcome 'abandoned').
--  * A quiet idle: scheduling wakes the background worker, which otherwise sleeps until the
--    next tweet is due.
--  * Billing-true accounting: X bills a post once per UTC day, so caps and stats count billed
--    reads (tweets.billed_on/billed_by, batches.billable/billed, daily_usage, usage_stats), and
--    credentials have a price per read.
--  * Paced spending: claims spread each credential's requests evenly over its window
--    (credentials.paced_until; the setting tweetkeeper.spending chooses even or burst).
--  * settings() is the new name of lease_settings(), which returns more than lease settings; the
--    old name stays, deprecated, for queries written for 0.1.0.

--------------------------------------------------------------------------------------------------
-- C functions
--------------------------------------------------------------------------------------------------
CREATE FUNCTION backend_start() RETURNS timestamptz
  AS 'MODULE_PATHNAME', 'tk_backend_start' LANGUAGE C STABLE STRICT;
COMMENT ON FUNCTION backend_start() IS
  'When this database session started (pg_stat_activity.backend_start); with its pid, it names '
  'the session that claimed a batch.';

CREATE FUNCTION backend_alive(pid integer, started timestamptz) RETURNS boolean
  AS 'MODULE_PATHNAME', 'tk_backend_alive' LANGUAGE C VOLATILE STRICT;
COMMENT ON FUNCTION backend_alive(integer, timestamptz) IS
  'Whether the database session with this pid and start time still exists (a reused pid with '
  'another start time is another session).';

CREATE FUNCTION wake_maintenance() RETURNS void
  AS 'MODULE_PATHNAME', 'tk_wake_maintenance' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION wake_maintenance() IS
  'When the current transaction commits, the background worker looks at the queue again at once '
  '(it otherwise sleeps until the next tweet is due).';

CREATE FUNCTION settings(OUT buffer_ttl interval, OUT lease_ttl interval,
                         OUT batch_retention interval, OUT unavailable_recheck interval)
  AS 'MODULE_PATHNAME', 'tk_settings' LANGUAGE C STABLE STRICT;
COMMENT ON FUNCTION settings() IS
  'The settings tweetkeeper.buffer_ttl, lease_ttl, batch_retention and unavailable_recheck as '
  'intervals.';
COMMENT ON FUNCTION lease_settings() IS
  'Deprecated since 0.2.0: the old name of settings(), kept for queries written for 0.1.0.';

--------------------------------------------------------------------------------------------------
-- The age policy: dumped where it is the user's
--------------------------------------------------------------------------------------------------

-- Untouched, the policy is exactly the rows 0.1.0 inserted (intervals compare by length, so
-- '60 minutes' is '1 hour'); otherwise all of it is the user's.
ALTER TABLE age_policy ADD COLUMN source text;
UPDATE age_policy SET source = CASE WHEN NOT EXISTS (
    (SELECT max_age, delay FROM age_policy
     EXCEPT
     SELECT * FROM (VALUES (interval '18 minutes', interval '2 minutes'),
                           (interval '60 minutes', interval '5 minutes'),
                           (interval '1 day', interval '30 minutes'),
                           (interval '7 days', interval '6 hours'),
                           (interval '30 days', interval '1 day')) AS d)
    UNION ALL
    (SELECT * FROM (VALUES (interval '18 minutes', interval '2 minutes'),
                           (interval '60 minutes', interval '5 minutes'),
                           (interval '1 day', interval '30 minutes'),
                           (interval '7 days', interval '6 hours'),
                           (interval '30 days', interval '1 day')) AS d
     EXCEPT
     SELECT max_age, delay FROM age_policy))
  THEN 'extension' ELSE 'user' END;
ALTER TABLE age_policy ALTER COLUMN source SET NOT NULL;
ALTER TABLE age_policy ADD CONSTRAINT age_policy_source_known
  CHECK (source IN ('extension', 'user'));

CREATE FUNCTION age_policy_before_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.source IS NULL THEN
    NEW.source := 'user';
  ELSIF NEW.source = 'user' THEN
    DELETE FROM tweetkeeper.age_policy p WHERE p.source = 'extension';
  END IF;
  RETURN NEW;
END $$;
COMMENT ON FUNCTION age_policy_before_insert() IS
  'Trigger: a new row is the user''s; a row that arrives marked as the user''s (from a pg_dump '
  'restore) replaces the rows CREATE EXTENSION inserted.';

CREATE FUNCTION age_policy_adopt() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF EXISTS (SELECT 1 FROM tweetkeeper.age_policy p WHERE p.source = 'extension') THEN
    UPDATE tweetkeeper.age_policy p SET source = 'user' WHERE p.source = 'extension';
  END IF;
  RETURN NULL;
END $$;
COMMENT ON FUNCTION age_policy_adopt() IS
  'Trigger: once the policy is edited, all of it is the user''s, and pg_dump keeps all of it.';

CREATE TRIGGER age_policy_before_insert
  BEFORE INSERT ON age_policy FOR EACH ROW EXECUTE FUNCTION age_policy_before_insert();
CREATE TRIGGER age_policy_adopt
  AFTER INSERT OR UPDATE OR DELETE ON age_policy
  FOR EACH STATEMENT EXECUTE FUNCTION age_policy_adopt();

SELECT pg_catalog.pg_extension_config_dump('age_policy', 'WHERE source = ''user''');

--------------------------------------------------------------------------------------------------
-- Users' data: dumped by pg_dump
--------------------------------------------------------------------------------------------------

SELECT pg_catalog.pg_extension_config_dump('tweets', '');
SELECT pg_catalog.pg_extension_config_dump('metric_history', '');
SELECT pg_catalog.pg_extension_config_dump('lease_id_seq', '');
SELECT pg_catalog.pg_extension_config_dump('batches', '');
SELECT pg_catalog.pg_extension_config_dump('credentials', '');

--------------------------------------------------------------------------------------------------
-- Batches: who claimed them; abandoned ones
--------------------------------------------------------------------------------------------------

ALTER TABLE batches ADD COLUMN claimer_pid integer;
ALTER TABLE batches ADD COLUMN claimer_started timestamptz;
ALTER TABLE batches DROP CONSTRAINT batches_outcome_known;
ALTER TABLE batches ADD CONSTRAINT batches_outcome_known
  CHECK (outcome IN ('completed', 'released', 'expired', 'abandoned'));

--------------------------------------------------------------------------------------------------
-- Billing-true accounting
--------------------------------------------------------------------------------------------------

ALTER TABLE tweets ADD COLUMN billed_on date;
ALTER TABLE tweets ADD COLUMN billed_by text;
ALTER TABLE batches ADD COLUMN billable integer;
ALTER TABLE batches ADD COLUMN billed integer;
ALTER TABLE batches ADD COLUMN provider text;
ALTER TABLE credentials ADD COLUMN price_per_read numeric NOT NULL DEFAULT 0.005;
ALTER TABLE credentials ADD CONSTRAINT credentials_price_not_negative CHECK (price_per_read >= 0);

--------------------------------------------------------------------------------------------------
-- Paced spending (tweetkeeper.spending): the next request of a credential no earlier than this
--------------------------------------------------------------------------------------------------

ALTER TABLE credentials ADD COLUMN paced_until timestamptz;
ALTER TABLE credentials ADD COLUMN window_started_at timestamptz;

DROP FUNCTION add_credential(text, integer, interval, bigint, text);
-- What the API was asked and what it billed, per UTC day, provider and credential ('' when the
-- workers use a single token without a registered credential). Kept: one row per day each.
CREATE TABLE daily_usage (
  day date NOT NULL,
  provider text NOT NULL,
  credential text NOT NULL,
  requests bigint NOT NULL DEFAULT 0,      -- answered requests (completed batches)
  tweets_read bigint NOT NULL DEFAULT 0,   -- tweets found in the answers
  billed_reads bigint NOT NULL DEFAULT 0,  -- of those, the first read of the tweet that UTC day
  CONSTRAINT daily_usage_pkey PRIMARY KEY (day, provider, credential)
);
SELECT pg_catalog.pg_extension_config_dump('daily_usage', '');
COMMENT ON TABLE daily_usage IS
  'Answered requests, tweets read and billed reads per UTC day, provider and credential. X bills '
  'a post once per UTC day however often it is read, so billed_reads is what the bill counts.';

CREATE FUNCTION add_credential(name text, requests_per_window integer,
                               window_length interval DEFAULT interval '15 minutes',
                               monthly_cap bigint DEFAULT NULL, provider text DEFAULT 'x-v2',
                               price_per_read numeric DEFAULT 0.005)
  RETURNS void LANGUAGE sql AS $$
  INSERT INTO tweetkeeper.credentials (name, provider, requests_per_window, window_length,
                                       monthly_cap, remaining, price_per_read)
  VALUES (name, provider, requests_per_window, window_length, monthly_cap, requests_per_window,
          price_per_read)
$$;
COMMENT ON FUNCTION add_credential(text, integer, interval, bigint, text, numeric) IS
  'Registers a credential: its name (as in the workers'' credentials file), requests per window, '
  'window length, optional monthly cap (billed reads), provider (x-v2 or x-v1.1) and price per '
  'billed read (X pay-per-use: 0.005 USD; 0 for a flat-rate plan).';

CREATE OR REPLACE FUNCTION schedule_tweet(tweet_id bigint, created_at timestamptz DEFAULT NULL)
  RETURNS boolean LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  c timestamptz := coalesce(created_at, tweetkeeper.derived_created_at(tweet_id));
BEGIN
  PERFORM tweetkeeper.check_tweet(tweet_id, c);
  INSERT INTO tweetkeeper.tweets AS t (tweet_id, created_at, due_at)
  VALUES (tweet_id, c, c + tweetkeeper.first_delay())
  ON CONFLICT ON CONSTRAINT tweets_pkey DO NOTHING;
  IF FOUND THEN
    PERFORM tweetkeeper.wake_maintenance();
  END IF;
  RETURN FOUND;
END $$;
COMMENT ON FUNCTION schedule_tweet(bigint, timestamptz) IS
  'Starts tracking a tweet: first refresh one first-bucket delay after created_at (derived from '
  'the Snowflake id when NULL). Returns false, changing nothing, if it is tracked already.';

CREATE OR REPLACE FUNCTION schedule_tweets(tweet_ids bigint[]) RETURNS bigint
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  first interval;
  max_ids integer;
  n_null bigint;
  n_distinct bigint;
  lo bigint;
  hi bigint;
  dup bigint;
  dup_count bigint;
  added bigint;
BEGIN
  IF tweet_ids IS NULL THEN
    RAISE EXCEPTION 'tweet_ids must not be NULL' USING ERRCODE = 'null_value_not_allowed';
  END IF;
  first := tweetkeeper.first_delay();  -- also loads the module, which defines the setting below
  max_ids := current_setting('tweetkeeper.max_ids_per_call')::integer;
  IF cardinality(tweet_ids) > max_ids THEN
    RAISE EXCEPTION 'tweet_ids has % elements, more than tweetkeeper.max_ids_per_call (%)',
      cardinality(tweet_ids), max_ids
      USING ERRCODE = 'program_limit_exceeded', HINT = 'Split the array into several calls.';
  END IF;
  -- Validate the whole array first, in one pass: nothing is scheduled if any id is bad. Derived
  -- times grow with the id, so checking the smallest and the largest id checks them all.
  SELECT count(*) FILTER (WHERE id IS NULL), count(DISTINCT id), min(id), max(id)
    INTO n_null, n_distinct, lo, hi
    FROM unnest(tweet_ids) AS id;
  IF n_null > 0 THEN
    RAISE EXCEPTION 'tweet_ids contains % NULL element(s)', n_null
      USING ERRCODE = 'null_value_not_allowed';
  END IF;
  IF lo IS NULL THEN
    RETURN 0;
  END IF;
  -- A repeated id in one call is most likely a mistake upstream (a join that fanned out): say so
  -- rather than guess.
  IF n_distinct < cardinality(tweet_ids) THEN
    SELECT id, count(*) INTO dup, dup_count FROM unnest(tweet_ids) AS id
     GROUP BY id HAVING count(*) > 1 ORDER BY id LIMIT 1;
    RAISE EXCEPTION 'tweet_ids contains % duplicate element(s), e.g. % appears % times',
      cardinality(tweet_ids) - n_distinct, dup, dup_count
      USING ERRCODE = 'invalid_parameter_value',
            HINT = 'Pass each id once, e.g. ARRAY(SELECT DISTINCT unnest(ids)).';
  END IF;
  PERFORM tweetkeeper.check_tweet(lo, tweetkeeper.derived_created_at(lo));
  PERFORM tweetkeeper.check_tweet(hi, tweetkeeper.derived_created_at(hi));
  INSERT INTO tweetkeeper.tweets (tweet_id, created_at, due_at)
  SELECT id, c, c + first
    FROM unnest(tweet_ids) AS id,
         LATERAL (SELECT tweetkeeper.snowflake_time(id) AS c) AS t
  ON CONFLICT ON CONSTRAINT tweets_pkey DO NOTHING;
  GET DIAGNOSTICS added = ROW_COUNT;
  IF added > 0 THEN
    PERFORM tweetkeeper.wake_maintenance();
  END IF;
  RETURN added;
END $$;
COMMENT ON FUNCTION schedule_tweets(bigint[]) IS
  'schedule_tweet for many Snowflake ids in one statement (each id once, at most '
  'tweetkeeper.max_ids_per_call); returns how many were new.';

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
  read_today text[];  -- per claimed tweet already read this UTC day: the credential that read it
  billable integer;
  burst boolean := current_setting('tweetkeeper.spending') = 'burst';
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
  -- Index scan on tweets_due_idx, stopping after max_size rows; rows another worker is claiming
  -- right now are skipped, not waited for.
  SELECT array_agg(c.tweet_id ORDER BY c.due_at), min(c.due_at) INTO ids, oldest
    FROM (SELECT t.tweet_id, t.due_at FROM tweetkeeper.tweets t
           WHERE t.due_at <= now()
           ORDER BY t.due_at
           LIMIT max_size
           FOR UPDATE SKIP LOCKED) AS c;
  IF ids IS NULL OR (cardinality(ids) < max_size AND oldest > now() - s.buffer_ttl) THEN
    RETURN;
  END IF;

  -- X bills a post once per UTC day: a tweet this credential already read today costs nothing.
  SELECT coalesce(array_agg(t.billed_by), '{}') INTO read_today
    FROM tweetkeeper.tweets t WHERE t.tweet_id = ANY (ids) AND t.billed_on = today;
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
         SET status = 'capped', status_until = date_trunc('month', now(), 'UTC') + interval '1 month',
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
                        THEN date_trunc('month', now(), 'UTC') + interval '1 month'
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
COMMENT ON FUNCTION claim_batch(text, integer, text, text[]) IS
  'Claims up to max_size (1-100) due tweets under a new lease (see tweetkeeper.lease_ttl) and, '
  'when credentials are registered, one request of a credential''s quota.';

CREATE OR REPLACE FUNCTION complete_batch(lease bigint, observations jsonb, problems jsonb DEFAULT '[]',
                               rate jsonb DEFAULT NULL)
  RETURNS integer LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  recheck interval;
  b record;
  n_observed integer;
  n_problems integer;
  n_billed integer;
  found_ids bigint[];
  today date := (now() AT TIME ZONE 'UTC')::date;
BEGIN
  IF lease IS NULL OR observations IS NULL OR problems IS NULL THEN
    RAISE EXCEPTION 'lease, observations and problems must not be NULL'
      USING ERRCODE = 'null_value_not_allowed';
  END IF;
  IF jsonb_typeof(observations) <> 'array' OR jsonb_typeof(problems) <> 'array' THEN
    RAISE EXCEPTION 'observations and problems must be JSON arrays'
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  -- A batch has at most 100 tweets; anything far larger is a bug, not an answer.
  IF jsonb_array_length(observations) + jsonb_array_length(problems) > 1000 THEN
    RAISE EXCEPTION 'observations and problems hold % entries; a batch has at most 100 tweets',
      jsonb_array_length(observations) + jsonb_array_length(problems)
      USING ERRCODE = 'program_limit_exceeded';
  END IF;
  SELECT * INTO b FROM tweetkeeper.batches WHERE batches.lease_id = lease FOR UPDATE;
  IF NOT FOUND THEN
    RETURN 0;  -- unknown, or so old that it was purged: nothing of it is ours any more
  END IF;

  -- Billed: found tweets this batch's credential had not read yet this UTC day.
  -- (Parsing every id first also refuses a malformed one, 22P02, whatever the plans below.)
  found_ids := ARRAY(SELECT o.id FROM jsonb_to_recordset(observations) AS o(id bigint));
  SELECT count(*) INTO n_billed
    FROM tweetkeeper.tweets t
   WHERE t.lease_id = lease AND t.tweet_id = ANY (found_ids)
     AND (t.billed_on IS DISTINCT FROM today OR t.billed_by IS DISTINCT FROM coalesce(b.credential, ''));

  WITH obs AS (
    SELECT DISTINCT ON (o.id) o.*
      FROM jsonb_to_recordset(observations) AS o(id bigint, retweet_count bigint,
             reply_count bigint, like_count bigint, quote_count bigint, bookmark_count bigint,
             impression_count bigint)
     WHERE o.id = ANY (b.tweet_ids)
  ), upd AS (
    UPDATE tweetkeeper.tweets t
       SET billed_on = today, billed_by = coalesce(b.credential, ''),
           retweet_count = o.retweet_count, reply_count = o.reply_count,
           like_count = o.like_count, quote_count = o.quote_count,
           bookmark_count = o.bookmark_count, impression_count = o.impression_count,
           updated_at = now(), update_count = t.update_count + 1, lease_id = NULL,
           due_at = now() + tweetkeeper.next_delay(t.created_at),
           state = CASE WHEN tweetkeeper.next_delay(t.created_at) IS NULL
                        THEN 'done'::tweetkeeper.tweet_state ELSE 'scheduled' END,
           problem_type = NULL, problem_detail = NULL, problem_at = NULL
      FROM obs o
     WHERE t.tweet_id = o.id AND t.lease_id = lease
    RETURNING t.*
  )
  INSERT INTO tweetkeeper.metric_history (tweet_id, lease_id, observed_at, retweet_count,
              reply_count, like_count, quote_count, bookmark_count, impression_count)
  SELECT u.tweet_id, lease, now(), u.retweet_count, u.reply_count, u.like_count, u.quote_count,
         u.bookmark_count, u.impression_count
    FROM upd u;
  GET DIAGNOSTICS n_observed = ROW_COUNT;

  IF jsonb_array_length(problems) > 0 THEN
    recheck := (tweetkeeper.settings()).unavailable_recheck;
  END IF;
  -- Per-id problems. Deleted: stop, keep the last metrics and when it vanished. Hidden
  -- (protected, suspended): keep the last metrics, look again after unavailable_recheck.
  -- Anything else is recorded and the tweet stays on its schedule.
  WITH p AS (
    SELECT DISTINCT ON (x.id) x.id, x.type, x.detail,
           CASE WHEN x.type = 'resource-not-found' THEN 'deleted'::tweetkeeper.tweet_state
                -- v1.1 answers null for deleted and hidden alike: keep asking, rarely.
                WHEN x.type IN ('not-authorized-for-resource', 'resource-unavailable',
                                'disallowed-resource', 'v1.1-missing') THEN 'unavailable'
           END AS terminal
      FROM jsonb_to_recordset(problems) AS x(id bigint, type text, detail text)
     WHERE x.id = ANY (b.tweet_ids)
  )
  UPDATE tweetkeeper.tweets t
     SET state = coalesce(p.terminal,
                          CASE WHEN tweetkeeper.next_delay(t.created_at) IS NULL
                               THEN 'done'::tweetkeeper.tweet_state ELSE 'scheduled' END),
         due_at = CASE WHEN p.terminal = 'unavailable' THEN now() + recheck
                       WHEN p.terminal IS NULL THEN now() + tweetkeeper.next_delay(t.created_at) END,
         lease_id = NULL,
         problem_type = coalesce(p.type, 'unknown'), problem_detail = p.detail, problem_at = now()
    FROM p
   WHERE t.tweet_id = p.id AND t.lease_id = lease;
  GET DIAGNOSTICS n_problems = ROW_COUNT;

  IF n_observed + n_problems < b.size THEN
    -- Ids the API said nothing about, or a lease taken over: hand back what is still ours.
    UPDATE tweetkeeper.tweets t SET due_at = now(), lease_id = NULL
     WHERE t.tweet_id = ANY (b.tweet_ids) AND t.lease_id = lease;
  END IF;
  -- An abandoned batch stays abandoned: its tweets were handed back, nothing was stored.
  UPDATE tweetkeeper.batches
     SET finished_at = now(), outcome = 'completed', stored = n_observed + n_problems,
         billed = n_billed
   WHERE batches.lease_id = lease AND batches.outcome IS DISTINCT FROM 'abandoned';
  IF b.outcome IS NOT NULL THEN
    -- A late answer (the batch expired or was abandoned meanwhile): the API read and billed the
    -- posts, but nothing was stored here. Count what the claim reserved.
    n_billed := coalesce(b.billable, 0);
  END IF;
  IF b.credential IS NOT NULL THEN
    -- The claim reserved b.billable reads of the monthly cap; settle to what was billed.
    UPDATE tweetkeeper.credentials c
       SET month_used = greatest(c.month_used + n_billed - coalesce(b.billable, 0), 0)
     WHERE c.name = b.credential AND c.month_start = date_trunc('month', b.claimed_at, 'UTC');
    PERFORM tweetkeeper.record_quota(b.credential, rate, NULL, NULL);
  END IF;
  INSERT INTO tweetkeeper.daily_usage AS u (day, provider, credential, requests, tweets_read, billed_reads)
  VALUES (today, coalesce(b.provider, 'x-v2'), coalesce(b.credential, ''), 1,
          CASE WHEN b.outcome IS NULL THEN n_observed ELSE coalesce(b.billable, 0) END, n_billed)
  ON CONFLICT (day, provider, credential) DO UPDATE
     SET requests = u.requests + 1, tweets_read = u.tweets_read + excluded.tweets_read,
         billed_reads = u.billed_reads + excluded.billed_reads;
  RETURN n_observed + n_problems;
END $$;
COMMENT ON FUNCTION complete_batch(bigint, jsonb, jsonb, jsonb) IS
  'Stores a claimed batch''s results (metrics, history, reschedule) atomically; returns how many '
  'tweets were stored (fewer than claimed if the lease expired and was taken over).';

CREATE OR REPLACE FUNCTION maintenance() RETURNS interval LANGUAGE plpgsql AS $$
DECLARE
  s record := tweetkeeper.settings();  -- also loads the module, which defines the setting
  reclaim boolean := current_setting('tweetkeeper.reclaim_abandoned')::boolean;
  n_due integer;
  oldest timestamptz;
  next_due timestamptz;
  next_expiry timestamptz;
BEGIN
  -- Batches whose claiming session is gone (the worker was killed or lost its connection) come
  -- back at once, at their place in the queue: due since the oldest of them was. A worker that
  -- reconnects and completes such a batch later stores nothing: its lease is off the tweets.
  IF reclaim THEN
    WITH gone AS (
      UPDATE tweetkeeper.batches b SET outcome = 'abandoned', finished_at = now(), stored = 0
       WHERE b.outcome IS NULL AND b.claimer_pid IS NOT NULL
         AND NOT tweetkeeper.backend_alive(b.claimer_pid, b.claimer_started)
      RETURNING b.lease_id, b.tweet_ids, b.oldest_due_at
    )
    UPDATE tweetkeeper.tweets t SET due_at = g.oldest_due_at, lease_id = NULL
      FROM gone g
     WHERE t.tweet_id = ANY (g.tweet_ids) AND t.lease_id = g.lease_id;
  END IF;
  -- Leases that ran out: their tweets are already due again (due_at was the expiry); record it.
  UPDATE tweetkeeper.batches SET outcome = 'expired', finished_at = now(), stored = 0
   WHERE outcome IS NULL AND expires_at < now();
  DELETE FROM tweetkeeper.batches WHERE finished_at < now() - s.batch_retention;

  -- The same test as claim_batch: a full batch, or a partial one past the buffer TTL.
  SELECT count(*), min(d.due_at) INTO n_due, oldest
    FROM (SELECT t.due_at FROM tweetkeeper.tweets t WHERE t.due_at <= now()
           ORDER BY t.due_at LIMIT 100) AS d;
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
    SELECT min(t.due_at) INTO next_due FROM tweetkeeper.tweets t WHERE t.due_at > now();
  END IF;
  RETURN least(next_due, next_expiry) - now();
END $$;
COMMENT ON FUNCTION maintenance() IS
  'Hands back batches whose worker is gone, marks expired leases, purges old batch records, '
  'notifies tweetkeeper_due when a batch is claimable; returns how long nothing can change. Run '
  'by the background worker.';

CREATE OR REPLACE VIEW batch_stats AS
SELECT w.window_name,
       count(b.lease_id) AS batches,
       coalesce(sum(b.stored), 0) AS tweets_stored,
       round(coalesce(sum(b.stored), 0) / extract(epoch FROM w.span), 1) AS tweets_per_second,
       round(avg(b.size), 1) AS avg_batch_size,
       count(b.lease_id) FILTER (WHERE b.size = 100) AS full_batches,
       count(b.lease_id) FILTER (WHERE b.outcome = 'released') AS released,
       count(b.lease_id) FILTER (WHERE b.outcome = 'expired') AS expired,
       count(b.lease_id) FILTER (WHERE b.outcome IS NULL) AS in_flight,
       count(b.lease_id) FILTER (WHERE b.outcome = 'abandoned') AS abandoned
  FROM (VALUES ('last minute', interval '1 minute'), ('last hour', interval '1 hour'))
         AS w(window_name, span)
  LEFT JOIN tweetkeeper.batches b ON b.claimed_at > now() - w.span
 GROUP BY w.window_name, w.span
 ORDER BY w.span;
COMMENT ON VIEW batch_stats IS
  'Throughput of the last minute and hour: batches, tweets stored per second, batch sizes, and '
  'batches released by workers, expired, or abandoned (their worker''s session ended).';

CREATE OR REPLACE FUNCTION release_batch(lease bigint, reason text DEFAULT NULL, refusal text DEFAULT NULL,
                              rate jsonb DEFAULT NULL) RETURNS integer
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  b record;
  n integer;
BEGIN
  IF lease IS NULL THEN
    RAISE EXCEPTION 'lease must not be NULL' USING ERRCODE = 'null_value_not_allowed';
  END IF;
  IF refusal IS NOT NULL AND refusal NOT IN ('rate-limited', 'usage-capped', 'rejected') THEN
    RAISE EXCEPTION 'refusal must be rate-limited, usage-capped, rejected or NULL, got %', refusal
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  SELECT * INTO b FROM tweetkeeper.batches WHERE batches.lease_id = lease FOR UPDATE;
  IF NOT FOUND THEN
    RETURN 0;
  END IF;
  UPDATE tweetkeeper.tweets t SET due_at = now(), lease_id = NULL
   WHERE t.tweet_id = ANY (b.tweet_ids) AND t.lease_id = lease;
  GET DIAGNOSTICS n = ROW_COUNT;
  UPDATE tweetkeeper.batches
     SET finished_at = now(), outcome = coalesce(outcome, 'released'), stored = 0,
         reason = release_batch.reason, billed = 0
   WHERE batches.lease_id = lease;
  -- A refused or failed request returned no posts, so it is billed nothing: give back the reads
  -- the claim reserved (once: a batch already finished has nothing reserved any more).
  IF b.outcome IS NULL THEN
    UPDATE tweetkeeper.credentials c SET month_used = greatest(c.month_used - coalesce(b.billable, 0), 0)
     WHERE c.name = b.credential AND c.month_start = date_trunc('month', b.claimed_at, 'UTC');
  END IF;
  PERFORM tweetkeeper.record_quota(b.credential, rate, refusal, reason);
  RETURN n;
END $$;
COMMENT ON FUNCTION release_batch(bigint, text, text, jsonb) IS
  'Hands a claimed batch back unharmed (its tweets are due again now); returns how many tweets '
  'were still held by the lease.';

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

CREATE VIEW usage_stats AS
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
  JOIN tweetkeeper.daily_usage u ON u.day >= date_trunc('month', d.today)::date
  LEFT JOIN tweetkeeper.credentials c ON c.name = u.credential
 GROUP BY u.provider, u.credential, c.price_per_read
 ORDER BY u.provider, u.credential;
COMMENT ON VIEW usage_stats IS
  'What tracking costs: answered requests, tweets read, billed reads (a post once per UTC day) '
  'and their price, today and this month (UTC), per provider and credential (empty for a single '
  'unregistered token, priced at X''s 0.005 USD).';

--------------------------------------------------------------------------------------------------
-- Privileges of the new functions (as the install script's REVOKE ALL ... FROM PUBLIC does)
--------------------------------------------------------------------------------------------------

REVOKE ALL ON FUNCTION backend_start(), backend_alive(integer, timestamptz), wake_maintenance(),
  settings(), age_policy_before_insert(), age_policy_adopt() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION backend_alive(integer, timestamptz), settings() TO tweetkeeper_reader;
REVOKE ALL ON FUNCTION add_credential(text, integer, interval, bigint, text, numeric) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION add_credential(text, integer, interval, bigint, text, numeric) TO tweetkeeper_admin;
GRANT SELECT ON daily_usage, usage_stats TO tweetkeeper_reader;
GRANT DELETE ON daily_usage TO tweetkeeper_admin;
