\echo Use "CREATE EXTENSION tweetkeeper" to load this file. \quit

-- tweetkeeper: a queue inside PostgreSQL that keeps tweets' engagement metrics fresh, each tweet
-- on a schedule set by its age. Workers (tweetkeeper-worker) claim due tweets in batches of up to
-- 100, make one API request per batch, and complete the batch in one transaction.
--
-- Lease design (a visibility timeout, not row locks held during the API call). claim_batch() pushes each claimed
-- tweet's due_at forward by tweetkeeper.lease_ttl and stamps it with a lease id, in a short
-- transaction; complete_batch() stores the results only for rows that still carry that lease id.
-- Why this one and not "hold the row locks during the API call":
--  * no connection and no open transaction is held during the HTTP request, so a worker can
--    keep many batches in flight on few connections and slow API calls do not hold back vacuum;
--  * expiry needs no code at all: an expired lease is simply a due tweet, claimable again;
--  * the lease id is a fencing token: a worker that was paused past its lease and completes
--    late changes nothing once another worker has claimed the tweet.
-- The price is two writes per tweet per refresh (claim, complete) instead of one; make bench
-- measures it.
-- A lease also records the database session that claimed it (pid and start time). A worker
-- keeps its connection while it lives, so when that session is gone the background worker
-- hands the batch back within a tick instead of after lease_ttl (tweetkeeper.reclaim_abandoned).

--------------------------------------------------------------------------------------------------
-- C functions
--------------------------------------------------------------------------------------------------

CREATE FUNCTION next_delay(created_at timestamptz) RETURNS interval
  AS 'MODULE_PATHNAME', 'tk_next_delay' LANGUAGE C STABLE STRICT;
COMMENT ON FUNCTION next_delay(timestamptz) IS
  'How long until a tweet created at created_at is refreshed again, by tweetkeeper.age_policy '
  'and its age now; NULL once it is older than the largest max_age (no more refreshes).';

CREATE FUNCTION age_policy_changed() RETURNS trigger
  AS 'MODULE_PATHNAME', 'tk_age_policy_changed' LANGUAGE C;
COMMENT ON FUNCTION age_policy_changed() IS
  'Trigger: drops the cached age policy in every session when tweetkeeper.age_policy changes.';

CREATE FUNCTION settings(OUT buffer_ttl interval, OUT lease_ttl interval,
                         OUT batch_retention interval, OUT unavailable_recheck interval,
                         OUT history_partition interval, OUT history_retention interval,
                         OUT history_rollup boolean, OUT history_keep_unchanged boolean,
                         OUT housekeeping_interval interval, OUT missing_after integer)
  AS 'MODULE_PATHNAME', 'tk_settings' LANGUAGE C STABLE STRICT;
COMMENT ON FUNCTION settings() IS
  'The settings tweetkeeper.buffer_ttl, lease_ttl, batch_retention, unavailable_recheck, '
  'history_partition, history_retention (0: keep everything), history_rollup, '
  'history_keep_unchanged, housekeeping_interval and missing_after, typed.';

CREATE FUNCTION lease_settings(OUT buffer_ttl interval, OUT lease_ttl interval,
                               OUT batch_retention interval, OUT unavailable_recheck interval)
  AS 'MODULE_PATHNAME', 'tk_lease_settings' LANGUAGE C STABLE STRICT;
COMMENT ON FUNCTION lease_settings() IS
  'Deprecated since 0.2.0: the old name of settings(), kept for queries written for 0.1.0.';

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

CREATE FUNCTION preloaded() RETURNS boolean
  AS 'MODULE_PATHNAME', 'tk_preloaded' LANGUAGE C STABLE STRICT;
COMMENT ON FUNCTION preloaded() IS
  'Whether tweetkeeper was loaded through shared_preload_libraries (its background worker runs).';

--------------------------------------------------------------------------------------------------
-- The age policy
--------------------------------------------------------------------------------------------------

CREATE TABLE age_policy (
  max_age interval NOT NULL,
  delay interval NOT NULL,
  source text NOT NULL,          -- 'extension': inserted by CREATE EXTENSION, never edited; 'user'
  CONSTRAINT age_policy_one_row_per_max_age PRIMARY KEY (max_age),
  CONSTRAINT age_policy_max_age_positive CHECK (max_age > interval '0'),
  CONSTRAINT age_policy_max_age_at_most_100_years CHECK (max_age <= interval '100 years'),
  CONSTRAINT age_policy_delay_positive CHECK (delay > interval '0'),
  CONSTRAINT age_policy_delay_at_most_1_year CHECK (delay <= interval '1 year'),
  CONSTRAINT age_policy_source_known CHECK (source IN ('extension', 'user'))
);
COMMENT ON TABLE age_policy IS
  'Tweets younger than max_age are refreshed every delay (the smallest max_age that is larger '
  'than the tweet''s age wins); tweets older than the largest max_age are no longer refreshed.';

-- The original specification's buckets. Young tweets change fast (a tweet's "prime" is about
-- 18 minutes, most retweets come in the first hour); after 30 days we stop.
INSERT INTO age_policy (max_age, delay, source) VALUES
  (interval '18 minutes', interval '2 minutes',  'extension'),
  (interval '60 minutes', interval '5 minutes',  'extension'),
  (interval '1 day',      interval '30 minutes', 'extension'),
  (interval '7 days',     interval '6 hours',    'extension'),
  (interval '30 days',    interval '1 day',      'extension');

CREATE TRIGGER age_policy_changed
  AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON age_policy
  FOR EACH STATEMENT EXECUTE FUNCTION age_policy_changed();

-- Backups. pg_dump keeps the policy only where it is the user's: the rows CREATE EXTENSION
-- inserts are not dumped while untouched, so a restore does not insert them twice. Once anything
-- in the policy changes, every row becomes the user's (age_policy_adopt), so a dump holds the
-- whole policy; on restore, its first row (the only kind of insert that arrives with source
-- 'user' already set) replaces the rows CREATE EXTENSION inserted (age_policy_before_insert).
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
-- Tracked tweets, their history, and the batches in flight
--------------------------------------------------------------------------------------------------

CREATE TYPE tweet_state AS ENUM (
  'scheduled',    -- refreshed on its schedule (due_at says when next)
  'done',         -- older than the largest max_age: no more refreshes
  'deleted',      -- the API says it does not exist (resource-not-found)
  'unavailable',  -- the API will not show it (protected or suspended author, ...): rechecked
                  -- every tweetkeeper.unavailable_recheck, since accounts come back
  'missing'       -- left out of tweetkeeper.missing_after answers in a row (neither found nor
                  -- an error): rechecked like an unavailable one
);

CREATE TABLE tweets (
  tweet_id bigint NOT NULL,
  created_at timestamptz NOT NULL,
  state tweet_state NOT NULL DEFAULT 'scheduled',
  due_at timestamptz,            -- next refresh (or lease expiry while claimed); NULL when not scheduled
  lease_id bigint,               -- the batch that holds the tweet, if any
  scheduled_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz,        -- last observation
  update_count integer NOT NULL DEFAULT 0,
  retweet_count bigint,
  reply_count bigint,
  like_count bigint,
  quote_count bigint,
  bookmark_count bigint,
  impression_count bigint,
  problem_type text,             -- the API's last per-id problem (after /2/problems/), if any
  problem_detail text,
  problem_at timestamptz,
  billed_on date,                -- the UTC day of its last billed read (X bills a post once per
  billed_by text[],              --   UTC day) and the credentials that read it then ('' for none)
  delay interval,                -- the delay it was scheduled with: lateness is relative to it
  watch_every interval,          -- watched (tweetkeeper.watch): refreshed this often ...
  watch_until timestamptz,       -- ... until then, whatever its age
  omissions integer NOT NULL DEFAULT 0,  -- answers in a row that left it out (0 once accounted for)
  CONSTRAINT tweets_pkey PRIMARY KEY (tweet_id),
  CONSTRAINT tweets_id_positive CHECK (tweet_id > 0),
  CONSTRAINT tweets_due_unless_finished CHECK ((state IN ('done', 'deleted')) = (due_at IS NULL)),
  CONSTRAINT tweets_delay_when_due CHECK (due_at IS NULL OR delay IS NOT NULL),
  CONSTRAINT tweets_watch_complete CHECK ((watch_every IS NULL) = (watch_until IS NULL))
) WITH (fillfactor = 70, vacuum_truncate = false);
SELECT pg_catalog.pg_extension_config_dump('tweets', '');
-- Every claim and every completion rewrites due_at, so no update is HOT; the spare room per page
-- (fillfactor) at least keeps the new row version on the same heap page. vacuum_truncate off:
-- the queue's tables fill again within seconds of a vacuum; giving their empty tail pages back
-- would take an ACCESS EXCLUSIVE lock (claims and completions wait) only to grow them again
-- (make soak measured batches swinging by 24% around its mean with it on).
COMMENT ON TABLE tweets IS 'Tracked tweets: latest metrics and the next refresh.';

