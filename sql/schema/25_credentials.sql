-- API credentials and their quota: the registered credentials (their tokens stay with the
-- workers, never in here), what each was asked and billed per UTC day (the functions that add,
-- reset and update them: sql/replaceable/25_credentials.sql).

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
