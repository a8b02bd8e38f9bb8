-- API credentials: the functions that add, reset and update them from what the API said (the
-- tables: sql/schema/25_credentials.sql).

CREATE OR REPLACE FUNCTION add_credential(name text, requests_per_window integer,
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

CREATE OR REPLACE FUNCTION reset_credential(name text) RETURNS void LANGUAGE plpgsql AS $$
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

-- Applies what the API said about a credential's quota: the x-rate-limit-* headers, and what
-- kind of refusal, if any. {"limit":15,"remaining":3,"reset":1700000000}
CREATE OR REPLACE FUNCTION record_quota(credential text, rate jsonb, refusal text, detail text)
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