-- The claim's indexes, partial, so finished tweets cost nothing here: oldest due first; the most
-- overdue per delay (claim_order lateness); watched tweets, which come first. And the watches'
-- ends, for maintenance(): without it, min(watch_until) reads the whole table whenever the
-- statistics do not yet say that almost no tweet is watched (a bulk import outruns autovacuum).
CREATE INDEX tweets_due_idx ON tweets (due_at) WHERE due_at IS NOT NULL;
CREATE INDEX tweets_lateness_idx ON tweets (delay, due_at) WHERE due_at IS NOT NULL;
CREATE INDEX tweets_watched_idx ON tweets (due_at) WHERE watch_until IS NOT NULL;
CREATE INDEX tweets_watch_end_idx ON tweets (watch_until) WHERE watch_until IS NOT NULL;

CREATE TABLE metric_history (
  tweet_id bigint NOT NULL,
  lease_id bigint NOT NULL,      -- the batch that observed it: at most one observation per lease
  observed_at timestamptz NOT NULL,
  retweet_count bigint,
  reply_count bigint,
  like_count bigint,
  quote_count bigint,
  bookmark_count bigint,
  impression_count bigint
) PARTITION BY RANGE (observed_at);
SELECT pg_catalog.pg_extension_config_dump('metric_history', '');
COMMENT ON TABLE metric_history IS
  'Observations of tweets'' metrics, one row per refresh that changed a count (all of them with '
  'tweetkeeper.history_keep_unchanged). Partitioned by observed_at (tweetkeeper.history_partition); '
  'each partition''s primary key (tweet_id, observed_at, lease_id) reads a tweet''s history in '
  'time order.';
