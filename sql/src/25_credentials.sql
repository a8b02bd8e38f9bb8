-- API credentials and their quota: the registered credentials (their tokens stay with the
-- workers, never in here), what each was asked and billed per UTC day, and the functions that
-- add, reset and update them from what the API said.

CREATE TYPE credential_status AS ENUM (
  'active',     -- has quota
  'waiting',    -- window exhausted (429): waits until status_until, the API's reset
  'capped',     -- monthly cap reached (429 usage-capped): until next month or reset_credential()
  'rejected'    -- 401/403: the API refused the token; until reset_credential()
);

CREATE TABLE credentials (
  name text NOT NULL,
  provider text NOT NULL DEFAULT 'x-v2',
  requests_per_window integer NOT NULL,
  window_length interval NOT NULL DEFAULT interval '15 minutes',
  monthly_cap bigint,            -- billed reads per calendar month (UTC); NULL: no cap
  remaining integer NOT NULL,    -- requests left in the current window
  window_reset_at timestamptz,   -- end of the current window; NULL until first used
  month_start timestamptz NOT NULL DEFAULT date_trunc('month', now(), 'UTC'),
  month_used bigint NOT NULL DEFAULT 0,  -- billed reads this month (see daily_usage)
  status credential_status NOT NULL DEFAULT 'active',
  status_reason text,
  status_until timestamptz,
  requests bigint NOT NULL DEFAULT 0,
  last_used_at timestamptz,
  price_per_read numeric NOT NULL DEFAULT 0.005,  -- what one billed read costs (X: $0.005)
  paced_until timestamptz,       -- even spending: the next request no earlier than this
  window_started_at timestamptz, -- our first request of the current window
  CONSTRAINT credentials_pkey PRIMARY KEY (name),
  CONSTRAINT credentials_name_valid CHECK (name ~ '^[A-Za-z0-9_.-]{1,64}$'),
  CONSTRAINT credentials_provider_known CHECK (provider IN ('x-v2', 'x-v1.1')),
  CONSTRAINT credentials_requests_positive CHECK (requests_per_window > 0),
  CONSTRAINT credentials_window_positive CHECK (window_length > interval '0'),
  CONSTRAINT credentials_cap_positive CHECK (monthly_cap IS NULL OR monthly_cap > 0),
  CONSTRAINT credentials_price_not_negative CHECK (price_per_read >= 0)
);
SELECT pg_catalog.pg_extension_config_dump('credentials', '');
COMMENT ON TABLE credentials IS
  'API credentials by name (the tokens stay in the workers'' --credentials file) and their live '
  'quota. When a provider has credentials here, every claim for it takes one request of quota.';

-- What the API was asked and what it billed, per UTC day, provider and credential ('' when the
-- workers use a single token without a registered credential), for batches purged after
-- tweetkeeper.batch_retention: maintenance() adds each batch here as it deletes it, so a batch is
-- counted either here or in batches, never both (usage_stats adds the two). One row per day each.
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

CREATE FUNCTION reset_credential(name text) RETURNS void LANGUAGE plpgsql AS $$
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
CREATE FUNCTION next_month_utc() RETURNS timestamptz LANGUAGE sql STABLE
  RETURN (date_trunc('month', now() AT TIME ZONE 'UTC') + interval '1 month') AT TIME ZONE 'UTC';

-- Applies what the API said about a credential's quota: the x-rate-limit-* headers, and what
-- kind of refusal, if any. {"limit":15,"remaining":3,"reset":1700000000}
CREATE FUNCTION record_quota(credential text, rate jsonb, refusal text, detail text)
  RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  api_remaining integer := (rate ->> 'remaining')::integer;
  api_limit integer := (rate ->> 'limit')::integer;
  api_reset timestamptz := to_timestamp((rate ->> 'reset')::double precision);
BEGIN
  IF credential IS NULL THEN
    RETURN;
  END IF;
  -- The API's word wins where it is stricter than ours: a smaller remaining, a later reset.
  -- A larger remaining does not: other requests of this window may still be in flight, not
  -- yet counted by the API (taking it made one 429 per window in tests/integration/quota.sh).
  -- An answer from a window older than ours says nothing about ours.
  -- A limit smaller than the registered one is the API's to set: kept, so that the pace (one
  -- request every window_length / requests_per_window, counted from remaining) follows it. With
  -- the registered one, the requests the API counts as used would look like thousands and hold
  -- the credential back until the window's end (found by tests/integration/prometheus.sh).
  UPDATE tweetkeeper.credentials c
     SET requests_per_window = CASE WHEN api_limit > 0 AND api_limit < c.requests_per_window
                                    THEN api_limit ELSE c.requests_per_window END,
         remaining = CASE WHEN api_remaining IS NULL THEN c.remaining
                          WHEN api_reset IS NOT NULL AND c.window_reset_at IS NOT NULL
                               AND api_reset <= c.window_reset_at - c.window_length THEN c.remaining
                          ELSE least(c.remaining, api_remaining) END,
         window_reset_at = greatest(c.window_reset_at, api_reset)
   WHERE c.name = credential;
  IF refusal = 'rate-limited' THEN
    UPDATE tweetkeeper.credentials c
       SET status = 'waiting', remaining = 0,
           status_until = coalesce(api_reset, c.window_reset_at, now() + c.window_length),
           window_reset_at = coalesce(api_reset, c.window_reset_at, now() + c.window_length),
           status_reason = coalesce(detail, 'Too Many Requests')
     WHERE c.name = credential;
  ELSIF refusal = 'usage-capped' THEN
    UPDATE tweetkeeper.credentials c
       SET status = 'capped', status_until = tweetkeeper.next_month_utc(),
           status_reason = coalesce(detail, 'Usage cap exceeded')
     WHERE c.name = credential;
  ELSIF refusal = 'rejected' THEN
    UPDATE tweetkeeper.credentials c
       SET status = 'rejected', status_until = NULL, status_reason = coalesce(detail, 'rejected')
     WHERE c.name = credential;
  END IF;
END $$;
