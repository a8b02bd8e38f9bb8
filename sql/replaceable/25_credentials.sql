-- API credentials: the functions that add and reset them (the tables:
-- sql/schema/25_credentials.sql; what the API says of their quota: sql/replaceable/45_quota.sql).

CREATE OR REPLACE FUNCTION add_credential(name text, requests_per_window integer,
                               window_length interval DEFAULT interval '15 minutes',
                               monthly_cap bigint DEFAULT NULL, provider text DEFAULT 'x-v2',
                               price_per_read numeric DEFAULT 0.005)
  RETURNS void LANGUAGE sql SET search_path = pg_catalog, pg_temp AS $$
  INSERT INTO tweetkeeper.credentials (name, provider, requests_per_window, window_length,
                                       monthly_cap, remaining, price_per_read)
  VALUES (name, provider, requests_per_window, window_length, monthly_cap, requests_per_window,
          price_per_read)
$$;
COMMENT ON FUNCTION add_credential(text, integer, interval, bigint, text, numeric) IS
  'Registers a credential: its name (as in the workers'' credentials file), requests per window, '
  'window length, optional monthly cap (billed reads), provider (x-v2 or x-v1.1) and price per '
  'billed read (X pay-per-use: 0.005 USD; 0 for a flat-rate plan).';

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