-- The key is each partition's, not the parent's: a parent index would be made on a partition as
-- pg_restore attaches it, before the restore adds the partition's own (dumped) key, and the
-- restore would fail. (The parent is the extension's, its partitions are not.)
-- Partitions are created ahead by tweetkeeper.create_partitions() (housekeeping); a row that finds
-- none (housekeeping stopped for too long) lands here, is never lost, and is moved into its own
-- partition by the next create_partitions().
CREATE TABLE metric_history_default PARTITION OF metric_history (
  CONSTRAINT metric_history_default_pkey PRIMARY KEY (tweet_id, observed_at, lease_id)
) DEFAULT;
SELECT pg_catalog.pg_extension_config_dump('metric_history_default', '');
COMMENT ON TABLE metric_history_default IS
  'Observations no partition covered yet; tweetkeeper.create_partitions() moves them out.';

-- What retention keeps of the dropped partitions: one row per tweet per UTC day.
CREATE TABLE metric_daily (
  tweet_id bigint NOT NULL,
  day date NOT NULL,             -- UTC
  observations integer NOT NULL, -- rows of metric_history rolled up into this one
  last_observed_at timestamptz NOT NULL,
  retweet_count bigint,          -- the counts of the day's last observation
  reply_count bigint,
  like_count bigint,
  quote_count bigint,
  bookmark_count bigint,
  impression_count bigint,
  CONSTRAINT metric_daily_pkey PRIMARY KEY (tweet_id, day)
);
SELECT pg_catalog.pg_extension_config_dump('metric_daily', '');
COMMENT ON TABLE metric_daily IS
  'Daily rollup of metric_history partitions dropped by retention (tweetkeeper.history_rollup): '
  'the day''s last counts and how many observations it had.';

-- When each housekeeping task last ran, and what it did: the background worker skips a task
-- that ran more recently than tweetkeeper.housekeeping_interval (by pg_cron, say).
CREATE TABLE housekeeping_runs (
  task text NOT NULL,
  last_run timestamptz NOT NULL,
  result text NOT NULL,
  CONSTRAINT housekeeping_runs_pkey PRIMARY KEY (task)
);
SELECT pg_catalog.pg_extension_config_dump('housekeeping_runs', '');
COMMENT ON TABLE housekeeping_runs IS
  'The last run of each housekeeping task (partitions, retention) and what it did.';

CREATE SEQUENCE lease_id_seq;
SELECT pg_catalog.pg_extension_config_dump('lease_id_seq', '');

CREATE TABLE batches (
  lease_id bigint NOT NULL,
  worker text NOT NULL,
  tweet_ids bigint[] NOT NULL,
  size integer NOT NULL,
  oldest_due_at timestamptz NOT NULL,
  claimed_at timestamptz NOT NULL,
  expires_at timestamptz NOT NULL,
  finished_at timestamptz,
  outcome text,                  -- NULL while in flight; completed, released, expired or abandoned
  stored integer,                -- tweets whose result was stored
  reason text,                   -- why a batch was released
  credential text,               -- the credential whose quota the request spends
  claimer_pid integer,           -- the database session that claimed it (abandoned when it is gone)
  claimer_started timestamptz,
  billable integer,              -- reads the request may be billed for, counted at the claim
  billed integer,                -- reads it was billed for: found tweets not yet read that UTC day
  provider text,                 -- the API it was claimed for
  tweets_read integer,           -- tweets found in its answer; NULL: no answer (released, in flight)
  omitted integer,               -- ids its answer left out (neither found nor an error)
  CONSTRAINT batches_pkey PRIMARY KEY (lease_id),
  CONSTRAINT batches_outcome_known
    CHECK (outcome IN ('completed', 'released', 'expired', 'abandoned'))
) WITH (vacuum_truncate = false);  -- as tweets: filled and purged all the time
SELECT pg_catalog.pg_extension_config_dump('batches', '');
CREATE INDEX batches_in_flight_idx ON batches (expires_at) WHERE outcome IS NULL;
CREATE INDEX batches_finished_idx ON batches (finished_at);
COMMENT ON TABLE batches IS
  'One row per claimed batch: in flight, then how it ended. Kept for tweetkeeper.batch_retention.';

--------------------------------------------------------------------------------------------------
-- API credentials and their quota (the secrets stay with the workers, never in here)
--------------------------------------------------------------------------------------------------

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

--------------------------------------------------------------------------------------------------
-- Scheduling
--------------------------------------------------------------------------------------------------

CREATE FUNCTION snowflake_time(tweet_id bigint) RETURNS timestamptz
  LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
  RETURN to_timestamp(((tweet_id >> 22) + 1288834974657) / 1000.0);
COMMENT ON FUNCTION snowflake_time(bigint) IS
  'The creation time encoded in a Snowflake tweet id: (id >> 22) + 1288834974657 ms.';

-- Checks one tweet's input; raises the error a caller should see. Shared by every way in.
CREATE FUNCTION check_tweet(tweet_id bigint, created_at timestamptz) RETURNS void
  LANGUAGE plpgsql STABLE AS $$
BEGIN
  IF tweet_id IS NULL THEN
    RAISE EXCEPTION 'tweet_id must not be NULL' USING ERRCODE = 'null_value_not_allowed';
  END IF;
  IF tweet_id <= 0 THEN
    RAISE EXCEPTION 'tweet_id must be positive, got %', tweet_id
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF created_at IS NULL THEN
    RAISE EXCEPTION 'created_at must not be NULL' USING ERRCODE = 'null_value_not_allowed';
  END IF;
  -- One minute of grace for clocks that disagree with Twitter's.
  IF created_at > now() + interval '1 minute' THEN
    RAISE EXCEPTION 'tweet % has created_at % in the future', tweet_id, created_at
      USING ERRCODE = 'invalid_parameter_value',
            HINT = 'Check the id (a Snowflake id encodes its creation time) or the created_at.';
  END IF;
  IF created_at < timestamptz '2006-03-21 20:50:14+00' THEN
    RAISE EXCEPTION 'tweet % has created_at % before the first tweet (2006-03-21)',
      tweet_id, created_at USING ERRCODE = 'invalid_parameter_value';
  END IF;
END $$;

-- The delay before a new tweet's first refresh: the youngest bucket's (spec: delay I1).
CREATE FUNCTION first_delay() RETURNS interval LANGUAGE plpgsql STABLE AS $$
DECLARE
  d interval := tweetkeeper.next_delay(now());
BEGIN
  IF d IS NULL THEN
    RAISE EXCEPTION 'tweetkeeper.age_policy is empty: no tweet would ever be refreshed'
      USING ERRCODE = 'object_not_in_prerequisite_state',
            HINT = 'INSERT INTO tweetkeeper.age_policy (max_age, delay) VALUES (...).';
  END IF;
  RETURN d;
END $$;

-- The delay a tweet created then has now: its age bucket's, or for a tweet past the last bucket
-- (fetched once more, then done) the longest delay of the policy. What lateness is measured by.
CREATE FUNCTION age_delay(created_at timestamptz) RETURNS interval
  LANGUAGE sql STABLE
  RETURN coalesce(tweetkeeper.next_delay(created_at),
                  (SELECT max(p.delay) FROM tweetkeeper.age_policy p));

-- How long until a tweet's next refresh after this one: its watch's interval while the watch
-- lasts, else its age bucket's delay; NULL when it is past the last bucket (done).
CREATE FUNCTION refresh_delay(created_at timestamptz, watch_every interval, watch_until timestamptz)
  RETURNS interval LANGUAGE sql STABLE
  RETURN CASE WHEN watch_until > now() THEN watch_every ELSE tweetkeeper.next_delay(created_at) END;

-- Ids from before Snowflake (November 2010) encode no time: their derived time falls within a
-- day of Twitter's epoch, where no Snowflake id exists.
CREATE FUNCTION derived_created_at(tweet_id bigint) RETURNS timestamptz
  LANGUAGE plpgsql STABLE AS $$
BEGIN
  IF tweet_id IS NOT NULL AND tweet_id > 0 AND (tweet_id >> 22) < 86400000 THEN
    RAISE EXCEPTION 'tweet id % predates Snowflake ids and encodes no creation time', tweet_id
      USING ERRCODE = 'invalid_parameter_value',
            HINT = 'Pass created_at: tweetkeeper.schedule_tweet(id, created_at).';
  END IF;
  RETURN tweetkeeper.snowflake_time(tweet_id);
END $$;

CREATE FUNCTION schedule_tweet(tweet_id bigint, created_at timestamptz DEFAULT NULL)
  RETURNS boolean LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  c timestamptz := coalesce(created_at, tweetkeeper.derived_created_at(tweet_id));
BEGIN
  PERFORM tweetkeeper.check_tweet(tweet_id, c);
  INSERT INTO tweetkeeper.tweets AS t (tweet_id, created_at, due_at, delay)
  VALUES (tweet_id, c, c + tweetkeeper.first_delay(), tweetkeeper.age_delay(c))
  ON CONFLICT ON CONSTRAINT tweets_pkey DO NOTHING;
  IF FOUND THEN
    PERFORM tweetkeeper.wake_maintenance();
  END IF;
  RETURN FOUND;
END $$;
COMMENT ON FUNCTION schedule_tweet(bigint, timestamptz) IS
  'Starts tracking a tweet: first refresh one first-bucket delay after created_at (derived from '
  'the Snowflake id when NULL). Returns false, changing nothing, if it is tracked already.';

CREATE FUNCTION schedule_tweets(tweet_ids bigint[]) RETURNS bigint
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  first interval;
  last interval;
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
  last := (SELECT max(p.delay) FROM tweetkeeper.age_policy p);  -- for tweets past the last bucket
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
  INSERT INTO tweetkeeper.tweets (tweet_id, created_at, due_at, delay)
  SELECT id, c, c + first, coalesce(tweetkeeper.next_delay(c), last)
    FROM unnest(tweet_ids) AS id,
         LATERAL (SELECT tweetkeeper.snowflake_time(id) AS c) AS t
  ON CONFLICT ON CONSTRAINT tweets_pkey DO NOTHING;
  GET DIAGNOSTICS added = ROW_COUNT;
  IF added > 0 THEN
    PERFORM tweetkeeper.wake_maintenance();
    -- A bulk load outgrows the statistics long before autovacuum comes by, and with them the
    -- plans every session cached while the queue was small: a worker or the background worker
    -- that started on an empty queue would read the whole table at every claim and tick (a
    -- sequential scan is right for a few pages). Once the table is twice the size its statistics
    -- say, ANALYZE it: at commit every session replans. About log2(growth) times per import, a
    -- sample of at most 30,000 rows each; SKIP_LOCKED: never wait for a running (auto)vacuum.
    -- (Its SHARE UPDATE EXCLUSIVE lock lasts until the caller commits: it keeps only vacuum and
    -- other ANALYZEs of tweets waiting; tweetkeeper-import commits every chunk.)
    IF pg_relation_size('tweetkeeper.tweets') / current_setting('block_size')::bigint
       > 2 * (SELECT c.relpages FROM pg_class c WHERE c.oid = 'tweetkeeper.tweets'::regclass) + 64 THEN
      ANALYZE (SKIP_LOCKED) tweetkeeper.tweets;
    END IF;
  END IF;
  RETURN added;
END $$;
COMMENT ON FUNCTION schedule_tweets(bigint[]) IS
  'schedule_tweet for many Snowflake ids in one statement (each id once, at most '
  'tweetkeeper.max_ids_per_call); returns how many were new.';

-- For a trigger on the user's own table: AFTER INSERT ... FOR EACH ROW EXECUTE FUNCTION
-- tweetkeeper.schedule_from_trigger('id_column'[, 'created_at_column']).
CREATE FUNCTION schedule_from_trigger() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  row jsonb := to_jsonb(NEW);
  id_column text := coalesce(TG_ARGV[0], 'tweet_id');
BEGIN
  IF NOT row ? id_column THEN
    RAISE EXCEPTION 'schedule_from_trigger: table %.% has no column "%"',
      TG_TABLE_SCHEMA, TG_TABLE_NAME, id_column USING ERRCODE = 'undefined_column';
  END IF;
  PERFORM tweetkeeper.schedule_tweet((row ->> id_column)::bigint,
                                     (row ->> TG_ARGV[1])::timestamptz);
  RETURN NULL;
END $$;

--------------------------------------------------------------------------------------------------
-- Claim, complete, release: the worker's API
--------------------------------------------------------------------------------------------------

-- Hands out up to max_size due tweets, oldest due first, under a new lease, together with a
-- credential that still has quota (when credentials are registered for the provider): one
-- request of its window is spent here, atomically with the claim, so any number of workers
-- together never exceed it. Returns no row when nothing may be sent now: nothing due, or fewer
-- than max_size due and the oldest of them due for less than tweetkeeper.buffer_ttl. Returns a
-- row with lease_id NULL, wait_until and wait_reason when tweets are due but no credential
-- among `credentials` (the names the worker holds tokens for; NULL: any) has quota.
CREATE FUNCTION claim_batch(worker text, max_size integer DEFAULT 100,
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
  held := ARRAY(SELECT t.tweet_id FROM tweetkeeper.tweets t
                 WHERE t.watch_until IS NOT NULL AND t.due_at <= now()
                 ORDER BY t.due_at LIMIT max_size FOR UPDATE SKIP LOCKED);
  IF cardinality(held) < max_size AND by_due THEN
    held := held || ARRAY(SELECT t.tweet_id FROM tweetkeeper.tweets t
                           WHERE t.due_at <= now() AND t.tweet_id <> ALL (held)
                           ORDER BY t.due_at LIMIT max_size - cardinality(held) FOR UPDATE SKIP LOCKED);
  ELSIF cardinality(held) < max_size THEN
    SELECT coalesce(array_agg(r.delay), '{}'), coalesce(array_agg(r.n), '{}'), coalesce(sum(r.n), 0)
      INTO group_delays, group_sizes, wanted
      FROM (SELECT x.delay, count(*) AS n FROM (
              WITH RECURSIVE d(delay) AS (
                 (SELECT t.delay FROM tweetkeeper.tweets t WHERE t.due_at IS NOT NULL
                   ORDER BY t.delay LIMIT 1)
                 UNION ALL
                 SELECT (SELECT t.delay FROM tweetkeeper.tweets t
                          WHERE t.due_at IS NOT NULL AND t.delay > d.delay ORDER BY t.delay LIMIT 1)
                   FROM d WHERE d.delay IS NOT NULL)
              SELECT d.delay
                FROM d CROSS JOIN LATERAL (
                  -- A range of tweets_lateness_idx written as row comparisons, not delay = d.delay:
                  -- with an equality the planner may walk tweets_due_idx instead, filtering on the
                  -- delay, which for a rare delay reads past every other due tweet (0.5 s at 1M).
                  SELECT t.due_at FROM tweetkeeper.tweets t
                   WHERE t.due_at IS NOT NULL AND (t.delay, t.due_at) >= (d.delay, '-infinity'::timestamptz)
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
                      WHERE t.due_at IS NOT NULL AND (t.delay, t.due_at) >= (g.delay, '-infinity'::timestamptz)
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
COMMENT ON FUNCTION claim_batch(text, integer, text, text[]) IS
  'Claims up to max_size (1-100) due tweets under a new lease (see tweetkeeper.lease_ttl) and, '
  'when credentials are registered, one request of a credential''s quota.';

-- Stores a batch's results in one transaction: metrics, history, next due time; per-id problems;
-- hands back the batch's tweets that appear in neither list. Only tweets still held by this
-- lease are touched (fencing), so a late worker cannot overwrite a newer claim's work.
--   observations: [{"id":1,"retweet_count":..,"reply_count":..,"like_count":..,"quote_count":..,
--                   "bookmark_count":..,"impression_count":..}, ...]
--   problems:     [{"id":2,"type":"resource-not-found","detail":"..."}, ...]
--   rate:         the answer's x-rate-limit-* headers, {"limit":..,"remaining":..,"reset":epoch}
-- Returns how many tweets of the batch got a result stored.
CREATE FUNCTION complete_batch(lease bigint, observations jsonb, problems jsonb DEFAULT '[]',
                               rate jsonb DEFAULT NULL)
  RETURNS integer LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  recheck interval;
  b record;
  n_observed integer;
  n_problems integer;
  n_billed integer;
  n_omitted integer := 0;
  missing_after integer;
  keep_all boolean;
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

  -- (Parsing every id first refuses a malformed one, 22P02, whatever the plans below.)
  PERFORM array_length(ARRAY(SELECT o.id FROM jsonb_to_recordset(observations) AS o(id bigint)), 1);
  SELECT x.history_keep_unchanged, x.missing_after, x.unavailable_recheck
    INTO keep_all, missing_after, recheck FROM tweetkeeper.settings() x;

  -- One look at each of our tweets before the update: billed (a found tweet this batch's
  -- credential had not read yet this UTC day) and changed (a count differs from the stored one,
  -- or it is the first observation); history stores only changed observations unless keep_all.
  -- A count the answer did not give (NULL) keeps the tweet's last known value; history records
  -- it as NULL: not reported. A count below 0 or above 10^12 (a thousand times the views of the
  -- most viewed post) is no count: it is not stored, and the tweet's problem says so, with
  -- what the worker found wrong itself (`invalid`: a count that is not an integer).
  WITH raw AS (
    SELECT DISTINCT ON (o.id) o.*
      FROM jsonb_to_recordset(observations) AS o(id bigint, retweet_count bigint,
             reply_count bigint, like_count bigint, quote_count bigint, bookmark_count bigint,
             impression_count bigint, invalid text)
     WHERE o.id = ANY (b.tweet_ids)
  ), obs AS (
    SELECT r.id,
           CASE WHEN r.retweet_count BETWEEN 0 AND 1e12 THEN r.retweet_count END AS retweet_count,
           CASE WHEN r.reply_count BETWEEN 0 AND 1e12 THEN r.reply_count END AS reply_count,
           CASE WHEN r.like_count BETWEEN 0 AND 1e12 THEN r.like_count END AS like_count,
           CASE WHEN r.quote_count BETWEEN 0 AND 1e12 THEN r.quote_count END AS quote_count,
           CASE WHEN r.bookmark_count BETWEEN 0 AND 1e12 THEN r.bookmark_count END AS bookmark_count,
           CASE WHEN r.impression_count BETWEEN 0 AND 1e12 THEN r.impression_count END AS impression_count,
           nullif(concat_ws(', ', nullif(r.invalid, ''),
             'retweet_count ' || CASE WHEN r.retweet_count NOT BETWEEN 0 AND 1e12 THEN r.retweet_count END,
             'reply_count ' || CASE WHEN r.reply_count NOT BETWEEN 0 AND 1e12 THEN r.reply_count END,
             'like_count ' || CASE WHEN r.like_count NOT BETWEEN 0 AND 1e12 THEN r.like_count END,
             'quote_count ' || CASE WHEN r.quote_count NOT BETWEEN 0 AND 1e12 THEN r.quote_count END,
             'bookmark_count ' || CASE WHEN r.bookmark_count NOT BETWEEN 0 AND 1e12 THEN r.bookmark_count END,
             'impression_count ' || CASE WHEN r.impression_count NOT BETWEEN 0 AND 1e12 THEN r.impression_count END),
             '') AS invalid
      FROM raw r
  ), prev AS (
    SELECT o.*,
           (p.billed_on IS DISTINCT FROM today OR NOT coalesce(b.credential, '') = ANY (p.billed_by)) AS billed,
           (p.update_count = 0
            OR (o.retweet_count IS NOT NULL AND o.retweet_count IS DISTINCT FROM p.retweet_count)
            OR (o.reply_count IS NOT NULL AND o.reply_count IS DISTINCT FROM p.reply_count)
            OR (o.like_count IS NOT NULL AND o.like_count IS DISTINCT FROM p.like_count)
            OR (o.quote_count IS NOT NULL AND o.quote_count IS DISTINCT FROM p.quote_count)
            OR (o.bookmark_count IS NOT NULL AND o.bookmark_count IS DISTINCT FROM p.bookmark_count)
            OR (o.impression_count IS NOT NULL AND o.impression_count IS DISTINCT FROM p.impression_count))
             AS changed
      FROM obs o JOIN tweetkeeper.tweets p ON p.tweet_id = o.id AND p.lease_id = lease
  ), upd AS (
    UPDATE tweetkeeper.tweets t
       SET billed_on = today,
           billed_by = CASE WHEN t.billed_on IS DISTINCT FROM today THEN ARRAY[coalesce(b.credential, '')]
                            WHEN coalesce(b.credential, '') = ANY (t.billed_by) THEN t.billed_by
                            ELSE t.billed_by || coalesce(b.credential, '') END,
           retweet_count = coalesce(o.retweet_count, t.retweet_count),
           reply_count = coalesce(o.reply_count, t.reply_count),
           like_count = coalesce(o.like_count, t.like_count),
           quote_count = coalesce(o.quote_count, t.quote_count),
           bookmark_count = coalesce(o.bookmark_count, t.bookmark_count),
           impression_count = coalesce(o.impression_count, t.impression_count),
           updated_at = now(), update_count = t.update_count + 1, lease_id = NULL, omissions = 0,
           due_at = now() + tweetkeeper.refresh_delay(t.created_at, t.watch_every, t.watch_until),
           state = CASE WHEN tweetkeeper.refresh_delay(t.created_at, t.watch_every, t.watch_until) IS NULL
                        THEN 'done'::tweetkeeper.tweet_state ELSE 'scheduled' END,
           delay = coalesce(tweetkeeper.refresh_delay(t.created_at, t.watch_every, t.watch_until), t.delay),
           -- An expired watch ends here: the tweet is back on its age schedule.
           watch_every = CASE WHEN t.watch_until > now() THEN t.watch_every END,
           watch_until = CASE WHEN t.watch_until > now() THEN t.watch_until END,
           problem_type = CASE WHEN o.invalid IS NOT NULL THEN 'invalid-count' END,
           problem_detail = 'not stored, the last known kept: ' || o.invalid,
           problem_at = CASE WHEN o.invalid IS NOT NULL THEN now() END
      FROM prev o
     WHERE t.tweet_id = o.id AND t.lease_id = lease
    RETURNING t.tweet_id, o.retweet_count, o.reply_count, o.like_count, o.quote_count,
              o.bookmark_count, o.impression_count, o.billed, o.changed
  ), hist AS (
    INSERT INTO tweetkeeper.metric_history (tweet_id, lease_id, observed_at, retweet_count,
                reply_count, like_count, quote_count, bookmark_count, impression_count)
    SELECT u.tweet_id, lease, now(), u.retweet_count, u.reply_count, u.like_count, u.quote_count,
           u.bookmark_count, u.impression_count
      FROM upd u WHERE u.changed OR keep_all
  )
  SELECT count(*), count(*) FILTER (WHERE u.billed) INTO n_observed, n_billed FROM upd u;

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
                          CASE WHEN tweetkeeper.refresh_delay(t.created_at, t.watch_every, t.watch_until) IS NULL
                               THEN 'done'::tweetkeeper.tweet_state ELSE 'scheduled' END),
         due_at = CASE WHEN p.terminal = 'unavailable' THEN now() + recheck
                       WHEN p.terminal IS NULL
                         THEN now() + tweetkeeper.refresh_delay(t.created_at, t.watch_every, t.watch_until) END,
         delay = CASE WHEN p.terminal = 'unavailable' THEN recheck
                      ELSE coalesce(tweetkeeper.refresh_delay(t.created_at, t.watch_every, t.watch_until), t.delay) END,
         -- A watch ends with the tweet's visibility, or when it expired.
         watch_every = CASE WHEN p.terminal IS NULL AND t.watch_until > now() THEN t.watch_every END,
         watch_until = CASE WHEN p.terminal IS NULL AND t.watch_until > now() THEN t.watch_until END,
         lease_id = NULL, omissions = 0,
         problem_type = coalesce(p.type, 'unknown'), problem_detail = p.detail, problem_at = now()
    FROM p
   WHERE t.tweet_id = p.id AND t.lease_id = lease;
  GET DIAGNOSTICS n_problems = ROW_COUNT;

  IF n_observed + n_problems < b.size THEN
    -- Ids the answer left out: neither found nor an error (tweets of a lease taken over are
    -- not ours any more and are left alone). Asking again at once would spend a request on
    -- each, every buffer TTL, without end if the API never mentions the id. So: not before the
    -- tweet's normal delay, doubled at each omission in a row (at most unavailable_recheck, if
    -- that is longer); at the missing_after-th in a row it is 'missing', rechecked every
    -- unavailable_recheck like an unavailable tweet. An answer that mentions it again resets
    -- the count. The doubling is done in seconds: an interval would overflow long before.
    WITH o AS (
      SELECT x.tweet_id, x.n,
             CASE WHEN x.n >= missing_after OR x.state IN ('unavailable', 'missing') THEN recheck
                  ELSE make_interval(secs => greatest(x.base_s, least(extract(epoch FROM recheck)::float8,
                                                                      x.base_s * power(2, least(x.n - 1, 60)))))
             END AS wait
        FROM (SELECT t.tweet_id, t.omissions + 1 AS n, t.state,
                     extract(epoch FROM coalesce(tweetkeeper.refresh_delay(t.created_at, t.watch_every, t.watch_until),
                                                 t.delay))::float8 AS base_s
                FROM tweetkeeper.tweets t
               WHERE t.tweet_id = ANY (b.tweet_ids) AND t.lease_id = lease) x
    )
    UPDATE tweetkeeper.tweets t
       SET omissions = o.n,
           state = CASE WHEN o.n >= missing_after THEN 'missing'::tweetkeeper.tweet_state ELSE t.state END,
           due_at = now() + o.wait, delay = o.wait, lease_id = NULL,
           -- A watch ends when the tweet is missing, or when it expired meanwhile (as above).
           watch_every = CASE WHEN o.n < missing_after AND t.watch_until > now() THEN t.watch_every END,
           watch_until = CASE WHEN o.n < missing_after AND t.watch_until > now() THEN t.watch_until END,
           problem_type = 'omitted',
           problem_detail = format('left out of %s answer(s) in a row', o.n), problem_at = now()
      FROM o
     WHERE t.tweet_id = o.tweet_id AND t.lease_id = lease;
    GET DIAGNOSTICS n_omitted = ROW_COUNT;
  END IF;
  IF b.outcome IS NOT NULL THEN
    -- A late answer (the batch expired or was abandoned meanwhile): the API read and billed the
    -- posts, but nothing was stored here. Count what the claim reserved.
    n_billed := coalesce(b.billable, 0);
  END IF;
  -- An abandoned batch stays abandoned: its tweets were handed back, nothing was stored. Either
  -- way the request was answered, for usage_stats (and daily_usage once the batch is purged):
  -- kept on the batch, not added to a shared row, on which concurrent completions would queue.
  UPDATE tweetkeeper.batches
     SET finished_at = CASE WHEN outcome = 'abandoned' THEN finished_at ELSE now() END,
         outcome = CASE WHEN outcome = 'abandoned' THEN outcome ELSE 'completed' END,
         stored = CASE WHEN outcome = 'abandoned' THEN stored ELSE n_observed + n_problems END,
         billed = n_billed,
         tweets_read = CASE WHEN b.outcome IS NULL THEN n_observed ELSE coalesce(b.billable, 0) END,
         omitted = n_omitted
   WHERE batches.lease_id = lease;
  IF b.credential IS NOT NULL THEN
    -- The claim reserved b.billable reads of the monthly cap; settle to what was billed.
    UPDATE tweetkeeper.credentials c
       SET month_used = greatest(c.month_used + n_billed - coalesce(b.billable, 0), 0)
     WHERE c.name = b.credential AND c.month_start = date_trunc('month', b.claimed_at, 'UTC');
    PERFORM tweetkeeper.record_quota(b.credential, rate, NULL, NULL);
  END IF;
  RETURN n_observed + n_problems;
END $$;
COMMENT ON FUNCTION complete_batch(bigint, jsonb, jsonb, jsonb) IS
  'Stores a claimed batch''s results (metrics, history, reschedule) atomically; returns how many '
  'tweets were stored (fewer than claimed if the lease expired and was taken over).';

-- Hands a whole batch back (due again now), e.g. when the API call failed. `refusal` says what
-- the API said of the credential: rate-limited (429, waits for the window's reset),
-- usage-capped (429, monthly cap: until next month), rejected (401/403); NULL for anything
-- else. `rate` as in complete_batch.
CREATE FUNCTION release_batch(lease bigint, reason text DEFAULT NULL, refusal text DEFAULT NULL,
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

--------------------------------------------------------------------------------------------------
-- Watched tweets: refreshed on a fixed interval for a while, whatever their age
--------------------------------------------------------------------------------------------------

-- Returns tweets to their age schedule (an ended or expired watch): the next refresh one age
-- delay after the last; done if past the last bucket and fetched before. A tweet in flight
-- keeps its lease; its completion schedules it by age.
CREATE FUNCTION stop_watching(tweet_ids bigint[]) RETURNS bigint
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  n bigint;
BEGIN
  UPDATE tweetkeeper.tweets t
     SET watch_every = NULL, watch_until = NULL,
         delay = tweetkeeper.age_delay(t.created_at),
         state = CASE WHEN t.lease_id IS NULL AND t.updated_at IS NOT NULL
                           AND tweetkeeper.next_delay(t.created_at) IS NULL
                      THEN 'done'::tweetkeeper.tweet_state ELSE t.state END,
         due_at = CASE WHEN t.lease_id IS NOT NULL OR t.updated_at IS NULL THEN t.due_at
                       ELSE t.updated_at + tweetkeeper.next_delay(t.created_at) END
   WHERE t.tweet_id = ANY (tweet_ids) AND t.watch_until IS NOT NULL;
  GET DIAGNOSTICS n = ROW_COUNT;
  RETURN n;
END $$;
COMMENT ON FUNCTION stop_watching(bigint[]) IS
  'Ends the watches of these tweets (unwatch and expiry): back to their age schedule.';

CREATE FUNCTION watch(tweet_ids bigint[], every interval DEFAULT interval '5 minutes',
                      for_how_long interval DEFAULT interval '1 day') RETURNS bigint
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  ids bigint[];
  max_ids integer;
  n bigint;
BEGIN
  IF tweet_ids IS NULL OR every IS NULL OR for_how_long IS NULL THEN
    RAISE EXCEPTION 'tweet_ids, every and for_how_long must not be NULL'
      USING ERRCODE = 'null_value_not_allowed';
  END IF;
  IF array_position(tweet_ids, NULL) IS NOT NULL THEN
    RAISE EXCEPTION 'tweet_ids contains a NULL element' USING ERRCODE = 'null_value_not_allowed';
  END IF;
  -- Faster than every 10 s would spend requests on changes too small to see; longer than a day
  -- is what the age policy already does.
  IF every < interval '10 seconds' OR every > interval '1 day' THEN
    RAISE EXCEPTION 'every must be between 10 seconds and 1 day, got %', every
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF for_how_long <= interval '0' OR for_how_long > interval '30 days' THEN
    RAISE EXCEPTION 'for_how_long must be more than 0 and at most 30 days, got %', for_how_long
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF every > for_how_long THEN
    RAISE EXCEPTION 'every (%) is longer than the watch itself (%)', every, for_how_long
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  ids := ARRAY(SELECT DISTINCT x FROM unnest(tweet_ids) x);
  max_ids := current_setting('tweetkeeper.max_ids_per_call')::integer;
  IF cardinality(ids) > max_ids THEN
    RAISE EXCEPTION 'tweet_ids has % distinct elements, more than tweetkeeper.max_ids_per_call (%)',
      cardinality(ids), max_ids USING ERRCODE = 'program_limit_exceeded';
  END IF;
  -- Tracks those not tracked yet (refusing ids that are not Snowflake ids, as schedule_tweets does).
  PERFORM tweetkeeper.schedule_tweets(ARRAY(
    SELECT x FROM unnest(ids) x WHERE NOT EXISTS (SELECT 1 FROM tweetkeeper.tweets t WHERE t.tweet_id = x)));
  -- Deleted and unavailable tweets cannot be refreshed: they are not watched. A renewal extends
  -- the watch and takes the new interval; the next refresh is `every` after the last one.
  UPDATE tweetkeeper.tweets t
     SET watch_every = every, watch_until = greatest(t.watch_until, now() + for_how_long),
         delay = every, state = 'scheduled',
         due_at = CASE WHEN t.lease_id IS NOT NULL THEN t.due_at
                       ELSE least(coalesce(t.due_at, 'infinity'), coalesce(t.updated_at, now()) + every) END
   WHERE t.tweet_id = ANY (ids) AND t.state IN ('scheduled', 'done');
  GET DIAGNOSTICS n = ROW_COUNT;
  PERFORM tweetkeeper.wake_maintenance();
  RETURN n;
END $$;
COMMENT ON FUNCTION watch(bigint[], interval, interval) IS
  'Refreshes these tweets every `every` (10 s to 1 day) for `for_how_long` (up to 30 days), '
  'whatever their age, ahead of everything else under a shortage; tracks them if they are not '
  'yet; a renewal extends the watch. Returns how many are watched (deleted and unavailable '
  'tweets are not).';

CREATE FUNCTION unwatch(tweet_ids bigint[]) RETURNS bigint
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
  IF tweet_ids IS NULL THEN
    RAISE EXCEPTION 'tweet_ids must not be NULL' USING ERRCODE = 'null_value_not_allowed';
  END IF;
  RETURN tweetkeeper.stop_watching(tweet_ids);
END $$;
COMMENT ON FUNCTION unwatch(bigint[]) IS
  'Ends the watches of these tweets: back to their age schedule. Returns how many were watched.';

CREATE VIEW watches AS
SELECT t.tweet_id, t.watch_every AS every, t.watch_until AS until, t.updated_at AS last_refreshed,
       t.due_at AS next_refresh, t.update_count, t.state
  FROM tweetkeeper.tweets t
 WHERE t.watch_until > now()
 ORDER BY t.watch_until, t.tweet_id;
COMMENT ON VIEW watches IS 'Live watches (tweetkeeper.watch): what is refreshed how often, until when.';

--------------------------------------------------------------------------------------------------
-- Housekeeping (called by the background worker on every tick)
--------------------------------------------------------------------------------------------------

-- Returns how long the background worker may sleep before anything can change: 0 for a tick
-- (a batch is claimable now, or batches are in flight and their workers may die), otherwise
-- until the next tweet becomes claimable or the next lease expires; NULL when nothing is
-- scheduled. When a batch is claimable now, it notifies the idle workers on the channel
-- tweetkeeper_due (a hint: workers poll as well, slowly).
CREATE FUNCTION maintenance() RETURNS interval LANGUAGE plpgsql AS $$
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

  -- The same test as claim_batch: a full batch, or a partial one past the buffer TTL.
  EXECUTE $q$
    SELECT count(*), min(d.due_at)
      FROM (SELECT t.due_at FROM tweetkeeper.tweets t WHERE t.due_at <= now()
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
    SELECT min(t.due_at) INTO next_due FROM tweetkeeper.tweets t WHERE t.due_at > now();
  END IF;
  SELECT min(t.watch_until) INTO next_watch_end FROM tweetkeeper.tweets t WHERE t.watch_until IS NOT NULL;
  RETURN least(next_due, next_expiry, next_watch_end) - now();
END $$;
COMMENT ON FUNCTION maintenance() IS
  'Hands back batches whose worker is gone, marks expired leases, purges old batch records, '
  'notifies tweetkeeper_due when a batch is claimable; returns how long nothing can change. Run '
  'by the background worker.';

--------------------------------------------------------------------------------------------------
-- History housekeeping: partitions ahead, retention and rollups (pg_cron or the background worker)
--------------------------------------------------------------------------------------------------

-- Partition bounds as times (pg_get_expr prints them in this session's TimeZone and DateStyle,
-- and reads back the same in the same session). The default partition has none.
CREATE VIEW history_partitions AS
SELECT c.oid::regclass AS partition,
       CASE WHEN m[1] = 'MINVALUE' THEN '-infinity' ELSE btrim(m[1], '''')::timestamptz END AS starts,
       CASE WHEN m[2] = 'MAXVALUE' THEN 'infinity' ELSE btrim(m[2], '''')::timestamptz END AS ends,
       greatest(c.reltuples, 0)::bigint AS rows_estimate,
       pg_total_relation_size(c.oid) AS bytes
  FROM pg_inherits i
  JOIN pg_class c ON c.oid = i.inhrelid
  CROSS JOIN LATERAL regexp_match(pg_get_expr(c.relpartbound, c.oid), 'FROM \((.*)\) TO \((.*)\)') AS m
 WHERE i.inhparent = 'tweetkeeper.metric_history'::regclass AND m IS NOT NULL;
COMMENT ON VIEW history_partitions IS
  'The partitions of metric_history with their time range [starts, ends), estimated rows and '
  'bytes (the default partition, which has no range, is not listed).';

CREATE FUNCTION record_housekeeping(task text, result text) RETURNS void
  LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
  INSERT INTO tweetkeeper.housekeeping_runs AS r (task, last_run, result)
  VALUES (task, clock_timestamp(), result)
  ON CONFLICT ON CONSTRAINT housekeeping_runs_pkey
  DO UPDATE SET last_run = excluded.last_run, result = excluded.result;
$$;
COMMENT ON FUNCTION record_housekeeping(text, text) IS
  'Records that a housekeeping task ran and what it did (tweetkeeper.housekeeping_runs).';

-- Partitions ahead: every slot of tweetkeeper.history_partition from now to a little ahead, and
-- every slot that holds rows of the default partition (housekeeping stopped for a while: they
-- move into their own partitions). Slots are aligned to the epoch in UTC and clipped to the gaps
-- between existing partitions, so a changed partition length never overlaps old partitions.
-- CREATE + ATTACH rather than CREATE ... PARTITION OF: attaching takes a weaker lock on
-- metric_history, so completions go on meanwhile; lock_timeout keeps it from queueing behind a
-- long reader (and everything else behind it).
CREATE FUNCTION create_partitions() RETURNS integer
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
      LOCK TABLE tweetkeeper.metric_history IN SHARE UPDATE EXCLUSIVE MODE;  -- what ATTACH takes
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
COMMENT ON FUNCTION create_partitions() IS
  'Creates the partitions of metric_history for now and a little ahead (and for rows waiting in '
  'the default partition, which move into them); returns how many it created. Idempotent.';

-- Retention: whole partitions whose every row is older than tweetkeeper.history_retention are
-- dropped; before that, with tweetkeeper.history_rollup, their rows are summed up per tweet and
-- UTC day into metric_daily (merged with what an earlier partition gave the same day).
CREATE FUNCTION apply_retention() RETURNS integer
  LANGUAGE plpgsql SECURITY DEFINER
  SET search_path = pg_catalog, pg_temp SET TimeZone = 'UTC' SET DateStyle = 'ISO, YMD'
  SET lock_timeout = '2s' AS $$
DECLARE
  s record := tweetkeeper.settings();
  cutoff timestamptz := now() - s.history_retention;
  p record;
  dropped integer := 0;
  rolled bigint := 0;
  n bigint;
BEGIN
  IF s.history_retention = interval '0' THEN
    PERFORM tweetkeeper.record_housekeeping('retention', 'keeping everything (tweetkeeper.history_retention = 0)');
    RETURN 0;
  END IF;
  PERFORM pg_advisory_xact_lock(hashtext('tweetkeeper.housekeeping'));
  IF NOT EXISTS (SELECT FROM tweetkeeper.history_partitions h WHERE h.ends <= cutoff)
     AND NOT EXISTS (SELECT FROM tweetkeeper.metric_history_default d WHERE d.observed_at < cutoff) THEN
    PERFORM tweetkeeper.record_housekeeping('retention', format('nothing older than %s', cutoff));
    RETURN 0;
  END IF;
  -- DROP takes this lock on the parent; taken first, before create_partitions() locks any
  -- partition, so that no reader holding the parent waits for a partition held here.
  LOCK TABLE tweetkeeper.metric_history IN ACCESS EXCLUSIVE MODE;
  PERFORM tweetkeeper.create_partitions();  -- rows in the default partition get a partition, so they age out too
  FOR p IN SELECT h.partition FROM tweetkeeper.history_partitions h WHERE h.ends <= cutoff ORDER BY h.starts LOOP
    IF s.history_rollup THEN
      EXECUTE format($q$
        INSERT INTO tweetkeeper.metric_daily AS d (tweet_id, day, observations, last_observed_at,
               retweet_count, reply_count, like_count, quote_count, bookmark_count, impression_count)
        SELECT DISTINCT ON (h.tweet_id, h.observed_at::date) h.tweet_id, h.observed_at::date,
               count(*) OVER (PARTITION BY h.tweet_id, h.observed_at::date), h.observed_at,
               h.retweet_count, h.reply_count, h.like_count, h.quote_count, h.bookmark_count, h.impression_count
          FROM %s h
         ORDER BY h.tweet_id, h.observed_at::date, h.observed_at DESC
        ON CONFLICT ON CONSTRAINT metric_daily_pkey DO UPDATE
           SET observations = d.observations + excluded.observations,
               last_observed_at = greatest(d.last_observed_at, excluded.last_observed_at),
               retweet_count = CASE WHEN excluded.last_observed_at > d.last_observed_at THEN excluded.retweet_count ELSE d.retweet_count END,
               reply_count = CASE WHEN excluded.last_observed_at > d.last_observed_at THEN excluded.reply_count ELSE d.reply_count END,
               like_count = CASE WHEN excluded.last_observed_at > d.last_observed_at THEN excluded.like_count ELSE d.like_count END,
               quote_count = CASE WHEN excluded.last_observed_at > d.last_observed_at THEN excluded.quote_count ELSE d.quote_count END,
               bookmark_count = CASE WHEN excluded.last_observed_at > d.last_observed_at THEN excluded.bookmark_count ELSE d.bookmark_count END,
               impression_count = CASE WHEN excluded.last_observed_at > d.last_observed_at THEN excluded.impression_count ELSE d.impression_count END
      $q$, p.partition);
      GET DIAGNOSTICS n = ROW_COUNT;
      rolled := rolled + n;
    END IF;
    EXECUTE format('DROP TABLE %s', p.partition);
    dropped := dropped + 1;
  END LOOP;
  PERFORM tweetkeeper.record_housekeeping('retention',
    format('%s partitions older than %s dropped, %s daily rows rolled up', dropped, cutoff, rolled));
  RETURN dropped;
END $$;
COMMENT ON FUNCTION apply_retention() IS
  'Drops the partitions of metric_history older than tweetkeeper.history_retention (0: none), '
  'first rolling them up into metric_daily (tweetkeeper.history_rollup); returns how many it dropped.';

-- Each task that has not run for if_older_than (by anyone: pg_cron, an operator, this), in a
-- subtransaction of its own: a task that fails (a lock not granted in time) is recorded as such
-- and tried again next time, and does not stop the other. Run by the background worker every
-- tweetkeeper.housekeeping_interval.
CREATE FUNCTION housekeeping(if_older_than interval DEFAULT interval '0') RETURNS text
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  job text;
  done text[] := '{}';
BEGIN
  IF if_older_than IS NULL OR if_older_than < interval '0' THEN
    RAISE EXCEPTION 'if_older_than must be zero or more, not %', if_older_than
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  -- Retention first: it takes the strongest lock (see apply_retention), before any other.
  FOREACH job IN ARRAY ARRAY['retention', 'partitions'] LOOP
    CONTINUE WHEN if_older_than > interval '0' AND EXISTS (
                    SELECT FROM tweetkeeper.housekeeping_runs r
                     WHERE r.task = job AND r.last_run > clock_timestamp() - if_older_than
                             AND r.result NOT LIKE 'failed:%');
    BEGIN
      IF job = 'partitions' THEN PERFORM tweetkeeper.create_partitions();
      ELSE PERFORM tweetkeeper.apply_retention();
      END IF;
      done := done || (job || ': ' || (SELECT r.result FROM tweetkeeper.housekeeping_runs r WHERE r.task = job));
    EXCEPTION WHEN OTHERS THEN
      PERFORM tweetkeeper.record_housekeeping(job, 'failed: ' || SQLERRM);
      done := done || (job || ': failed: ' || SQLERRM);
    END;
  END LOOP;
  RETURN array_to_string(done, '; ');
END $$;
COMMENT ON FUNCTION housekeeping(interval) IS
  'Runs the housekeeping tasks (create_partitions, apply_retention) that have not run for '
  'if_older_than; a failed task is recorded in housekeeping_runs and does not stop the other. '
  'Returns what was done.';

-- pg_cron, when it is installed in this database, instead of the background worker: the jobs run
-- the tasks more often than tweetkeeper.housekeeping_interval, so the worker finds them done.
-- Jobs belong to the user who calls this (cron.schedule); by name, so calling again updates them.
CREATE FUNCTION schedule_housekeeping(partitions text DEFAULT '*/10 * * * *',
                                      retention text DEFAULT '17 * * * *') RETURNS bigint[]
  LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
  IF partitions IS NULL OR retention IS NULL THEN
    RAISE EXCEPTION 'the schedules must not be NULL' USING ERRCODE = 'null_value_not_allowed';
  END IF;
  IF NOT EXISTS (SELECT FROM pg_extension WHERE extname = 'pg_cron') THEN
    RAISE EXCEPTION 'pg_cron is not installed in database %', current_database()
      USING ERRCODE = 'object_not_in_prerequisite_state',
            HINT = 'Add pg_cron to shared_preload_libraries, set cron.database_name to this database '
                   'and CREATE EXTENSION pg_cron; without it the background worker does the housekeeping.';
  END IF;
  RETURN ARRAY[cron.schedule('tweetkeeper-partitions', partitions, 'SELECT tweetkeeper.create_partitions()'),
               cron.schedule('tweetkeeper-retention', retention, 'SELECT tweetkeeper.apply_retention()')];
END $$;
COMMENT ON FUNCTION schedule_housekeeping(text, text) IS
  'Registers (or updates) the pg_cron jobs tweetkeeper-partitions and tweetkeeper-retention with '
  'these cron schedules; returns their job ids. Needs pg_cron in this database.';

CREATE FUNCTION unschedule_housekeeping() RETURNS integer
  LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  n integer := 0;
  job text;
BEGIN
  IF NOT EXISTS (SELECT FROM pg_extension WHERE extname = 'pg_cron') THEN
    RETURN 0;  -- nothing can be scheduled
  END IF;
  FOR job IN EXECUTE 'SELECT jobname FROM cron.job WHERE jobname IN (''tweetkeeper-partitions'', ''tweetkeeper-retention'')
                       AND username = current_user' LOOP
    PERFORM cron.unschedule(job);
    n := n + 1;
  END LOOP;
  RETURN n;
END $$;
COMMENT ON FUNCTION unschedule_housekeeping() IS
  'Removes the pg_cron jobs of schedule_housekeeping() (the background worker takes over); '
  'returns how many it removed.';

--------------------------------------------------------------------------------------------------
-- Stats
--------------------------------------------------------------------------------------------------

CREATE VIEW queue_stats AS
SELECT s.state,
       count(t.tweet_id) AS tweets,
       count(t.tweet_id) FILTER (WHERE t.due_at <= now()) AS due_now,
       count(t.tweet_id) FILTER (WHERE t.lease_id IS NOT NULL AND t.due_at > now()) AS in_flight,
       max(now() - t.due_at) FILTER (WHERE t.due_at <= now()) AS max_lateness,
       avg(now() - t.due_at) FILTER (WHERE t.due_at <= now()) AS avg_lateness,
       min(t.due_at) FILTER (WHERE t.due_at > now() AND t.lease_id IS NULL) AS next_due_at
  FROM unnest(enum_range(NULL::tweetkeeper.tweet_state)) AS s(state)
  LEFT JOIN tweetkeeper.tweets t ON t.state = s.state
 GROUP BY s.state
 ORDER BY s.state;
COMMENT ON VIEW queue_stats IS
  'Tracked tweets by state: how many, how many are due now, how many are claimed by a worker, '
  'and how late the overdue ones are.';

CREATE VIEW batch_stats AS
SELECT w.window_name,
       count(b.lease_id) AS batches,
       coalesce(sum(b.stored), 0) AS tweets_stored,
       -- Per second of the window that the kept batches cover: a system that has run for ten
       -- minutes (or keeps ten minutes of batches) is not averaged over a whole hour.
       round(coalesce(sum(b.stored), 0)
             / greatest(extract(epoch FROM least(w.span, now() - f.first_claim)), 1), 1) AS tweets_per_second,
       round(avg(b.size), 1) AS avg_batch_size,
       count(b.lease_id) FILTER (WHERE b.size = 100) AS full_batches,
       count(b.lease_id) FILTER (WHERE b.outcome = 'released') AS released,
       count(b.lease_id) FILTER (WHERE b.outcome = 'expired') AS expired,
       count(b.lease_id) FILTER (WHERE b.outcome IS NULL) AS in_flight,
       count(b.lease_id) FILTER (WHERE b.outcome = 'abandoned') AS abandoned,
       coalesce(sum(b.omitted), 0) AS ids_left_out
  FROM (VALUES ('last minute', interval '1 minute'), ('last hour', interval '1 hour'))
         AS w(window_name, span)
  CROSS JOIN (SELECT min(x.claimed_at) AS first_claim FROM tweetkeeper.batches x) f
  LEFT JOIN tweetkeeper.batches b ON b.claimed_at > now() - w.span
 GROUP BY w.window_name, w.span, f.first_claim
 ORDER BY w.span;
COMMENT ON VIEW batch_stats IS
  'Throughput of the last minute and hour: batches, tweets stored per second, batch sizes, '
  'batches released by workers, expired, or abandoned (their worker''s session ended), and ids '
  'the answers left out (neither found nor an error).';


CREATE VIEW credential_stats AS
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

--------------------------------------------------------------------------------------------------
-- What tracking costs: one tweet's life, a forecast for the queue, what the credentials give
--------------------------------------------------------------------------------------------------

-- One tweet from its creation to its last refresh under the current policy: the refreshes (ages
-- first_delay, then + the delay of the age reached, until past the last bucket), the requests
-- they are a share of (100 tweets per request), the billed reads (distinct UTC days with a
-- refresh, averaged over the hour of day the tweet was made) and their price.
CREATE FUNCTION tweet_cost(price_per_read numeric DEFAULT 0.005, OUT refreshes integer,
                           OUT requests numeric, OUT billed_reads numeric, OUT cost numeric,
                           OUT tracked_for interval)
  LANGUAGE plpgsql STABLE AS $$
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

-- What the queue will need from now to now + span (expected values, from each tracked tweet's
-- age and the policy, the watches, and new tweets arriving at the rate of the last day: tweets
-- created in the last 24 hours, per second).
CREATE FUNCTION forecast(span interval, OUT refreshes numeric, OUT requests numeric,
                         OUT billed_reads numeric)
  LANGUAGE plpgsql STABLE AS $$
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
BEGIN
  IF span IS NULL OR span <= interval '0' OR span > interval '1 year' THEN
    RAISE EXCEPTION 'span must be more than 0 and at most a year, got %', coalesce(span::text, 'NULL')
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  first := tweetkeeper.first_delay();
  last := (SELECT max(p.max_age) FROM tweetkeeper.age_policy p);
  -- New tweets: those created in the last day, per second of it (a bulk load of older tweets is
  -- not a stream of new ones).
  arrivals := (SELECT count(*) FROM tweetkeeper.tweets t WHERE t.created_at > now() - interval '1 day')
              / 86400.0;

  WITH g AS MATERIALIZED (
    -- Tracked tweets on their age schedule, by minute of creation; then the expected arrivals.
    SELECT date_trunc('minute', t.created_at) AS c, count(*)::numeric AS n,
           count(*) FILTER (WHERE t.billed_on = today)::numeric AS n_billed,
           count(*) FILTER (WHERE t.due_at <= t0)::numeric AS n_due
      FROM tweetkeeper.tweets t WHERE t.state = 'scheduled' AND t.watch_until IS NULL GROUP BY 1
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
  -- Watched tweets: every `every` while the watch lasts, billed once a day. Unavailable and
  -- missing ones: rechecked once when due (an error or left out, not billed).
  rf := rf + coalesce((SELECT sum(extract(epoch FROM least(t1, t.watch_until) - t0) / extract(epoch FROM t.watch_every))
                         FROM tweetkeeper.tweets t WHERE t.watch_until > t0), 0)
           + coalesce((SELECT count(*) FROM tweetkeeper.tweets t WHERE t.state IN ('unavailable', 'missing') AND t.due_at < t1), 0);
  bl := bl + coalesce((
    SELECT sum(CASE WHEN u::date = today AND t.billed_on = today THEN 0 ELSE 1 END)
      FROM tweetkeeper.tweets t,
           generate_series(date_trunc('day', t0 AT TIME ZONE 'UTC'), least(t1, t.watch_until) AT TIME ZONE 'UTC',
                           interval '1 day') u
     WHERE t.watch_until > t0), 0);

  refreshes := round(rf, 1);
  -- Full batches when enough is due; otherwise a partial batch every buffer TTL at the most.
  requests := round(least(rf, greatest(rf / 100, span_s / greatest(extract(epoch FROM s.buffer_ttl), 1))), 1);
  billed_reads := round(bl, 1);
END $$;
COMMENT ON FUNCTION forecast(interval) IS
  'What the tracked and watched tweets, and new ones at the rate of the last day, will need from '
  'now to now + span: refreshes, requests and billed reads (expected values).';

CREATE VIEW capacity AS
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

--------------------------------------------------------------------------------------------------
-- Roles: least privilege
--------------------------------------------------------------------------------------------------
-- tweetkeeper_worker: claim, complete and release batches; nothing else (no table access).
-- tweetkeeper_reader: read the tables and stats views.
-- tweetkeeper_admin:  the reader's rights, plus the policy, scheduling and the tracked tweets.
-- Grant them to login roles: GRANT tweetkeeper_worker TO my_worker_login. Roles are shared by
-- all databases of a cluster and outlive DROP EXTENSION.
DO $$
DECLARE
  r text;
BEGIN
  FOREACH r IN ARRAY ARRAY['tweetkeeper_worker', 'tweetkeeper_reader', 'tweetkeeper_admin'] LOOP
    IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = r) THEN
      EXECUTE format('CREATE ROLE %I NOLOGIN', r);
    END IF;
  END LOOP;
END $$;

REVOKE ALL ON ALL FUNCTIONS IN SCHEMA tweetkeeper FROM PUBLIC;
GRANT USAGE ON SCHEMA tweetkeeper TO tweetkeeper_worker, tweetkeeper_reader, tweetkeeper_admin;

GRANT EXECUTE ON FUNCTION claim_batch(text, integer, text, text[]),
  complete_batch(bigint, jsonb, jsonb, jsonb), release_batch(bigint, text, text, jsonb)
  TO tweetkeeper_worker;

GRANT SELECT ON ALL TABLES IN SCHEMA tweetkeeper TO tweetkeeper_reader;
GRANT EXECUTE ON FUNCTION next_delay(timestamptz), snowflake_time(bigint), settings(), lease_settings(),
  preloaded(), backend_alive(integer, timestamptz), tweet_cost(numeric), forecast(interval),
  next_month_utc() TO tweetkeeper_reader;

GRANT tweetkeeper_reader TO tweetkeeper_admin;
GRANT INSERT, UPDATE, DELETE, TRUNCATE ON age_policy TO tweetkeeper_admin;
GRANT UPDATE, DELETE ON tweets TO tweetkeeper_admin;
GRANT DELETE ON metric_history, batches, daily_usage, metric_daily TO tweetkeeper_admin;
GRANT INSERT, UPDATE, DELETE ON credentials TO tweetkeeper_admin;
GRANT EXECUTE ON FUNCTION watch(bigint[], interval, interval), unwatch(bigint[]), stop_watching(bigint[]),
  age_delay(timestamptz), refresh_delay(timestamptz, interval, timestamptz) TO tweetkeeper_admin;
GRANT EXECUTE ON FUNCTION schedule_tweet(bigint, timestamptz), schedule_tweets(bigint[]),
  schedule_from_trigger(), maintenance(), check_tweet(bigint, timestamptz), first_delay(),
  derived_created_at(bigint), add_credential(text, integer, interval, bigint, text, numeric),
  reset_credential(text) TO tweetkeeper_admin;
GRANT EXECUTE ON FUNCTION create_partitions(), apply_retention(), housekeeping(interval),
  schedule_housekeeping(text, text), unschedule_housekeeping() TO tweetkeeper_admin;

-- Without shared_preload_libraries everything above works, but the background worker does not.
DO $$
BEGIN
  IF NOT tweetkeeper.preloaded() THEN
    RAISE WARNING 'tweetkeeper is not in shared_preload_libraries: its background worker '
                  '(expired leases, batch records, history partitions and retention) is not running'
      USING HINT = 'Add tweetkeeper to shared_preload_libraries in postgresql.conf, set '
                   'tweetkeeper.database to this database, and restart PostgreSQL (or run '
                   'tweetkeeper.schedule_housekeeping() with pg_cron for the history).';
  END IF;
END $$;
-- forecast() and tweet_cost() read the policy through it (granted last, as 0.1.0 databases
-- updated to 0.2.0 have it: the ACL's order is part of the schema the upgrade test compares).
GRANT EXECUTE ON FUNCTION first_delay() TO tweetkeeper_reader;
