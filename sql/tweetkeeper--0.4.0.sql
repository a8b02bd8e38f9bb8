\echo Use "CREATE EXTENSION tweetkeeper" to load this file. \quit
-- tweetkeeper 0.4.0, built by scripts/build-sql.sh from sql/schema and sql/replaceable.

-- ==== sql/replaceable/00_library.sql
-- tweetkeeper: a queue inside PostgreSQL that keeps tweets' engagement metrics fresh, each tweet
-- on a schedule set by its age. Workers (tweetkeeper-worker) claim due tweets in batches of up to
-- 100, make one API request per batch, and complete the batch in one transaction.
--
-- The extension's SQL is built by scripts/build-sql.sh from sql/schema (what runs once) and
-- sql/replaceable (what every upgrade runs again), part by part in the order of their numbers.
-- This first part: the functions the shared library (extension/*.cpp) exports to SQL, declared
-- first because the parts after it call them: the age policy's cached lookup (next_delay), the
-- typed settings, the claiming session's identity, the background worker's wake-up, and whether
-- the library was preloaded.

CREATE OR REPLACE FUNCTION next_delay(created_at timestamptz) RETURNS interval
  AS 'MODULE_PATHNAME', 'tk_next_delay' LANGUAGE C STABLE STRICT;
COMMENT ON FUNCTION next_delay(timestamptz) IS
  'How long until a tweet created at created_at is refreshed again, by tweetkeeper.age_policy '
  'and its age now; NULL once it is older than the largest max_age (no more refreshes).';

CREATE OR REPLACE FUNCTION age_policy_changed() RETURNS trigger
  AS 'MODULE_PATHNAME', 'tk_age_policy_changed' LANGUAGE C;
COMMENT ON FUNCTION age_policy_changed() IS
  'Trigger: drops the cached age policy in every session when tweetkeeper.age_policy changes.';

CREATE OR REPLACE FUNCTION settings(OUT buffer_ttl interval, OUT lease_ttl interval,
                         OUT batch_retention interval, OUT unavailable_recheck interval,
                         OUT history_partition interval, OUT history_retention interval,
                         OUT history_rollup boolean, OUT history_keep_unchanged boolean,
                         OUT housekeeping_interval interval, OUT missing_after integer)
  AS 'MODULE_PATHNAME', 'tk_settings' LANGUAGE C STABLE STRICT;
COMMENT ON FUNCTION settings() IS
  'The settings tweetkeeper.buffer_ttl, lease_ttl, batch_retention, unavailable_recheck, '
  'history_partition, history_retention (0: keep everything), history_rollup, '
  'history_keep_unchanged, housekeeping_interval and missing_after, typed.';

CREATE OR REPLACE FUNCTION lease_settings(OUT buffer_ttl interval, OUT lease_ttl interval,
                               OUT batch_retention interval, OUT unavailable_recheck interval)
  AS 'MODULE_PATHNAME', 'tk_lease_settings' LANGUAGE C STABLE STRICT;
COMMENT ON FUNCTION lease_settings() IS
  'Deprecated since 0.2.0: the old name of settings(), kept for queries written for 0.1.0.';

CREATE OR REPLACE FUNCTION backend_start() RETURNS timestamptz
  AS 'MODULE_PATHNAME', 'tk_backend_start' LANGUAGE C STABLE STRICT;
COMMENT ON FUNCTION backend_start() IS
  'When this database session started (pg_stat_activity.backend_start); with its pid, it names '
  'the session that claimed a batch.';

CREATE OR REPLACE FUNCTION backend_alive(pid integer, started timestamptz) RETURNS boolean
  AS 'MODULE_PATHNAME', 'tk_backend_alive' LANGUAGE C VOLATILE STRICT;
COMMENT ON FUNCTION backend_alive(integer, timestamptz) IS
  'Whether the database session with this pid and start time still exists (a reused pid with '
  'another start time is another session).';

-- The claim's memory of each delay's head (claim_batch(); extension/claim_heads.cpp says why and
-- when it is forgotten).
CREATE OR REPLACE FUNCTION claim_heads(max_age interval, OUT delays interval[], OUT heads timestamptz[])
  AS 'MODULE_PATHNAME', 'tk_claim_heads' LANGUAGE C VOLATILE STRICT;
COMMENT ON FUNCTION claim_heads(interval) IS
  'claim_batch()''s memory, per session: each delay of X''s scheduled tweets with the oldest due_at '
  'it last saw (where its reads of tweets_lateness_idx start), or NULLs when a full look is due.';
CREATE OR REPLACE FUNCTION remember_claim_heads(delays interval[], heads timestamptz[], full_look boolean)
  RETURNS void AS 'MODULE_PATHNAME', 'tk_remember_claim_heads' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION remember_claim_heads(interval[], timestamptz[], boolean) IS
  'Keeps the delays and heads for this session''s next claims; full_look: found by a full look.';
CREATE OR REPLACE FUNCTION heads_moved() RETURNS trigger AS 'MODULE_PATHNAME', 'tk_heads_moved' LANGUAGE C;
COMMENT ON FUNCTION heads_moved() IS
  'Trigger on tweets: this transaction may have put an X tweet below a claim''s remembered head; '
  'at commit every session''s next claim looks fully.';

CREATE OR REPLACE FUNCTION wake_maintenance() RETURNS void
  AS 'MODULE_PATHNAME', 'tk_wake_maintenance' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION wake_maintenance() IS
  'When the current transaction commits, the background worker looks at the queue again at once '
  '(it otherwise sleeps until the next tweet is due).';

CREATE OR REPLACE FUNCTION preloaded() RETURNS boolean
  AS 'MODULE_PATHNAME', 'tk_preloaded' LANGUAGE C STABLE STRICT;
COMMENT ON FUNCTION preloaded() IS
  'Whether tweetkeeper was loaded through shared_preload_libraries (its background worker runs).';

-- Compacted history (extension/history_codec.hpp): a post's observations over a span in one
-- value, delta-encoded. NULL arrays are empty ones.
CREATE OR REPLACE FUNCTION pack_history(observed_at timestamptz[], lease_id bigint[], retweet_count bigint[],
                             reply_count bigint[], like_count bigint[], quote_count bigint[],
                             bookmark_count bigint[], impression_count bigint[]) RETURNS bytea
  AS 'MODULE_PATHNAME', 'tk_pack_history' LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION pack_history(timestamptz[], bigint[], bigint[], bigint[], bigint[], bigint[], bigint[], bigint[]) IS
  'Packs observations (arrays of one length, in (observed_at, lease_id) order, each once; a count '
  'may be NULL) into compacted history; unpack_history reads them back exactly. 22023 otherwise.';

CREATE OR REPLACE FUNCTION unpack_history(packed bytea)
  RETURNS TABLE (observed_at timestamptz, lease_id bigint, retweet_count bigint, reply_count bigint,
                 like_count bigint, quote_count bigint, bookmark_count bigint, impression_count bigint)
  AS 'MODULE_PATHNAME', 'tk_unpack_history' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE ROWS 20;
COMMENT ON FUNCTION unpack_history(bytea) IS
  'The observations of compacted history, in time order. XX001 for data it cannot read.';

CREATE OR REPLACE FUNCTION merge_history(a bytea, b bytea) RETURNS bytea
  AS 'MODULE_PATHNAME', 'tk_merge_history' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION merge_history(bytea, bytea) IS
  'Both compacted histories'' observations in one, in time order, each once.';

CREATE OR REPLACE FUNCTION history_without(packed bytea, observed_at timestamptz, lease_id bigint) RETURNS bytea
  AS 'MODULE_PATHNAME', 'tk_history_without' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION history_without(bytea, timestamptz, bigint) IS
  'Compacted history without the observation made at observed_at by lease_id.';

-- ==== sql/schema/10_policy.sql
-- The age policy: tweetkeeper.age_policy (how often a tweet of each age is refreshed), its default
-- buckets, and its place in pg_dump (its triggers: sql/replaceable/10_policy.sql).

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

SELECT pg_catalog.pg_extension_config_dump('age_policy', 'WHERE source = ''user''');

-- ==== sql/replaceable/10_policy.sql
-- The age policy's trigger functions (its table and default buckets: sql/schema/10_policy.sql;
-- the triggers themselves: sql/schema/95_triggers.sql).

-- Backups. pg_dump keeps the policy only where it is the user's: the rows CREATE EXTENSION
-- inserts are not dumped while untouched, so a restore does not insert them twice. Once anything
-- in the policy changes, every row becomes the user's (age_policy_adopt), so a dump holds the
-- whole policy; on restore, its first row (the only kind of insert that arrives with source
-- 'user' already set) replaces the rows CREATE EXTENSION inserted (age_policy_before_insert).
CREATE OR REPLACE FUNCTION age_policy_before_insert() RETURNS trigger LANGUAGE plpgsql
  SET search_path = pg_catalog, pg_temp AS $$
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

CREATE OR REPLACE FUNCTION age_policy_adopt() RETURNS trigger LANGUAGE plpgsql
  SET search_path = pg_catalog, pg_temp AS $$
BEGIN
  IF EXISTS (SELECT 1 FROM tweetkeeper.age_policy p WHERE p.source = 'extension') THEN
    UPDATE tweetkeeper.age_policy p SET source = 'user' WHERE p.source = 'extension';
  END IF;
  RETURN NULL;
END $$;
COMMENT ON FUNCTION age_policy_adopt() IS
  'Trigger: once the policy is edited, all of it is the user''s, and pg_dump keeps all of it.';

-- ==== sql/schema/20_queue_tables.sql
-- The queue's state: tracked tweets (tweetkeeper.tweets) and their indexes, the partitioned
-- observation history and its daily rollup, the batches in flight and done, the lease sequence,
-- and the housekeeping log. Every table and sequence that holds users' data is marked with
-- pg_extension_config_dump, so that pg_dump keeps it.

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
  endpoint text,                 -- NULL for X; else who answers for the post: 'bluesky' (getPosts),
                                 --   'bluesky-handle' (its handle is resolved first) or
                                 --   'mastodon:<host>' (the server that holds the status)
  last_change_lease bigint,      -- the batch whose observation last changed a count (or was the first)
  last_billed_lease bigint,      -- the last batch whose read of it X billed
  bucket smallint,               -- tweetkeeper.bucket_of(tweet_id): its shard on Citus (distribute())
  payload_hash bytea,            -- the content hash of its last kept payload (tweetkeeper.payloads),
                                 --   kept by complete_batch(), handed to the worker by the claim
  CONSTRAINT tweets_pkey PRIMARY KEY (tweet_id),
  CONSTRAINT tweets_due_unless_finished CHECK ((state IN ('done', 'deleted')) = (due_at IS NULL)),
  CONSTRAINT tweets_delay_when_due CHECK (due_at IS NULL OR delay IS NOT NULL),
  CONSTRAINT tweets_watch_complete CHECK ((watch_every IS NULL) = (watch_until IS NULL)),
  CONSTRAINT tweets_key_network CHECK ((tweet_id > 0) = (endpoint IS NULL)),
  -- (The worker sends a Mastodon post's requests to its host: only a DNS name as post URLs have it.)
  CONSTRAINT tweets_endpoint_known CHECK (endpoint IN ('bluesky', 'bluesky-handle')
    OR endpoint ~ '^mastodon:(?=.{4,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]([a-z0-9-]{0,61}[a-z0-9])?$')
) WITH (fillfactor = 70, vacuum_truncate = false);
SELECT pg_catalog.pg_extension_config_dump('tweets', '');
-- Every claim and every completion rewrites due_at, so no update is HOT; the spare room per page
-- (fillfactor) at least keeps the new row version on the same heap page. vacuum_truncate off:
-- the queue's tables fill again within seconds of a vacuum; giving their empty tail pages back
-- would take an ACCESS EXCLUSIVE lock (claims and completions wait) only to grow them again
-- (make soak measured batches swinging by 24% around its mean with it on).
COMMENT ON TABLE tweets IS 'Tracked tweets: latest metrics and the next refresh.';
-- The key of every network's posts. X's posts keep their own id: 8 bytes, positive, the key of
-- every 0.2.0 table, index and query. A post of another network is keyed by a negative id that
-- is a hash of what names it there (tweetkeeper.post_id(); post_refs keeps the names): one
-- bigint column still names every post, so every table can be distributed by it (Citus: tweets,
-- history and post_refs colocated by tweet_id), and the id follows from the post itself, so the
-- same post in any spelling finds the same row without a shared counter or a unique index on
-- its name (which a table distributed by tweet_id could not have). The sign says which: X's
-- claim reads only positive ids, each other endpoint only its own negative ones.

-- The claim's indexes, partial, so finished tweets cost nothing here: the due tweets per delay,
-- oldest due first, from which both claim orders read (lateness: the most overdue per delay;
-- due: the oldest due of all, merged over the few delays); watched tweets, which come first.
-- Every claim and completion writes each index whose predicate its tweet meets, so X's due
-- tweets have one (0.2.0 had a second, on due_at alone: a fifth of the floor). And the watches'
-- ends, for maintenance(): without it, min(watch_until) reads the whole table whenever the
-- statistics do not yet say that almost no tweet is watched (a bulk import outruns autovacuum).
-- X's claim indexes hold X's tweets only (tweet_id > 0), so posts of other networks never stand
-- in an X claim's way; those are claimed per endpoint from tweets_endpoint_due_idx.
CREATE INDEX tweets_lateness_idx ON tweets (delay, due_at) WHERE due_at IS NOT NULL AND tweet_id > 0;
CREATE INDEX tweets_watched_idx ON tweets (due_at) WHERE watch_until IS NOT NULL AND tweet_id > 0;
CREATE INDEX tweets_endpoint_due_idx ON tweets (endpoint COLLATE "C", due_at) WHERE due_at IS NOT NULL AND tweet_id < 0;
-- The oldest due Mastodon status of all, whatever its server: claim_posts() asks it first.
CREATE INDEX tweets_mastodon_due_idx ON tweets (due_at)
  WHERE due_at IS NOT NULL AND tweet_id < 0 AND starts_with(endpoint, 'mastodon:');
-- An endpoint's watched posts, which claim_posts() takes first.
CREATE INDEX tweets_endpoint_watched_idx ON tweets (endpoint COLLATE "C", due_at)
  WHERE watch_until IS NOT NULL AND tweet_id < 0;
CREATE INDEX tweets_watch_end_idx ON tweets (watch_until) WHERE watch_until IS NOT NULL;

CREATE TABLE metric_history_hot (
  tweet_id bigint NOT NULL,
  lease_id bigint NOT NULL,      -- the batch that observed it: at most one observation per lease
  observed_at timestamptz NOT NULL,
  retweet_count bigint,
  reply_count bigint,
  like_count bigint,
  quote_count bigint,
  bookmark_count bigint,
  impression_count bigint,
  bucket smallint                -- tweetkeeper.bucket_of(tweet_id), as its tweet's
) PARTITION BY RANGE (observed_at);
SELECT pg_catalog.pg_extension_config_dump('metric_history_hot', '');
COMMENT ON TABLE metric_history_hot IS
  'Observations not compacted yet (read them all through metric_history): one row per refresh '
  'that changed a count (all of them with tweetkeeper.history_keep_unchanged). Partitioned by '
  'observed_at (tweetkeeper.history_partition); each partition''s primary key (tweet_id, '
  'observed_at, lease_id) reads a post''s history in time order. compact_history() moves closed '
  'partitions into metric_history_compact.';
-- The key is each partition's, not the parent's: a parent index would be made on a partition as
-- pg_restore attaches it, before the restore adds the partition's own (dumped) key, and the
-- restore would fail. (The parent is the extension's, its partitions are not.)
-- Partitions are created ahead by tweetkeeper.create_partitions() (housekeeping); a row that finds
-- none (housekeeping stopped for too long) lands here, is never lost, and is moved into its own
-- partition by the next create_partitions().
CREATE TABLE metric_history_default PARTITION OF metric_history_hot (
  CONSTRAINT metric_history_default_pkey PRIMARY KEY (tweet_id, observed_at, lease_id)
) DEFAULT;
SELECT pg_catalog.pg_extension_config_dump('metric_history_default', '');
COMMENT ON TABLE metric_history_default IS
  'Observations no partition covered yet; tweetkeeper.create_partitions() moves them out.';

-- Compacted history: once a partition is closed, compact_history() moves its rows here, one row
-- per post and UTC week (history_span), the week's observations packed together (pack_history:
-- times, leases and counts delta-encoded; about 12 bytes an observation against 150 as a row with
-- its key). Read through metric_history, which unpacks them.
CREATE TABLE metric_history_compact (
  tweet_id bigint NOT NULL,
  span_start timestamptz NOT NULL,  -- the UTC week (Monday 00:00) its observations fall in
  packed bytea NOT NULL,
  bucket smallint,                  -- tweetkeeper.bucket_of(tweet_id), as its tweet's
  CONSTRAINT metric_history_compact_pkey PRIMARY KEY (tweet_id, span_start)
);
SELECT pg_catalog.pg_extension_config_dump('metric_history_compact', '');
COMMENT ON TABLE metric_history_compact IS
  'Compacted history: one row per post and UTC week, its observations packed (unpack_history); '
  'read them through metric_history.';
-- Retention's weeks to drop: every housekeeping run asks whether there are any, and without
-- this index the answer "none" reads the whole table.
CREATE INDEX metric_history_compact_span_idx ON metric_history_compact (span_start);

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
  bucket smallint,               -- tweetkeeper.bucket_of(tweet_id), as its tweet's
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
  endpoint text,                 -- Bluesky and Mastodon: the endpoint it was sent to (tweets.endpoint)
  bucket smallint,               -- a bucket of its tweets' shard (Citus: the batch lives beside them)
  edits_followed integer,        -- X posts its answer showed edited: each one's newest version is
                                 --   tracked from then on (at most one per post of the batch)
  CONSTRAINT batches_pkey PRIMARY KEY (lease_id),
  CONSTRAINT batches_outcome_known
    CHECK (outcome IN ('completed', 'released', 'expired', 'abandoned'))
) WITH (vacuum_truncate = false);  -- as tweets: filled and purged all the time
SELECT pg_catalog.pg_extension_config_dump('batches', '');
CREATE INDEX batches_in_flight_idx ON batches (expires_at) WHERE outcome IS NULL;
CREATE INDEX batches_finished_idx ON batches (finished_at);
COMMENT ON TABLE batches IS
  'One row per claimed batch: in flight, then how it ended. Kept for tweetkeeper.batch_retention.';

-- ==== sql/replaceable/20_queue_tables.sql
-- The history's view and what writes through it (the tables: sql/schema/20_queue_tables.sql;
-- the triggers: sql/schema/95_triggers.sql): metric_history, the one view of the hot and the
-- compacted history, and the function its INSTEAD OF trigger calls.

-- The span of compacted history an observation belongs to.
CREATE OR REPLACE FUNCTION history_span(observed_at timestamptz) RETURNS timestamptz
  LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
  RETURN date_trunc('week', observed_at, 'UTC');

-- Every observation, hot or compacted, with the columns and rows metric_history always had. A
-- post's history is read by its id from both tables' keys. Rows may be inserted (into the hot
-- table) and deleted (from either) as before 0.3.0, by metric_history_write().
CREATE OR REPLACE VIEW metric_history AS
SELECT h.tweet_id, h.lease_id, h.observed_at, h.retweet_count, h.reply_count, h.like_count,
       h.quote_count, h.bookmark_count, h.impression_count
  FROM metric_history_hot h
UNION ALL
SELECT c.tweet_id, u.lease_id, u.observed_at, u.retweet_count, u.reply_count, u.like_count,
       u.quote_count, u.bookmark_count, u.impression_count
  FROM metric_history_compact c CROSS JOIN LATERAL unpack_history(c.packed) u;
COMMENT ON VIEW metric_history IS
  'Observations of posts'' metrics, one row per refresh that changed a count (all of them with '
  'tweetkeeper.history_keep_unchanged): the recent ones (metric_history_hot, partitioned by '
  'observed_at) and the compacted ones (metric_history_compact). Read a post''s history with '
  'WHERE tweet_id = ... ORDER BY observed_at.';

CREATE OR REPLACE FUNCTION metric_history_write() RETURNS trigger
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    INSERT INTO tweetkeeper.metric_history_hot (tweet_id, lease_id, observed_at, retweet_count, reply_count,
                                                like_count, quote_count, bookmark_count, impression_count, bucket)
    VALUES (NEW.tweet_id, NEW.lease_id, NEW.observed_at, NEW.retweet_count, NEW.reply_count, NEW.like_count,
            NEW.quote_count, NEW.bookmark_count, NEW.impression_count,
            CASE WHEN tweetkeeper.shard_count() > 0 THEN tweetkeeper.bucket_of(NEW.tweet_id) END);
    RETURN NEW;
  END IF;
  DELETE FROM tweetkeeper.metric_history_hot h
   WHERE h.tweet_id = OLD.tweet_id AND h.observed_at = OLD.observed_at AND h.lease_id = OLD.lease_id;
  IF NOT FOUND THEN
    -- A compacted observation: its span packed again without it (and gone once empty).
    UPDATE tweetkeeper.metric_history_compact c
       SET packed = tweetkeeper.history_without(c.packed, OLD.observed_at, OLD.lease_id)
     WHERE c.tweet_id = OLD.tweet_id AND c.span_start = tweetkeeper.history_span(OLD.observed_at);
    DELETE FROM tweetkeeper.metric_history_compact c
     WHERE c.tweet_id = OLD.tweet_id AND c.span_start = tweetkeeper.history_span(OLD.observed_at)
       AND NOT EXISTS (SELECT FROM tweetkeeper.unpack_history(c.packed));
  END IF;
  RETURN OLD;
END $$;

-- ==== sql/schema/22_citus.sql
-- Past one machine, on Citus: which buckets each shard holds (the functions that distribute the
-- tables and route claims by shard: sql/replaceable/22_citus.sql).

-- Each shard of the distributed tweets table (1, 2, ... in the order of Citus's shard ids) with
-- the buckets it holds. Written by distribute(); empty on one node. claim_batch() claims from one
-- shard at a time; a lease id carries its shard in its high bits (new_lease()), so completion and
-- release find the batch's shard again. Not users' data (distribute() derives it); dumped all the same, as every table of the extension is.
CREATE TABLE shard_buckets (
  shard integer NOT NULL,
  buckets smallint[] NOT NULL,
  CONSTRAINT shard_buckets_pkey PRIMARY KEY (shard)
);
SELECT pg_catalog.pg_extension_config_dump('shard_buckets', '');
COMMENT ON TABLE shard_buckets IS
  'On Citus (tweetkeeper.distribute()): each shard of tweets and the buckets it holds. Empty on one node.';

-- ==== sql/replaceable/22_citus.sql
-- Past one machine: tweetkeeper on a Citus cluster (tweetkeeper.distribute()). Every table that
-- grows with the posts tracked (tweets, their history, batches, post_refs) is distributed by one
-- column, bucket, a hash of the post's id in 1024 values, and they are colocated: a post's rows,
-- history and batches live on one node. Not by tweet_id itself: Citus locks rows (FOR UPDATE)
-- only in a query routed to one shard, which needs an equality on the distribution column, and
-- a claim asks for "due tweets", not for ids; `bucket = ANY (a shard's buckets)` routes it.
-- On one node bucket stays NULL (every insert asks shard_count() first): not a byte of any row.

-- The bucket of a post: 1024 values, so that any shard count up to that splits them evenly.
CREATE OR REPLACE FUNCTION bucket_of(post_id bigint) RETURNS smallint
  LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
  RETURN (hashint8(post_id) & 1023)::smallint;
COMMENT ON FUNCTION bucket_of(bigint) IS
  'The bucket (0-1023) of a post id: the column tweetkeeper''s tables are distributed by on Citus.';

-- How many shards the claims go round: 0 on one node.
-- (This and lease_buckets() are PL/pgSQL, which keeps its statement's plan for the session: as
-- SQL functions whose body is a subquery they were not inlined, and every claim and completion
-- planned them again, 40 us a call, against 6 us for PL/pgSQL's call with its search_path.)
CREATE OR REPLACE FUNCTION shard_count() RETURNS integer
  LANGUAGE plpgsql STABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
  RETURN (SELECT count(*)::integer FROM tweetkeeper.shard_buckets);
END $$;

-- A new lease id: the sequence's next value, with the shard (0 on one node) in bits 48 and up.
-- On Citus every claim runs on the coordinator, whose sequence alone hands them out.
CREATE OR REPLACE FUNCTION new_lease(shard integer) RETURNS bigint
  LANGUAGE sql VOLATILE
  RETURN (shard::bigint << 48) | nextval('tweetkeeper.lease_id_seq');

-- The buckets of a lease's shard; NULL on one node, or for a lease from before distribute().
CREATE OR REPLACE FUNCTION lease_buckets(lease bigint) RETURNS smallint[]
  LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
  RETURN (SELECT b.buckets FROM tweetkeeper.shard_buckets b WHERE b.shard = (lease >> 48)::integer);
END $$;

-- The shards a claim goes round on Citus, each with its buckets, in turn from the one after this
-- session's last batch (tweetkeeper_claim.next_shard, which claim_batch() and claim_posts() set).
CREATE OR REPLACE FUNCTION shards_in_turn(OUT shard integer, OUT buckets smallint[]) RETURNS SETOF record
  LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
  SELECT b.shard, b.buckets
    FROM tweetkeeper.shard_buckets b, (SELECT count(*)::integer AS n FROM tweetkeeper.shard_buckets) c
   ORDER BY (b.shard + c.n - coalesce(nullif(current_setting('tweetkeeper_claim.next_shard', true), '')::integer,
                                      1 + pg_backend_pid() % c.n)) % c.n $$;

-- Spreads the queue over a Citus cluster: run on the coordinator once the worker nodes are added
-- (citus_add_node). Safe on a queue that holds data, and idempotent: a second call distributes
-- only what is not yet distributed and maps the shards again (after a shard split, say).
-- Distributed and colocated by bucket: tweets, batches, post_refs, metric_history_hot (and its
-- partitions), metric_history_compact, metric_daily. Everything else (policy, credentials,
-- endpoints, housekeeping) stays on the coordinator, where every claim and completion runs:
-- workers connect to the coordinator. Batches in flight are handed back first (their lease ids
-- carry no shard); a worker that completes one later stores nothing, as for an expired lease.
CREATE OR REPLACE FUNCTION distribute(shard_count integer DEFAULT NULL) RETURNS text
  LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  n_workers integer;
  n_shards integer;
  tbl text;
  key text;
  done integer := 0;
  released integer := 0;
  part record;
BEGIN
  IF NOT EXISTS (SELECT FROM pg_extension WHERE extname = 'citus') THEN
    RAISE EXCEPTION 'tweetkeeper.distribute() needs Citus, and the citus extension is not in this database'
      USING ERRCODE = 'object_not_in_prerequisite_state',
            HINT = 'On every node: shared_preload_libraries = ''citus,tweetkeeper''. Here: CREATE EXTENSION '
                   'citus, then SELECT citus_add_node(host, port) for each worker node.';
  END IF;
  IF (SELECT l.groupid FROM pg_dist_local_group l) <> 0 THEN
    RAISE EXCEPTION 'tweetkeeper.distribute() runs on the coordinator, and this is a worker node'
      USING ERRCODE = 'object_not_in_prerequisite_state';
  END IF;
  SELECT count(*) INTO n_workers FROM citus_get_active_worker_nodes();
  IF n_workers = 0 THEN
    RAISE EXCEPTION 'tweetkeeper.distribute() found no worker nodes in this Citus cluster'
      USING ERRCODE = 'object_not_in_prerequisite_state',
            HINT = 'Add them first: SELECT citus_add_node(host, port).';
  END IF;
  IF shard_count IS NOT NULL AND (shard_count < 1 OR shard_count > 1024) THEN
    RAISE EXCEPTION 'shard_count must be between 1 and 1024 (the buckets), got %', shard_count
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  n_shards := coalesce(shard_count, current_setting('citus.shard_count')::integer);
  -- All at once, before anything: the background worker's maintenance() must wait for this, not
  -- read a table that this then alters while maintenance() waits to write it (a deadlock, which
  -- Citus cancels).
  LOCK TABLE tweetkeeper.tweets, tweetkeeper.batches, tweetkeeper.post_refs, tweetkeeper.metric_history_hot,
             tweetkeeper.metric_history_compact, tweetkeeper.metric_daily IN ACCESS EXCLUSIVE MODE;
  -- The shards' row triggers (tweets_heads_moved) run on the worker nodes, where tweetkeeper is
  -- preloaded too: Citus asks for this to distribute a table with triggers.
  PERFORM set_config('citus.enable_unsafe_triggers', 'on', true);
  SELECT string_agg(format('%s:%s: %s', w.nodename, w.nodeport, w.result), '; ') INTO tbl
    FROM run_command_on_workers('SELECT tweetkeeper.shed_node_partitions()') w WHERE NOT w.success;
  IF tbl IS NOT NULL THEN
    RAISE EXCEPTION 'tweetkeeper.distribute(): a worker node is not ready: %', tbl
      USING ERRCODE = 'object_not_in_prerequisite_state';
  END IF;
  IF NOT EXISTS (SELECT FROM pg_dist_partition p WHERE p.logicalrelid = 'tweetkeeper.tweets'::regclass) THEN
    -- Batches in flight: handed back, due now (their lease ids name no shard).
    UPDATE tweetkeeper.tweets t SET due_at = now(), lease_id = NULL WHERE t.lease_id IS NOT NULL;
    UPDATE tweetkeeper.batches b SET outcome = 'released', finished_at = now(), stored = 0, billed = 0,
                                     reason = 'handed back by tweetkeeper.distribute()'
     WHERE b.outcome IS NULL;
    GET DIAGNOSTICS released = ROW_COUNT;
  END IF;
  FOREACH tbl IN ARRAY ARRAY['tweets', 'batches', 'post_refs', 'metric_history_hot', 'metric_history_compact',
                             'metric_daily', 'payloads', 'tombstones', 'edits'] LOOP
    CONTINUE WHEN EXISTS (SELECT FROM pg_dist_partition p WHERE p.logicalrelid = ('tweetkeeper.' || tbl)::regclass);
    -- Rows from before 0.3.0 have no bucket yet.
    IF tbl = 'batches' THEN
      UPDATE tweetkeeper.batches b SET bucket = tweetkeeper.bucket_of(coalesce(b.tweet_ids[1], 0))
       WHERE b.bucket IS NULL;
    ELSE
      EXECUTE format('UPDATE tweetkeeper.%I x SET bucket = tweetkeeper.bucket_of(x.tweet_id) WHERE x.bucket IS NULL', tbl);
    END IF;
    -- Citus's unique keys include the distribution column.
    key := CASE tbl WHEN 'tweets' THEN 'tweet_id' WHEN 'batches' THEN 'lease_id' WHEN 'post_refs' THEN 'tweet_id'
                    WHEN 'metric_history_compact' THEN 'tweet_id, span_start' WHEN 'metric_daily' THEN 'tweet_id, day'
                    WHEN 'payloads' THEN 'tweet_id, seen_at, lease_id' ELSE 'tweet_id' END;
    IF tbl = 'metric_history_hot' THEN
      FOR part IN SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
                   WHERE i.inhparent = 'tweetkeeper.metric_history_hot'::regclass LOOP
        EXECUTE format('ALTER TABLE tweetkeeper.%1$I DROP CONSTRAINT %2$I, ADD CONSTRAINT %2$I PRIMARY KEY (tweet_id, observed_at, lease_id, bucket)',
                       part.relname, part.relname || '_pkey');
      END LOOP;
    ELSE
      EXECUTE format('ALTER TABLE tweetkeeper.%1$I DROP CONSTRAINT %2$I, ADD CONSTRAINT %2$I PRIMARY KEY (%3$s, bucket)',
                     tbl, tbl || '_pkey', key);
    END IF;
    IF tbl = 'tweets' THEN
      PERFORM create_distributed_table('tweetkeeper.tweets', 'bucket', shard_count => n_shards);
    ELSE
      PERFORM create_distributed_table('tweetkeeper.' || tbl, 'bucket', colocate_with => 'tweetkeeper.tweets');
    END IF;
    -- The rows now live in the shards; the coordinator's own copies would only take space.
    PERFORM truncate_local_data_after_distributing_table('tweetkeeper.' || tbl);
    done := done + 1;
  END LOOP;
  DELETE FROM tweetkeeper.shard_buckets;
  INSERT INTO tweetkeeper.shard_buckets (shard, buckets)
  SELECT row_number() OVER (ORDER BY x.shardid), array_agg(x.b ORDER BY x.b)
    FROM (SELECT g::smallint AS b, get_shard_id_for_distribution_column('tweetkeeper.tweets', g::smallint) AS shardid
            FROM generate_series(0, 1023) g) x
   GROUP BY x.shardid;
  RETURN format('%s tables distributed now, %s batches in flight handed back; tweets in %s shards on %s worker nodes',
                done, released, (SELECT count(*) FROM tweetkeeper.shard_buckets), n_workers);
END $$;
COMMENT ON FUNCTION distribute(integer) IS
  'On a Citus coordinator with worker nodes: distributes the queue, its history and batches by '
  'bucket (colocated), and maps the shards for claim_batch(). Idempotent.';

-- On a worker node, before distribute() creates the history's partitions there: the partitions
-- this node's own background worker made while it was not one yet (tweetkeeper 0.2.0 kept house
-- everywhere), which would clash with them. Only empty ones: a node that holds observations of
-- its own is refused, not emptied.
CREATE OR REPLACE FUNCTION shed_node_partitions() RETURNS integer
  LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  part record;
  has_rows boolean;
  n integer := 0;
BEGIN
  IF NOT tweetkeeper.citus_worker_node()
     OR EXISTS (SELECT FROM pg_dist_partition p WHERE p.logicalrelid = 'tweetkeeper.metric_history_hot'::regclass) THEN
    RETURN 0;
  END IF;
  FOR part IN SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
               WHERE i.inhparent = 'tweetkeeper.metric_history_hot'::regclass
                 AND c.relname <> 'metric_history_default' LOOP
    EXECUTE format('SELECT EXISTS (SELECT FROM tweetkeeper.%I)', part.relname) INTO has_rows;
    IF has_rows THEN
      RAISE EXCEPTION 'this worker node holds observations of its own in tweetkeeper.%', part.relname
        USING ERRCODE = 'object_not_in_prerequisite_state',
              HINT = 'A worker node''s tweetkeeper tables must be empty: move what it tracks to the coordinator first.';
    END IF;
    EXECUTE format('DROP TABLE tweetkeeper.%I', part.relname);
    n := n + 1;
  END LOOP;
  RETURN n;
END $$;

-- Whether this database is a Citus worker node: the coordinator keeps house for the whole cluster
-- (maintenance(), housekeeping()); a worker node's background worker leaves its tables, which
-- are Citus's shells and shards, alone.
CREATE OR REPLACE FUNCTION citus_worker_node() RETURNS boolean
  LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
  IF to_regclass('pg_catalog.pg_dist_local_group') IS NULL THEN
    RETURN false;  -- no Citus (the statement below is planned only when it runs)
  END IF;
  RETURN coalesce((SELECT l.groupid > 0 FROM pg_dist_local_group l), false);
END $$;

-- Going back to one node: run once in the database a coordinator's dump was restored into (README
-- "Scaling out", going back). Citus 12.1 undistributes no table an extension owns, so the way back
-- is pg_dump of the coordinator's database, which reads every row through it; restored on a
-- server without Citus, the queue needs only this: the shard map emptied (claims no longer route),
-- and the history partitions the cluster made, which require a bucket (a column of their
-- distributed primary key), made to take rows without one again, as one node writes them.
CREATE OR REPLACE FUNCTION undistribute() RETURNS text
  LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  n_shards integer;
  n_parts integer := 0;
  part regclass;
BEGIN
  IF EXISTS (SELECT FROM pg_extension WHERE extname = 'citus') THEN
    RAISE EXCEPTION 'tweetkeeper.undistribute() runs in the database on one node that a coordinator''s dump was restored into, and this database has Citus'
      USING ERRCODE = 'object_not_in_prerequisite_state',
            HINT = 'pg_dump the coordinator''s database and restore it on a server without Citus first (README: Scaling out).';
  END IF;
  DELETE FROM tweetkeeper.shard_buckets;
  GET DIAGNOSTICS n_shards = ROW_COUNT;
  FOR part IN
    SELECT a.attrelid::regclass FROM pg_inherits i JOIN pg_attribute a ON a.attrelid = i.inhrelid
     WHERE i.inhparent = 'tweetkeeper.metric_history_hot'::regclass AND a.attname = 'bucket' AND a.attnotnull
  LOOP
    EXECUTE format('ALTER TABLE %s ALTER COLUMN bucket DROP NOT NULL', part);
    n_parts := n_parts + 1;
  END LOOP;
  RETURN format('one node again: %s shards unmapped, %s history partitions take rows without a bucket',
                n_shards, n_parts);
END $$;
COMMENT ON FUNCTION undistribute() IS
  'Run once in a database on one node that a Citus coordinator''s dump was restored into: the '
  'queue is one node''s again.';

-- ==== sql/schema/25_credentials.sql
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

-- ==== sql/replaceable/25_credentials.sql
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

-- ==== sql/replaceable/30_schedule.sql
-- Scheduling: every way a tweet comes in (schedule_tweet, schedule_tweets in bulk, a trigger on
-- the user's table), the checks they share, and the delays the age policy gives a tweet.

CREATE OR REPLACE FUNCTION snowflake_time(tweet_id bigint) RETURNS timestamptz
  LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
  RETURN to_timestamp(((tweet_id >> 22) + 1288834974657) / 1000.0);
COMMENT ON FUNCTION snowflake_time(bigint) IS
  'The creation time encoded in a Snowflake tweet id: (id >> 22) + 1288834974657 ms.';

-- Checks one tweet's input; raises the error a caller should see. Shared by every way in.
CREATE OR REPLACE FUNCTION check_tweet(tweet_id bigint, created_at timestamptz) RETURNS void
  LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
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
CREATE OR REPLACE FUNCTION first_delay() RETURNS interval LANGUAGE plpgsql
  STABLE SET search_path = pg_catalog, pg_temp AS $$
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
CREATE OR REPLACE FUNCTION age_delay(created_at timestamptz) RETURNS interval
  LANGUAGE sql STABLE
  RETURN coalesce(tweetkeeper.next_delay(created_at),
                  (SELECT max(p.delay) FROM tweetkeeper.age_policy p));

-- How long until a tweet's next refresh after this one: its watch's interval while the watch
-- lasts, else its age bucket's delay; NULL when it is past the last bucket (done).
CREATE OR REPLACE FUNCTION refresh_delay(created_at timestamptz, watch_every interval, watch_until timestamptz)
  RETURNS interval LANGUAGE sql STABLE
  RETURN CASE WHEN watch_until > now() THEN watch_every ELSE tweetkeeper.next_delay(created_at) END;

-- refresh_delay() with the time and the age policy given, not read: IMMUTABLE, so that Citus lets
-- an UPDATE routed to a worker node compute it there from each row (a STABLE function of a column
-- it refuses), and the node computes it with the coordinator's policy, not its own copy.
-- complete_batch() passes age_policy's max_age and delay columns as arrays.
CREATE OR REPLACE FUNCTION policy_delay(created_at timestamptz, at timestamptz, max_ages interval[], delays interval[])
  RETURNS interval AS 'MODULE_PATHNAME', 'tk_policy_delay' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION policy_delay(timestamptz, timestamptz, interval[], interval[]) IS
  'next_delay() at a given time under a given age policy (its max_age and delay columns as arrays).';
CREATE OR REPLACE FUNCTION refresh_delay_at(created_at timestamptz, watch_every interval, watch_until timestamptz,
                                 at timestamptz, max_ages interval[], delays interval[])
  RETURNS interval LANGUAGE sql IMMUTABLE PARALLEL SAFE
  RETURN CASE WHEN watch_until > at THEN watch_every
              ELSE tweetkeeper.policy_delay(created_at, at, max_ages, delays) END;
-- A time plus a delay, in UTC (so IMMUTABLE, unlike timestamptz + interval, which counts a day
-- in the session's time zone): where a refresh is due.
CREATE OR REPLACE FUNCTION after(t timestamptz, delay interval) RETURNS timestamptz
  LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
  RETURN ((t AT TIME ZONE 'UTC') + delay) AT TIME ZONE 'UTC';

-- Ids from before Snowflake (November 2010) encode no time: their derived time falls within a
-- day of Twitter's epoch, where no Snowflake id exists.
CREATE OR REPLACE FUNCTION derived_created_at(tweet_id bigint) RETURNS timestamptz
  LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
  IF tweet_id IS NOT NULL AND tweet_id > 0 AND (tweet_id >> 22) < 86400000 THEN
    RAISE EXCEPTION 'tweet id % predates Snowflake ids and encodes no creation time', tweet_id
      USING ERRCODE = 'invalid_parameter_value',
            HINT = 'Pass created_at: tweetkeeper.schedule_tweet(id, created_at).';
  END IF;
  RETURN tweetkeeper.snowflake_time(tweet_id);
END $$;

CREATE OR REPLACE FUNCTION schedule_tweet(tweet_id bigint, created_at timestamptz DEFAULT NULL)
  RETURNS boolean LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  c timestamptz := coalesce(created_at, tweetkeeper.derived_created_at(tweet_id));
  distributed boolean := tweetkeeper.shard_count() > 0;  -- bucket: NULL on one node (no byte)
BEGIN
  PERFORM tweetkeeper.check_tweet(tweet_id, c);
  INSERT INTO tweetkeeper.tweets AS t (tweet_id, created_at, due_at, delay, bucket)
  VALUES (tweet_id, c, c + tweetkeeper.first_delay(), tweetkeeper.age_delay(c),
          CASE WHEN distributed THEN tweetkeeper.bucket_of(tweet_id) END)
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
  last interval;
  max_ids integer;
  n_null bigint;
  n_distinct bigint;
  lo bigint;
  hi bigint;
  dup bigint;
  dup_count bigint;
  added bigint;
  distributed boolean := tweetkeeper.shard_count() > 0;  -- bucket: NULL on one node (no byte)
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
  INSERT INTO tweetkeeper.tweets (tweet_id, created_at, due_at, delay, bucket)
  SELECT id, c, c + first, coalesce(tweetkeeper.next_delay(c), last),
         CASE WHEN distributed THEN tweetkeeper.bucket_of(id) END
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
CREATE OR REPLACE FUNCTION schedule_from_trigger() RETURNS trigger LANGUAGE plpgsql
  SET search_path = pg_catalog, pg_temp AS $$
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

-- ==== sql/schema/35_posts.sql
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
  bucket smallint,               -- tweetkeeper.bucket_of(tweet_id), as its post's
  CONSTRAINT post_refs_pkey PRIMARY KEY (tweet_id),
  CONSTRAINT post_refs_id_negative CHECK (tweet_id < 0),
  CONSTRAINT post_refs_network_known CHECK (network IN ('bluesky', 'mastodon'))
);
SELECT pg_catalog.pg_extension_config_dump('post_refs', '');
COMMENT ON TABLE post_refs IS
  'Posts of Bluesky and Mastodon: the author, key and URL behind the negative tweet_id that keys '
  'them in tweets.';

-- ==== sql/replaceable/35_posts.sql
-- Posts of every network: their URLs, as people paste them, read into the network and the key
-- that names the post there by the library's C++ parser (extension/post_url.cpp, which
-- tweetkeeper-import shares: the database and the importer accept and refuse the same URLs); the
-- names behind the ids of Bluesky and Mastodon posts (post_refs); scheduling by URL
-- (schedule_post, schedule_posts); and the view of every tracked post (posts).

CREATE OR REPLACE FUNCTION parse_post_url(url text, OUT network text, OUT host text, OUT author text,
                               OUT post_key text, OUT created_at timestamptz, OUT canonical text)
  RETURNS record AS 'MODULE_PATHNAME', 'tk_parse_post_url' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION parse_post_url(text) IS
  'Reads a post URL: X (https://x.com/<user>/status/<id>, twitter.com, /i/web/status/<id>), '
  'Bluesky (https://bsky.app/profile/<handle or DID>/post/<rkey>, at://<handle or DID>/'
  'app.bsky.feed.post/<rkey>) or Mastodon (https://<host>/@<user>/<id>, https://<host>/users/'
  '<user>/statuses/<id>). Returns the network (x, bluesky, mastodon), the host (Mastodon), the '
  'author, the post''s key, its creation time where the key encodes one (for Bluesky an estimate) '
  'and one canonical spelling. 22023, naming the value and the fault, for anything else.';

-- What names a post on its network, whatever URL it came in: the DID (or handle) and record key
-- on Bluesky, the server and status id on Mastodon (ids are per server; the user is not needed).
CREATE OR REPLACE FUNCTION post_identity(network text, host text, author text, post_key text) RETURNS text
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  RETURN CASE network WHEN 'bluesky' THEN 'bluesky ' || author || ' ' || post_key
                      WHEN 'mastodon' THEN 'mastodon ' || host || ' ' || post_key END;

-- The id of a post of another network: a 63-bit hash of its identity, negative. A different post
-- already holding that id (a collision: about one in 10^10 among a million posts) moves the later
-- one to the next seed; post_ref_id() probes the seeds in order.
CREATE OR REPLACE FUNCTION post_id(identity text, seed integer) RETURNS bigint
  LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
  RETURN -1 - (hashtextextended(identity, seed) & 9223372036854775807);

-- The id of the post named by (network, host, author, post_key): the first seed whose id is free
-- or this post's; known: post_refs has it; tracked: tweets has it too (an operator may have
-- deleted the tweets row).
CREATE OR REPLACE FUNCTION post_ref_id(network text, host text, author text, post_key text,
                            OUT tweet_id bigint, OUT known boolean, OUT tracked boolean)
  LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  identity text := tweetkeeper.post_identity(network, host, author, post_key);
  other text;
  distributed boolean := tweetkeeper.shard_count() > 0;
  bk smallint;  -- on Citus the id's bucket: each look routed to its one shard
BEGIN
  FOR seed IN 0..1000 LOOP
    tweet_id := tweetkeeper.post_id(identity, seed);
    bk := CASE WHEN distributed THEN tweetkeeper.bucket_of(tweet_id) END;
    SELECT tweetkeeper.post_identity(r.network, r.host, r.author, r.post_key) INTO other
      FROM tweetkeeper.post_refs r WHERE r.tweet_id = post_ref_id.tweet_id AND (bk IS NULL OR r.bucket = bk);
    known := FOUND;
    IF NOT FOUND OR other = identity THEN
      tracked := known AND EXISTS (SELECT 1 FROM tweetkeeper.tweets t
                                    WHERE t.tweet_id = post_ref_id.tweet_id AND (bk IS NULL OR t.bucket = bk));
      RETURN;
    END IF;
  END LOOP;
  RAISE EXCEPTION 'no free id for post %', identity USING ERRCODE = 'internal_error';
END $$;

-- Where the post's refreshes go: tweets.endpoint.
CREATE OR REPLACE FUNCTION post_endpoint(network text, host text, author text) RETURNS text
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  RETURN CASE network WHEN 'bluesky' THEN CASE WHEN author LIKE 'did:%' THEN 'bluesky' ELSE 'bluesky-handle' END
                      WHEN 'mastodon' THEN 'mastodon:' || host END;

-- Starts tracking the post of a URL; see the COMMENT. The creation time: the caller's, else the
-- key's (X's and Mastodon's ids; Bluesky's record key, an estimate, no later than now), else
-- now (a post whose key tells nothing is treated as new until its first answer says its age).
CREATE OR REPLACE FUNCTION schedule_post(url text, created_at timestamptz DEFAULT NULL)
  RETURNS boolean LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  p record;
  r record;
  c timestamptz;
  distributed boolean := tweetkeeper.shard_count() > 0;  -- bucket: NULL on one node (no byte)
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
  -- A Bluesky handle resolved before: the post is named by its DID at once.
  p.author := tweetkeeper.post_author(p.network, p.author);
  LOOP
    r := tweetkeeper.post_ref_id(p.network, coalesce(p.host, ''), p.author, p.post_key);
    IF r.tracked THEN
      RETURN false;
    END IF;
    EXIT WHEN r.known;
    -- Another session may take the id first (the same post: then it is tracked; another one
    -- hashed alike: then the next seed is this post's): look again.
    INSERT INTO tweetkeeper.post_refs (tweet_id, network, host, author, post_key, url, bucket)
    VALUES (r.tweet_id, p.network, coalesce(p.host, ''), p.author, p.post_key,
            CASE p.network WHEN 'bluesky' THEN format('https://bsky.app/profile/%s/post/%s', p.author, p.post_key)
                           ELSE p.canonical END, CASE WHEN distributed THEN tweetkeeper.bucket_of(r.tweet_id) END)
    ON CONFLICT ON CONSTRAINT post_refs_pkey DO NOTHING;
    EXIT WHEN FOUND;
  END LOOP;
  INSERT INTO tweetkeeper.tweets (tweet_id, created_at, due_at, delay, endpoint, bucket)
  VALUES (r.tweet_id, c, c + tweetkeeper.first_delay(), tweetkeeper.age_delay(c),
          tweetkeeper.post_endpoint(p.network, p.host, p.author),
          CASE WHEN distributed THEN tweetkeeper.bucket_of(r.tweet_id) END)
  ON CONFLICT ON CONSTRAINT tweets_pkey DO NOTHING;
  IF FOUND THEN
    -- (the background worker, woken at commit, tells the network's workers when it is claimable)
    PERFORM tweetkeeper.wake_maintenance();
    RETURN true;
  END IF;
  RETURN false;
END $$;
COMMENT ON FUNCTION schedule_post(text, timestamptz) IS
  'Starts tracking the post of a URL (see parse_post_url for the forms): an X post as '
  'schedule_tweet, a Bluesky or Mastodon post under a negative id (post_refs). Returns false, '
  'changing nothing, if the post is tracked already, whatever URL it came by.';

-- The posts of other networks among urls, each once (its first spelling), a handle resolved
-- before named by its DID, with its identity and seed-0 id: what schedule_posts() inserts. (A SQL
-- function of one query: the planner inlines it into the statement that reads it.)
CREATE OR REPLACE FUNCTION posts_wanted(urls text[])
  RETURNS TABLE (i bigint, url text, network text, host text, author text, post_key text, canonical text,
                 created_at timestamptz, identity text, id0 bigint)
  LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
  SELECT DISTINCT ON (x.identity) x.*, tweetkeeper.post_id(x.identity, 0) AS id0
    FROM (SELECT a.i, a.url, p.network, coalesce(p.host, '') AS host, au.author, p.post_key, p.canonical,
                 coalesce(least(p.created_at, now()), now()) AS created_at,
                 tweetkeeper.post_identity(p.network, coalesce(p.host, ''), au.author, p.post_key) AS identity
            FROM unnest(urls) WITH ORDINALITY AS a(url, i), tweetkeeper.parse_post_url(a.url) AS p,
                 LATERAL (SELECT tweetkeeper.post_author(p.network, p.author) AS author) au
           WHERE p.network <> 'x') x
   ORDER BY x.identity, x.i $$;

-- schedule_posts()'s posts of other networks on Citus (under its SECURITY DEFINER), where a
-- statement that writes two distributed tables, or reads one in a correlated subquery, is not
-- planned: the single-node statement's steps one statement each, through temporary tables on the
-- coordinator. post_refs is read again after the insert: it says whose each id is. Returns how
-- many posts were added, and the URLs whose seed-0 id another post holds (rest).
CREATE OR REPLACE FUNCTION schedule_posts_distributed(urls text[], OUT added bigint, OUT rest text[])
  LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  ids bigint[];
BEGIN
  CREATE TEMP TABLE tk_want ON COMMIT DROP AS
  SELECT * FROM tweetkeeper.posts_wanted(urls);
  ids := ARRAY(SELECT w.id0 FROM pg_temp.tk_want w);
  INSERT INTO tweetkeeper.post_refs (tweet_id, network, host, author, post_key, url, bucket)
  SELECT w.id0, w.network, w.host, w.author, w.post_key,
         CASE w.network WHEN 'bluesky' THEN format('https://bsky.app/profile/%s/post/%s', w.author, w.post_key)
                        ELSE w.canonical END, tweetkeeper.bucket_of(w.id0)
    FROM pg_temp.tk_want w ORDER BY w.id0
  ON CONFLICT ON CONSTRAINT post_refs_pkey DO NOTHING;
  CREATE TEMP TABLE tk_refs ON COMMIT DROP AS
  SELECT r.tweet_id, tweetkeeper.post_identity(r.network, r.host, r.author, r.post_key) AS identity
    FROM tweetkeeper.post_refs r WHERE r.tweet_id = ANY (ids);
  INSERT INTO tweetkeeper.tweets (tweet_id, created_at, due_at, delay, endpoint, bucket)
  SELECT w.id0, w.created_at, w.created_at + tweetkeeper.first_delay(), tweetkeeper.age_delay(w.created_at),
         tweetkeeper.post_endpoint(w.network, nullif(w.host, ''), w.author), tweetkeeper.bucket_of(w.id0)
    FROM pg_temp.tk_want w JOIN pg_temp.tk_refs r ON r.tweet_id = w.id0 AND r.identity = w.identity
   ORDER BY w.id0
  ON CONFLICT ON CONSTRAINT tweets_pkey DO NOTHING;
  GET DIAGNOSTICS added = ROW_COUNT;
  rest := ARRAY(SELECT w.url FROM pg_temp.tk_want w
                 WHERE NOT EXISTS (SELECT FROM pg_temp.tk_refs r WHERE r.tweet_id = w.id0 AND r.identity = w.identity)
                 ORDER BY w.i);
  DROP TABLE pg_temp.tk_want, pg_temp.tk_refs;
END $$;

-- Many URLs in one statement, all or nothing; a repeated post (in any spelling) counts once.
-- Each pass reads the URLs again (parse_post_url is a few microseconds): nothing to keep between.
CREATE OR REPLACE FUNCTION schedule_posts(urls text[]) RETURNS bigint
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  max_ids integer;
  bad record;
  msg text;
  added bigint := 0;
  u text;
  rest text[];
  distributed boolean := tweetkeeper.shard_count() > 0;  -- bucket: NULL on one node (no byte)
  n bigint;
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
  -- Other networks, set-based (a million URLs take seconds, not a statement per post): each post
  -- once (its first spelling), a handle resolved before named by its DID, under its seed-0 id
  -- when that is free or its own, inserted in id order (one pass over the indexes' pages). The
  -- rare rest (a collision, or a race with another session) goes through schedule_post, which
  -- probes the next seeds.
  IF distributed THEN
    SELECT d.added, d.rest INTO n, rest FROM tweetkeeper.schedule_posts_distributed(urls) d;
    added := added + n;
  ELSE
    WITH want AS (
      SELECT * FROM tweetkeeper.posts_wanted(urls)
    ), cand AS (
      SELECT want.*, (SELECT tweetkeeper.post_identity(r.network, r.host, r.author, r.post_key)
                     FROM tweetkeeper.post_refs r WHERE r.tweet_id = want.id0) AS holder
        FROM want
    ), refs AS (
      INSERT INTO tweetkeeper.post_refs (tweet_id, network, host, author, post_key, url, bucket)
      SELECT cand.id0, cand.network, cand.host, cand.author, cand.post_key,
             CASE cand.network WHEN 'bluesky' THEN format('https://bsky.app/profile/%s/post/%s', cand.author, cand.post_key)
                            ELSE cand.canonical END, CASE WHEN distributed THEN tweetkeeper.bucket_of(cand.id0) END
        FROM cand WHERE cand.holder IS NULL ORDER BY cand.id0
      ON CONFLICT ON CONSTRAINT post_refs_pkey DO NOTHING
      RETURNING tweet_id
    ), added_rows AS (
      INSERT INTO tweetkeeper.tweets (tweet_id, created_at, due_at, delay, endpoint, bucket)
      SELECT cand.id0, cand.created_at, cand.created_at + tweetkeeper.first_delay(), tweetkeeper.age_delay(cand.created_at),
             tweetkeeper.post_endpoint(cand.network, nullif(cand.host, ''), cand.author),
             CASE WHEN distributed THEN tweetkeeper.bucket_of(cand.id0) END
        FROM cand
       WHERE cand.holder = cand.identity OR cand.id0 IN (SELECT refs.tweet_id FROM refs)
       ORDER BY cand.id0
      ON CONFLICT ON CONSTRAINT tweets_pkey DO NOTHING
      RETURNING 1
    )
    SELECT added + (SELECT count(*) FROM added_rows),
           ARRAY(SELECT cand.url FROM cand
                  WHERE cand.holder IS DISTINCT FROM cand.identity AND cand.id0 NOT IN (SELECT refs.tweet_id FROM refs)
                  ORDER BY cand.i)
      INTO added, rest;
  END IF;
  -- The rest: posts whose seed-0 id another post holds (or took meanwhile).
  FOREACH u IN ARRAY rest LOOP
    IF tweetkeeper.schedule_post(u) THEN
      added := added + 1;
    END IF;
  END LOOP;
  IF added > 0 THEN
    PERFORM tweetkeeper.wake_maintenance();  -- (as schedule_post's)
  END IF;
  RETURN added;
END $$;
COMMENT ON FUNCTION schedule_posts(text[]) IS
  'schedule_post for many URLs in one statement, all or nothing (at most '
  'tweetkeeper.max_ids_per_call); a post given twice, in any spelling, counts once. Returns how '
  'many were new. 22023 names the first bad URL and its position.';

-- Every tracked post of every network, as people name them.
CREATE OR REPLACE VIEW posts AS
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

-- ==== sql/schema/37_follows.sql
-- Followed accounts: every new post of each is tracked from its first seconds. A row per account,
-- named as its profile URL named it (a handle), or by the network's stable id (account_id: X's
-- user id, a Bluesky DID, the Mastodon server's account id), which a follower fills in once.
CREATE TABLE followed_accounts (
  follow_id bigint GENERATED BY DEFAULT AS IDENTITY,
  network text NOT NULL,
  host text NOT NULL,              -- Mastodon: the account's own server; X and Bluesky: ''
  handle text,                     -- X: the user name (lower case); Bluesky: the handle; Mastodon: the user
  account_id text,                 -- the network's id of the account; NULL until resolved
  url text NOT NULL,               -- the profile, as parse_profile_url() spells it
  since timestamptz NOT NULL DEFAULT now(),
  status text NOT NULL DEFAULT 'resolving',
  reason text,                     -- why, in the service's words, when missing or private
  checked_at timestamptz,          -- every post of the account made before this was seen
  newest_post_id text,             -- the newest post found (X and Mastodon: the next poll's since_id)
  newest_post_at timestamptz,
  posts_found bigint NOT NULL DEFAULT 0,
  poll_after timestamptz NOT NULL DEFAULT now(),  -- when a follower next reads its new posts
  lease_owner text,                -- the follower reading it now (its name, as it gave it) ...
  lease_pid integer,               -- ... from this database session (pid and start: the lease's
  lease_started timestamptz,       --   holder, as a batch's claimer) ...
  lease_until timestamptz,         -- ... until then, unless it renews the lease
  CONSTRAINT followed_accounts_pkey PRIMARY KEY (follow_id),
  CONSTRAINT followed_accounts_handle_key UNIQUE (network, host, handle),
  CONSTRAINT followed_accounts_named CHECK (handle IS NOT NULL OR account_id IS NOT NULL),
  CONSTRAINT followed_accounts_network_known CHECK (network IN ('x', 'bluesky', 'mastodon')),
  CONSTRAINT followed_accounts_host_known CHECK ((network = 'mastodon') = (host <> '')),
  CONSTRAINT followed_accounts_status_known CHECK (status IN ('resolving', 'following', 'missing', 'private'))
);
CREATE UNIQUE INDEX followed_accounts_account_key ON followed_accounts (network, host, account_id)
  WHERE account_id IS NOT NULL;
SELECT pg_catalog.pg_extension_config_dump('followed_accounts', '');
SELECT pg_catalog.pg_extension_config_dump('followed_accounts_follow_id_seq', '');
COMMENT ON TABLE followed_accounts IS
  'Accounts followed (follow(), unfollow()): each new post of theirs is scheduled with its own '
  'creation time. Read the follows view.';

-- ==== sql/replaceable/37_follows.sql
-- Following accounts: follow(), follow_accounts(), unfollow() and the follows view. The
-- follower processes read and write followed_accounts through their own functions.

CREATE OR REPLACE FUNCTION parse_profile_url(url text, OUT network text, OUT host text, OUT handle text,
                                             OUT account_id text, OUT canonical text)
  RETURNS record AS 'MODULE_PATHNAME', 'tk_parse_profile_url' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION parse_profile_url(text) IS
  'Reads a profile URL as people paste it: https://x.com/<user> (twitter.com too) or '
  'https://x.com/i/user/<id>; https://bsky.app/profile/<handle or DID> or at://<DID>; '
  'https://<server>/@<user>, https://<server>/users/<user>, @<user>@<server>. The scheme may be '
  'left out. Returns the network, the Mastodon server the account lives on, its handle (lower case '
  'on X and Bluesky) or its id where the URL names it, and one spelling of the URL; 22023 naming '
  'the value otherwise.';

-- The profile URL argument of follow() and unfollow(), read: 22004 for NULL, 22023 for no profile.
CREATE OR REPLACE FUNCTION profile_arg(profile_url text, OUT network text, OUT host text, OUT handle text,
                                       OUT account_id text, OUT canonical text)
  LANGUAGE plpgsql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
  IF profile_url IS NULL THEN
    RAISE EXCEPTION 'profile_url must not be NULL' USING ERRCODE = 'null_value_not_allowed';
  END IF;
  SELECT * INTO network, host, handle, account_id, canonical FROM tweetkeeper.parse_profile_url(profile_url);
  host := coalesce(host, '');
END $$;

-- The followed account a profile URL names, by its handle or its id (as profile_arg gives them):
-- what follow() looks for and unfollow() removes.
CREATE OR REPLACE FUNCTION followed_ids(network text, host text, handle text, account_id text) RETURNS SETOF bigint
  LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
  SELECT f.follow_id FROM tweetkeeper.followed_accounts f
   WHERE f.network = followed_ids.network AND f.host = followed_ids.host
     AND (f.handle = followed_ids.handle OR f.account_id = followed_ids.account_id) $$;

CREATE OR REPLACE FUNCTION follow(profile_url text) RETURNS boolean
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  p record := tweetkeeper.profile_arg(profile_url);
BEGIN
  IF EXISTS (SELECT FROM tweetkeeper.followed_ids(p.network, p.host, p.handle, p.account_id)) THEN
    RETURN false;
  END IF;
  INSERT INTO tweetkeeper.followed_accounts (network, host, handle, account_id, url)
  VALUES (p.network, p.host, p.handle, p.account_id, p.canonical)
  ON CONFLICT DO NOTHING;  -- another session followed it first
  RETURN FOUND;
END $$;
COMMENT ON FUNCTION follow(text) IS
  'Follows the account of a profile URL (see parse_profile_url for the forms): each post it makes '
  'from now on is to be tracked from its creation, by a follower process that resolves the account '
  'first. Returns false, changing nothing, if the account is followed already (by its handle or its '
  'id).';

-- Many URLs, all or nothing; a bad one is named by its position. Every URL is read first (no
-- write, so the per-URL exception blocks that find a bad one's position take no transaction id),
-- then each account is followed.
CREATE OR REPLACE FUNCTION follow_accounts(urls text[]) RETURNS bigint
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  a record;
  msg text;
  state text;
  added bigint := 0;
  max_ids integer := current_setting('tweetkeeper.max_ids_per_call')::integer;
BEGIN
  IF urls IS NULL THEN
    RAISE EXCEPTION 'urls must not be NULL' USING ERRCODE = 'null_value_not_allowed';
  END IF;
  IF cardinality(urls) > max_ids THEN
    RAISE EXCEPTION 'urls has % elements, more than tweetkeeper.max_ids_per_call (%)', cardinality(urls), max_ids
      USING ERRCODE = 'program_limit_exceeded', HINT = 'Split the array into several calls.';
  END IF;
  FOR a IN SELECT u.url, u.i FROM unnest(urls) WITH ORDINALITY AS u(url, i) LOOP
    BEGIN
      PERFORM tweetkeeper.profile_arg(a.url);
    EXCEPTION WHEN invalid_parameter_value OR null_value_not_allowed THEN
      GET STACKED DIAGNOSTICS msg = MESSAGE_TEXT, state = RETURNED_SQLSTATE;
      RAISE EXCEPTION 'urls[%]: %', a.i, msg USING ERRCODE = state;
    END;
  END LOOP;
  FOR a IN SELECT u.url FROM unnest(urls) AS u(url) LOOP
    IF tweetkeeper.follow(a.url) THEN
      added := added + 1;
    END IF;
  END LOOP;
  RETURN added;
END $$;
COMMENT ON FUNCTION follow_accounts(text[]) IS
  'Follows the account of each profile URL (as follow()); all or nothing, a bad URL named by its '
  'position. Returns how many accounts were newly followed.';

CREATE OR REPLACE FUNCTION unfollow(profile_url text) RETURNS boolean
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  p record := tweetkeeper.profile_arg(profile_url);
BEGIN
  DELETE FROM tweetkeeper.followed_accounts f
   WHERE f.follow_id IN (SELECT tweetkeeper.followed_ids(p.network, p.host, p.handle, p.account_id));
  RETURN FOUND;
END $$;
COMMENT ON FUNCTION unfollow(text) IS
  'Stops following the account of a profile URL (by its handle or its id). Its posts found so far '
  'stay tracked. Returns whether it was followed.';

CREATE OR REPLACE VIEW follows AS
SELECT f.network, f.account_id AS account, f.handle, nullif(f.host, '') AS host, f.url, f.since, f.posts_found, f.newest_post_at,
       CASE WHEN f.status IN ('resolving', 'following')
            THEN now() - least(coalesce(f.checked_at, f.since), now()) END AS behind,
       f.status, f.reason, CASE WHEN f.lease_until > now() THEN f.lease_owner END AS follower
  FROM tweetkeeper.followed_accounts f;
COMMENT ON VIEW follows IS
  'One row per followed account: its id on the network (NULL until a follower resolved it), handle, '
  'server (Mastodon), since when followed, posts found, the newest one''s time, how far behind the '
  'follower is (now minus the moment up to which every post of the account was seen, or since it '
  'was followed while it is resolving), and its '
  'status: resolving, following, missing (no such account) or private, with the service''s reason; '
  'and the follower process that holds it now, if any.';

-- The followers' side (tweetkeeper_worker). A follower claims accounts under a lease held by its
-- database session, as a batch is: it reads their new posts, and stores what it found with
-- store_follow_posts() in the transaction that schedules them; a lease that runs out (a killed
-- follower) lets another follower take the account.

-- Whether this session holds the lease on a followed account (else 55000, naming it).
CREATE OR REPLACE FUNCTION follow_lease_held(f tweetkeeper.followed_accounts) RETURNS void
  LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
  IF f.follow_id IS NULL THEN
    RAISE EXCEPTION 'no followed account with that follow_id (unfollowed meanwhile?)'
      USING ERRCODE = 'object_not_in_prerequisite_state';
  END IF;
  IF f.lease_pid IS DISTINCT FROM pg_backend_pid() OR f.lease_started IS DISTINCT FROM tweetkeeper.backend_start() THEN
    RAISE EXCEPTION 'followed account % (%) is not leased by this session', f.follow_id, f.url
      USING ERRCODE = 'object_not_in_prerequisite_state',
            HINT = 'Claim it again with claim_follows(); another follower may hold it now.';
  END IF;
END $$;

CREATE OR REPLACE FUNCTION claim_follows(follower text, network text, max_accounts integer,
                                         lease interval DEFAULT '15 seconds', due_only boolean DEFAULT true)
  RETURNS TABLE (follow_id bigint, host text, handle text, account_id text, status text, since timestamptz,
                 checked_at timestamptz, newest_post_id text, posts_found bigint, poll_after timestamptz)
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
  IF follower IS NULL OR network IS NULL OR max_accounts IS NULL OR lease IS NULL OR due_only IS NULL THEN
    RAISE EXCEPTION 'follower, network, max_accounts, lease and due_only must not be NULL'
      USING ERRCODE = 'null_value_not_allowed';
  END IF;
  IF network NOT IN ('x', 'bluesky', 'mastodon') THEN
    RAISE EXCEPTION 'network must be x, bluesky or mastodon, got %', network USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF max_accounts NOT BETWEEN 1 AND 10000 OR lease NOT BETWEEN interval '1 second' AND interval '1 hour' THEN
    RAISE EXCEPTION 'max_accounts must be 1 to 10000 and lease 1 second to 1 hour, got % and %', max_accounts, lease
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  RETURN QUERY
  WITH c AS (
    SELECT f.follow_id FROM tweetkeeper.followed_accounts f
     WHERE f.network = claim_follows.network
       AND (f.lease_until IS NULL OR f.lease_until < now()
            OR (f.lease_pid = pg_backend_pid() AND f.lease_started = tweetkeeper.backend_start()))
       AND (NOT due_only OR f.poll_after <= now())
     ORDER BY f.poll_after, f.follow_id
     LIMIT max_accounts FOR UPDATE SKIP LOCKED)
  UPDATE tweetkeeper.followed_accounts f
     SET lease_owner = follower, lease_pid = pg_backend_pid(), lease_started = tweetkeeper.backend_start(),
         lease_until = now() + lease
    FROM c WHERE f.follow_id = c.follow_id
  RETURNING f.follow_id, nullif(f.host, ''), f.handle, f.account_id, f.status, f.since, f.checked_at, f.newest_post_id,
            f.posts_found, f.poll_after;
END $$;
COMMENT ON FUNCTION claim_follows(text, text, integer, interval, boolean) IS
  'A follower''s claim: up to max_accounts followed accounts of a network, free (or already this '
  'session''s: their leases are renewed), and with due_only due to be read (poll_after: a missing or '
  'private account after tweetkeeper.unavailable_recheck), the longest waiting first, leased to this '
  'database session for lease.';

-- A follower's answer on who an account is: its id and current handle, or that it is missing
-- (no such account, or suspended) or private; a missing or private one is asked about again after
-- tweetkeeper.unavailable_recheck. One row per account: when another row has the same id (the
-- account followed under another name), that row stays, with this answer, and this one goes
-- (false is returned); a row of no id under the same handle names the same account and goes too;
-- a resolved row of another account under that handle (an old name, taken since) loses it.
CREATE OR REPLACE FUNCTION resolve_follow(follow_id bigint, account_id text, handle text, status text,
                                          reason text DEFAULT NULL) RETURNS boolean
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  f tweetkeeper.followed_accounts;
  keep bigint;
  name text := lower(handle);  -- every network's handles are kept in lower case
BEGIN
  IF follow_id IS NULL OR status IS NULL THEN
    RAISE EXCEPTION 'follow_id and status must not be NULL' USING ERRCODE = 'null_value_not_allowed';
  END IF;
  IF status NOT IN ('following', 'missing', 'private') OR (status = 'following' AND account_id IS NULL) THEN
    RAISE EXCEPTION 'status must be following (with an account_id), missing or private, got %', status
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  SELECT * INTO f FROM tweetkeeper.followed_accounts a WHERE a.follow_id = resolve_follow.follow_id FOR UPDATE;
  PERFORM tweetkeeper.follow_lease_held(f);
  IF account_id IS NOT NULL AND f.account_id IS NOT NULL AND f.account_id <> account_id THEN
    RAISE EXCEPTION 'followed account % is % on %, not %', f.follow_id, f.account_id, f.network, account_id
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  -- (Two rows of one account resolved at once: the second waits for the first.)
  IF account_id IS NOT NULL THEN
    PERFORM pg_advisory_xact_lock(hashtextextended(f.network || ' ' || f.host || ' ' || account_id, 0));
  END IF;
  SELECT a.follow_id INTO keep FROM tweetkeeper.followed_accounts a
   WHERE a.network = f.network AND a.host = f.host AND a.account_id = resolve_follow.account_id
     AND a.follow_id <> f.follow_id FOR UPDATE;
  keep := coalesce(keep, f.follow_id);
  IF keep <> f.follow_id THEN
    DELETE FROM tweetkeeper.followed_accounts a WHERE a.follow_id = f.follow_id;
  END IF;
  IF name IS NOT NULL THEN
    DELETE FROM tweetkeeper.followed_accounts a
     WHERE a.network = f.network AND a.host = f.host AND a.handle = name AND a.follow_id <> keep
       AND a.account_id IS NULL AND resolve_follow.account_id IS NOT NULL;
    UPDATE tweetkeeper.followed_accounts a SET handle = NULL
     WHERE a.network = f.network AND a.host = f.host AND a.handle = name AND a.follow_id <> keep;
  END IF;
  UPDATE tweetkeeper.followed_accounts a
     SET account_id = coalesce(resolve_follow.account_id, a.account_id), handle = coalesce(name, a.handle),
         status = resolve_follow.status, reason = resolve_follow.reason,
         poll_after = CASE WHEN resolve_follow.status = 'following' THEN now()
                           ELSE now() + current_setting('tweetkeeper.unavailable_recheck')::interval END
   WHERE a.follow_id = keep;
  RETURN keep = f.follow_id;
END $$;

-- What a follower found of one account: its new posts (URLs and creation times), scheduled here
-- with their own creation times in the caller's transaction, and how far it has read (every post
-- made before checked_until seen; newest_post_id, the next read's since_id). Returns how many
-- posts were new. The lease is kept; poll_after says when to read the account next.
CREATE OR REPLACE FUNCTION store_follow_posts(follow_id bigint, urls text[], created_ats timestamptz[],
                                              newest_post_id text, checked_until timestamptz,
                                              poll_after timestamptz) RETURNS bigint
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  f tweetkeeper.followed_accounts;
  added bigint := 0;
  p record;
  r record;
  msg text;
BEGIN
  IF follow_id IS NULL OR urls IS NULL OR created_ats IS NULL OR checked_until IS NULL OR poll_after IS NULL THEN
    RAISE EXCEPTION 'follow_id, urls, created_ats, checked_until and poll_after must not be NULL'
      USING ERRCODE = 'null_value_not_allowed';
  END IF;
  IF cardinality(urls) <> cardinality(created_ats) THEN
    RAISE EXCEPTION 'urls has % elements and created_ats %: one creation time per post', cardinality(urls),
      cardinality(created_ats) USING ERRCODE = 'invalid_parameter_value';
  END IF;
  SELECT * INTO f FROM tweetkeeper.followed_accounts a WHERE a.follow_id = store_follow_posts.follow_id FOR UPDATE;
  PERFORM tweetkeeper.follow_lease_held(f);
  IF f.account_id IS NULL OR f.status <> 'following' THEN
    RAISE EXCEPTION 'followed account % (%) is %: resolve it first', f.follow_id, f.url, f.status
      USING ERRCODE = 'object_not_in_prerequisite_state';
  END IF;
  FOR p IN SELECT u.url, u.created_at, u.i FROM unnest(urls, created_ats) WITH ORDINALITY AS u(url, created_at, i) LOOP
    IF p.url IS NULL OR p.created_at IS NULL THEN
      RAISE EXCEPTION 'urls[%] or created_ats[%] is NULL', p.i, p.i USING ERRCODE = 'null_value_not_allowed';
    END IF;
    BEGIN
      r := tweetkeeper.parse_post_url(p.url);
    EXCEPTION WHEN invalid_parameter_value THEN
      GET STACKED DIAGNOSTICS msg = MESSAGE_TEXT;
      RAISE EXCEPTION 'urls[%]: %', p.i, msg USING ERRCODE = 'invalid_parameter_value';
    END;
    -- Only the account's own posts, as far as the URL tells: its network, its server, its DID.
    IF r.network <> f.network OR coalesce(r.host, '') <> f.host
       OR (f.network = 'bluesky' AND r.author <> f.account_id)
       OR (f.network = 'mastodon' AND lower(r.author) <> f.handle) THEN
      RAISE EXCEPTION 'urls[%]: % is not a post of % (%)', p.i, p.url, f.url, f.network
        USING ERRCODE = 'invalid_parameter_value';
    END IF;
  END LOOP;
  FOR p IN SELECT u.url, u.created_at FROM unnest(urls, created_ats) AS u(url, created_at) LOOP
    IF tweetkeeper.schedule_post(p.url, p.created_at) THEN
      added := added + 1;
    END IF;
  END LOOP;
  UPDATE tweetkeeper.followed_accounts a
     SET posts_found = a.posts_found + added,
         newest_post_id = coalesce(store_follow_posts.newest_post_id, a.newest_post_id),
         newest_post_at = greatest(a.newest_post_at, (SELECT max(c) FROM unnest(created_ats) AS c)),
         checked_at = greatest(a.checked_at, least(checked_until, now())), poll_after = store_follow_posts.poll_after
   WHERE a.follow_id = f.follow_id;
  RETURN added;
END $$;

-- A follower stopping: its leases end now, so that another takes its accounts at once.
CREATE OR REPLACE FUNCTION release_follows() RETURNS bigint
  LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
BEGIN ATOMIC
  WITH r AS (
    UPDATE tweetkeeper.followed_accounts f SET lease_owner = NULL, lease_pid = NULL, lease_started = NULL,
                                              lease_until = NULL
     WHERE f.lease_pid = pg_backend_pid() AND f.lease_started = tweetkeeper.backend_start()
    RETURNING 1)
  SELECT count(*) FROM r;
END;

-- X bills every post a timeline returns, once per UTC day and credential, as it bills refreshes:
-- what an X follower read of one account (its request, the posts it returned) is counted where a
-- refresh is (daily_usage, the credential's monthly use, each tweet's billed_on/billed_by, so
-- that a refresh the same day with the same credential is not counted billed again). Called in
-- the transaction that stores the posts (they are tracked by then). A refusal that concerns the
-- credential as a whole (usage-capped, rejected) marks it as a refresh's would; the timeline's
-- own window is not the credential's /2/tweets window, and is the follower's to keep. Returns the
-- billed reads.
CREATE OR REPLACE FUNCTION record_follow_read(follow_id bigint, credential text, tweet_ids bigint[],
                                              refusal text DEFAULT NULL, detail text DEFAULT NULL) RETURNS integer
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  f tweetkeeper.followed_accounts;
  -- A token of no registered credential (TWEETKEEPER_BEARER_TOKEN's "default") counts as '', as
  -- a refresh with it does.
  cred text := CASE WHEN EXISTS (SELECT FROM tweetkeeper.credentials c WHERE c.name = credential) THEN credential ELSE '' END;
  today date := (now() AT TIME ZONE 'UTC')::date;
  ids bigint[];
  billed integer;
  known integer;
BEGIN
  IF follow_id IS NULL OR tweet_ids IS NULL THEN
    RAISE EXCEPTION 'follow_id and tweet_ids must not be NULL' USING ERRCODE = 'null_value_not_allowed';
  END IF;
  IF refusal IS NOT NULL AND refusal NOT IN ('usage-capped', 'rejected', 'rate-limited') THEN
    RAISE EXCEPTION 'refusal must be usage-capped, rejected or rate-limited, got %', refusal
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  SELECT * INTO f FROM tweetkeeper.followed_accounts a WHERE a.follow_id = record_follow_read.follow_id FOR UPDATE;
  PERFORM tweetkeeper.follow_lease_held(f);
  IF f.network <> 'x' THEN
    RAISE EXCEPTION 'followed account % is on %: only X bills reads', f.follow_id, f.network
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF refusal IN ('usage-capped', 'rejected') THEN
    PERFORM tweetkeeper.record_quota(credential, NULL, refusal, detail);
  END IF;
  IF refusal IS NOT NULL THEN
    RETURN 0;  -- a refusal returns no posts: billed nothing, and not an answered request
  END IF;
  ids := ARRAY(SELECT DISTINCT i FROM unnest(tweet_ids) AS i WHERE i IS NOT NULL);
  WITH u AS (
    UPDATE tweetkeeper.tweets t
       SET billed_on = today,
           billed_by = CASE WHEN t.billed_on IS DISTINCT FROM today THEN ARRAY[cred] ELSE t.billed_by || cred END
     WHERE t.tweet_id = ANY (ids) AND (t.billed_on IS DISTINCT FROM today OR NOT cred = ANY (t.billed_by))
    RETURNING 1)
  SELECT count(*) INTO billed FROM u;
  -- A returned post not tracked (not stored: not the account's, or unfollowed meanwhile) was billed all the same.
  SELECT count(*) INTO known FROM tweetkeeper.tweets t WHERE t.tweet_id = ANY (ids);
  billed := billed + cardinality(ids) - known;
  INSERT INTO tweetkeeper.daily_usage AS u (day, provider, credential, requests, tweets_read, billed_reads)
  VALUES (today, 'x-v2', cred, 1, cardinality(ids), billed)
  ON CONFLICT ON CONSTRAINT daily_usage_pkey DO UPDATE
     SET requests = u.requests + 1, tweets_read = u.tweets_read + excluded.tweets_read,
         billed_reads = u.billed_reads + excluded.billed_reads;
  UPDATE tweetkeeper.credentials c
     SET month_used = c.month_used + billed, requests = c.requests + 1, last_used_at = now()
   WHERE c.name = cred;
  RETURN billed;
END $$;

-- Whether an X follower may read a timeline with this credential now: not capped or rejected,
-- and its monthly cap leaves room for a full page (100 posts, billed). NULL credential: the
-- single token of TWEETKEEPER_BEARER_TOKEN, which has no registered cap.
CREATE OR REPLACE FUNCTION follow_read_allowed(credential text, OUT allowed boolean, OUT until timestamptz,
                                               OUT reason text)
  LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  c tweetkeeper.credentials;
BEGIN
  allowed := true;
  SELECT * INTO c FROM tweetkeeper.credentials x WHERE x.name = credential;
  IF NOT FOUND THEN
    RETURN;
  END IF;
  IF c.status IN ('capped', 'rejected') AND (c.status_until IS NULL OR c.status_until > now()) THEN
    allowed := false;
    until := c.status_until;
    reason := format('credential %s is %s: %s', c.name, c.status, coalesce(c.status_reason, ''));
  ELSIF c.monthly_cap IS NOT NULL AND c.month_used + 100 > c.monthly_cap THEN
    allowed := false;
    until := tweetkeeper.next_month_utc();
    reason := format('credential %s: %s of its monthly cap of %s billed reads used, no room for a page of 100',
                     c.name, c.month_used, c.monthly_cap);
  END IF;
END $$;

-- A stream's follower (Bluesky's Jetstream) has seen every event up to checked_until for these
-- accounts (all its subscription's, this session's leases): their read position moves there in
-- one statement, so that a reconnection resumes from it without a gap. Returns how many moved.
CREATE OR REPLACE FUNCTION mark_follows_read(follow_ids bigint[], checked_until timestamptz) RETURNS bigint
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  moved bigint;
BEGIN
  IF follow_ids IS NULL OR checked_until IS NULL THEN
    RAISE EXCEPTION 'follow_ids and checked_until must not be NULL' USING ERRCODE = 'null_value_not_allowed';
  END IF;
  UPDATE tweetkeeper.followed_accounts a
     SET checked_at = greatest(a.checked_at, least(checked_until, now()))
   WHERE a.follow_id = ANY (follow_ids) AND a.status = 'following'
     AND a.lease_pid = pg_backend_pid() AND a.lease_started = tweetkeeper.backend_start();
  GET DIAGNOSTICS moved = ROW_COUNT;
  RETURN moved;
END $$;

-- Posts of a followed account that its stream says were deleted (Jetstream's delete events): each
-- tracked one is marked deleted at once, as a refresh that found it gone would (no read spent to
-- learn it): its payloads erased unless tweetkeeper.deleted_payloads = keep, a tombstone that says
-- when. A post in a batch in flight is left to that batch's answer. Returns how many were marked.
CREATE OR REPLACE FUNCTION delete_followed_posts(follow_id bigint, urls text[]) RETURNS bigint
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  f tweetkeeper.followed_accounts;
  erase boolean := current_setting('tweetkeeper.deleted_payloads') = 'erase';
  gone bigint[];
  gone_buckets smallint[];
  erased bigint[];
BEGIN
  IF follow_id IS NULL OR urls IS NULL THEN
    RAISE EXCEPTION 'follow_id and urls must not be NULL' USING ERRCODE = 'null_value_not_allowed';
  END IF;
  SELECT * INTO f FROM tweetkeeper.followed_accounts a WHERE a.follow_id = delete_followed_posts.follow_id;
  PERFORM tweetkeeper.follow_lease_held(f);
  WITH k AS (
    SELECT r.tweet_id
      FROM unnest(urls) AS u(url), tweetkeeper.parse_post_url(u.url) p
      JOIN tweetkeeper.post_refs r ON (r.network, r.host, r.author, r.post_key) = (p.network, coalesce(p.host, ''), p.author, p.post_key)
     -- only the account's own posts
     WHERE p.network = f.network AND (f.network <> 'bluesky' OR p.author = f.account_id)),
  d AS (
    UPDATE tweetkeeper.tweets t
       SET state = 'deleted', due_at = NULL, watch_every = NULL, watch_until = NULL, omissions = 0,
           problem_type = 'resource-not-found', problem_detail = 'deleted (seen on the network''s stream)',
           problem_at = now(), payload_hash = CASE WHEN erase THEN NULL ELSE t.payload_hash END
      FROM k WHERE t.tweet_id = k.tweet_id AND t.lease_id IS NULL AND t.state <> 'deleted'
    RETURNING t.tweet_id, t.bucket)
  SELECT array_agg(d.tweet_id), array_agg(d.bucket) INTO gone, gone_buckets FROM d;
  IF gone IS NULL THEN
    RETURN 0;
  END IF;
  IF erase THEN
    WITH x AS (DELETE FROM tweetkeeper.payloads p WHERE p.tweet_id = ANY (gone) RETURNING p.tweet_id)
    SELECT array_agg(x.tweet_id) INTO erased FROM x;
  END IF;
  INSERT INTO tweetkeeper.tombstones AS x (tweet_id, reason, observed_at, payloads_erased, bucket)
  SELECT g.id, 'resource-not-found', now(), coalesce(cardinality(array_positions(erased, g.id)), 0), g.bucket
    FROM unnest(gone, gone_buckets) AS g(id, bucket)
  ON CONFLICT ON CONSTRAINT tombstones_pkey
    DO UPDATE SET reason = excluded.reason, observed_at = excluded.observed_at,
                  payloads_erased = x.payloads_erased + excluded.payloads_erased;
  RETURN cardinality(gone);
END $$;

-- ==== sql/replaceable/40_claim.sql
-- Claim, complete, release: the worker's API, and the lease that ties them together.
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
-- JIT off (SET jit = off on claim_batch, complete_batch, release_batch, claim_posts,
-- complete_handles, claim_wait and maintenance, and so on everything they call): their statements
-- run on cached generic plans whose row estimates grow with the queue (a LIMIT given by a variable
-- is estimated as a tenth of the table), and past 100,000 in cost PostgreSQL compiled them with
-- LLVM at every call: 15 ms of a 20 ms X claim at 5,000,000 tracked posts, for statements that
-- read a few hundred rows (measured: 20 ms a claim with jit on, 5 ms with it off).
-- A lease also records the database session that claimed it (pid and start time). A worker
-- keeps its connection while it lives, so when that session is gone the background worker
-- hands the batch back within a tick instead of after lease_ttl (tweetkeeper.reclaim_abandoned).

-- The full look of delay_heads(): a loose scan from the start of tweets_lateness_idx, one
-- descent per delay; of one shard's buckets on Citus (claim_in(), which keeps no memory of heads
-- there: the writes that move them run on the worker nodes), of all tweets otherwise (NULL).
-- (PL/pgSQL: Citus cannot plan an SQL function's statements that use its parameters.)
CREATE OR REPLACE FUNCTION full_delay_heads(buckets smallint[], OUT delays interval[], OUT heads timestamptz[])
  LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
  WITH RECURSIVE d(delay, head) AS (
     (SELECT t.delay, t.due_at FROM tweetkeeper.tweets t
       WHERE t.due_at IS NOT NULL AND t.tweet_id > 0 AND (buckets IS NULL OR t.bucket = ANY (buckets))
       ORDER BY t.delay, t.due_at LIMIT 1)
     UNION ALL
     SELECT n.delay, n.due_at
       FROM d CROSS JOIN LATERAL (
         SELECT t.delay, t.due_at FROM tweetkeeper.tweets t
          WHERE t.due_at IS NOT NULL AND t.tweet_id > 0 AND t.delay > d.delay
            AND (buckets IS NULL OR t.bucket = ANY (buckets))
          ORDER BY t.delay, t.due_at LIMIT 1) n)
  SELECT coalesce(array_agg(d.delay ORDER BY d.delay), '{}'), coalesce(array_agg(d.head ORDER BY d.delay), '{}')
    INTO delays, heads FROM d;
END $$;

-- The delays of X's scheduled tweets, each with its head: the oldest due_at among them, or a
-- lower bound of it. From where this session last saw them (claim_heads(): extension/
-- claim_heads.cpp says when that is forgotten), or by a full look: a loose scan from the start of
-- tweets_lateness_idx, one descent per delay (each walks the dead entries at the head of its
-- delay's range, which every claim and completion leave until VACUUM; the remembered heads skip
-- them). claim_batch() and maintenance() read the queue from here. (Heads are kept a second at
-- most: heads_moved(), extension/claim_heads.cpp, relies on that second.)
CREATE OR REPLACE FUNCTION delay_heads(OUT delays interval[], OUT heads timestamptz[])
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
  SELECT h.delays, h.heads INTO delays, heads FROM tweetkeeper.claim_heads(interval '1 second') h;
  IF delays IS NULL THEN
    SELECT f.delays, f.heads INTO delays, heads FROM tweetkeeper.full_delay_heads(NULL) f;
    PERFORM tweetkeeper.remember_claim_heads(delays, heads, true);
  ELSE
    -- Each head as it is now: the first tweet at or after the remembered one (a delay that has
    -- none keeps its head until the next full look).
    SELECT coalesce(array_agg(d.delay ORDER BY d.i), '{}'), coalesce(array_agg(coalesce(n.due_at, d.head) ORDER BY d.i), '{}')
      INTO delays, heads
      FROM unnest(delays, heads) WITH ORDINALITY AS d(delay, head, i)
      LEFT JOIN LATERAL (
        SELECT t.due_at FROM tweetkeeper.tweets t
         WHERE t.due_at IS NOT NULL AND t.tweet_id > 0
           AND (t.delay, t.due_at) >= (d.delay, d.head)
           AND (t.delay, t.due_at) <= (d.delay, 'infinity'::timestamptz)
         ORDER BY t.delay, t.due_at LIMIT 1) n ON true;
    PERFORM tweetkeeper.remember_claim_heads(delays, heads, false);
  END IF;
END $$;
COMMENT ON FUNCTION delay_heads() IS
  'The distinct delays of X''s scheduled tweets, each with the oldest due_at among them (or a lower '
  'bound of it), as claim_batch() and maintenance() read them.';

-- A claim's lease on the rows its locking read returned: each row version where the read found
-- it (a TID scan, no index descent: only this transaction may update a row it locked, so none
-- should have moved), and by key any that was not there.
CREATE OR REPLACE FUNCTION lease_rows(lease bigint, ids bigint[], ctids tid[], expires_at timestamptz,
                           buckets smallint[] DEFAULT NULL) RETURNS void
  LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  n_leased bigint;
BEGIN
  UPDATE tweetkeeper.tweets t SET due_at = expires_at, lease_id = lease
   WHERE t.ctid = ANY (ctids) AND t.tweet_id = ANY (ids) AND (buckets IS NULL OR t.bucket = ANY (buckets));
  GET DIAGNOSTICS n_leased = ROW_COUNT;
  IF n_leased < cardinality(ids) THEN
    UPDATE tweetkeeper.tweets t SET due_at = expires_at, lease_id = lease
     WHERE t.tweet_id = ANY (ids) AND t.lease_id IS DISTINCT FROM lease
       AND (buckets IS NULL OR t.bucket = ANY (buckets));
  END IF;
END $$;

-- claim_in()'s steps; each runs under claim_in()'s search_path and its caller's SECURITY
-- DEFINER, and none is granted to anyone.

-- Which due tweets: watched ones first (tweets_watched_idx), then by tweetkeeper.claim_order.
--  * lateness (default): the most overdue relative to their own delay, (now - due_at) / delay,
--    so that under a shortage every tweet's interval stretches by about the same factor and
--    young tweets stay close to their schedule; nothing starves, as a waiting tweet's lateness
--    only grows.
--  * young: lateness divided by the delay once more, (now - due_at) / delay^2, so that under a
--    shortage the posts with the shortest delays (the youngest, whose curve moves fastest) keep
--    their schedule first and the others' intervals stretch more; nothing starves here either,
--    but a daily post may wait many of its delays while young posts are due.
--  * due: the oldest due first, 0.1.0's order.
-- All are read from one index, tweets_lateness_idx (delay, due_at). delay_heads() gives the
-- few distinct delays and each one's head, its oldest due_at; every read of a delay starts at
-- its head, past the dead entries that every claim and completion leave at the head of their
-- delay's range until VACUUM. When only one
-- delay has due tweets, its most overdue tweets are the answer in any order and are locked
-- straight away. Otherwise each such delay gives at most max_size of its most overdue tweets,
-- and only those (delays x max_size rows) are ranked; that ranking, read without locks, says
-- how many tweets to take from each delay. Locks are taken per delay, most overdue first,
-- skipping those another claim holds, so concurrent claims take successive slices. The locking
-- read also returns what the claim needs of each tweet (its due time, who read it this UTC
-- day, where its row is: a lock holds the row version in place until this transaction
-- updates it, and the content hash of its last kept payload, for the worker), so no claimed
-- tweet is read again, nor looked up in an index, before it is updated.
-- X's tweets only (tweet_id > 0, as X's indexes): other networks' posts are not X's to send.
-- X bills a post once per UTC day: a tweet this credential already read today costs nothing
-- (read_today: per read of a claimed tweet this UTC day, the credential that read it).
-- Returns the locked tweets (held), their due times, row versions and kept payload hashes, per
-- read of them this UTC day the credential that read it (read_today), and how many due tweets a
-- concurrent claim held (skipped).
CREATE OR REPLACE FUNCTION lock_due_tweets(max_size integer, buckets smallint[], claim_order text,
                               OUT held bigint[], OUT held_due timestamptz[], OUT held_ctid tid[],
                               OUT held_hash bytea[], OUT read_today text[], OUT skipped bigint)
  LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  today date := (now() AT TIME ZONE 'UTC')::date;
  got bigint[];
  got_due timestamptz[];
  got_ctid tid[];
  got_hash bytea[];
  got_read text[];
  due_delays interval[];   -- the delays whose most overdue tweet is due, and that tweet's due_at
  due_heads timestamptz[];
  group_sizes bigint[];    -- how many to lock of each
  wanted bigint;
BEGIN
  skipped := 0;
  WITH c AS MATERIALIZED (
    SELECT t.tweet_id, t.due_at, CASE WHEN t.billed_on = today THEN t.billed_by END AS read_by, t.ctid, t.payload_hash
      FROM tweetkeeper.tweets t
     WHERE t.watch_until IS NOT NULL AND t.due_at <= now() AND t.tweet_id > 0 AND (buckets IS NULL OR t.bucket = ANY (buckets))
     ORDER BY t.due_at LIMIT max_size FOR UPDATE SKIP LOCKED)
  SELECT coalesce(array_agg(c.tweet_id), '{}'), coalesce(array_agg(c.due_at), '{}'), coalesce(array_agg(c.ctid), '{}'),
         coalesce(array_agg(c.payload_hash), '{}'),
         ARRAY(SELECT r.name FROM c AS c2 CROSS JOIN LATERAL unnest(c2.read_by) AS r(name))
    INTO held, held_due, held_ctid, held_hash, read_today FROM c;
  IF cardinality(held) < max_size THEN
    IF buckets IS NULL THEN
      SELECT h.delays, h.heads INTO due_delays, due_heads FROM tweetkeeper.delay_heads() h;
    ELSE
      SELECT h.delays, h.heads INTO due_delays, due_heads FROM tweetkeeper.full_delay_heads(buckets) h;
    END IF;
    SELECT coalesce(array_agg(d.delay ORDER BY d.delay), '{}'), coalesce(array_agg(d.head ORDER BY d.delay), '{}')
      INTO due_delays, due_heads FROM unnest(due_delays, due_heads) AS d(delay, head) WHERE d.head <= now();
    IF cardinality(due_delays) = 1 THEN
      group_sizes := ARRAY[max_size - cardinality(held)];
    ELSIF cardinality(due_delays) > 1 THEN
      -- (A range of tweets_lateness_idx written as row comparisons, not delay = d.delay: with an
      -- equality the planner may walk another index instead, filtering on the delay, which for
      -- a rare delay reads past every other due tweet: 0.5 s at 1M.)
      SELECT array_agg(coalesce(r.n, 0) ORDER BY d.i), coalesce(sum(r.n), 0) INTO group_sizes, wanted
        FROM unnest(due_delays) WITH ORDINALITY AS d(delay, i)
        LEFT JOIN (
          SELECT x.delay, count(*) AS n FROM (
            SELECT d.delay
              FROM unnest(due_delays, due_heads) AS d(delay, head) CROSS JOIN LATERAL (
                SELECT t.due_at FROM tweetkeeper.tweets t
                 WHERE t.due_at IS NOT NULL AND t.tweet_id > 0
                   AND (t.delay, t.due_at) >= (d.delay, d.head)
                   AND (t.delay, t.due_at) <= (d.delay, now()) AND t.tweet_id <> ALL (held)
                   AND (buckets IS NULL OR t.bucket = ANY (buckets))
                 ORDER BY t.delay, t.due_at LIMIT max_size - cardinality(held)) c
             ORDER BY CASE claim_order
                        WHEN 'due' THEN extract(epoch FROM now() - c.due_at)
                        WHEN 'young' THEN extract(epoch FROM now() - c.due_at) / greatest(extract(epoch FROM d.delay), 1) ^ 2
                        ELSE extract(epoch FROM now() - c.due_at) / greatest(extract(epoch FROM d.delay), 1)
                      END DESC
             LIMIT max_size - cardinality(held)) x
           GROUP BY x.delay) r ON r.delay = d.delay;
    END IF;
    WITH c AS MATERIALIZED (
      SELECT l.tweet_id, l.due_at, l.read_by, l.ctid, l.payload_hash
        FROM unnest(due_delays, due_heads, group_sizes) AS g(delay, head, n)
        CROSS JOIN LATERAL (
          SELECT t.tweet_id, t.due_at, CASE WHEN t.billed_on = today THEN t.billed_by END AS read_by, t.ctid,
                 t.payload_hash
            FROM tweetkeeper.tweets t
           WHERE t.due_at IS NOT NULL AND t.tweet_id > 0
             AND (t.delay, t.due_at) >= (g.delay, g.head)
             AND (t.delay, t.due_at) <= (g.delay, now()) AND t.tweet_id <> ALL (held)
             AND (buckets IS NULL OR t.bucket = ANY (buckets))
           ORDER BY t.delay, t.due_at LIMIT g.n FOR UPDATE SKIP LOCKED) l
       WHERE g.n > 0)
    SELECT coalesce(array_agg(c.tweet_id), '{}'), coalesce(array_agg(c.due_at), '{}'), coalesce(array_agg(c.ctid), '{}'),
           coalesce(array_agg(c.payload_hash), '{}'),
           ARRAY(SELECT r.name FROM c AS c2 CROSS JOIN LATERAL unnest(c2.read_by) AS r(name))
      INTO got, got_due, got_ctid, got_hash, got_read FROM c;
    IF cardinality(due_delays) = 1 AND cardinality(got) < max_size - cardinality(held) THEN
      -- One delay, fewer locked than asked for: how many of its tweets are due (those another
      -- claim holds were skipped).
      SELECT count(*) INTO wanted
        FROM (SELECT 1 FROM tweetkeeper.tweets t
               WHERE t.due_at IS NOT NULL AND t.tweet_id > 0
                 AND (t.delay, t.due_at) >= (due_delays[1], due_heads[1])
                 AND (t.delay, t.due_at) <= (due_delays[1], now()) AND t.tweet_id <> ALL (held)
                 AND (buckets IS NULL OR t.bucket = ANY (buckets))
               LIMIT max_size - cardinality(held)) x;
    END IF;
    skipped := coalesce(wanted - cardinality(got), 0);
    held := held || got;
    held_due := held_due || got_due;
    held_ctid := held_ctid || got_ctid;
    held_hash := held_hash || got_hash;
    read_today := read_today || got_read;
  END IF;
END $$;

-- claim_batch()'s work, on all tweets (buckets NULL) or on one shard's (Citus: shard, 1-based, is
-- the high bits of the lease id, by which completion and release find the batch's shard again).
CREATE OR REPLACE FUNCTION claim_in(worker text, max_size integer, provider text, credentials text[],
                         buckets smallint[], shard integer)
  RETURNS TABLE (lease_id bigint, tweet_ids bigint[], credential text, wait_until timestamptz,
                 wait_reason text, payload_hashes text[])
  LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  s record := tweetkeeper.settings();
  ids bigint[];
  oldest timestamptz;
  lease bigint;
  cred text;
  quota_mode boolean;
  w record;
  read_today text[];  -- per read of a claimed tweet this UTC day: the credential that read it
  billable integer;
  burst boolean := current_setting('tweetkeeper.spending') = 'burst';
  claim_order text := current_setting('tweetkeeper.claim_order');  -- lateness, young or due
  held bigint[];           -- the locked tweets, their due times and row versions
  held_due timestamptz[];
  held_ctid tid[];
  held_hash bytea[];       -- and their last kept payloads' content hashes (tweets.payload_hash)
  hashes text[];
  skipped bigint;
  l record;
BEGIN
  -- Which due tweets, locked (lock_due_tweets() says how they are chosen).
  l := tweetkeeper.lock_due_tweets(max_size, buckets, claim_order);
  held := l.held;
  held_due := l.held_due;
  held_ctid := l.held_ctid;
  held_hash := l.held_hash;
  read_today := l.read_today;
  skipped := l.skipped;
  -- (The hashes in the order of the ids, hex; NULL when none of them has a payload kept.)
  SELECT array_agg(x.id ORDER BY x.due, x.id), min(x.due),
         CASE WHEN count(x.hash) > 0 THEN array_agg(encode(x.hash, 'hex') ORDER BY x.due, x.id) END
    INTO ids, oldest, hashes
    FROM unnest(held, held_due, held_hash) AS x(id, due, hash);
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

  quota_mode := EXISTS (SELECT 1 FROM tweetkeeper.credentials c WHERE c.provider = claim_in.provider);
  IF quota_mode THEN
    cred := tweetkeeper.choose_credential(claim_in.provider, claim_in.credentials, cardinality(ids), read_today,
                                          burst);
    IF cred IS NULL THEN
      SELECT q.until, q.why INTO w
        FROM tweetkeeper.quota_wait(claim_in.provider, claim_in.credentials, cardinality(ids), read_today) q;
      RETURN QUERY SELECT NULL::bigint, NULL::bigint[], NULL::text,
        greatest(coalesce(w.until, now() + interval '1 minute'), now()),
        coalesce(w.why, format('none of this worker''s credentials (%s) is registered for %s',
                               array_to_string(claim_in.credentials, ', '), claim_in.provider)),
        NULL::text[];
      RETURN;
    END IF;
  END IF;

  billable := cardinality(ids) - cardinality(array_positions(read_today, coalesce(cred, '')));
  lease := tweetkeeper.new_lease(shard);
  PERFORM tweetkeeper.lease_rows(lease, ids, held_ctid, now() + s.lease_ttl, buckets);
  INSERT INTO tweetkeeper.batches (lease_id, worker, tweet_ids, size, oldest_due_at, claimed_at,
                                   expires_at, credential, claimer_pid, claimer_started, billable,
                                   provider, bucket)
  VALUES (lease, worker, ids, cardinality(ids), oldest, now(), now() + s.lease_ttl, cred,
          pg_backend_pid(), tweetkeeper.backend_start(), billable, claim_in.provider,
          CASE WHEN buckets IS NOT NULL THEN tweetkeeper.bucket_of(ids[1]) END);
  RETURN QUERY SELECT lease, ids, cred, NULL::timestamptz, NULL::text, hashes;
END $$;

-- Hands out up to max_size due tweets, oldest due first, under a new lease, together with a
-- credential that still has quota (when credentials are registered for the provider): one
-- request of its window is spent here, atomically with the claim, so any number of workers
-- together never exceed it. Returns no row when nothing may be sent now: nothing due, or fewer
-- than max_size due and the oldest of them due for less than tweetkeeper.buffer_ttl. Returns a
-- row with lease_id NULL, wait_until and wait_reason when tweets are due but no credential
-- among `credentials` (the names the worker holds tokens for; NULL: any) has quota.
-- payload_hashes: for each of tweet_ids, the hex content hash of its last kept payload (NULL:
-- none kept; the whole array NULL when none of them has one), so that a worker hands on only
-- payloads that differ (tweetkeeper.payloads); taken by the claim's locking read, with no lookup
-- of its own.
CREATE OR REPLACE FUNCTION claim_batch(worker text, max_size integer DEFAULT 100,
                            provider text DEFAULT 'x-v2', credentials text[] DEFAULT NULL)
  RETURNS TABLE (lease_id bigint, tweet_ids bigint[], credential text, wait_until timestamptz,
                 wait_reason text, payload_hashes text[])
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp SET jit = off AS $$
DECLARE
  n_shards integer := tweetkeeper.shard_count();
  sh record;
BEGIN
  IF worker IS NULL OR worker = '' THEN
    RAISE EXCEPTION 'worker must be a non-empty name' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF max_size IS NULL OR max_size < 1 OR max_size > 100 THEN
    RAISE EXCEPTION 'max_size must be between 1 and 100, got %', coalesce(max_size::text, 'NULL')
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF provider IN ('bluesky', 'mastodon') THEN
    RAISE EXCEPTION 'provider must be x-v2 or x-v1.1, got %', provider USING ERRCODE = 'invalid_parameter_value',
      HINT = 'Posts of Bluesky and Mastodon are claimed with tweetkeeper.claim_posts().';
  ELSIF provider IS NULL OR provider NOT IN ('x-v2', 'x-v1.1') THEN
    RAISE EXCEPTION 'provider must be x-v2 or x-v1.1, got %', coalesce(provider, 'NULL')
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF n_shards = 0 THEN
    RETURN QUERY SELECT * FROM tweetkeeper.claim_in(worker, max_size, provider, credentials, NULL, 0);
    RETURN;
  END IF;
  -- On Citus (tweetkeeper.distribute()) a claim's row locks must be routed to one shard: the
  -- shards in turn, from the one after this session's last batch, until one has a batch to send
  -- (or quota says wait). A batch is as full as its shard's due tweets allow.
  FOR sh IN SELECT * FROM tweetkeeper.shards_in_turn() LOOP
    RETURN QUERY SELECT * FROM tweetkeeper.claim_in(worker, max_size, provider, credentials, sh.buckets, sh.shard);
    IF FOUND THEN
      PERFORM set_config('tweetkeeper_claim.next_shard', (1 + sh.shard % n_shards)::text, false);
      RETURN;
    END IF;
  END LOOP;
END $$;
COMMENT ON FUNCTION claim_batch(text, integer, text, text[]) IS
  'Claims up to max_size (1-100) due tweets under a new lease (see tweetkeeper.lease_ttl) and, '
  'when credentials are registered, one request of a credential''s quota; with the content hashes '
  'of their last kept payloads.';

-- complete_batch()'s steps. Each runs under complete_batch()'s SECURITY DEFINER and search_path,
-- with the batch's row locked (b) and its tweets' rows as the lease left them; none is granted to
-- anyone. at_now is complete_batch()'s now(); ages and delays the age policy, read once
-- (refresh_delay_at: on Citus a statement on tweets may evaluate no STABLE function of a column).

-- The observations: each of our tweets updated once, its history and payload kept. Returns how
-- many were stored and billed, and the X posts found edited with their newest versions.
CREATE OR REPLACE FUNCTION store_observations(lease bigint, observations jsonb, batch_ids bigint[],
                               batch_credential text, buckets smallint[], keep_payloads text, keep_all boolean,
                               at_now timestamptz, ages interval[], delays interval[],
                               OUT n_observed integer, OUT n_billed integer, OUT edited bigint[],
                               OUT newest bigint[])
  LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  today date := (at_now AT TIME ZONE 'UTC')::date;
  ids bigint[];
  rts bigint[];
  rps bigint[];
  lks bigint[];
  qts bigint[];
  bms bigint[];
  ims bigint[];
  changed boolean[];
  bkts smallint[];
  pays jsonb[];
  authors jsonb[];
  hashes bytea[];
BEGIN
  -- One update of each of our tweets, which also decides from the row as it was: billed (a found
  -- tweet this batch's credential had not read yet this UTC day) and changed (a count differs
  -- from the stored one, or it is the first observation), kept on the row as the lease that
  -- last did so (last_billed_lease, last_change_lease: RETURNING sees only the new row, and a
  -- second read of each tweet before the update would cost a third of the completion); history
  -- stores only changed observations unless keep_all.
  -- A count the answer did not give (NULL) keeps the tweet's last known value; history records
  -- it as NULL: not reported (observations_in() reads the answer).
  WITH upd AS (
    UPDATE tweetkeeper.tweets t
       SET last_billed_lease = CASE  -- X bills; Bluesky and Mastodon do not
             WHEN t.tweet_id > 0 AND (t.billed_on IS DISTINCT FROM today
                                      OR NOT coalesce(batch_credential, '') = ANY (t.billed_by))
             THEN lease ELSE t.last_billed_lease END,
           last_change_lease = CASE
             WHEN t.update_count = 0
               OR (o.retweet_count IS NOT NULL AND o.retweet_count IS DISTINCT FROM t.retweet_count)
               OR (o.reply_count IS NOT NULL AND o.reply_count IS DISTINCT FROM t.reply_count)
               OR (o.like_count IS NOT NULL AND o.like_count IS DISTINCT FROM t.like_count)
               OR (o.quote_count IS NOT NULL AND o.quote_count IS DISTINCT FROM t.quote_count)
               OR (o.bookmark_count IS NOT NULL AND o.bookmark_count IS DISTINCT FROM t.bookmark_count)
               OR (o.impression_count IS NOT NULL AND o.impression_count IS DISTINCT FROM t.impression_count)
             THEN lease ELSE t.last_change_lease END,
           billed_on = CASE WHEN t.tweet_id > 0 THEN today END,
           billed_by = CASE WHEN t.tweet_id < 0 THEN NULL
                            WHEN t.billed_on IS DISTINCT FROM today THEN ARRAY[coalesce(batch_credential, '')]
                            WHEN coalesce(batch_credential, '') = ANY (t.billed_by) THEN t.billed_by
                            ELSE t.billed_by || coalesce(batch_credential, '') END,
           retweet_count = coalesce(o.retweet_count, t.retweet_count),
           reply_count = coalesce(o.reply_count, t.reply_count),
           like_count = coalesce(o.like_count, t.like_count),
           quote_count = coalesce(o.quote_count, t.quote_count),
           bookmark_count = coalesce(o.bookmark_count, t.bookmark_count),
           impression_count = coalesce(o.impression_count, t.impression_count),
           updated_at = at_now, update_count = t.update_count + 1, lease_id = NULL, omissions = 0,
           -- A creation time from the answer moves the post to its true age's delay from now on.
           created_at = coalesce(o.created_at, t.created_at),
           -- An edited post is done: its newest version is refreshed in its place (edits).
           due_at = CASE WHEN NOT o.edited
                         THEN tweetkeeper.after(at_now, tweetkeeper.refresh_delay_at(coalesce(o.created_at, t.created_at),
                                                  t.watch_every, t.watch_until, at_now, ages, delays)) END,
           state = CASE WHEN o.edited OR tweetkeeper.refresh_delay_at(coalesce(o.created_at, t.created_at), t.watch_every,
                                                                     t.watch_until, at_now, ages, delays) IS NULL
                        THEN 'done'::tweetkeeper.tweet_state ELSE 'scheduled' END,
           delay = coalesce(tweetkeeper.refresh_delay_at(coalesce(o.created_at, t.created_at), t.watch_every,
                                                         t.watch_until, at_now, ages, delays),
                            t.delay),
           -- An expired watch ends here: the tweet is back on its age schedule.
           watch_every = CASE WHEN t.watch_until > at_now THEN t.watch_every END,
           watch_until = CASE WHEN t.watch_until > at_now THEN t.watch_until END,
           problem_type = CASE WHEN o.edited THEN 'edited' WHEN o.invalid IS NOT NULL THEN 'invalid-count' END,
           problem_detail = CASE WHEN o.edited THEN 'newest version: ' || o.newest_id
                                 ELSE 'not stored, the last known kept: ' || o.invalid END,
           problem_at = CASE WHEN o.edited OR o.invalid IS NOT NULL THEN at_now END,
           -- What the next claim hands the worker: the hash of the last kept payload (the
           -- payloads insert below keeps this one, or the last kept has this hash); under first,
           -- that one is kept.
           payload_hash = CASE WHEN o.content_hash IS NOT NULL AND (keep_payloads = 'changed' OR t.payload_hash IS NULL)
                               THEN o.content_hash ELSE t.payload_hash END
      FROM tweetkeeper.observations_in(observations, batch_ids, keep_payloads) o
     WHERE t.tweet_id = o.id AND t.lease_id = lease AND (buckets IS NULL OR t.bucket = ANY (buckets))
    RETURNING t.tweet_id, o.retweet_count, o.reply_count, o.like_count, o.quote_count,
              o.bookmark_count, o.impression_count, t.last_billed_lease = lease AS billed,
              t.last_change_lease = lease AS changed, t.bucket, o.payload, o.author, o.content_hash, o.edited, o.newest_id
  )
  -- (What the update returned, as arrays for the statements below: each of them, and this one,
  -- touches one table, so that on Citus each is routed whole to the batch's shard, where a chain
  -- of data-modifying CTEs over several tables is planned step by step with its intermediate
  -- results sent between nodes.)
  SELECT array_agg(u.tweet_id), array_agg(u.retweet_count), array_agg(u.reply_count), array_agg(u.like_count),
         array_agg(u.quote_count), array_agg(u.bookmark_count), array_agg(u.impression_count),
         array_agg(u.changed), array_agg(u.bucket), array_agg(u.payload), array_agg(u.author), array_agg(u.content_hash),
         count(*), count(*) FILTER (WHERE u.billed),
         array_agg(u.tweet_id) FILTER (WHERE u.edited), array_agg(u.newest_id) FILTER (WHERE u.edited)
    INTO ids, rts, rps, lks, qts, bms, ims, changed, bkts, pays, authors, hashes, n_observed, n_billed, edited, newest
    FROM upd u;
  IF n_observed = 0 THEN
    RETURN;
  END IF;
  INSERT INTO tweetkeeper.metric_history_hot (tweet_id, lease_id, observed_at, retweet_count,
              reply_count, like_count, quote_count, bookmark_count, impression_count, bucket)
  SELECT u.id, lease, at_now, u.rt, u.rp, u.lk, u.qt, u.bm, u.im, u.bucket
    FROM unnest(ids, rts, rps, lks, qts, bms, ims, changed, bkts) AS u(id, rt, rp, lk, qt, bm, im, changed, bucket)
   WHERE u.changed OR keep_all;
  IF keep_payloads <> 'none' AND EXISTS (SELECT FROM unnest(pays) AS x(p) WHERE x.p IS NOT NULL) THEN
    -- Payloads (tweetkeeper.payloads): a post's first, or each one whose content differs from
    -- its last stored one (payload_content(): not the counts), compared by hash.
    INSERT INTO tweetkeeper.payloads (tweet_id, seen_at, lease_id, content_hash, payload, author, bucket)
    SELECT u.id, at_now, lease, u.hash, u.payload, u.author, u.bucket
      FROM unnest(ids, pays, authors, hashes, bkts) AS u(id, payload, author, hash, bucket)
     WHERE u.payload IS NOT NULL
       AND CASE WHEN keep_payloads = 'first'
                THEN NOT EXISTS (SELECT 1 FROM tweetkeeper.payloads p
                                  WHERE p.tweet_id = u.id AND (buckets IS NULL OR p.bucket = ANY (buckets)))
                ELSE (SELECT p.content_hash FROM tweetkeeper.payloads p
                       WHERE p.tweet_id = u.id AND (buckets IS NULL OR p.bucket = ANY (buckets))
                       ORDER BY p.seen_at DESC, p.lease_id DESC LIMIT 1) IS DISTINCT FROM u.hash END;
  END IF;
  -- A post seen again is no longer gone.
  DELETE FROM tweetkeeper.tombstones x
   WHERE x.tweet_id = ANY (ids) AND (buckets IS NULL OR x.bucket = ANY (buckets));
END $$;

-- Each edited post's newest version is tracked from now on, on its own age schedule (each
-- version has its own counts); the old one is done, linked to it.
CREATE OR REPLACE FUNCTION link_edits(edited bigint[], newest bigint[], at_now timestamptz, buckets smallint[])
  RETURNS void LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
  INSERT INTO tweetkeeper.edits (tweet_id, newest_id, seen_at, bucket)
  SELECT e.id, e.newest, at_now, CASE WHEN buckets IS NOT NULL THEN tweetkeeper.bucket_of(e.id) END
    FROM unnest(edited, newest) AS e(id, newest)
  ON CONFLICT ON CONSTRAINT edits_pkey DO UPDATE SET newest_id = excluded.newest_id, seen_at = excluded.seen_at;
  PERFORM tweetkeeper.schedule_tweets(ARRAY(SELECT DISTINCT unnest(newest)));
END $$;

-- Per-id problems (complete_batch() calls this only when there are some). Deleted: stop, keep
-- the last metrics and when it vanished. Hidden (protected, suspended): keep the last metrics,
-- look again after unavailable_recheck. Anything else is recorded and the tweet stays on its
-- schedule.
CREATE OR REPLACE FUNCTION store_problems(lease bigint, problems jsonb, batch_ids bigint[], buckets smallint[],
                               erase boolean, recheck interval, at_now timestamptz, ages interval[],
                               delays interval[])
  RETURNS integer LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  n_problems integer;
  gone_ids bigint[];       -- the posts gone (deleted or unavailable), their types and buckets
  gone_types text[];
  gone_buckets smallint[];
  erased bigint[];         -- per payload erased, its post
BEGIN
  -- (Statements of one table each, as store_observations(): on Citus each is routed whole to
  -- the batch's shard.)
  WITH p AS (
    SELECT DISTINCT ON (x.id) x.id, x.type, x.detail,
           CASE WHEN x.type = 'resource-not-found' THEN 'deleted'::tweetkeeper.tweet_state
                -- v1.1 answers null for deleted and hidden alike: keep asking, rarely.
                WHEN x.type IN ('not-authorized-for-resource', 'resource-unavailable',
                                'disallowed-resource', 'v1.1-missing') THEN 'unavailable'
                -- A key the API refuses outright (Bluesky: "uris/3 must be a valid at-uri"):
                -- asked again only as rarely as a hidden post, in case the API's rules change.
                WHEN x.type = 'invalid-key' THEN 'missing'
           END AS terminal
      FROM jsonb_to_recordset(problems) AS x(id bigint, type text, detail text)
     WHERE x.id = ANY (batch_ids)
  ), u AS (
  UPDATE tweetkeeper.tweets t
     SET state = coalesce(p.terminal,
                          CASE WHEN tweetkeeper.refresh_delay_at(t.created_at, t.watch_every, t.watch_until,
                                                                 at_now, ages, delays) IS NULL
                               THEN 'done'::tweetkeeper.tweet_state ELSE 'scheduled' END),
         due_at = CASE WHEN p.terminal IN ('unavailable', 'missing') THEN tweetkeeper.after(at_now, recheck)
                       WHEN p.terminal IS NULL
                         THEN tweetkeeper.after(at_now, tweetkeeper.refresh_delay_at(t.created_at, t.watch_every,
                                                          t.watch_until, at_now, ages, delays)) END,
         delay = CASE WHEN p.terminal IN ('unavailable', 'missing') THEN recheck
                      ELSE coalesce(tweetkeeper.refresh_delay_at(t.created_at, t.watch_every, t.watch_until,
                                                                 at_now, ages, delays), t.delay) END,
         -- A watch ends with the tweet's visibility, or when it expired.
         watch_every = CASE WHEN p.terminal IS NULL AND t.watch_until > at_now THEN t.watch_every END,
         watch_until = CASE WHEN p.terminal IS NULL AND t.watch_until > at_now THEN t.watch_until END,
         lease_id = NULL, omissions = 0,
         problem_type = coalesce(p.type, 'unknown'), problem_detail = p.detail, problem_at = at_now,
         -- Its payloads erased below (gone): none kept, so the next one seen is kept.
         payload_hash = CASE WHEN erase AND p.terminal IN ('deleted', 'unavailable') THEN NULL ELSE t.payload_hash END
    FROM p
   WHERE t.tweet_id = p.id AND t.lease_id = lease AND (buckets IS NULL OR t.bucket = ANY (buckets))
  RETURNING t.tweet_id, p.terminal, coalesce(p.type, 'unknown') AS type, t.bucket
  )
  SELECT count(*), array_agg(u.tweet_id) FILTER (WHERE u.terminal IN ('deleted', 'unavailable')),
         array_agg(u.type) FILTER (WHERE u.terminal IN ('deleted', 'unavailable')),
         array_agg(u.bucket) FILTER (WHERE u.terminal IN ('deleted', 'unavailable'))
    INTO n_problems, gone_ids, gone_types, gone_buckets FROM u;
  IF gone_ids IS NOT NULL THEN
    -- Deleted or unavailable: its payloads go (X's terms: stored content follows deletions),
    -- unless tweetkeeper.deleted_payloads = keep; a tombstone says when and why.
    IF erase THEN
      WITH gone AS (
        DELETE FROM tweetkeeper.payloads x
         WHERE x.tweet_id = ANY (gone_ids) AND (buckets IS NULL OR x.bucket = ANY (buckets))
        RETURNING x.tweet_id)
      SELECT array_agg(g.tweet_id) INTO erased FROM gone g;
    END IF;
    INSERT INTO tweetkeeper.tombstones AS x (tweet_id, reason, observed_at, payloads_erased, bucket)
    SELECT g.id, g.type, at_now, coalesce(cardinality(array_positions(erased, g.id)), 0), g.bucket
      FROM unnest(gone_ids, gone_types, gone_buckets) AS g(id, type, bucket)
    ON CONFLICT ON CONSTRAINT tombstones_pkey
      DO UPDATE SET reason = excluded.reason, observed_at = excluded.observed_at,
                    payloads_erased = x.payloads_erased + excluded.payloads_erased;
  END IF;
  RETURN n_problems;
END $$;

  -- Ids the answer left out: neither found nor an error (tweets of a lease taken over are
  -- not ours any more and are left alone). Asking again at once would spend a request on
  -- each, every buffer TTL, without end if the API never mentions the id. So: not before the
  -- tweet's normal delay, doubled at each omission in a row (at most unavailable_recheck, if
  -- that is longer); at the missing_after-th in a row it is 'missing', rechecked every
  -- unavailable_recheck like an unavailable tweet. An answer that mentions it again resets
  -- the count. The doubling is done in seconds: an interval would overflow long before.
CREATE OR REPLACE FUNCTION put_off_omitted(lease bigint, batch_ids bigint[], buckets smallint[],
                               missing_after integer, recheck interval, at_now timestamptz,
                               ages interval[], delays interval[])
  RETURNS integer LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  n_omitted integer;
BEGIN
  WITH o AS (
    SELECT x.tweet_id, x.n,
           CASE WHEN x.n >= missing_after OR x.state IN ('unavailable', 'missing') THEN recheck
                ELSE make_interval(secs => greatest(x.base_s, least(extract(epoch FROM recheck)::float8,
                                                                    x.base_s * power(2, least(x.n - 1, 60)))))
           END AS wait
      FROM (SELECT t.tweet_id, t.omissions + 1 AS n, t.state,
                   extract(epoch FROM coalesce(tweetkeeper.refresh_delay_at(t.created_at, t.watch_every,
                                                 t.watch_until, at_now, ages, delays), t.delay))::float8 AS base_s
              FROM tweetkeeper.tweets t
             WHERE t.tweet_id = ANY (batch_ids) AND t.lease_id = lease
               AND (buckets IS NULL OR t.bucket = ANY (buckets))) x
  )
  UPDATE tweetkeeper.tweets t
     SET omissions = o.n,
         state = CASE WHEN o.n >= missing_after THEN 'missing'::tweetkeeper.tweet_state ELSE t.state END,
         due_at = tweetkeeper.after(at_now, o.wait), delay = o.wait, lease_id = NULL,
         -- A watch ends when the tweet is missing, or when it expired meanwhile (as above).
         watch_every = CASE WHEN o.n < missing_after AND t.watch_until > at_now THEN t.watch_every END,
         watch_until = CASE WHEN o.n < missing_after AND t.watch_until > at_now THEN t.watch_until END,
         problem_type = 'omitted',
         problem_detail = 'left out of ' || o.n::text || ' answer(s) in a row', problem_at = at_now
    FROM o
   WHERE t.tweet_id = o.tweet_id AND t.lease_id = lease AND (buckets IS NULL OR t.bucket = ANY (buckets));
  GET DIAGNOSTICS n_omitted = ROW_COUNT;
  RETURN n_omitted;
END $$;

-- Whether this session holds batch b, to complete or release it. A lease belongs to the session
-- that claimed it (its pid and start time, as the claim recorded them): another session's call is
-- refused (42501) while that one lives, so that no worker can store into, release, or spend the
-- credential of another's batch. A claimer that is gone (a worker that lost its connection and
-- calls again from a new one) finds its batch handed back here, as maintenance() would at its
-- next tick: false, and nothing more happens. Batches claimed before 0.2.0 name no session; with
-- tweetkeeper.reclaim_abandoned off (a connection pooler in transaction mode, where sessions are
-- not workers) the lease id alone fences, as before.
CREATE OR REPLACE FUNCTION lease_holder(b tweetkeeper.batches, buckets smallint[]) RETURNS boolean
  LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
  IF b.claimer_pid IS NULL OR (b.claimer_pid = pg_backend_pid() AND b.claimer_started = tweetkeeper.backend_start())
     OR NOT current_setting('tweetkeeper.reclaim_abandoned')::boolean THEN
    RETURN true;
  END IF;
  IF tweetkeeper.backend_alive(b.claimer_pid, b.claimer_started) THEN
    RAISE EXCEPTION 'lease % belongs to another database session (pid %)', b.lease_id, b.claimer_pid
      USING ERRCODE = 'insufficient_privilege',
            HINT = 'A batch is completed or released by the session that claimed it.';
  END IF;
  PERFORM tweetkeeper.abandon_batch(b.lease_id, buckets);
  RETURN false;
END $$;

-- Hands back a batch whose claimer is gone (lease_holder(), maintenance()): the batch is
-- `abandoned`, and its tweets are due again at their place in the queue, since the oldest of them
-- was. Nothing happens to a batch that is finished already.
CREATE OR REPLACE FUNCTION abandon_batch(lease bigint, buckets smallint[]) RETURNS void
  LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  ids bigint[];
  oldest timestamptz;
BEGIN
  UPDATE tweetkeeper.batches b SET outcome = 'abandoned', finished_at = now(), stored = 0
   WHERE b.lease_id = lease AND b.outcome IS NULL AND (buckets IS NULL OR b.bucket = ANY (buckets))
  RETURNING b.tweet_ids, b.oldest_due_at INTO ids, oldest;
  IF FOUND THEN
    UPDATE tweetkeeper.tweets t SET due_at = oldest, lease_id = NULL
     WHERE t.tweet_id = ANY (ids) AND t.lease_id = lease AND (buckets IS NULL OR t.bucket = ANY (buckets));
  END IF;
END $$;

-- Stores a batch's results in one transaction: metrics, history, next due time; per-id problems;
-- hands back the batch's tweets that appear in neither list. Only tweets still held by this
-- lease are touched (fencing), so a late worker cannot overwrite a newer claim's work.
--   observations: [{"id":1,"retweet_count":..,"reply_count":..,"like_count":..,"quote_count":..,
--                   "bookmark_count":..,"impression_count":..}, ...]; with tweetkeeper.payloads on,
--                   also "payload" (the post's object) and, for X, "author" (its user object);
--                   for an edited X post, "newest_id" (the last of its edit_history_tweet_ids);
--                   "content_hash": the payload's hex md5 by payload_content()'s rule (else computed)
--   problems:     [{"id":2,"type":"resource-not-found","detail":"..."}, ...]
--   rate:         the answer's x-rate-limit-* headers, {"limit":..,"remaining":..,"reset":epoch}
-- Returns how many tweets of the batch got a result stored.
CREATE OR REPLACE FUNCTION complete_batch(lease bigint, observations jsonb, problems jsonb DEFAULT '[]',
                               rate jsonb DEFAULT NULL)
  RETURNS integer LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp SET jit = off AS $$
DECLARE
  recheck interval;
  b tweetkeeper.batches;
  observed record;   -- store_observations(): n_observed, n_billed, edited, newest
  n_problems integer;
  n_omitted integer := 0;
  missing_after integer;
  keep_all boolean;
  -- Below, now() is at_now and the age policy is given (refresh_delay_at): on Citus every
  -- statement on tweets runs on the worker node that holds the batch's shard, where Citus allows
  -- in an UPDATE only what it can evaluate here (no STABLE function of a column, none in a CASE).
  at_now timestamptz := now();
  ages interval[];
  delays interval[];
  buckets smallint[] := tweetkeeper.lease_buckets(lease);
  keep_payloads text := current_setting('tweetkeeper.payloads');  -- none, first, changed
  erase boolean := current_setting('tweetkeeper.deleted_payloads') = 'erase';
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
  IF buckets IS NULL AND tweetkeeper.shard_count() > 0 THEN
    RETURN 0;  -- a lease from before distribute(): it ended there (distribute() released it)
  END IF;
  SELECT * INTO b FROM tweetkeeper.batches
   WHERE batches.lease_id = lease AND (buckets IS NULL OR batches.bucket = ANY (buckets)) FOR UPDATE;
  IF NOT FOUND THEN
    RETURN 0;  -- unknown, or so old that it was purged: nothing of it is ours any more
  END IF;
  -- (The claimer is nearly always this session: the test of that is inline, lease_holder() is
  -- called only when it fails.)
  IF (b.claimer_pid IS DISTINCT FROM pg_backend_pid() OR b.claimer_started IS DISTINCT FROM tweetkeeper.backend_start())
     AND NOT tweetkeeper.lease_holder(b, buckets) THEN
    RETURN 0;  -- its session is gone: handed back, as maintenance() would have
  END IF;

  -- (Parsing every id first refuses a malformed one, 22P02, whatever the plans below.)
  PERFORM array_length(ARRAY(SELECT o.id FROM jsonb_to_recordset(observations) AS o(id bigint)), 1);
  IF b.outcome IN ('completed', 'released', 'abandoned') THEN
    -- Finished already: a repeat (a worker whose connection broke as its first call committed
    -- calls again), or a batch handed back. What was stored, billed and counted then stays as it
    -- is. (An expired lease still stores what no other claim has taken since: the reads are paid.)
    RAISE NOTICE 'lease % was % already: nothing stored', lease, b.outcome USING ERRCODE = 'object_not_in_prerequisite_state';
    RETURN 0;
  END IF;
  SELECT x.history_keep_unchanged, x.missing_after, x.unavailable_recheck
    INTO keep_all, missing_after, recheck FROM tweetkeeper.settings() x;
  SELECT array_agg(p.max_age ORDER BY p.max_age), array_agg(p.delay ORDER BY p.max_age)
    INTO ages, delays FROM tweetkeeper.age_policy p;

  -- (No tweet is read before the update of its row: store_observations() decides from the row
  -- as it was.)
  -- (Steps are called as expressions, x := f(): a query such as SELECT ... FROM f() would go
  -- through the executor, and these run on every completion.)
  observed := tweetkeeper.store_observations(lease, observations, b.tweet_ids, b.credential, buckets, keep_payloads,
                                      keep_all, at_now, ages, delays);
  IF observed.edited IS NOT NULL THEN
    -- (At most one per post of this lease, and only a newer id: observations_in(). Counted on
    -- the batch, as each is a read more per refresh from now on.)
    PERFORM tweetkeeper.link_edits(observed.edited, observed.newest, at_now, buckets);
    b.edits_followed := cardinality(observed.edited);
  END IF;

  n_problems := CASE WHEN jsonb_array_length(problems) = 0 THEN 0
                     ELSE tweetkeeper.store_problems(lease, problems, b.tweet_ids, buckets, erase, recheck,
                                                     at_now, ages, delays) END;

  IF observed.n_observed + n_problems < b.size THEN
    -- Ids the answer left out: neither found nor an error (put_off_omitted() says when to ask
    -- again).
    n_omitted := tweetkeeper.put_off_omitted(lease, b.tweet_ids, buckets, missing_after, recheck, at_now,
                                             ages, delays);
  END IF;
  RETURN tweetkeeper.settle_batch(b, buckets, observed.n_observed, n_problems, observed.n_billed, n_omitted, rate, at_now);
END $$;
COMMENT ON FUNCTION complete_batch(bigint, jsonb, jsonb, jsonb) IS
  'Stores a claimed batch''s results (metrics, history, reschedule) atomically; returns how many '
  'tweets were stored (fewer than claimed if the lease expired and was taken over).';

-- Hands a whole batch back (due again now), e.g. when the API call failed. `refusal` says what
-- the API said of the credential: rate-limited (429, waits for the window's reset),
-- usage-capped (429, monthly cap: until next month), rejected (401/403); of a Mastodon server,
-- single-status (older than 4.3: one status per request from then on); NULL for anything else.
-- `rate` as in complete_batch.
CREATE OR REPLACE FUNCTION release_batch(lease bigint, reason text DEFAULT NULL, refusal text DEFAULT NULL,
                              rate jsonb DEFAULT NULL) RETURNS integer
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp SET jit = off AS $$
DECLARE
  b tweetkeeper.batches;
  n integer;
  buckets smallint[] := tweetkeeper.lease_buckets(lease);
BEGIN
  IF lease IS NULL THEN
    RAISE EXCEPTION 'lease must not be NULL' USING ERRCODE = 'null_value_not_allowed';
  END IF;
  IF refusal IS NOT NULL AND refusal NOT IN ('rate-limited', 'usage-capped', 'rejected', 'single-status') THEN
    RAISE EXCEPTION 'refusal must be rate-limited, usage-capped, rejected, single-status or NULL, got %', refusal
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF buckets IS NULL AND tweetkeeper.shard_count() > 0 THEN
    RETURN 0;  -- a lease from before distribute(), which ended it
  END IF;
  SELECT * INTO b FROM tweetkeeper.batches
   WHERE batches.lease_id = lease AND (buckets IS NULL OR batches.bucket = ANY (buckets)) FOR UPDATE;
  IF NOT FOUND OR ((b.claimer_pid IS DISTINCT FROM pg_backend_pid() OR b.claimer_started IS DISTINCT FROM tweetkeeper.backend_start())
                    AND NOT tweetkeeper.lease_holder(b, buckets)) THEN
    RETURN 0;
  END IF;
  IF b.outcome IS NOT NULL THEN
    -- Released once: a batch already completed, released, handed back or expired keeps its
    -- record, and what the call says of the credential is not applied (it was, or its lease ended).
    RAISE NOTICE 'lease % was % already: nothing released', lease, b.outcome USING ERRCODE = 'object_not_in_prerequisite_state';
    RETURN 0;
  END IF;
  UPDATE tweetkeeper.tweets t SET due_at = now(), lease_id = NULL
   WHERE t.tweet_id = ANY (b.tweet_ids) AND t.lease_id = lease AND (buckets IS NULL OR t.bucket = ANY (buckets));
  GET DIAGNOSTICS n = ROW_COUNT;
  UPDATE tweetkeeper.batches
     SET finished_at = now(), outcome = 'released', stored = 0, reason = release_batch.reason, billed = 0
   WHERE batches.lease_id = lease AND (buckets IS NULL OR batches.bucket = ANY (buckets));
  -- A refused or failed request returned no posts, so it is billed nothing: give back the reads
  -- the claim reserved.
  UPDATE tweetkeeper.credentials c SET month_used = greatest(c.month_used - coalesce(b.billable, 0), 0)
   WHERE c.name = b.credential AND c.month_start = date_trunc('month', b.claimed_at, 'UTC');
  PERFORM tweetkeeper.record_quota(b.credential, rate, refusal, reason);
  -- An answer came if it said something of the window or refused us; not if the request failed.
  PERFORM tweetkeeper.record_endpoint_quota(b.endpoint, rate, refusal, reason,
                                            rate IS NOT NULL OR refusal IS NOT NULL);
  RETURN n;
END $$;
COMMENT ON FUNCTION release_batch(bigint, text, text, jsonb) IS
  'Hands a claimed batch back unharmed (its tweets are due again now); returns how many tweets '
  'were still held by the lease.';

-- ==== sql/schema/42_claim_bluesky_mastodon.sql
-- Posts of other networks on the wire: each endpoint's request window (Bluesky's AppView, each
-- Mastodon server), learned from its answers, and claim_posts(), the claim of one endpoint's due
-- posts. The lease, fencing, completion and release are X's (40_claim.sql): one queue, one lease
-- sequence, one batches table, complete_batch() and release_batch() for every network.

-- One row per endpoint a claim has used: 'bluesky' (getPosts), 'mastodon:<host>'.
CREATE TABLE endpoints (
  endpoint text NOT NULL,
  requests_per_window integer,   -- the API's last word (RateLimit-Limit, X-RateLimit-Limit); NULL: never said
  remaining integer,             -- requests left in the current window, as we count them
  window_reset_at timestamptz,   -- its end, from the API
  status text NOT NULL DEFAULT 'active',
  status_reason text,
  status_until timestamptz,      -- waiting: until then; needs-token: NULL (until a token is given)
  single_status boolean NOT NULL DEFAULT false,  -- Mastodon before 4.3: one status per request
  requests bigint NOT NULL DEFAULT 0,
  last_used_at timestamptz,
  answered_at timestamptz,       -- its first answer; NULL: none yet, so one request at a time
  CONSTRAINT endpoints_pkey PRIMARY KEY (endpoint),
  CONSTRAINT endpoints_status_known CHECK (status IN ('active', 'waiting', 'needs-token'))
);
SELECT pg_catalog.pg_extension_config_dump('endpoints', '');
COMMENT ON TABLE endpoints IS
  'Each endpoint of Bluesky and Mastodon that posts are read from: its request window as its '
  'answers said (rate-limit headers, 429), and whether it needs a token (401).';

-- A busy endpoint's window, spread over lanes so that its claims do not all queue on its one
-- row (Bluesky has one endpoint: every claim of every Bluesky worker counts a request of it, and
-- a row lock is held to the commit). A claim takes one request from any lane that holds some and
-- that no other claim holds (SKIP LOCKED). Only when none does is the endpoint's row counted on,
-- locked, as before lanes; that claim also moves a share of what the window has left (a 64th,
-- at least 1: the 8 lanes hold at most an eighth of it) into a free lane, for the claims after it.
-- A lane's requests are of one window (valid_until: its end) and lapse with it; an endpoint
-- whose answers state no window gets requests without end (until one does). Exact whatever
-- the number of workers: what the endpoint's row has left plus what its lanes hold is what the
-- window has left by our count. An answer that changes what we know of the window, a 429 and a
-- 401 take the lanes' requests back (record_endpoint_quota). Lock order: the endpoint's row,
-- then its lanes (a claim holding a lane never waits for the row). Distributed later by
-- endpoint, or one lane per shard: a claim routed to one shard then counts there.
CREATE TABLE endpoint_lanes (
  endpoint text NOT NULL,
  lane smallint NOT NULL,
  granted integer NOT NULL DEFAULT 0,  -- requests of the window this lane still holds
  valid_until timestamptz,             -- the end of the window they are of ('infinity': none stated)
  requests bigint NOT NULL DEFAULT 0,  -- requests counted in this lane (endpoints.requests: the others)
  last_used_at timestamptz,
  CONSTRAINT endpoint_lanes_pkey PRIMARY KEY (endpoint, lane)
);
SELECT pg_catalog.pg_extension_config_dump('endpoint_lanes', '');
COMMENT ON TABLE endpoint_lanes IS
  'Requests of an endpoint''s window handed out in lanes, so that its claims need not queue on '
  'one row; endpoint_stats adds them up.';

-- Bluesky handles and the DIDs they resolved to (com.atproto.identity.resolveHandle), once per
-- handle: a post scheduled by a handle already resolved gets its DID at once; posts waiting for
-- their handle (endpoint bluesky-handle) are handed to a Bluesky worker by claim_posts() like any
-- batch, and complete_handles() re-keys them under their DIDs (or marks them missing).
CREATE TABLE bluesky_handles (
  handle text NOT NULL,          -- lower case
  did text,                      -- NULL: did not resolve (problem says why)
  problem text,
  resolved_at timestamptz NOT NULL,
  CONSTRAINT bluesky_handles_pkey PRIMARY KEY (handle),
  CONSTRAINT bluesky_handles_did_or_problem CHECK ((did IS NULL) <> (problem IS NULL))
);
SELECT pg_catalog.pg_extension_config_dump('bluesky_handles', '');
COMMENT ON TABLE bluesky_handles IS
  'Bluesky handles resolved to DIDs (or not, and why), remembered so each is asked once.';

-- ==== sql/replaceable/42_claim_bluesky_mastodon.sql
-- Posts of other networks on the wire (the tables: sql/schema/42_claim_bluesky_mastodon.sql):
-- each endpoint's request window, learned from its answers, and claim_posts(), the claim of one
-- endpoint's due posts (Bluesky's AppView, a Mastodon server); Bluesky handles resolved to DIDs.

-- The largest batch an endpoint (or a provider: bluesky, mastodon) takes: getPosts 25 URIs,
-- Mastodon 20 statuses (1 on a server without GET /api/v1/statuses).
CREATE OR REPLACE FUNCTION endpoint_batch_max(endpoint text, single_status boolean) RETURNS integer
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  RETURN CASE WHEN endpoint IN ('bluesky', 'bluesky-handle') THEN 25 WHEN single_status THEN 1 ELSE 20 END;

-- The keys the API knows the posts ids by, in their order: at:// URIs (Bluesky), status ids
-- (Mastodon).
CREATE OR REPLACE FUNCTION post_keys_of(ids bigint[], buckets smallint[]) RETURNS text[]
  LANGUAGE plpgsql
  SET search_path = pg_catalog, pg_temp AS $$
BEGIN
  -- Each id's key looked up by itself: a join could be planned (generic plan, ids unknown)
  -- as a hash of all of post_refs, spilled to disk on every claim. On Citus one query routed
  -- to the shard (a correlated subquery of a distributed table is not planned there).
  IF buckets IS NOT NULL THEN
    RETURN ARRAY(SELECT CASE r.network WHEN 'bluesky' THEN format('at://%s/app.bsky.feed.post/%s', r.author, r.post_key)
                                        ELSE r.post_key END
                    FROM tweetkeeper.post_refs r
                   WHERE r.tweet_id = ANY (ids) AND r.bucket = ANY (buckets)
                   ORDER BY array_position(ids, r.tweet_id));
  ELSE
  RETURN ARRAY(SELECT (SELECT CASE r.network WHEN 'bluesky' THEN format('at://%s/app.bsky.feed.post/%s', r.author, r.post_key)
                                              ELSE r.post_key END
                          FROM tweetkeeper.post_refs r WHERE r.tweet_id = i.id)
                  FROM unnest(ids) WITH ORDINALITY AS i(id, k) ORDER BY i.k);
  END IF;
END $$;

-- Up to n due posts of an endpoint, locked (claim_posts()'s step, under its search_path): its
-- watched posts first (tweetkeeper.watch_posts: a window too small for everything due goes to
-- them), then the oldest due. (Each row's ctid too: the lease is set where the lock found it, as
-- claim_batch() does; and the content hash of its last kept payload, in the order of the ids, for
-- the worker.)
CREATE OR REPLACE FUNCTION lock_endpoint_posts(ep text, n integer, buckets smallint[], OUT ids bigint[],
                                               OUT dues timestamptz[], OUT oldest timestamptz,
                                               OUT ctids tid[], OUT hashes text[])
  LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
  SELECT array_agg(c.tweet_id ORDER BY c.w, c.due_at, c.tweet_id), array_agg(c.due_at ORDER BY c.w, c.due_at, c.tweet_id),
         min(c.due_at), array_agg(c.ctid),
         CASE WHEN count(c.payload_hash) > 0 THEN array_agg(encode(c.payload_hash, 'hex') ORDER BY c.w, c.due_at, c.tweet_id) END
    INTO ids, dues, oldest, ctids, hashes
    FROM (SELECT * FROM (SELECT t.tweet_id, t.due_at, 0 AS w, t.ctid, t.payload_hash FROM tweetkeeper.tweets t
                          WHERE t.watch_until IS NOT NULL AND t.tweet_id < 0 AND t.endpoint COLLATE "C" = ep
                            AND t.due_at <= now() AND (buckets IS NULL OR t.bucket = ANY (buckets))
                          ORDER BY t.due_at LIMIT n FOR UPDATE SKIP LOCKED) watched
          UNION ALL
          SELECT * FROM (SELECT t.tweet_id, t.due_at, 1, t.ctid, t.payload_hash FROM tweetkeeper.tweets t
                          WHERE t.due_at IS NOT NULL AND t.tweet_id < 0 AND t.endpoint COLLATE "C" = ep
                            AND t.due_at <= now() AND t.watch_until IS NULL
                            AND (buckets IS NULL OR t.bucket = ANY (buckets))
                          ORDER BY t.due_at LIMIT n FOR UPDATE SKIP LOCKED) others
          LIMIT n) c;
END $$;

-- claim_posts()'s work, on all posts (buckets NULL) or on one shard's (Citus: shard is the lease
-- id's high bits, as for claim_in()). Every endpoint's window stays one row on the coordinator:
-- a request is counted there whichever shard the batch is of.
CREATE OR REPLACE FUNCTION posts_in(worker text, max_size integer, provider text, tokens text[],
                         buckets smallint[], shard integer)
  RETURNS TABLE (lease_id bigint, tweet_ids bigint[], post_keys text[], endpoint text,
                 wait_until timestamptz, wait_reason text, payload_hashes text[])
  LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  s record := tweetkeeper.settings();
  e record;
  q record;
  l record;
  lo text := CASE provider WHEN 'bluesky' THEN 'bluesky' ELSE 'mastodon:' END;
  hi text := CASE provider WHEN 'bluesky' THEN 'bluesky-handle' ELSE 'mastodon;' END;  -- ';' follows ':'
  n integer;
  ids bigint[];
  dues timestamptz[];
  ctids tid[];
  hashes text[];
  keys text[];
  oldest timestamptz;
  lease bigint;
  tried text;
  endpoints_due refcursor;
  waits text[] := '{}';
  wait_min timestamptz;
  ep text;
BEGIN
  -- Two passes. 1 (Mastodon): the server of the oldest due status of all, one probe of
  -- tweets_mastodon_due_idx whatever the number of servers: the one the rule below takes first,
  -- and, unless its window or a partial batch holds it back, the one claimed. 2: the endpoints
  -- with due posts, the longest waiting first: a loose scan of tweets_endpoint_due_idx (one probe
  -- per endpoint, not one per post, its first entry being its oldest due post), without the one
  -- tried in pass 1. In byte order (COLLATE "C", as the index): the range 'mastodon:' ..
  -- 'mastodon;' holds every Mastodon server there, not in en_US's order, which ignores
  -- punctuation. (Two cursors, two queries: each keeps a plan of its own.)
  FOR pass IN 1..2 LOOP
    IF pass = 1 THEN
      CONTINUE WHEN provider <> 'mastodon';
      OPEN endpoints_due FOR
        SELECT t.endpoint COLLATE "C" AS endpoint FROM tweetkeeper.tweets t
         WHERE t.due_at IS NOT NULL AND t.tweet_id < 0 AND starts_with(t.endpoint, 'mastodon:') AND t.due_at <= now()
           AND (buckets IS NULL OR t.bucket = ANY (buckets))
         ORDER BY t.due_at LIMIT 1;
    ELSE
      OPEN endpoints_due FOR
        WITH RECURSIVE d(endpoint, first_due) AS (
          (SELECT t.endpoint COLLATE "C", t.due_at FROM tweetkeeper.tweets t
            WHERE t.due_at IS NOT NULL AND t.tweet_id < 0 AND t.endpoint COLLATE "C" >= lo AND t.endpoint COLLATE "C" <= hi
              AND (buckets IS NULL OR t.bucket = ANY (buckets))
            ORDER BY t.endpoint COLLATE "C", t.due_at LIMIT 1)
          UNION ALL
          SELECT n.endpoint, n.due_at
            FROM d CROSS JOIN LATERAL (
              SELECT t.endpoint COLLATE "C" AS endpoint, t.due_at FROM tweetkeeper.tweets t
               WHERE t.due_at IS NOT NULL AND t.tweet_id < 0 AND t.endpoint COLLATE "C" > d.endpoint
                 AND t.endpoint COLLATE "C" <= hi AND (buckets IS NULL OR t.bucket = ANY (buckets))
               ORDER BY t.endpoint COLLATE "C", t.due_at LIMIT 1) n)
        SELECT d.endpoint FROM d
         WHERE d.first_due <= now() AND d.endpoint IS DISTINCT FROM tried
         ORDER BY d.first_due;
    END IF;
  LOOP
    FETCH endpoints_due INTO e;
    EXIT WHEN NOT FOUND;
    -- The endpoint in the default collation (the cursor's is "C", as tweets' index), so that
    -- endpoints' and endpoint_lanes' keys are looked up by their indexes.
    ep := e.endpoint;
    IF pass = 1 THEN
      tried := ep;
    END IF;
    q := tweetkeeper.endpoint_hold(ep, tokens);
    IF q.why IS NOT NULL THEN
      waits := waits || q.why;
      wait_min := least(wait_min, q.until);
      CONTINUE;
    END IF;
    n := least(max_size, tweetkeeper.endpoint_batch_max(ep, q.single_status));
    -- Its due posts, locked (lock_endpoint_posts()).
    l := tweetkeeper.lock_endpoint_posts(ep, n, buckets);
    ids := l.ids;
    dues := l.dues;
    oldest := l.oldest;
    ctids := l.ctids;
    hashes := l.hashes;
    -- A partial batch waits for the buffer TTL, per endpoint.
    CONTINUE WHEN ids IS NULL OR (cardinality(ids) < n AND oldest > now() - s.buffer_ttl);
    lease := tweetkeeper.new_lease(shard);
    PERFORM tweetkeeper.lease_rows(lease, ids, ctids, now() + s.lease_ttl, buckets);
    INSERT INTO tweetkeeper.batches (lease_id, worker, tweet_ids, size, oldest_due_at, claimed_at,
                                     expires_at, credential, claimer_pid, claimer_started, billable,
                                     provider, endpoint, bucket)
    VALUES (lease, worker, ids, cardinality(ids), oldest, now(), now() + s.lease_ttl, NULL,
            pg_backend_pid(), tweetkeeper.backend_start(), 0, provider, ep,
            CASE WHEN buckets IS NOT NULL THEN tweetkeeper.bucket_of(ids[1]) END);
    keys := tweetkeeper.post_keys_of(ids, buckets);
    IF NOT tweetkeeper.count_endpoint_request(ep, tokens, q.answered_at) THEN
      -- Taken meanwhile by other claims, or refused: the claim is undone (its posts due as they
      -- were, no batch), and the next claim says why.
      UPDATE tweetkeeper.tweets t SET due_at = dues[array_position(ids, t.tweet_id)], lease_id = NULL
       WHERE t.tweet_id = ANY (ids) AND (buckets IS NULL OR t.bucket = ANY (buckets));
      DELETE FROM tweetkeeper.batches b WHERE b.lease_id = lease AND (buckets IS NULL OR b.bucket = ANY (buckets));
      waits := waits || format('%s: its window changed meanwhile', ep);
      wait_min := least(wait_min, now() + interval '1 second');
      CONTINUE;
    END IF;
    CLOSE endpoints_due;
    RETURN QUERY SELECT lease, ids, keys, ep, NULL::timestamptz, NULL::text, hashes;
    RETURN;
  END LOOP;
  CLOSE endpoints_due;
  END LOOP;
  IF wait_min IS NOT NULL THEN
    -- Due posts, but their endpoints take no request now: say until when and why. No longer
    -- than the buffer TTL: another endpoint's posts may come due meanwhile, and a worker serves
    -- every endpoint of its network. (A server that wants a token gives no time to wait for:
    -- then no row, and the worker polls as when nothing is due.)
    RETURN QUERY SELECT NULL::bigint, NULL::bigint[], NULL::text[], NULL::text,
      greatest(least(wait_min, now() + s.buffer_ttl), now()), array_to_string(waits, ', '), NULL::text[];
  END IF;
END $$;

COMMENT ON FUNCTION posts_in(text, integer, text, text[], smallint[], integer) IS
  'claim_posts()''s work on all posts, or on one shard''s buckets (Citus).';

-- The worker's claim for posts of Bluesky and Mastodon (claim_batch() is X's): up to max_size
-- due posts of one endpoint under a new lease, oldest due first, with their keys (at:// URIs;
-- Mastodon status ids, the server in `endpoint`) and their last kept payloads' content hashes
-- (payload_hashes, as claim_batch()'s).
-- A Bluesky batch of endpoint bluesky-handle holds posts known by handle only: the worker
-- resolves their handles and hands the DIDs to complete_handles().
-- For Mastodon, the server whose oldest due status has waited longest among those whose window
-- allows a request (and, for a server that refused us without a token, that this worker holds a
-- token for: `tokens`, the hosts it has one for). The buffer TTL holds per endpoint. One request
-- of the endpoint's window is counted here, under its row lock, so workers together never send
-- more than the endpoint said it takes. Completed and released as any batch.
CREATE OR REPLACE FUNCTION claim_posts(worker text, max_size integer, provider text, tokens text[] DEFAULT NULL)
  RETURNS TABLE (lease_id bigint, tweet_ids bigint[], post_keys text[], endpoint text,
                 wait_until timestamptz, wait_reason text, payload_hashes text[])
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp SET jit = off AS $$
DECLARE
  n_shards integer := tweetkeeper.shard_count();
  sh record;
  r record;
  wait_min timestamptz;
  waits text[] := '{}';
BEGIN
  IF worker IS NULL OR worker = '' THEN
    RAISE EXCEPTION 'worker must be a non-empty name' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF provider IS NULL OR provider NOT IN ('bluesky', 'mastodon') THEN
    RAISE EXCEPTION 'provider must be bluesky or mastodon, got %', coalesce(provider, 'NULL')
      USING ERRCODE = 'invalid_parameter_value',
            HINT = 'X''s tweets are claimed with tweetkeeper.claim_batch().';
  END IF;
  IF max_size IS NULL OR max_size < 1 OR max_size > tweetkeeper.endpoint_batch_max(provider, false) THEN
    RAISE EXCEPTION 'max_size must be between 1 and % for %, got %',
      tweetkeeper.endpoint_batch_max(provider, false), provider, coalesce(max_size::text, 'NULL')
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF n_shards = 0 THEN
    RETURN QUERY SELECT * FROM tweetkeeper.posts_in(worker, max_size, provider, tokens, NULL, 0);
    RETURN;
  END IF;
  -- On Citus (tweetkeeper.distribute()), as claim_batch(): the shards in turn, from the one after
  -- this session's last batch, until one has a batch to send. An endpoint's posts are spread over
  -- every shard, its window is one row: a shard whose posts wait for it says until when, and the
  -- earliest of those is the answer when no shard has a batch.
  FOR sh IN SELECT * FROM tweetkeeper.shards_in_turn() LOOP
    FOR r IN SELECT * FROM tweetkeeper.posts_in(worker, max_size, provider, tokens, sh.buckets, sh.shard) LOOP
      IF r.lease_id IS NOT NULL THEN
        PERFORM set_config('tweetkeeper_claim.next_shard', (1 + sh.shard % n_shards)::text, false);
        RETURN QUERY SELECT r.lease_id, r.tweet_ids, r.post_keys, r.endpoint, NULL::timestamptz, NULL::text,
                            r.payload_hashes;
        RETURN;
      END IF;
      wait_min := least(wait_min, r.wait_until);
      waits := waits || r.wait_reason;
    END LOOP;
  END LOOP;
  IF wait_min IS NOT NULL THEN
    RETURN QUERY SELECT NULL::bigint, NULL::bigint[], NULL::text[], NULL::text, wait_min,
      (SELECT string_agg(DISTINCT w, ', ') FROM unnest(waits) w), NULL::text[];
  END IF;
END $$;
COMMENT ON FUNCTION claim_posts(text, integer, text, text[]) IS
  'Claims up to max_size due posts of one Bluesky (1-25) or Mastodon (1-20) endpoint under a new '
  'lease, with their keys (at:// URIs, status ids); complete and release them as any batch.';

-- A post's author as its key names it: a Bluesky handle resolved before by its DID (so that the
-- same post by handle or by DID is one post), anything else as given. schedule_post(s) and
-- url_post_ids() read URLs through it.
CREATE OR REPLACE FUNCTION post_author(network text, author text) RETURNS text
  LANGUAGE sql STABLE PARALLEL SAFE
  RETURN CASE WHEN network = 'bluesky' AND author NOT LIKE 'did:%'
              THEN coalesce((SELECT h.did FROM tweetkeeper.bluesky_handles h WHERE h.handle = author), author)
              ELSE author END;

-- Stores what a Bluesky worker learnt of the handles of a batch of endpoint bluesky-handle:
-- resolutions [{"handle":"alice.example","did":"did:plc:..."}, {"handle":"x.example",
-- "problem":"Unable to resolve handle"}]. Each post of the batch (still held by the lease) whose
-- handle resolved is tracked from then on under its DID (its id changes: the hash of the DID
-- form), due at once, with what it had (no observation: posts by handle are never fetched);
-- a post already tracked under that DID stays as it is and the handle's row goes. A handle that
-- does not resolve makes its posts missing with a problem that says so, rechecked every
-- tweetkeeper.unavailable_recheck (a handle may come to resolve later). Posts whose handle the
-- answer does not mention are handed back. Returns how many posts were settled.
CREATE OR REPLACE FUNCTION complete_handles(lease bigint, resolutions jsonb) RETURNS integer
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp SET jit = off AS $$
DECLARE
  b tweetkeeper.batches;
  p record;
  r record;
  settled integer := 0;
  recheck interval := (SELECT x.unavailable_recheck FROM tweetkeeper.settings() x);
  distributed boolean := tweetkeeper.shard_count() > 0;  -- bucket: NULL on one node (no byte)
  buckets smallint[] := tweetkeeper.lease_buckets(lease);  -- on Citus: the batch's shard
  h record;
BEGIN
  IF lease IS NULL OR resolutions IS NULL THEN
    RAISE EXCEPTION 'lease and resolutions must not be NULL' USING ERRCODE = 'null_value_not_allowed';
  END IF;
  IF jsonb_typeof(resolutions) <> 'array' THEN
    RAISE EXCEPTION 'resolutions must be a JSON array' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  SELECT * INTO b FROM tweetkeeper.batches
   WHERE batches.lease_id = lease AND (buckets IS NULL OR batches.bucket = ANY (buckets)) FOR UPDATE;
  -- Not such a batch, another session's (refused), or completed already (a repeated call):
  -- nothing to settle.
  IF NOT FOUND OR b.endpoint IS DISTINCT FROM 'bluesky-handle' OR NOT tweetkeeper.lease_holder(b, buckets)
     OR b.outcome = 'completed' THEN
    RETURN 0;
  END IF;
  INSERT INTO tweetkeeper.bluesky_handles AS h (handle, did, problem, resolved_at)
  SELECT DISTINCT ON (lower(x.handle)) lower(x.handle), x.did, CASE WHEN x.did IS NULL THEN coalesce(x.problem, 'did not resolve') END, now()
    FROM jsonb_to_recordset(resolutions) AS x(handle text, did text, problem text)
   WHERE x.handle IS NOT NULL AND (x.did IS NULL OR x.did ~ '^did:[a-z]+:[a-zA-Z0-9._:%-]*[a-zA-Z0-9._-]$')
  ON CONFLICT ON CONSTRAINT bluesky_handles_pkey
  DO UPDATE SET did = excluded.did, problem = excluded.problem, resolved_at = excluded.resolved_at;
  -- (The batch's posts read routed to its shard, each one's handle looked up by itself: on Citus
  -- bluesky_handles is the coordinator's, and a join of it with a shard is not routed.)
  FOR p IN
    SELECT t.*, f.author, f.post_key
      FROM tweetkeeper.tweets t JOIN tweetkeeper.post_refs f USING (tweet_id)
     WHERE t.tweet_id = ANY (b.tweet_ids) AND t.lease_id = lease
       AND (buckets IS NULL OR (t.bucket = ANY (buckets) AND f.bucket = ANY (buckets)))
  LOOP
    SELECT x.did, x.problem INTO h FROM tweetkeeper.bluesky_handles x
     WHERE x.handle = p.author AND x.resolved_at = now();
    CONTINUE WHEN NOT FOUND;
    settled := settled + 1;
    IF h.did IS NULL THEN
      UPDATE tweetkeeper.tweets t
         SET state = 'missing', lease_id = NULL, due_at = now() + recheck, delay = recheck,
             problem_type = 'handle-unresolved', problem_at = now(),
             problem_detail = format('the handle %s does not resolve to a DID: %s', p.author, h.problem)
       WHERE t.tweet_id = p.tweet_id AND (buckets IS NULL OR t.bucket = ANY (buckets));
      CONTINUE;
    END IF;
    r := tweetkeeper.post_ref_id('bluesky', '', h.did, p.post_key);
    IF NOT r.tracked THEN
      IF NOT r.known THEN
        INSERT INTO tweetkeeper.post_refs (tweet_id, network, host, author, post_key, url, bucket)
        VALUES (r.tweet_id, 'bluesky', '', h.did, p.post_key,
                format('https://bsky.app/profile/%s/post/%s', h.did, p.post_key),
                CASE WHEN distributed THEN tweetkeeper.bucket_of(r.tweet_id) END);
      END IF;
      INSERT INTO tweetkeeper.tweets (tweet_id, created_at, state, due_at, scheduled_at, delay, watch_every,
                                      watch_until, endpoint, bucket)
      VALUES (r.tweet_id, p.created_at, 'scheduled', now(), p.scheduled_at, p.delay, p.watch_every,
              p.watch_until, 'bluesky', CASE WHEN distributed THEN tweetkeeper.bucket_of(r.tweet_id) END);
    END IF;
    DELETE FROM tweetkeeper.tweets t WHERE t.tweet_id = p.tweet_id AND (buckets IS NULL OR t.bucket = ANY (buckets));
    DELETE FROM tweetkeeper.post_refs f WHERE f.tweet_id = p.tweet_id AND (buckets IS NULL OR f.bucket = ANY (buckets));
  END LOOP;
  -- Posts of handles the answer did not mention: due again now, for the next worker.
  UPDATE tweetkeeper.tweets t SET due_at = now(), lease_id = NULL
   WHERE t.tweet_id = ANY (b.tweet_ids) AND t.lease_id = lease AND (buckets IS NULL OR t.bucket = ANY (buckets));
  UPDATE tweetkeeper.batches
     SET finished_at = now(), outcome = coalesce(outcome, 'completed'), stored = settled, billed = 0,
         tweets_read = 0
   WHERE batches.lease_id = lease AND (buckets IS NULL OR batches.bucket = ANY (buckets));
  RETURN settled;
END $$;
COMMENT ON FUNCTION complete_handles(bigint, jsonb) IS
  'Stores the DIDs a Bluesky worker resolved for a batch of posts known by handle: they are '
  'tracked under their DIDs from then on (or missing, when a handle does not resolve).';

-- Each endpoint's window and state beside credential_stats (X's): what the answers said, how
-- many of its posts are due, and its batches released by refusals or failures.
CREATE OR REPLACE VIEW endpoint_stats AS
SELECT e.endpoint,
       CASE WHEN e.endpoint LIKE 'mastodon:%' THEN 'mastodon' ELSE 'bluesky' END AS network,
       e.status, e.status_reason AS reason,
       CASE WHEN e.status = 'waiting' AND e.status_until > now() THEN e.status_until END AS until,
       CASE WHEN e.window_reset_at <= now() THEN e.requests_per_window ELSE e.remaining + l.held END AS remaining,
       e.requests_per_window,
       CASE WHEN e.window_reset_at > now() THEN e.window_reset_at END AS window_reset_at,
       e.single_status, e.requests + l.requests AS requests, greatest(e.last_used_at, l.last_used_at) AS last_used_at,
       (SELECT count(*) FROM tweetkeeper.tweets t
         WHERE t.endpoint COLLATE "C" = e.endpoint AND t.due_at <= now() AND t.tweet_id < 0 AND t.lease_id IS NULL) AS due_now,
       (SELECT count(*) FROM tweetkeeper.batches b
         WHERE b.endpoint = e.endpoint AND b.outcome = 'released') AS released_batches
  FROM tweetkeeper.endpoints e,
       LATERAL (SELECT coalesce(sum(l.granted) FILTER (WHERE l.valid_until > now() AND l.valid_until < 'infinity'), 0)::integer AS held,
                       coalesce(sum(l.requests), 0)::bigint AS requests, max(l.last_used_at) AS last_used_at
                  FROM tweetkeeper.endpoint_lanes l WHERE l.endpoint = e.endpoint) l
 ORDER BY e.endpoint;
COMMENT ON VIEW endpoint_stats IS
  'Each Bluesky and Mastodon endpoint: its window as its answers said (remaining, limit, reset), '
  'its status (waiting after a 429, needs-token after a 401) and why, whether it is read one '
  'status at a time, its due posts, and its batches released in the retention window.';

-- ==== sql/replaceable/45_quota.sql
-- The quota, in one place: which credential a claim of X's tweets may use, and what that spends
-- (choose_credential()); why and until when none may (quota_wait()); what each answer says of a
-- credential's window (record_quota()) or of a Bluesky or Mastodon endpoint's (share_window(),
-- record_endpoint_quota()); and a completion's settling of what the claim reserved
-- (settle_batch(), with the batch). The tables: credentials and daily_usage
-- (sql/schema/25_credentials.sql), endpoints and endpoint_lanes
-- (sql/schema/42_claim_bluesky_mastodon.sql); the stats of it: credential_stats, endpoint_stats,
-- usage_stats (80_stats.sql), capacity (85_cost.sql). The worker's side: worker/runner (waits) and
-- worker/provider/answer_status.cpp (what an answer says).

-- The least recently used of the provider's credentials (of those named, when credentials is not
-- NULL) that has quota for a batch of n_posts posts (read_today: per read of them this UTC day,
-- the credential that read it), with one request of its window and the batch's billable reads
-- of its monthly cap spent on it; NULL when none has.
CREATE OR REPLACE FUNCTION choose_credential(provider text, credentials text[], n_posts integer,
                                             read_today text[], burst boolean)
  RETURNS text LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  cred text;
  turned text[];           -- credentials whose window has ended, when it began and ended,
  turned_since timestamptz[];
  turned_until timestamptz[];
  flying_names text[];     -- and those of them with requests of it in flight, how many
  flying bigint[];
BEGIN
  -- A request still in flight when a window ends may reach the API in its next window (a slow
  -- answer, a paused worker): a credential's next window starts with its requests in flight
  -- counted in it, so that the API never sees more than its limit in one of its windows. (A
  -- late one did, in tests/citus/citus.sh: a 429.) Looked up only when a window has ended;
  -- batches (distributed on Citus) read apart from credentials.
  SELECT coalesce(array_agg(x.name), '{}'),
         coalesce(array_agg(coalesce(x.window_started_at, x.window_reset_at - x.window_length)), '{}'),
         coalesce(array_agg(x.window_reset_at), '{}')
    INTO turned, turned_since, turned_until
    FROM tweetkeeper.credentials x WHERE x.provider = choose_credential.provider AND x.window_reset_at <= now();
  IF cardinality(turned) > 0 THEN
    SELECT array_agg(f.credential), array_agg(f.n) INTO flying_names, flying
      FROM (SELECT b.credential, count(*) AS n FROM tweetkeeper.batches b
             WHERE b.outcome IS NULL AND b.credential = ANY (turned)
               AND b.claimed_at >= turned_since[array_position(turned, b.credential)]
               AND b.claimed_at < turned_until[array_position(turned, b.credential)]
             GROUP BY b.credential) f;
  END IF;
  -- The least recently used credential with quota, so that all of them are used. The row
  -- lock serialises claims on one credential; the WHERE clause is rechecked under it. The
  -- monthly cap counts billed reads, reserved here and settled by complete or release. Even
  -- spending (tweetkeeper.spending) also waits for the credential's pace, one request every
  -- window_length / requests_per_window whichever worker sends it (paced_until).
  UPDATE tweetkeeper.credentials c
     SET remaining = CASE WHEN c.window_reset_at IS NULL OR c.window_reset_at <= now()
                          THEN c.requests_per_window - coalesce(flying[array_position(flying_names, c.name)], 0)
                          ELSE c.remaining END - 1,
         window_reset_at = CASE WHEN c.window_reset_at IS NULL OR c.window_reset_at <= now()
                                THEN now() + c.window_length ELSE c.window_reset_at END,
         window_started_at = CASE WHEN c.window_reset_at IS NULL OR c.window_reset_at <= now()
                                  THEN now() ELSE c.window_started_at END,
         month_used = CASE WHEN c.month_start < date_trunc('month', now(), 'UTC') THEN 0
                           ELSE c.month_used END
                      + n_posts - cardinality(array_positions(read_today, c.name)),
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
      WHERE x.provider = choose_credential.provider
        AND (choose_credential.credentials IS NULL OR x.name = ANY (choose_credential.credentials))
        AND (x.status = 'active' OR (x.status IN ('waiting', 'capped') AND x.status_until <= now()))
        AND (x.remaining > 0
             OR (x.window_reset_at <= now()
                 AND coalesce(flying[array_position(flying_names, x.name)], 0) < x.requests_per_window))
        AND (x.monthly_cap IS NULL
             OR CASE WHEN x.month_start < date_trunc('month', now(), 'UTC') THEN 0 ELSE x.month_used END
                + n_posts - cardinality(array_positions(read_today, x.name)) <= x.monthly_cap)
        AND (burst OR x.paced_until IS NULL OR x.paced_until <= now())
      ORDER BY x.last_used_at NULLS FIRST
      LIMIT 1
      FOR UPDATE)
     AND (c.remaining > 0
          OR (c.window_reset_at <= now()
              AND coalesce(flying[array_position(flying_names, c.name)], 0) < c.requests_per_window))
     AND (burst OR c.paced_until IS NULL OR c.paced_until <= now())
  RETURNING c.name INTO cred;
  RETURN cred;
END $$;

-- No credential may send a batch of n_posts now: those whose monthly cap is used up are marked
-- capped, and the answer says until when the first one is free again and why each is not.
CREATE OR REPLACE FUNCTION quota_wait(provider text, credentials text[], n_posts integer, read_today text[],
                                      OUT until timestamptz, OUT why text)
  LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  res_names text[];        -- credentials with reads reserved by batches in flight, and how many
  res_counts bigint[];
BEGIN
  -- A credential whose monthly cap is used up (by settled reads, not reservations of
  -- batches in flight) is capped until next month, as X blocks it, and credential_stats says so.
  -- (The reservations are summed first, and only when a cap may be reached: on Citus batches
  -- is distributed, and an UPDATE of a coordinator table may not read it.)
  IF EXISTS (SELECT FROM tweetkeeper.credentials x
              WHERE x.provider = quota_wait.provider AND x.status = 'active'
                AND x.month_start = date_trunc('month', now(), 'UTC') AND x.month_used >= x.monthly_cap) THEN
    SELECT coalesce(array_agg(r.credential), '{}'), coalesce(array_agg(r.n), '{}') INTO res_names, res_counts
      FROM (SELECT b.credential, sum(b.billable) AS n FROM tweetkeeper.batches b
             WHERE b.outcome IS NULL AND b.credential IS NOT NULL GROUP BY b.credential) r;
    UPDATE tweetkeeper.credentials x
       SET status = 'capped', status_until = tweetkeeper.next_month_utc(),
           status_reason = format('monthly cap reached: %s of %s billed reads used', x.month_used,
                                  x.monthly_cap)
     WHERE x.provider = quota_wait.provider AND x.status = 'active'
       AND x.month_start = date_trunc('month', now(), 'UTC')
       AND x.month_used - coalesce(res_counts[array_position(res_names, x.name)], 0) >= x.monthly_cap;
  END IF;
  -- Due tweets, no quota: say until when and why, so the worker can sleep that long. A
  -- reason starting with "paced:" means the first credential free again waits only for
  -- its even pace: normal work, not a shortage.
  SELECT min(v.until) AS until,
         CASE WHEN (array_agg(v.paced ORDER BY v.until))[1] THEN 'paced: ' ELSE '' END
           || string_agg(v.why, ', ' ORDER BY v.name) AS why
    INTO until, why
    FROM tweetkeeper.credentials x
    CROSS JOIN LATERAL (
      SELECT n_posts - cardinality(array_positions(read_today, x.name)) AS need,
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
   WHERE x.provider = quota_wait.provider
     AND (quota_wait.credentials IS NULL OR x.name = ANY (quota_wait.credentials));
END $$;

-- Applies what the API said about a credential's quota: the x-rate-limit-* headers, and what
-- kind of refusal, if any. {"limit":15,"remaining":3,"reset":1700000000}
CREATE OR REPLACE FUNCTION record_quota(credential text, rate jsonb, refusal text, detail text)
  RETURNS void LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
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
         window_reset_at = greatest(c.window_reset_at, CASE WHEN api_reset > now() + c.window_length
                                                            THEN now() + c.window_length ELSE api_reset END)
   WHERE c.name = credential;
  -- (A reset is at most one window away: a later one, from a confused or hostile answer, would
  -- park the credential for as long as it said.)
  IF refusal = 'rate-limited' THEN
    UPDATE tweetkeeper.credentials c
       SET status = 'waiting', remaining = 0,
           status_until = coalesce(CASE WHEN api_reset > now() + c.window_length THEN now() + c.window_length ELSE api_reset END,
                                   c.window_reset_at, now() + c.window_length),
           window_reset_at = coalesce(CASE WHEN api_reset > now() + c.window_length THEN now() + c.window_length ELSE api_reset END,
                                      c.window_reset_at, now() + c.window_length),
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

-- Moves a share of what an endpoint's window has left into a free lane (endpoint_lanes), for the
-- claims after the one that calls it (claim_posts(), holding the endpoint's row lock): all of it
-- without a stated window; else a 64th (the 8 lanes together hold at most an eighth of what is
-- left), at least 1; none while the window's end is unknown (after a reset, until an answer says).
CREATE OR REPLACE FUNCTION share_window(ep text) RETURNS void LANGUAGE plpgsql
  SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  lanes constant integer := 8;  -- more than claims of one endpoint at once, on this machine
  x record;
  share integer;
BEGIN
  SELECT * INTO x FROM tweetkeeper.endpoints e WHERE e.endpoint = ep;
  share := CASE WHEN x.requests_per_window IS NULL THEN 2147483647
                WHEN x.window_reset_at > now() AND x.remaining > 0 THEN greatest(1, x.remaining / (8 * lanes))
                ELSE 0 END;
  IF share = 0 THEN
    RETURN;
  END IF;
  INSERT INTO tweetkeeper.endpoint_lanes (endpoint, lane)
  SELECT ep, k FROM generate_series(0, lanes - 1) k
   WHERE NOT EXISTS (SELECT FROM tweetkeeper.endpoint_lanes l WHERE l.endpoint = ep)
  ON CONFLICT DO NOTHING;
  UPDATE tweetkeeper.endpoint_lanes l
     SET granted = share,
         valid_until = CASE WHEN x.requests_per_window IS NULL THEN 'infinity' ELSE x.window_reset_at END
   WHERE l.endpoint = ep
     AND l.lane = (SELECT f.lane FROM tweetkeeper.endpoint_lanes f
                    WHERE f.endpoint = ep AND NOT (f.granted > 0 AND f.valid_until > now())
                    ORDER BY f.lane LIMIT 1 FOR UPDATE SKIP LOCKED);
  IF FOUND AND x.requests_per_window IS NOT NULL THEN
    UPDATE tweetkeeper.endpoints e SET remaining = e.remaining - share WHERE e.endpoint = ep;
  END IF;
END $$;

-- Applies what an endpoint's answer said of its window, as record_quota() does for X's
-- credentials: rate {"limit":..,"remaining":..,"reset":epoch}; refusal rate-limited (429: wait
-- for the reset), rejected (401: the server wants a token; no request until one is given).
CREATE OR REPLACE FUNCTION record_endpoint_quota(endpoint text, rate jsonb, refusal text, detail text,
                                      answered boolean)
  RETURNS void LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  api_remaining integer := (rate ->> 'remaining')::integer;
  api_limit integer := (rate ->> 'limit')::integer;
  -- (At most an hour away: both networks' read windows are 5 minutes; a later reset, from a
  -- confused or hostile server, would park the endpoint for as long as it said.)
  api_reset timestamptz := CASE WHEN to_timestamp((rate ->> 'reset')::double precision) > now() + interval '1 hour'
                                THEN now() + interval '1 hour'
                                ELSE to_timestamp((rate ->> 'reset')::double precision) END;
  cur record;
  held integer;  -- requests of the current window the lanes hold
BEGIN
  IF endpoint IS NULL THEN
    RETURN;
  END IF;
  -- The API's word wins where it is stricter (as for credentials): a smaller remaining than
  -- ours (what the row has left plus what its lanes hold), a later reset; an answer of an older
  -- window says nothing about this one. Most answers say nothing new (the claims count requests
  -- down before the API does): then the rows are left alone, not even locked, so that
  -- completions do not queue on them behind each other and the claims.
  SELECT e.*, (SELECT coalesce(sum(l.granted), 0) FROM tweetkeeper.endpoint_lanes l
                WHERE l.endpoint = e.endpoint AND l.granted > 0 AND l.valid_until > now()
                  AND l.valid_until < 'infinity') AS held
    INTO cur FROM tweetkeeper.endpoints e WHERE e.endpoint = record_endpoint_quota.endpoint;
  IF NOT FOUND OR NOT coalesce((answered AND cur.answered_at IS NULL)
                       OR (api_limit > 0 AND api_limit IS DISTINCT FROM cur.requests_per_window)
                       OR api_reset > coalesce(cur.window_reset_at, '-infinity')
                       OR (api_remaining IS NOT NULL AND (cur.window_reset_at IS NULL OR api_reset IS NULL OR cur.remaining IS NULL))
                       OR (api_reset = cur.window_reset_at AND api_remaining < cur.remaining + cur.held)
                       OR refusal IN ('rate-limited', 'rejected'), false) THEN
    RETURN;
  END IF;
  -- Something new: the row locked, then its lanes emptied (the lock order of claim_posts), and
  -- what they held of the current window counted back before the answer is compared.
  PERFORM FROM tweetkeeper.endpoints e WHERE e.endpoint = record_endpoint_quota.endpoint FOR UPDATE;
  WITH taken AS (
    UPDATE tweetkeeper.endpoint_lanes l SET granted = 0
      FROM (SELECT f.lane, f.granted, f.valid_until FROM tweetkeeper.endpoint_lanes f
             WHERE f.endpoint = record_endpoint_quota.endpoint AND f.granted > 0 FOR UPDATE) o
     WHERE l.endpoint = record_endpoint_quota.endpoint AND l.lane = o.lane
    RETURNING o.granted, o.valid_until)
  SELECT coalesce(sum(t.granted) FILTER (WHERE t.valid_until > now() AND t.valid_until < 'infinity'), 0)
    INTO held FROM taken t;
  UPDATE tweetkeeper.endpoints x
     SET requests_per_window = coalesce(CASE WHEN api_limit > 0 THEN api_limit END, x.requests_per_window),
         remaining = CASE WHEN api_remaining IS NULL THEN x.remaining + held
                          WHEN x.window_reset_at IS NULL OR api_reset > x.window_reset_at THEN api_remaining
                          WHEN api_reset < x.window_reset_at THEN x.remaining + held
                          ELSE least(x.remaining + held, api_remaining) END,
         window_reset_at = greatest(x.window_reset_at, api_reset),
         answered_at = CASE WHEN answered AND x.answered_at IS NULL THEN now() ELSE x.answered_at END
   WHERE x.endpoint = record_endpoint_quota.endpoint;
  IF refusal = 'rate-limited' THEN
    UPDATE tweetkeeper.endpoints x
       SET status = 'waiting', remaining = 0,
           status_until = coalesce(api_reset, now() + interval '1 minute'),
           window_reset_at = coalesce(api_reset, now() + interval '1 minute'),
           status_reason = coalesce(detail, 'Too Many Requests')
     WHERE x.endpoint = record_endpoint_quota.endpoint;
  ELSIF refusal = 'rejected' THEN
    UPDATE tweetkeeper.endpoints x
       SET status = 'needs-token', status_until = NULL, status_reason = coalesce(detail, 'rejected')
     WHERE x.endpoint = record_endpoint_quota.endpoint;
  ELSIF refusal = 'single-status' THEN
    -- A Mastodon server older than 4.3 (no GET /api/v1/statuses): its batches hold one status
    -- from now on (GET /api/v1/statuses/:id), within the same window.
    UPDATE tweetkeeper.endpoints x SET single_status = true, status_reason = detail
     WHERE x.endpoint = record_endpoint_quota.endpoint;
  END IF;
END $$;

-- The batch's record settled (completed, or left abandoned), and its credential's or endpoint's
-- quota from what the claim reserved and the answer said. Returns how many of its posts got a
-- result stored (complete_batch()'s answer).
CREATE OR REPLACE FUNCTION settle_batch(b tweetkeeper.batches, buckets smallint[], n_observed integer,
                               n_problems integer, n_billed integer, n_omitted integer, rate jsonb,
                               at_now timestamptz)
  RETURNS integer LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  lease bigint := b.lease_id;
BEGIN
  IF b.outcome IS NOT NULL THEN
    -- A late answer (the batch expired or was abandoned meanwhile): the API read and billed the
    -- posts, but nothing was stored here. Count what the claim reserved.
    n_billed := coalesce(b.billable, 0);
  END IF;
  -- An abandoned batch stays abandoned: its tweets were handed back, nothing was stored. Either
  -- way the request was answered, for usage_stats (and daily_usage once the batch is purged):
  -- kept on the batch, not added to a shared row, on which concurrent completions would queue.
  UPDATE tweetkeeper.batches
     SET finished_at = CASE WHEN outcome = 'abandoned' THEN finished_at ELSE at_now END,
         outcome = CASE WHEN outcome = 'abandoned' THEN outcome ELSE 'completed' END,
         stored = CASE WHEN outcome = 'abandoned' THEN stored ELSE n_observed + n_problems END,
         billed = n_billed,
         tweets_read = CASE WHEN b.outcome IS NULL THEN n_observed ELSE coalesce(b.billable, 0) END,
         omitted = n_omitted,
         edits_followed = b.edits_followed
   WHERE batches.lease_id = lease AND (buckets IS NULL OR batches.bucket = ANY (buckets));
  IF b.credential IS NOT NULL THEN
    -- The claim reserved b.billable reads of the monthly cap; settle to what was billed.
    UPDATE tweetkeeper.credentials c
       SET month_used = greatest(c.month_used + n_billed - coalesce(b.billable, 0), 0)
     WHERE c.name = b.credential AND c.month_start = date_trunc('month', b.claimed_at, 'UTC');
    PERFORM tweetkeeper.record_quota(b.credential, rate, NULL, NULL);
  END IF;
  PERFORM tweetkeeper.record_endpoint_quota(b.endpoint, rate, NULL, NULL, true);
  RETURN n_observed + n_problems;
END $$;

-- Whether an endpoint may be asked now, as its row says (read without a lock; the claim's count
-- of the request checks again under one): its row (created for an endpoint never heard from,
-- which is asked once at a time until it answers), or why not (why) and until when (until, NULL
-- when only another worker can ask it: one holding its token).
CREATE OR REPLACE FUNCTION endpoint_hold(ep text, tokens text[], OUT answered_at timestamptz,
                                         OUT single_status boolean, OUT why text, OUT until timestamptz)
  LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  q record;
BEGIN
  -- The endpoint's row is read without a lock: every claim of a busy endpoint (Bluesky has
  -- one) would otherwise queue on it from here to its commit. It is locked below, by the
  -- update that counts the request, which checks the window again on the row's newest version.
  SELECT * INTO q FROM tweetkeeper.endpoints x WHERE x.endpoint = ep;
  IF NOT FOUND OR q.answered_at IS NULL THEN
    -- An endpoint that never answered is asked once at a time until it does: its first answer
    -- says whether it wants a token, how many requests it takes, whether it is older than 4.3.
    -- Concurrent first requests would each be refused alike (each a request spent for
    -- nothing). Its row is locked first, so that of two such claims the second sees the
    -- first's batch. A probe whose worker died is handed back (abandoned, expired), and
    -- another goes.
    INSERT INTO tweetkeeper.endpoints AS x (endpoint) VALUES (ep) ON CONFLICT DO NOTHING;
    SELECT * INTO q FROM tweetkeeper.endpoints x WHERE x.endpoint = ep FOR UPDATE;
    -- (Its batches of every shard looked at: PERFORM, as Citus plans no subquery of a
    -- distributed table beside a record's field.)
    IF q.answered_at IS NULL THEN
      PERFORM FROM tweetkeeper.batches b WHERE b.outcome IS NULL AND b.endpoint = ep LIMIT 1;
      IF FOUND THEN
        why := format('%s: its first request is in flight', ep);
        RETURN;
      END IF;
    END IF;
  END IF;
  IF q.status = 'needs-token' AND NOT substr(ep, 10) = ANY (coalesce(tokens, '{}')) THEN
    why := format('%s needs a token: %s', ep, q.status_reason);
    RETURN;
  END IF;
  IF q.status = 'waiting' AND q.status_until > now() THEN
    why := format('%s waiting: %s', ep, q.status_reason);
    until := q.status_until;
    RETURN;
  END IF;
  IF q.remaining <= 0 AND q.window_reset_at > now()
     AND NOT EXISTS (SELECT FROM tweetkeeper.endpoint_lanes l
                      WHERE l.endpoint = ep AND l.granted > 0 AND l.valid_until > now()) THEN
    why := format('%s window used up', ep);
    until := q.window_reset_at;
    RETURN;
  END IF;
  answered_at := q.answered_at;
  single_status := q.single_status;
END $$;

-- One request of an endpoint's window counted for a claim (last in the claim: a lock taken here
-- is held to the commit), from a lane when one holds requests, else on the endpoint's row under
-- its lock; false when the window was taken meanwhile or the endpoint refused (a 429 or 401
-- recorded meanwhile).
CREATE OR REPLACE FUNCTION count_endpoint_request(ep text, tokens text[], answered_at timestamptz)
  RETURNS boolean LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  was_answered timestamptz;
BEGIN
  -- One request of the window, counted last: a lock taken here is held to the commit. First
  -- from a lane (endpoint_lanes): one that holds requests of the window and that no other
  -- claim holds. A 429 or 401 recorded meanwhile emptied the lanes (under their locks), so
  -- one found here still holds.
  UPDATE tweetkeeper.endpoint_lanes l
     SET granted = l.granted - 1, requests = l.requests + 1, last_used_at = clock_timestamp()
   WHERE count_endpoint_request.answered_at IS NOT NULL AND l.endpoint = ep
     AND l.lane = (SELECT f.lane FROM tweetkeeper.endpoint_lanes f
                    WHERE f.endpoint = ep AND f.granted > 0 AND f.valid_until > now()
                    ORDER BY f.lane LIMIT 1 FOR UPDATE SKIP LOCKED);
  IF NOT FOUND THEN
    -- Else on the endpoint's row, under its lock, on its newest version: the checks above are
    -- made again there, so no two claims take the window's last request, and a 429 or 401
    -- recorded meanwhile holds.
    UPDATE tweetkeeper.endpoints x
       -- A window whose reset has passed starts again at its limit; its end is unknown until an
       -- answer says (record_endpoint_quota), and requests are counted down meanwhile.
       SET remaining = CASE WHEN x.window_reset_at <= now() THEN x.requests_per_window ELSE x.remaining END - 1,
           window_reset_at = CASE WHEN x.window_reset_at <= now() THEN NULL ELSE x.window_reset_at END,
           -- A server that wants a token keeps saying so: only workers holding one claim its
           -- statuses (a worker without would spend a request on another 401 each time).
           status = CASE WHEN x.status = 'needs-token' THEN x.status ELSE 'active' END,
           status_reason = CASE WHEN x.status = 'needs-token' THEN x.status_reason END,
           status_until = NULL,
           requests = x.requests + 1, last_used_at = clock_timestamp()
     WHERE x.endpoint = ep
       AND (x.status <> 'needs-token' OR substr(x.endpoint, 10) = ANY (coalesce(tokens, '{}')))
       AND NOT coalesce(x.status = 'waiting' AND x.status_until > now(), false)
       AND NOT coalesce(x.remaining <= 0 AND x.window_reset_at > now(), false)
    RETURNING x.answered_at INTO was_answered;
    IF NOT FOUND THEN
      RETURN false;
    END IF;
    IF was_answered IS NOT NULL THEN
      PERFORM tweetkeeper.share_window(ep);
    END IF;
  END IF;
  RETURN true;
END $$;

-- ==== sql/replaceable/50_watches.sql
-- Watched tweets: refreshed on a fixed interval for a while, whatever their age (watch, unwatch,
-- the watches view), and the return to the age schedule when a watch ends.

-- Returns tweets to their age schedule (an ended or expired watch): the next refresh one age
-- delay after the last; done if past the last bucket and fetched before. A tweet in flight
-- keeps its lease; its completion schedules it by age.
CREATE OR REPLACE FUNCTION stop_watching(tweet_ids bigint[]) RETURNS bigint
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  n bigint;
  ages interval[];
  delays interval[];
  last interval;           -- for tweets past the last bucket, as age_delay()
  at_now timestamptz := now();
BEGIN
  -- The policy given, as complete_batch() does (on Citus the UPDATE runs on the worker nodes).
  SELECT array_agg(p.max_age ORDER BY p.max_age), array_agg(p.delay ORDER BY p.max_age), max(p.delay)
    INTO ages, delays, last FROM tweetkeeper.age_policy p;
  UPDATE tweetkeeper.tweets t
     SET watch_every = NULL, watch_until = NULL,
         delay = coalesce(tweetkeeper.policy_delay(t.created_at, at_now, ages, delays), last),
         state = CASE WHEN t.lease_id IS NULL AND t.updated_at IS NOT NULL
                           AND tweetkeeper.policy_delay(t.created_at, at_now, ages, delays) IS NULL
                      THEN 'done'::tweetkeeper.tweet_state ELSE t.state END,
         due_at = CASE WHEN t.lease_id IS NOT NULL OR t.updated_at IS NULL THEN t.due_at
                       ELSE tweetkeeper.after(t.updated_at, tweetkeeper.policy_delay(t.created_at, at_now, ages, delays)) END
   WHERE t.tweet_id = ANY (tweet_ids) AND t.watch_until IS NOT NULL;
  GET DIAGNOSTICS n = ROW_COUNT;
  RETURN n;
END $$;
COMMENT ON FUNCTION stop_watching(bigint[]) IS
  'Ends the watches of these tweets (unwatch and expiry): back to their age schedule.';

CREATE OR REPLACE FUNCTION watch(tweet_ids bigint[], every interval DEFAULT interval '5 minutes',
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

CREATE OR REPLACE FUNCTION unwatch(tweet_ids bigint[]) RETURNS bigint
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
  IF tweet_ids IS NULL THEN
    RAISE EXCEPTION 'tweet_ids must not be NULL' USING ERRCODE = 'null_value_not_allowed';
  END IF;
  RETURN tweetkeeper.stop_watching(tweet_ids);
END $$;
COMMENT ON FUNCTION unwatch(bigint[]) IS
  'Ends the watches of these tweets: back to their age schedule. Returns how many were watched.';

-- The ids of the posts of URLs (any network, any spelling), in the URLs' order: X's from the URL,
-- the others' as schedule_post() keys them (a Bluesky handle resolved before is read as its DID).
-- A post not tracked gets the id it would have. 22023 (from parse_post_url) for a URL it refuses.
CREATE OR REPLACE FUNCTION url_post_ids(urls text[]) RETURNS bigint[]
  LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp
  RETURN ARRAY(
    SELECT CASE WHEN p.network = 'x' THEN p.post_key::bigint
                ELSE (tweetkeeper.post_ref_id(p.network, coalesce(p.host, ''),
                        tweetkeeper.post_author(p.network, p.author), p.post_key)).tweet_id END
      FROM unnest(urls) WITH ORDINALITY AS a(url, i), tweetkeeper.parse_post_url(a.url) AS p
     ORDER BY a.i);

-- watch() and unwatch() by URL, for posts of every network: a watched Bluesky or Mastodon post is
-- refreshed every `every` as an X tweet is, and claim_posts() takes an endpoint's watched posts
-- first.
CREATE OR REPLACE FUNCTION watch_posts(urls text[], every interval DEFAULT interval '5 minutes',
                            for_how_long interval DEFAULT interval '1 day') RETURNS bigint
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
  -- Tracks those not tracked yet, all or nothing; a bad URL is refused with its position.
  PERFORM tweetkeeper.schedule_posts(urls);
  RETURN tweetkeeper.watch(tweetkeeper.url_post_ids(urls), every, for_how_long);
END $$;
COMMENT ON FUNCTION watch_posts(text[], interval, interval) IS
  'watch() for the posts of URLs of any network (see parse_post_url for the forms): tracks those '
  'not tracked yet, then refreshes them every `every` for `for_how_long`. Returns how many are '
  'watched.';

CREATE OR REPLACE FUNCTION unwatch_posts(urls text[]) RETURNS bigint
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
  IF urls IS NULL THEN
    RAISE EXCEPTION 'urls must not be NULL' USING ERRCODE = 'null_value_not_allowed';
  END IF;
  IF array_position(urls, NULL) IS NOT NULL THEN
    RAISE EXCEPTION 'urls[%] is NULL', array_position(urls, NULL) USING ERRCODE = 'null_value_not_allowed';
  END IF;
  RETURN tweetkeeper.stop_watching(tweetkeeper.url_post_ids(urls));
END $$;
COMMENT ON FUNCTION unwatch_posts(text[]) IS
  'unwatch() for the posts of URLs of any network: back to their age schedule. Returns how many '
  'were watched.';

CREATE OR REPLACE VIEW watches AS
SELECT t.tweet_id, t.watch_every AS every, t.watch_until AS until, t.updated_at AS last_refreshed,
       t.due_at AS next_refresh, t.update_count, t.state,
       -- Since 0.3.0, last (SELECT * of 0.2.0 reads its columns where they were): the post's
       -- network and URL, as in the view posts.
       coalesce(r.network, 'x') AS network,
       coalesce(r.url, 'https://x.com/i/web/status/' || t.tweet_id) AS url
  FROM tweetkeeper.tweets t LEFT JOIN tweetkeeper.post_refs r ON r.tweet_id = t.tweet_id AND t.tweet_id < 0
 WHERE t.watch_until > now()
 ORDER BY t.watch_until, t.tweet_id;
COMMENT ON VIEW watches IS
  'Live watches (tweetkeeper.watch, watch_posts): what is refreshed how often, until when, of '
  'every network.';

-- ==== sql/replaceable/60_maintenance.sql
-- The queue's upkeep, called by the background worker on every tick (maintenance()): expired and
-- abandoned leases, purged batch records, ended watches, and how long it may sleep.

-- When X's tweets are next claimable, by claim_batch()'s own test (a full batch, or a partial
-- one past the buffer TTL), read as the claim reads them: each delay of the scheduled tweets
-- from its head (delay_heads()), then its oldest due; on Citus per shard, as a claim takes them
-- (full_delay_heads(): no memory of heads there). at: now() when a batch is claimable now
-- (n_due: how many tweets of its shard, at most 100), else the moment the oldest due tweet has
-- waited the buffer TTL or the next tweet falls due (a head in the future; one that is not
-- belongs to a delay that has no tweet left); NULL when nothing is scheduled. maintenance()
-- notifies by it; claim_wait() tells a worker whose claim found nothing.
CREATE OR REPLACE FUNCTION x_claimable(OUT at timestamptz, OUT n_due integer) LANGUAGE plpgsql
  SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  s record := tweetkeeper.settings();
  shard record;
  delays interval[];
  heads timestamptz[];
  n integer;
  oldest timestamptz;
BEGIN
  FOR shard IN SELECT b.buckets FROM tweetkeeper.shard_buckets b
               UNION ALL SELECT NULL WHERE tweetkeeper.shard_count() = 0 LOOP
    IF shard.buckets IS NULL THEN
      SELECT h.delays, h.heads INTO delays, heads FROM tweetkeeper.delay_heads() h;
    ELSE
      SELECT h.delays, h.heads INTO delays, heads FROM tweetkeeper.full_delay_heads(shard.buckets) h;
    END IF;
    -- (EXECUTEd, so planned at every call: see maintenance().)
    EXECUTE $q$
      SELECT count(*), min(c.due_at)
        FROM (SELECT c.due_at
                FROM unnest($1, $2) AS d(delay, head) CROSS JOIN LATERAL (
                  SELECT t.due_at FROM tweetkeeper.tweets t
                   WHERE t.due_at IS NOT NULL AND t.tweet_id > 0
                     AND (t.delay, t.due_at) >= (d.delay, d.head)
                     AND (t.delay, t.due_at) <= (d.delay, now())
                     AND ($3 IS NULL OR t.bucket = ANY ($3))
                   ORDER BY t.delay, t.due_at LIMIT 100) c
               ORDER BY c.due_at LIMIT 100) AS c$q$ INTO n, oldest USING delays, heads, shard.buckets;
    IF n >= 100 OR (n > 0 AND oldest <= now() - s.buffer_ttl) THEN
      at := now();
      n_due := n;
      RETURN;
    END IF;
    at := least(at, CASE WHEN n > 0 THEN oldest + s.buffer_ttl
                         ELSE (SELECT min(h.head) FROM unnest(heads) AS h(head) WHERE h.head > now()) END);
  END LOOP;
END $$;
COMMENT ON FUNCTION x_claimable() IS
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
    SELECT c.at INTO at FROM tweetkeeper.x_claimable() c;
    RETURN at;
  END IF;
  -- The sample: each a query of tweets alone (on Citus planned on its own, then read here),
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
                              >= tweetkeeper.endpoint_batch_max(x.endpoint, coalesce(bool_or(e.single_status), false))
                         THEN now()
                         ELSE min(CASE WHEN x.due_at <= now() THEN x.due_at + s.buffer_ttl ELSE x.due_at END) END,
                    min(CASE WHEN e.status = 'waiting' THEN e.status_until END)) AS at
      FROM unnest(eps, dues) AS x(endpoint, due_at)
      LEFT JOIN tweetkeeper.endpoints e ON e.endpoint = x.endpoint
     WHERE e.status IS DISTINCT FROM 'needs-token'
     GROUP BY x.endpoint) g;
  RETURN at;
END $$;
COMMENT ON FUNCTION claim_wait(text) IS
  'When a claim of this provider that found nothing may next find something (NULL: nothing '
  'scheduled): what a worker sleeps until, a NOTIFY waking it sooner.';

-- Returns how long the background worker may sleep before anything can change: 0 for a tick
-- (a batch is claimable now, or batches are in flight and their workers may die), otherwise
-- until the next tweet becomes claimable or the next lease expires; NULL when nothing is
-- scheduled. When a batch is claimable now, it notifies the idle workers on the channel
-- tweetkeeper_due (a hint: workers poll as well, slowly).
CREATE OR REPLACE FUNCTION maintenance() RETURNS interval LANGUAGE plpgsql
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
  gone record;
  purged jsonb;
BEGIN
  IF tweetkeeper.citus_worker_node() THEN
    RETURN interval '1 minute';  -- the coordinator's maintenance() looks after the whole cluster
  END IF;
  -- The statements below whose best plan depends on the table's size are EXECUTEd, so planned
  -- at every call, not cached (the min() lookups of batches and watches follow a partial index
  -- whatever the statistics):
  -- the background worker calls this all day in one session, from the first tick on an empty
  -- queue, and a plan made then (a sequential scan, right for an empty table) would be kept
  -- until the next ANALYZE, reading every tweet at every tick while an import fills the queue.
  -- Planning them costs well under a millisecond.
  --
  -- Batches whose claiming session is gone (the worker was killed or lost its connection) come
  -- back at once, at their place in the queue: due since the oldest of them was. A worker that
  -- reconnects and completes such a batch later stores nothing: its lease is off the tweets.
  -- (The claimers are looked up here, where they ran: on Citus batches lives on the worker
  -- nodes, and each abandoned batch is handed back by statements routed to its shard.)
  IF reclaim THEN
    FOR gone IN WITH f AS MATERIALIZED (
                  SELECT b.lease_id, b.claimer_pid, b.claimer_started FROM tweetkeeper.batches b
                   WHERE b.outcome IS NULL AND b.claimer_pid IS NOT NULL)
                SELECT f.lease_id FROM f WHERE NOT tweetkeeper.backend_alive(f.claimer_pid, f.claimer_started) LOOP
      PERFORM tweetkeeper.abandon_batch(gone.lease_id, tweetkeeper.lease_buckets(gone.lease_id));
    END LOOP;
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
  -- Old batch records go; the requests they answered stay counted in daily_usage. (What was
  -- deleted is summed here, then counted: on Citus daily_usage is the coordinator's and batches is
  -- not, and one statement may not write both.)
  WITH gone AS (
    DELETE FROM tweetkeeper.batches WHERE finished_at < now() - s.batch_retention
    RETURNING finished_at, provider, credential, tweets_read, billed
  )
  SELECT coalesce(jsonb_agg(jsonb_build_array(x.day, x.provider, x.credential, x.requests, x.tweets_read, x.billed)), '[]')
    INTO purged
    FROM (SELECT (g.finished_at AT TIME ZONE 'UTC')::date AS day, coalesce(g.provider, 'x-v2') AS provider,
                 coalesce(g.credential, '') AS credential, count(*) AS requests, sum(g.tweets_read) AS tweets_read,
                 sum(coalesce(g.billed, 0)) AS billed
            FROM gone g WHERE g.tweets_read IS NOT NULL
           GROUP BY 1, 2, 3) x;
  INSERT INTO tweetkeeper.daily_usage AS u (day, provider, credential, requests, tweets_read, billed_reads)
  SELECT (p->>0)::date, p->>1, p->>2, (p->>3)::bigint, (p->>4)::bigint, (p->>5)::bigint
    FROM jsonb_array_elements(purged) p
  ON CONFLICT (day, provider, credential) DO UPDATE
     SET requests = u.requests + excluded.requests, tweets_read = u.tweets_read + excluded.tweets_read,
         billed_reads = u.billed_reads + excluded.billed_reads;

  -- A batch claimable now (x_claimable(): claim_batch()'s own test; claim_wait() for Bluesky's
  -- and Mastodon's posts): the idle workers of that network are told, X's with how many tweets,
  -- the others with the network's name (each worker listens for its own).
  SELECT c.at, c.n_due INTO next_due, n_due FROM tweetkeeper.x_claimable() c;
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

-- ==== sql/replaceable/70_history.sql
-- History housekeeping: partitions of metric_history_hot ahead of time, retention by whole
-- partitions (and whole weeks of compacted history) with daily rollups, compaction of closed
-- partitions into metric_history_compact, the housekeeping() entry that runs them, and the
-- pg_cron jobs that may run them instead of the background worker.

-- Partition bounds as times (pg_get_expr prints them in this session's TimeZone and DateStyle,
-- and reads back the same in the same session). The default partition has none.
CREATE OR REPLACE VIEW history_partitions AS
SELECT c.oid::regclass AS partition,
       CASE WHEN m[1] = 'MINVALUE' THEN '-infinity' ELSE btrim(m[1], '''')::timestamptz END AS starts,
       CASE WHEN m[2] = 'MAXVALUE' THEN 'infinity' ELSE btrim(m[2], '''')::timestamptz END AS ends,
       greatest(c.reltuples, 0)::bigint AS rows_estimate,
       pg_total_relation_size(c.oid) AS bytes
  FROM pg_inherits i
  JOIN pg_class c ON c.oid = i.inhrelid
  CROSS JOIN LATERAL regexp_match(pg_get_expr(c.relpartbound, c.oid), 'FROM \((.*)\) TO \((.*)\)') AS m
 WHERE i.inhparent = 'tweetkeeper.metric_history_hot'::regclass AND m IS NOT NULL;
COMMENT ON VIEW history_partitions IS
  'The partitions of metric_history_hot with their time range [starts, ends), estimated rows and '
  'bytes (the default partition, which has no range, is not listed).';

CREATE OR REPLACE FUNCTION record_housekeeping(task text, result text) RETURNS void
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
-- The parent is locked EXCLUSIVE once a partition is needed: readers go on, completions wait the
-- few milliseconds this takes. A weaker lock (ATTACH's own, SHARE UPDATE EXCLUSIVE) lets a
-- completion route its row to the default partition just before the ATTACH and then fail its
-- partition check just after (SQLSTATE 23514), wasting the request it stores. CREATE + ATTACH
-- rather than CREATE ... PARTITION OF, whose ACCESS EXCLUSIVE lock would stop readers too;
-- lock_timeout keeps it from queueing behind a long writer (and everything else behind it).
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
      LOCK TABLE tweetkeeper.metric_history_hot IN EXCLUSIVE MODE;  -- no completion in flight across the ATTACH
      locked := true;
    END IF;
    part := 'metric_history_' || to_char(lo, 'YYYYMMDD_HH24MISS');
    IF tweetkeeper.shard_count() = 0 THEN
      EXECUTE format('CREATE TABLE tweetkeeper.%1$I (LIKE tweetkeeper.metric_history_hot,
                        CONSTRAINT %2$I PRIMARY KEY (tweet_id, observed_at, lease_id))', part, part || '_pkey');
      EXECUTE format('WITH m AS (DELETE FROM tweetkeeper.metric_history_default
                                  WHERE observed_at >= $1 AND observed_at < $2 RETURNING *)
                      INSERT INTO tweetkeeper.%I SELECT * FROM m', part) USING lo, hi;
      GET DIAGNOSTICS n = ROW_COUNT;
      EXECUTE format('ALTER TABLE tweetkeeper.metric_history_hot ATTACH PARTITION tweetkeeper.%I FOR VALUES FROM (%L) TO (%L)',
                     part, lo, hi);
    ELSE
      -- Citus: the partition made by PARTITION OF, which Citus distributes as its parent (its key
      -- with bucket); rows of the default partition in its range set aside in a temporary table
      -- first (Citus moves no rows between a distributed table's partitions in one statement).
      CREATE TEMP TABLE IF NOT EXISTS history_moving (LIKE tweetkeeper.metric_history_hot) ON COMMIT DROP;
      DELETE FROM history_moving;
      INSERT INTO history_moving SELECT * FROM tweetkeeper.metric_history_default d
       WHERE d.observed_at >= lo AND d.observed_at < hi;
      GET DIAGNOSTICS n = ROW_COUNT;
      IF n > 0 THEN
        DELETE FROM tweetkeeper.metric_history_default d WHERE d.observed_at >= lo AND d.observed_at < hi;
      END IF;
      EXECUTE format('CREATE TABLE tweetkeeper.%1$I PARTITION OF tweetkeeper.metric_history_hot (
                        CONSTRAINT %2$I PRIMARY KEY (tweet_id, observed_at, lease_id, bucket)) FOR VALUES FROM (%3$L) TO (%4$L)',
                     part, part || '_pkey', lo, hi);
      IF n > 0 THEN
        INSERT INTO tweetkeeper.metric_history_hot SELECT * FROM history_moving;
      END IF;
    END IF;
    moved := moved + n;
    created := created + 1;
  END LOOP;
  PERFORM tweetkeeper.record_housekeeping('partitions',
    format('%s partitions created, %s rows moved out of the default partition', created, moved));
  RETURN created;
END $$;
COMMENT ON FUNCTION create_partitions() IS
  'Creates the partitions of metric_history_hot for now and a little ahead (and for rows waiting in '
  'the default partition, which move into them); returns how many it created. Idempotent.';

-- The daily rollup of observations about to be dropped (source: a partition, or a query over
-- compacted history): per post and UTC day, the day's last counts and how many observations it
-- had, merged with what an earlier source gave the same day.
CREATE OR REPLACE FUNCTION rollup_history(source text) RETURNS bigint
  LANGUAGE plpgsql SECURITY DEFINER
  SET search_path = pg_catalog, pg_temp SET TimeZone = 'UTC' SET DateStyle = 'ISO, YMD' AS $$
DECLARE
  n bigint;
BEGIN
  EXECUTE format($q$
    INSERT INTO tweetkeeper.metric_daily AS d (tweet_id, day, observations, last_observed_at,
           retweet_count, reply_count, like_count, quote_count, bookmark_count, impression_count, bucket)
    SELECT DISTINCT ON (h.bucket, h.tweet_id, h.observed_at::date) h.tweet_id, h.observed_at::date,
           count(*) OVER (PARTITION BY h.bucket, h.tweet_id, h.observed_at::date), h.observed_at,
           h.retweet_count, h.reply_count, h.like_count, h.quote_count, h.bookmark_count, h.impression_count,
           h.bucket
      FROM %s h
     ORDER BY h.bucket, h.tweet_id, h.observed_at::date, h.observed_at DESC
    ON CONFLICT ON CONSTRAINT metric_daily_pkey DO UPDATE
       SET observations = d.observations + excluded.observations,
           last_observed_at = greatest(d.last_observed_at, excluded.last_observed_at),
           retweet_count = CASE WHEN excluded.last_observed_at > d.last_observed_at THEN excluded.retweet_count ELSE d.retweet_count END,
           reply_count = CASE WHEN excluded.last_observed_at > d.last_observed_at THEN excluded.reply_count ELSE d.reply_count END,
           like_count = CASE WHEN excluded.last_observed_at > d.last_observed_at THEN excluded.like_count ELSE d.like_count END,
           quote_count = CASE WHEN excluded.last_observed_at > d.last_observed_at THEN excluded.quote_count ELSE d.quote_count END,
           bookmark_count = CASE WHEN excluded.last_observed_at > d.last_observed_at THEN excluded.bookmark_count ELSE d.bookmark_count END,
           impression_count = CASE WHEN excluded.last_observed_at > d.last_observed_at THEN excluded.impression_count ELSE d.impression_count END
  $q$, source);
  GET DIAGNOSTICS n = ROW_COUNT;
  RETURN n;
END $$;

-- Retention: whole partitions whose every row is older than tweetkeeper.history_retention are
-- dropped, and whole weeks of compacted history likewise; before that, with
-- tweetkeeper.history_rollup, their rows are summed up per post and UTC day into metric_daily.
CREATE OR REPLACE FUNCTION apply_retention() RETURNS integer
  LANGUAGE plpgsql SECURITY DEFINER
  SET search_path = pg_catalog, pg_temp SET TimeZone = 'UTC' SET DateStyle = 'ISO, YMD'
  SET lock_timeout = '2s' AS $$
DECLARE
  s record := tweetkeeper.settings();
  cutoff timestamptz := now() - s.history_retention;
  -- The compacted weeks that end by the cutoff.
  weeks text := format('(SELECT c.tweet_id, u.*, c.bucket FROM tweetkeeper.metric_history_compact c
                          CROSS JOIN LATERAL tweetkeeper.unpack_history(c.packed) u
                         WHERE c.span_start <= %L)', cutoff - interval '7 days');
  p record;
  dropped integer := 0;
  rolled bigint := 0;
  weeks_dropped bigint := 0;
  payloads_dropped bigint := 0;
BEGIN
  IF s.history_retention = interval '0' THEN
    PERFORM tweetkeeper.record_housekeeping('retention', 'keeping everything (tweetkeeper.history_retention = 0)');
    RETURN 0;
  END IF;
  PERFORM pg_advisory_xact_lock(hashtext('tweetkeeper.housekeeping'));
  -- Payloads older than the cutoff go too, except each post's newest: what it looks like now.
  IF tweetkeeper.shard_count() = 0 THEN
    DELETE FROM tweetkeeper.payloads o
     WHERE o.seen_at < cutoff
       AND EXISTS (SELECT 1 FROM tweetkeeper.payloads n WHERE n.tweet_id = o.tweet_id AND n.seen_at > o.seen_at);
  ELSE
    DELETE FROM tweetkeeper.payloads o
     WHERE o.seen_at < cutoff
       AND EXISTS (SELECT 1 FROM tweetkeeper.payloads n
                    WHERE n.bucket = o.bucket AND n.tweet_id = o.tweet_id AND n.seen_at > o.seen_at);
  END IF;
  GET DIAGNOSTICS payloads_dropped = ROW_COUNT;
  IF NOT EXISTS (SELECT FROM tweetkeeper.history_partitions h WHERE h.ends <= cutoff)
     -- (SELECT 1: Citus cannot ship a sublink that selects no column to its worker nodes)
     AND NOT EXISTS (SELECT 1 FROM tweetkeeper.metric_history_default d WHERE d.observed_at < cutoff)
     -- (the oldest week, from metric_history_compact_span_idx: an EXISTS over the weeks before the
     -- cutoff may be planned as a scan of every compacted row when there is none)
     AND NOT coalesce((SELECT min(c.span_start) FROM tweetkeeper.metric_history_compact c) <= cutoff - interval '7 days',
                      false) THEN
    PERFORM tweetkeeper.record_housekeeping('retention', format('nothing older than %s (%s old payloads dropped)',
                                                                 cutoff, payloads_dropped));
    RETURN 0;
  END IF;
  -- DROP takes this lock on the parent; taken first, before create_partitions() locks any
  -- partition, so that no reader holding the parent waits for a partition held here.
  LOCK TABLE tweetkeeper.metric_history_hot IN ACCESS EXCLUSIVE MODE;
  PERFORM tweetkeeper.create_partitions();  -- rows in the default partition get a partition, so they age out too
  FOR p IN SELECT h.partition FROM tweetkeeper.history_partitions h WHERE h.ends <= cutoff ORDER BY h.starts LOOP
    IF s.history_rollup THEN
      rolled := rolled + tweetkeeper.rollup_history(p.partition::text);
    END IF;
    EXECUTE format('DROP TABLE %s', p.partition);
    dropped := dropped + 1;
  END LOOP;
  IF s.history_rollup THEN
    rolled := rolled + tweetkeeper.rollup_history(weeks);
  END IF;
  DELETE FROM tweetkeeper.metric_history_compact c WHERE c.span_start <= cutoff - interval '7 days';
  GET DIAGNOSTICS weeks_dropped = ROW_COUNT;
  PERFORM tweetkeeper.record_housekeeping('retention',
    format('%s partitions and %s compacted post-weeks older than %s dropped, %s daily rows rolled up, '
           '%s old payloads dropped', dropped, weeks_dropped, cutoff, rolled, payloads_dropped));
  RETURN dropped;
END $$;
COMMENT ON FUNCTION apply_retention() IS
  'Drops the partitions of metric_history_hot, and the weeks of metric_history_compact, older than '
  'tweetkeeper.history_retention (0: none), first rolling them up into metric_daily '
  '(tweetkeeper.history_rollup); returns how many partitions it dropped.';

-- Compaction: the partitions of metric_history_hot of the UTC weeks that ended an hour ago or
-- more (an observation's time is its completion's, so none can land there any more) are merged
-- into metric_history_compact, one row per post and week, and dropped. The partitions of a run
-- go in one statement, so each row is written once (merge_history joins a week's row with what a
-- later run adds: a week split by max_partitions). All in one transaction: a run killed at any point loses nothing, and the next one
-- does the work again (a partition is either still there, or merged and gone). The partitions
-- are read under SHARE locks (no writer); the parent is locked only for the DROPs, at the end.
-- With a retention shorter than two weeks nothing is compacted: retention drops the history
-- soon anyway, and it drops compacted history only by whole weeks.
CREATE OR REPLACE FUNCTION compact_history(max_partitions integer DEFAULT 48) RETURNS integer
  LANGUAGE plpgsql SECURITY DEFINER
  SET search_path = pg_catalog, pg_temp SET TimeZone = 'UTC' SET DateStyle = 'ISO, YMD'
  SET lock_timeout = '2s' AS $$
DECLARE
  s record := tweetkeeper.settings();
  parts regclass[];
  part regclass;
  source text;
  observations bigint := 0;
BEGIN
  IF max_partitions IS NULL OR max_partitions < 1 THEN
    RAISE EXCEPTION 'max_partitions must be at least 1, got %', coalesce(max_partitions::text, 'NULL')
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF s.history_retention > interval '0' AND s.history_retention < interval '14 days' THEN
    PERFORM tweetkeeper.record_housekeeping('compaction',
      format('not compacting: tweetkeeper.history_retention (%s) is shorter than two weeks', s.history_retention));
    RETURN 0;
  END IF;
  PERFORM pg_advisory_xact_lock(hashtext('tweetkeeper.housekeeping'));
  SELECT array_agg(h.partition ORDER BY h.starts) INTO parts
    FROM (SELECT h.partition, h.starts FROM tweetkeeper.history_partitions h
           WHERE h.ends <= tweetkeeper.history_span(now() - interval '1 hour')
           ORDER BY h.starts LIMIT max_partitions) h;
  IF parts IS NULL THEN
    PERFORM tweetkeeper.record_housekeeping('compaction', 'no partition of a week past');
    RETURN 0;
  END IF;
  FOREACH part IN ARRAY parts LOOP
    EXECUTE format('LOCK TABLE %s IN SHARE MODE', part);
  END LOOP;
  -- One statement over all of them: each partition read once, each post's week packed once.
  SELECT string_agg(format('SELECT * FROM %s', x), ' UNION ALL ') INTO source FROM unnest(parts) x;
  EXECUTE format($q$
    WITH g AS (
      SELECT h.tweet_id, tweetkeeper.history_span(h.observed_at) AS span_start, count(*) AS n, h.bucket,
             tweetkeeper.pack_history(array_agg(h.observed_at ORDER BY h.observed_at, h.lease_id),
               array_agg(h.lease_id ORDER BY h.observed_at, h.lease_id),
               array_agg(h.retweet_count ORDER BY h.observed_at, h.lease_id),
               array_agg(h.reply_count ORDER BY h.observed_at, h.lease_id),
               array_agg(h.like_count ORDER BY h.observed_at, h.lease_id),
               array_agg(h.quote_count ORDER BY h.observed_at, h.lease_id),
               array_agg(h.bookmark_count ORDER BY h.observed_at, h.lease_id),
               array_agg(h.impression_count ORDER BY h.observed_at, h.lease_id)) AS packed
        FROM (%s) h
       GROUP BY h.bucket, 1, 2
    ), ins AS (
      INSERT INTO tweetkeeper.metric_history_compact AS c (tweet_id, span_start, packed, bucket)
      SELECT g.tweet_id, g.span_start, g.packed, g.bucket FROM g ORDER BY 1, 2
      ON CONFLICT ON CONSTRAINT metric_history_compact_pkey
      DO UPDATE SET packed = tweetkeeper.merge_history(c.packed, excluded.packed)
    )
    SELECT coalesce(sum(g.n), 0) FROM g$q$, source) INTO observations;
  LOCK TABLE tweetkeeper.metric_history_hot IN ACCESS EXCLUSIVE MODE;
  FOREACH part IN ARRAY parts LOOP
    EXECUTE format('DROP TABLE %s', part);
  END LOOP;
  PERFORM tweetkeeper.record_housekeeping('compaction',
    format('%s partitions compacted (%s observations)', cardinality(parts), observations));
  RETURN cardinality(parts);
END $$;
COMMENT ON FUNCTION compact_history(integer) IS
  'Moves up to max_partitions partitions of metric_history_hot of UTC weeks past into '
  'metric_history_compact (one row per post and week) and drops them; returns how many. '
  'Idempotent and safe to interrupt. Nothing with a tweetkeeper.history_retention under 14 days.';

-- Each task that has not run for if_older_than (by anyone: pg_cron, an operator, this), in a
-- subtransaction of its own: a task that fails (a lock not granted in time) is recorded as such
-- and tried again next time, and does not stop the other. Run by the background worker every
-- tweetkeeper.housekeeping_interval.
CREATE OR REPLACE FUNCTION housekeeping(if_older_than interval DEFAULT interval '0') RETURNS text
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  job text;
  done text[] := '{}';
BEGIN
  IF if_older_than IS NULL OR if_older_than < interval '0' THEN
    RAISE EXCEPTION 'if_older_than must be zero or more, not %', if_older_than
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF tweetkeeper.citus_worker_node() THEN
    RETURN 'nothing: this is a Citus worker node, the coordinator keeps house';
  END IF;
  -- Retention first: it takes the strongest lock (see apply_retention), before any other.
  FOREACH job IN ARRAY ARRAY['retention', 'partitions', 'compaction'] LOOP
    CONTINUE WHEN if_older_than > interval '0' AND EXISTS (
                    SELECT FROM tweetkeeper.housekeeping_runs r
                     WHERE r.task = job AND r.last_run > clock_timestamp() - if_older_than
                             AND r.result NOT LIKE 'failed:%');
    BEGIN
      CASE job
        WHEN 'partitions' THEN PERFORM tweetkeeper.create_partitions();
        WHEN 'compaction' THEN PERFORM tweetkeeper.compact_history();
        ELSE PERFORM tweetkeeper.apply_retention();
      END CASE;
      done := done || (job || ': ' || (SELECT r.result FROM tweetkeeper.housekeeping_runs r WHERE r.task = job));
    EXCEPTION WHEN OTHERS THEN
      PERFORM tweetkeeper.record_housekeeping(job, 'failed: ' || SQLERRM);
      done := done || (job || ': failed: ' || SQLERRM);
    END;
  END LOOP;
  RETURN array_to_string(done, '; ');
END $$;
COMMENT ON FUNCTION housekeeping(interval) IS
  'Runs the housekeeping tasks (apply_retention, create_partitions, compact_history) that have '
  'not run for if_older_than; a failed task is recorded in housekeeping_runs and does not stop '
  'the others. '
  'Returns what was done.';

-- pg_cron, when it is installed in this database, instead of the background worker: the jobs run
-- the tasks more often than tweetkeeper.housekeeping_interval, so the worker finds them done.
-- Jobs belong to the user who calls this (cron.schedule); by name, so calling again updates them.
CREATE OR REPLACE FUNCTION schedule_housekeeping(partitions text DEFAULT '*/10 * * * *',
                                      retention text DEFAULT '17 * * * *',
                                      compaction text DEFAULT '37 * * * *') RETURNS bigint[]
  LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
  IF partitions IS NULL OR retention IS NULL OR compaction IS NULL THEN
    RAISE EXCEPTION 'the schedules must not be NULL' USING ERRCODE = 'null_value_not_allowed';
  END IF;
  IF NOT EXISTS (SELECT FROM pg_extension WHERE extname = 'pg_cron') THEN
    RAISE EXCEPTION 'pg_cron is not installed in database %', current_database()
      USING ERRCODE = 'object_not_in_prerequisite_state',
            HINT = 'Add pg_cron to shared_preload_libraries, set cron.database_name to this database '
                   'and CREATE EXTENSION pg_cron; without it the background worker does the housekeeping.';
  END IF;
  RETURN ARRAY[cron.schedule('tweetkeeper-partitions', partitions, 'SELECT tweetkeeper.create_partitions()'),
               cron.schedule('tweetkeeper-retention', retention, 'SELECT tweetkeeper.apply_retention()'),
               cron.schedule('tweetkeeper-compaction', compaction, 'SELECT tweetkeeper.compact_history()')];
END $$;
COMMENT ON FUNCTION schedule_housekeeping(text, text, text) IS
  'Registers (or updates) the pg_cron jobs tweetkeeper-partitions, tweetkeeper-retention and '
  'tweetkeeper-compaction with these cron schedules; returns their job ids. Needs pg_cron in this '
  'database.';

CREATE OR REPLACE FUNCTION unschedule_housekeeping() RETURNS integer
  LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  n integer := 0;
  job text;
BEGIN
  IF NOT EXISTS (SELECT FROM pg_extension WHERE extname = 'pg_cron') THEN
    RETURN 0;  -- nothing can be scheduled
  END IF;
  FOR job IN EXECUTE 'SELECT jobname FROM cron.job
                       WHERE jobname IN (''tweetkeeper-partitions'', ''tweetkeeper-retention'', ''tweetkeeper-compaction'')
                         AND username = current_user' LOOP
    PERFORM cron.unschedule(job);
    n := n + 1;
  END LOOP;
  RETURN n;
END $$;
COMMENT ON FUNCTION unschedule_housekeeping() IS
  'Removes the pg_cron jobs of schedule_housekeeping() (the background worker takes over); '
  'returns how many it removed.';

-- ==== sql/schema/72_payloads.sql
-- What was seen of each post beyond its counts (tweetkeeper.payloads = first or changed): the
-- post's own object as the API gave it, kept by complete_batch() in the statement that stores
-- the counts. Posts found deleted or unavailable leave a tombstone, and (unless
-- tweetkeeper.deleted_payloads = keep) their payloads are erased: X's terms require stored
-- content to follow deletions. An edited X post links to its newest version (edits), which is
-- refreshed from then on. All three are dumped by pg_dump and distributed by bucket on Citus.
-- Each tweet keeps the content hash of its last kept payload (tweets.payload_hash, set and
-- cleared by complete_batch()), which claim_batch() and claim_posts() hand the worker: a worker
-- that hashes an answer the same way (payload_content()) sends only the payloads whose hash
-- differs (changed) or that have none (first), so an unchanged post costs it one hash, and the
-- database no lookup; complete_batch() still decides, against payloads, under its locks. Payloads
-- deleted by hand leave that hash as it was: a post's next payload is kept when its content
-- changes (retention keeps each post's newest payload, so it never does this).

CREATE TABLE payloads (
  tweet_id bigint NOT NULL,
  seen_at timestamptz NOT NULL,  -- when the answer came (the batch's completion)
  lease_id bigint NOT NULL,      -- the batch whose answer it was
  content_hash bytea NOT NULL,   -- md5 of payload_content(payload, author): what "changed" compares
  payload jsonb NOT NULL,        -- X: the tweet object; Bluesky: the postView; Mastodon: the Status
  author jsonb,                  -- X: the author's user object from includes.users; NULL elsewhere
                                 --   (the postView and the Status carry their author themselves)
  bucket smallint,               -- tweetkeeper.bucket_of(tweet_id): its shard on Citus
  CONSTRAINT payloads_pkey PRIMARY KEY (tweet_id, seen_at, lease_id)
);
SELECT pg_catalog.pg_extension_config_dump('payloads', '');
COMMENT ON TABLE payloads IS
  'Full post payloads as the API gave them (tweetkeeper.payloads: first, or each change of content).';

CREATE TABLE tombstones (
  tweet_id bigint NOT NULL,
  reason text NOT NULL,          -- the API's problem: resource-not-found, not-authorized-for-resource, ...
  observed_at timestamptz NOT NULL,
  payloads_erased integer NOT NULL DEFAULT 0,  -- how many stored payloads went (0 under keep)
  bucket smallint,
  CONSTRAINT tombstones_pkey PRIMARY KEY (tweet_id)
);
SELECT pg_catalog.pg_extension_config_dump('tombstones', '');
COMMENT ON TABLE tombstones IS
  'Posts found deleted or unavailable: when, why, and how many payloads were erased. A post seen '
  'again loses its tombstone.';

CREATE TABLE edits (
  tweet_id bigint NOT NULL,      -- an X post that has a newer version
  newest_id bigint NOT NULL,     -- the last id of its edit_history_tweet_ids, scheduled in its place
  seen_at timestamptz NOT NULL,
  bucket smallint,
  CONSTRAINT edits_pkey PRIMARY KEY (tweet_id)
);
SELECT pg_catalog.pg_extension_config_dump('edits', '');
COMMENT ON TABLE edits IS
  'Edited X posts: each version with the newest one, which is refreshed from then on.';

-- ==== sql/replaceable/72_payloads.sql
-- Payloads (the tables and what they mean: sql/schema/72_payloads.sql): the content a payload is
-- compared by, which tweetkeeper.payloads = changed and the workers' hashes rest on.

-- A payload without what changes on every refresh: counts (the history keeps them), the reader's
-- own state (viewer, favourited, ...) and authors' counts, wherever they are in it: a quoted
-- post's counts in a Bluesky embed, a boosted status's in a Mastodon reblog, a poll's votes. What
-- tweetkeeper.payloads = changed compares, so that a new version is stored when the text, edits,
-- author's public fields, entities or withheld state change, and not when a like comes in. A walk
-- with a stack of its own (no recursion however deep the document); the worker's content_hash.cpp
-- removes the same keys.
CREATE OR REPLACE FUNCTION payload_without_counts(doc jsonb) RETURNS jsonb
  LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  counts CONSTANT text[] := ARRAY['public_metrics', 'non_public_metrics', 'organic_metrics', 'promoted_metrics',
                                  'edit_controls', 'likeCount', 'repostCount', 'replyCount', 'quoteCount',
                                  'bookmarkCount', 'viewer', 'favourites_count', 'reblogs_count', 'replies_count',
                                  'quotes_count', 'favourited', 'reblogged', 'muted', 'bookmarked', 'pinned',
                                  'followers_count', 'following_count', 'statuses_count', 'last_status_at',
                                  'votes_count', 'voters_count'];
  stack jsonb := '[[]]';  -- paths of the objects and arrays still to look into
  path text[];
  node jsonb;
  k text;
  v jsonb;
  i integer;
BEGIN
  WHILE jsonb_array_length(stack) > 0 LOOP
    path := ARRAY(SELECT jsonb_array_elements_text(stack -> -1));
    stack := stack - -1;
    node := doc #> path;
    IF jsonb_typeof(node) = 'object' THEN
      FOR k, v IN SELECT key, value FROM jsonb_each(node) LOOP
        IF k = ANY (counts) THEN
          doc := doc #- (path || k);
        ELSIF jsonb_typeof(v) IN ('object', 'array') THEN
          stack := stack || jsonb_build_array(to_jsonb(path || k));
        END IF;
      END LOOP;
    ELSIF jsonb_typeof(node) = 'array' THEN
      FOR i IN 0 .. jsonb_array_length(node) - 1 LOOP
        IF jsonb_typeof(node -> i) IN ('object', 'array') THEN
          stack := stack || jsonb_build_array(to_jsonb(path || i::text));
        END IF;
      END LOOP;
    END IF;
  END LOOP;
  RETURN doc;
END
$$;
COMMENT ON FUNCTION payload_without_counts(jsonb) IS
  'A payload (or an author) without its counts and viewer state, at any depth: what '
  'payload_content() compares.';

CREATE OR REPLACE FUNCTION payload_content(payload jsonb, author jsonb) RETURNS jsonb
  LANGUAGE sql IMMUTABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp AS $$
  SELECT jsonb_build_array(tweetkeeper.payload_without_counts(payload), tweetkeeper.payload_without_counts(author))
$$;
COMMENT ON FUNCTION payload_content(jsonb, jsonb) IS
  'A payload (and its X author) without counts and viewer state: what tweetkeeper.payloads = '
  'changed compares.';

-- The observations of a completion as complete_batch() stores them (sql/replaceable/40_claim.sql),
-- here because it hashes payloads by payload_content() above: one per id of the batch (the first
-- of repeats), each count kept only when it is one (below 0 or above 10^12, a thousand times the
-- views of the most viewed post, it is no count: not stored, and `invalid` says so, with what the
-- worker found wrong itself), a post of another network's creation time from its answer, the
-- payload's content hash, and whether an X post was edited since. A SQL function the planner
-- inlines into complete_batch()'s statement: no call, no plan of its own. (A body in SQL's own
-- form, BEGIN ATOMIC: its names are resolved once, when the extension's script creates it, so it
-- needs no SET search_path, which would keep it from being inlined.)
CREATE OR REPLACE FUNCTION observations_in(observations jsonb, batch_ids bigint[], keep_payloads text)
  RETURNS TABLE (id bigint, retweet_count bigint, reply_count bigint, like_count bigint, quote_count bigint,
                 bookmark_count bigint, impression_count bigint, created_at timestamptz, invalid text,
                 payload jsonb, author jsonb, content_hash bytea, edited boolean, newest_id bigint)
  LANGUAGE sql STABLE
BEGIN ATOMIC
  SELECT r.id,
         CASE WHEN r.retweet_count BETWEEN 0 AND 1000000000000 THEN r.retweet_count END AS retweet_count,
         CASE WHEN r.reply_count BETWEEN 0 AND 1000000000000 THEN r.reply_count END AS reply_count,
         CASE WHEN r.like_count BETWEEN 0 AND 1000000000000 THEN r.like_count END AS like_count,
         CASE WHEN r.quote_count BETWEEN 0 AND 1000000000000 THEN r.quote_count END AS quote_count,
         CASE WHEN r.bookmark_count BETWEEN 0 AND 1000000000000 THEN r.bookmark_count END AS bookmark_count,
         CASE WHEN r.impression_count BETWEEN 0 AND 1000000000000 THEN r.impression_count END AS impression_count,
         -- A post of another network: its creation time as its answer says (X's id says it).
         CASE WHEN r.id < 0 AND r.created_at BETWEEN timestamptz '2006-03-21 20:50:14+00'
                                                 AND now() + interval '1 minute' THEN r.created_at END AS created_at,
         nullif(concat_ws(', ', nullif(r.invalid, ''),
           'retweet_count ' || CASE WHEN r.retweet_count NOT BETWEEN 0 AND 1000000000000 THEN r.retweet_count END,
           'reply_count ' || CASE WHEN r.reply_count NOT BETWEEN 0 AND 1000000000000 THEN r.reply_count END,
           'like_count ' || CASE WHEN r.like_count NOT BETWEEN 0 AND 1000000000000 THEN r.like_count END,
           'quote_count ' || CASE WHEN r.quote_count NOT BETWEEN 0 AND 1000000000000 THEN r.quote_count END,
           'bookmark_count ' || CASE WHEN r.bookmark_count NOT BETWEEN 0 AND 1000000000000 THEN r.bookmark_count END,
           'impression_count ' || CASE WHEN r.impression_count NOT BETWEEN 0 AND 1000000000000 THEN r.impression_count END),
           '') AS invalid,
         CASE WHEN keep_payloads <> 'none' AND jsonb_typeof(r.payload) = 'object' THEN r.payload END AS payload,
         CASE WHEN jsonb_typeof(r.author) = 'object' THEN r.author END AS author,
         -- A payload's content hash: the worker's (hex md5 by payload_content()'s rule), or computed.
         CASE WHEN keep_payloads <> 'none' AND jsonb_typeof(r.payload) = 'object'
              THEN coalesce(CASE WHEN r.content_hash ~ '^[0-9a-f]{32}$' THEN decode(r.content_hash, 'hex') END,
                            decode(md5(tweetkeeper.payload_content(
                              r.payload, CASE WHEN jsonb_typeof(r.author) = 'object' THEN r.author END)::text), 'hex'))
         END AS content_hash,
         -- An X post edited since: the answer's edit_history_tweet_ids ends in a newer id.
         -- (A newer id whose time is in the future is no version we could track: ignored.)
         coalesce(r.id > 0 AND r.newest_id > r.id
                  AND tweetkeeper.snowflake_time(r.newest_id) <= now() + interval '1 minute', false) AS edited,
         r.newest_id
    FROM (SELECT DISTINCT ON (o.id) o.*
            FROM jsonb_to_recordset(observations) AS o(id bigint, retweet_count bigint,
                   reply_count bigint, like_count bigint, quote_count bigint, bookmark_count bigint,
                   impression_count bigint, invalid text, created_at timestamptz, payload jsonb,
                   author jsonb, newest_id bigint, content_hash text)
           WHERE o.id = ANY (batch_ids)) r;
END;

-- ==== sql/replaceable/75_curves.sql
-- Curves (issue 39): each post's counts at the ages one asks for, and how long its engagement
-- lasted, from its observations (metric_history: the recent and the compacted alike). Nothing is
-- guessed past a post's last observation (tweets.updated_at). History keeps the observations that
-- changed a count (and the first): between two of them the counts stood at the earlier one's until
-- some moment before the later one, which is why both observations' times come with every value.

-- Each post's counts at each age: the last observation at or before the moment (created_at + age),
-- and the value interpolated linearly between it and the next one; at an age between the last
-- change and the last observation, the counts stood (the interpolated value is the last one's).
-- Before the first observation only the interpolated value is given, from the creation, when a
-- post has no engagement yet (0). NULL past the last observation, for a post not tracked, and for
-- a count the network does not report.
CREATE OR REPLACE FUNCTION metrics_at(posts bigint[], ages interval[])
  RETURNS TABLE (post_id bigint, age interval, at timestamptz, observed_before timestamptz,
                 observed_after timestamptz, retweet_count bigint, reply_count bigint, like_count bigint,
                 quote_count bigint, bookmark_count bigint, impression_count bigint,
                 retweet_interpolated double precision, reply_interpolated double precision,
                 like_interpolated double precision, quote_interpolated double precision,
                 bookmark_interpolated double precision, impression_interpolated double precision)
  LANGUAGE plpgsql STABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  bad interval;
BEGIN
  IF posts IS NULL THEN
    RAISE EXCEPTION 'posts must not be NULL' USING ERRCODE = '22004';
  END IF;
  IF ages IS NULL OR cardinality(ages) = 0 THEN
    RAISE EXCEPTION 'ages must hold at least one age' USING ERRCODE = '22023';
  END IF;
  IF array_position(ages, NULL) IS NOT NULL THEN
    RAISE EXCEPTION 'ages must not hold NULL' USING ERRCODE = '22023';
  END IF;
  SELECT u INTO bad FROM unnest(ages) u WHERE u < interval '0' LIMIT 1;
  IF FOUND THEN
    RAISE EXCEPTION 'an age must not be negative: %', bad USING ERRCODE = '22023';
  END IF;
  RETURN QUERY
  WITH p AS (
    SELECT t.tweet_id, t.created_at, t.updated_at FROM tweetkeeper.tweets t WHERE t.tweet_id = ANY (posts)
  ), a AS (
    SELECT DISTINCT u AS age FROM unnest(ages) u
  ), o AS (
    -- The creation (no engagement yet) and every observation, in time order.
    SELECT p.tweet_id, p.created_at AS observed_at, true AS made, 0::bigint AS lease_id,
           0::bigint AS rt, 0::bigint AS re, 0::bigint AS li, 0::bigint AS qu, 0::bigint AS bo, 0::bigint AS im
      FROM p
    UNION ALL
    SELECT h.tweet_id, h.observed_at, false, h.lease_id, h.retweet_count, h.reply_count, h.like_count,
           h.quote_count, h.bookmark_count, h.impression_count
      FROM tweetkeeper.metric_history h WHERE h.tweet_id = ANY (posts)
  ), s AS (
    -- Each with the next one: the span in which the counts went from the one to the other.
    SELECT o.*, lead(o.observed_at) OVER w AS next_at, lead(o.rt) OVER w AS n_rt, lead(o.re) OVER w AS n_re,
           lead(o.li) OVER w AS n_li, lead(o.qu) OVER w AS n_qu, lead(o.bo) OVER w AS n_bo, lead(o.im) OVER w AS n_im
      FROM o
    WINDOW w AS (PARTITION BY o.tweet_id ORDER BY o.observed_at, o.made DESC, o.lease_id)
  )
  SELECT p.tweet_id, a.age, p.created_at + a.age,
         CASE WHEN NOT s.made THEN s.observed_at END, CASE WHEN s.tweet_id IS NOT NULL THEN coalesce(s.next_at, p.updated_at) END,
         CASE WHEN NOT s.made THEN s.rt END, CASE WHEN NOT s.made THEN s.re END,
         CASE WHEN NOT s.made THEN s.li END, CASE WHEN NOT s.made THEN s.qu END,
         CASE WHEN NOT s.made THEN s.bo END, CASE WHEN NOT s.made THEN s.im END,
         -- (Where there is no next observation the counts stood until the last, updated_at.)
         CASE WHEN s.next_at IS NULL THEN s.rt ELSE s.rt + (s.n_rt - s.rt) * f.x END,
         CASE WHEN s.next_at IS NULL THEN s.re ELSE s.re + (s.n_re - s.re) * f.x END,
         CASE WHEN s.next_at IS NULL THEN s.li ELSE s.li + (s.n_li - s.li) * f.x END,
         CASE WHEN s.next_at IS NULL THEN s.qu ELSE s.qu + (s.n_qu - s.qu) * f.x END,
         CASE WHEN s.next_at IS NULL THEN s.bo ELSE s.bo + (s.n_bo - s.bo) * f.x END,
         CASE WHEN s.next_at IS NULL THEN s.im ELSE s.im + (s.n_im - s.im) * f.x END
    FROM p CROSS JOIN a
    LEFT JOIN s ON s.tweet_id = p.tweet_id AND s.observed_at <= p.created_at + a.age
               AND (s.next_at > p.created_at + a.age OR s.next_at IS NULL)
               AND p.created_at + a.age <= p.updated_at
               AND NOT (s.made AND s.next_at IS NULL)  -- (a post with no observation at all)
    -- How far into the span from the one observation to the next the moment is.
    CROSS JOIN LATERAL (SELECT extract(epoch FROM p.created_at + a.age - s.observed_at)::double precision
                               / nullif(extract(epoch FROM s.next_at - s.observed_at), 0)::double precision) f(x)
   ORDER BY p.tweet_id, a.age;
END
$$;
COMMENT ON FUNCTION metrics_at(bigint[], interval[]) IS
  'Each post''s counts at each age: the last observation at or before it (observed_before) and '
  'the value interpolated between it and the next (observed_after); NULL past the last '
  'observation. 22023 for no ages, a NULL or a negative one.';

-- The age (seconds) at which a count reached `share` of its latest value, in the span from the
-- observation before (prev_value at prev_at; 0 at the creation) to this one, or NULL when it did
-- not cross there. Inlined where it is used (a body in SQL's own form needs no search_path).
CREATE OR REPLACE FUNCTION crossing_seconds(share numeric, latest bigint, value bigint, prev_value bigint,
                                            observed_at timestamptz, prev_at timestamptz, created_at timestamptz)
  RETURNS double precision LANGUAGE sql IMMUTABLE PARALLEL SAFE
  RETURN CASE WHEN latest > 0 AND value >= share * latest AND prev_value < share * latest
              THEN extract(epoch FROM prev_at - created_at)::double precision
                   + extract(epoch FROM observed_at - prev_at)::double precision
                     * ((share * latest - prev_value) / (value - prev_value))::double precision END;

-- Per post and count: its latest value, and the ages at which it reached half and nine tenths of
-- it (interpolated between the observations around the crossing, from 0 at the creation), and
-- whether it is still changing (its post is still refreshed, and its latest observation changed
-- it). A count of 0, or one the network does not report, has no ages. Set-based: each post's
-- observations are read once, in time order, all six counts side by side (a million posts in
-- one pass, make bench); a condition on post_id reaches the history's index.
CREATE OR REPLACE VIEW lifespans AS
WITH o AS (
  -- Each observation with the one before it and the latest, per count.
  SELECT h.tweet_id, t.created_at, t.updated_at, t.state, t.endpoint, h.observed_at,
         lag(h.observed_at, 1, t.created_at) OVER w AS prev_at,
         h.retweet_count AS rt, lag(h.retweet_count, 1, 0::bigint) OVER w AS p_rt, last_value(h.retweet_count) OVER a AS l_rt,
         h.reply_count AS re, lag(h.reply_count, 1, 0::bigint) OVER w AS p_re, last_value(h.reply_count) OVER a AS l_re,
         h.like_count AS li, lag(h.like_count, 1, 0::bigint) OVER w AS p_li, last_value(h.like_count) OVER a AS l_li,
         h.quote_count AS qu, lag(h.quote_count, 1, 0::bigint) OVER w AS p_qu, last_value(h.quote_count) OVER a AS l_qu,
         h.bookmark_count AS bo, lag(h.bookmark_count, 1, 0::bigint) OVER w AS p_bo, last_value(h.bookmark_count) OVER a AS l_bo,
         h.impression_count AS im, lag(h.impression_count, 1, 0::bigint) OVER w AS p_im, last_value(h.impression_count) OVER a AS l_im
    FROM metric_history h JOIN tweets t ON t.tweet_id = h.tweet_id
  WINDOW w AS (PARTITION BY h.tweet_id ORDER BY h.observed_at, h.lease_id),
         a AS (w ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING)
), c AS (
  -- Per post and count, over its observations: the latest value, when it last changed, and the
  -- first crossings of half and nine tenths of the latest.
  SELECT o.tweet_id, o.created_at, o.updated_at, o.state, o.endpoint, m.metric,
         max(m.latest) AS latest,
         max(o.observed_at) FILTER (WHERE m.value IS DISTINCT FROM m.prev) AS changed_at,
         min(crossing_seconds(0.5, m.latest, m.value, m.prev, o.observed_at, o.prev_at, o.created_at)) AS s50,
         min(crossing_seconds(0.9, m.latest, m.value, m.prev, o.observed_at, o.prev_at, o.created_at)) AS s90
    FROM o CROSS JOIN LATERAL (VALUES ('retweet_count', o.rt, o.p_rt, o.l_rt), ('reply_count', o.re, o.p_re, o.l_re),
                                      ('like_count', o.li, o.p_li, o.l_li), ('quote_count', o.qu, o.p_qu, o.l_qu),
                                      ('bookmark_count', o.bo, o.p_bo, o.l_bo),
                                      ('impression_count', o.im, o.p_im, o.l_im)) m(metric, value, prev, latest)
   WHERE m.value IS NOT NULL
   GROUP BY o.tweet_id, o.created_at, o.updated_at, o.state, o.endpoint, m.metric
)
SELECT c.tweet_id AS post_id,
       CASE WHEN c.endpoint IS NULL THEN 'x' WHEN c.endpoint LIKE 'bluesky%' THEN 'bluesky' ELSE 'mastodon' END AS network,
       c.metric, c.latest, c.updated_at AS latest_at, make_interval(secs => c.s50) AS age_50,
       make_interval(secs => c.s90) AS age_90,
       c.state NOT IN ('done', 'deleted') AND c.changed_at = c.updated_at AS still_changing
  FROM c;
COMMENT ON VIEW lifespans IS
  'Per post and count: its latest value, the ages at which it reached 50% and 90% of it '
  '(interpolated between observations) and whether it is still changing.';

-- ==== sql/replaceable/80_stats.sql
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

-- ==== sql/replaceable/85_cost.sql
-- What tracking costs: one tweet's life under the current policy (tweet_cost), a forecast for the
-- queue (forecast), and what the registered credentials give against it (the capacity view).

-- One tweet from its creation to its last refresh under the current policy: the refreshes (ages
-- first_delay, then + the delay of the age reached, until past the last bucket), the requests
-- they are a share of (100 tweets per request), the billed reads (distinct UTC days with a
-- refresh, averaged over the hour of day the tweet was made) and their price.
CREATE OR REPLACE FUNCTION tweet_cost(price_per_read numeric DEFAULT 0.005, OUT refreshes integer,
                           OUT requests numeric, OUT billed_reads numeric, OUT cost numeric,
                           OUT tracked_for interval)
  LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
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
-- created in the last 24 hours, per second), and the timeline reads of X's followers of accounts.
-- X's tweets only (tweet_id > 0): X bills by the
-- post and asks 100 per request; Bluesky's and Mastodon's posts cost nothing and go 25 or 20 a
-- request, and are not in this forecast.
CREATE OR REPLACE FUNCTION forecast(span interval, OUT refreshes numeric, OUT requests numeric,
                         OUT billed_reads numeric)
  LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
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
  arrivals := (SELECT count(*) FROM tweetkeeper.tweets t WHERE t.created_at > now() - interval '1 day'
                 AND t.tweet_id > 0) / 86400.0;

  WITH g AS MATERIALIZED (
    -- Tracked tweets on their age schedule, by minute of creation; then the expected arrivals.
    SELECT date_trunc('minute', t.created_at) AS c, count(*)::numeric AS n,
           count(*) FILTER (WHERE t.billed_on = today)::numeric AS n_billed,
           count(*) FILTER (WHERE t.due_at <= t0)::numeric AS n_due
      FROM tweetkeeper.tweets t WHERE t.state = 'scheduled' AND t.watch_until IS NULL AND t.tweet_id > 0 GROUP BY 1
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
                         FROM tweetkeeper.tweets t WHERE t.watch_until > t0 AND t.tweet_id > 0), 0)
           + coalesce((SELECT count(*) FROM tweetkeeper.tweets t
                        WHERE t.state IN ('unavailable', 'missing') AND t.due_at < t1 AND t.tweet_id > 0), 0);
  bl := bl + coalesce((
    SELECT sum(CASE WHEN u::date = today AND t.billed_on = today THEN 0 ELSE 1 END)
      FROM tweetkeeper.tweets t,
           generate_series(date_trunc('day', t0 AT TIME ZONE 'UTC'), least(t1, t.watch_until) AT TIME ZONE 'UTC',
                           interval '1 day') u
     WHERE t.watch_until > t0 AND t.tweet_id > 0), 0);

  refreshes := round(rf, 1);
  -- Full batches when enough is due; otherwise a partial batch every buffer TTL at the most.
  requests := round(least(rf, greatest(rf / 100, span_s / greatest(extract(epoch FROM s.buffer_ttl), 1))), 1);
  -- X's followers read each followed account's timeline at the pace they keep now (from its last
  -- read to its next, poll_after - checked_at). The posts they find are tweets, in the arrivals
  -- above, billed as those are.
  requests := requests + round(coalesce((
    SELECT sum(span_s / greatest(extract(epoch FROM f.poll_after - f.checked_at), 1))
      FROM tweetkeeper.followed_accounts f
     WHERE f.network = 'x' AND f.status = 'following' AND f.checked_at IS NOT NULL AND f.poll_after > f.checked_at), 0), 1);
  billed_reads := round(bl, 1);
END $$;
COMMENT ON FUNCTION forecast(interval) IS
  'What the tracked and watched tweets, and new ones at the rate of the last day, will need from '
  'now to now + span: refreshes, requests and billed reads (expected values). X''s tweets only, '
  'and the timeline reads of X''s followers at their current pace.';

CREATE OR REPLACE VIEW capacity AS
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

-- ==== sql/replaceable/90_roles.sql
-- Roles and privileges, last because they name everything above: tweetkeeper_worker,
-- tweetkeeper_reader and tweetkeeper_admin, least privilege each; and the warning when the
-- library is not preloaded.

-- tweetkeeper_worker: claim, complete and release batches, and the followers' leases of followed
-- accounts (claim, resolve, store their posts); nothing else (no table access).
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
GRANT DELETE ON metric_history, metric_history_hot, batches, daily_usage, metric_daily TO tweetkeeper_admin;
GRANT INSERT, UPDATE, DELETE ON credentials TO tweetkeeper_admin;
GRANT EXECUTE ON FUNCTION watch(bigint[], interval, interval), unwatch(bigint[]), stop_watching(bigint[]),
  age_delay(timestamptz), refresh_delay(timestamptz, interval, timestamptz) TO tweetkeeper_admin;
GRANT EXECUTE ON FUNCTION schedule_tweet(bigint, timestamptz), schedule_tweets(bigint[]),
  schedule_from_trigger(), maintenance(), check_tweet(bigint, timestamptz), first_delay(),
  derived_created_at(bigint), add_credential(text, integer, interval, bigint, text, numeric),
  reset_credential(text) TO tweetkeeper_admin;
GRANT EXECUTE ON FUNCTION create_partitions(), apply_retention(), housekeeping(interval),
  schedule_housekeeping(text, text, text), unschedule_housekeeping() TO tweetkeeper_admin;
GRANT EXECUTE ON FUNCTION unpack_history(bytea), history_span(timestamptz), metrics_at(bigint[], interval[]),
  crossing_seconds(numeric, bigint, bigint, bigint, timestamptz, timestamptz, timestamptz) TO tweetkeeper_reader;
GRANT EXECUTE ON FUNCTION compact_history(integer) TO tweetkeeper_admin;

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
-- Added in 0.3.0, granted after everything 0.2.0 had (the order of an ACL is part of the schema).
GRANT EXECUTE ON FUNCTION parse_post_url(text) TO tweetkeeper_reader;
GRANT EXECUTE ON FUNCTION schedule_post(text, timestamptz), schedule_posts(text[]) TO tweetkeeper_admin;
GRANT DELETE ON post_refs TO tweetkeeper_admin;
GRANT EXECUTE ON FUNCTION claim_posts(text, integer, text, text[]), complete_handles(bigint, jsonb)
  TO tweetkeeper_worker;
GRANT EXECUTE ON FUNCTION watch_posts(text[], interval, interval), unwatch_posts(text[]) TO tweetkeeper_admin;
GRANT EXECUTE ON FUNCTION delay_heads() TO tweetkeeper_admin;
GRANT EXECUTE ON FUNCTION payload_content(jsonb, jsonb) TO tweetkeeper_reader;
GRANT DELETE ON payloads, tombstones, edits TO tweetkeeper_admin;
-- Added in 0.4.0: what payload_content() calls; when an empty claim may next find something.
GRANT EXECUTE ON FUNCTION payload_without_counts(jsonb) TO tweetkeeper_reader;
GRANT EXECUTE ON FUNCTION claim_wait(text) TO tweetkeeper_worker;
-- Added in 0.4.0: following accounts, for those who may schedule.
GRANT EXECUTE ON FUNCTION parse_profile_url(text) TO tweetkeeper_reader;
GRANT EXECUTE ON FUNCTION follow(text), follow_accounts(text[]), unfollow(text) TO tweetkeeper_admin;
GRANT EXECUTE ON FUNCTION claim_follows(text, text, integer, interval, boolean),
  resolve_follow(bigint, text, text, text, text),
  store_follow_posts(bigint, text[], timestamptz[], text, timestamptz, timestamptz), release_follows(),
  record_follow_read(bigint, text, bigint[], text, text), follow_read_allowed(text),
  mark_follows_read(bigint[], timestamptz), delete_followed_posts(bigint, text[])
  TO tweetkeeper_worker;

-- ==== sql/schema/95_triggers.sql
-- Triggers: which table calls which function, on what. Each is declared once, like an index,
-- and changed by a version's delta (sql/updates); the functions they call are replaceable
-- (sql/replaceable), so an upgrade changes what a trigger does without touching the trigger. (On
-- Citus a trigger on a distributed table cannot simply be declared again: an upgrade that did
-- would fail there.) Last, so that every function they call exists; the default policy's rows
-- (sql/schema/10_policy.sql) are inserted before any of them, as since 0.1.0.

-- The age policy (sql/schema/10_policy.sql): every session's cached copy dropped when it changes
-- (age_policy_changed, in the library), and pg_dump keeping it exactly when it is the user's
-- (age_policy_before_insert, age_policy_adopt: sql/replaceable/10_policy.sql says how).
CREATE TRIGGER age_policy_changed
  AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON age_policy
  FOR EACH STATEMENT EXECUTE FUNCTION age_policy_changed();
CREATE TRIGGER age_policy_before_insert
  BEFORE INSERT ON age_policy FOR EACH ROW EXECUTE FUNCTION age_policy_before_insert();
CREATE TRIGGER age_policy_adopt
  AFTER INSERT OR UPDATE OR DELETE ON age_policy
  FOR EACH STATEMENT EXECUTE FUNCTION age_policy_adopt();

-- A tweet put below a claim's remembered head (claim_heads()): scheduled, due earlier than it
-- was (a release, an abandoned batch handed back, a delay shorter than the lease), or moved to
-- another delay with its due time passed. Claims and ordinary completions move tweets later and
-- do not fire it; heads_moved() itself lets pass a row due a second or more after its
-- transaction began (a completion of a delay shorter than the lease), which the full look every
-- claiming session makes at least once a second finds before it is due. AFTER, not BEFORE: a BEFORE row trigger makes PostgreSQL lock each row it
-- updates before its WHEN clause is even evaluated, a WAL record per row that no lock read took
-- already (every tweet of every completion: 8% of its WAL and a tenth of its time); an AFTER
-- row trigger reads its WHEN clause from the row versions at hand, and queues only rows it fires
-- for (a bulk reschedule to earlier times queues each of its rows until the statement ends).
CREATE TRIGGER tweets_heads_moved AFTER UPDATE ON tweets FOR EACH ROW
  WHEN (NEW.tweet_id > 0 AND NEW.due_at IS NOT NULL
        AND (OLD.due_at IS NULL OR NEW.due_at < OLD.due_at
             OR (NEW.delay IS DISTINCT FROM OLD.delay AND NEW.due_at <= now())))
  EXECUTE FUNCTION heads_moved();
CREATE TRIGGER tweets_heads_scheduled AFTER INSERT ON tweets FOR EACH STATEMENT
  EXECUTE FUNCTION heads_moved();
-- Writes through the view metric_history (sql/replaceable/20_queue_tables.sql) to the hot and
-- compacted history.
CREATE TRIGGER metric_history_write INSTEAD OF INSERT OR DELETE ON metric_history
  FOR EACH ROW EXECUTE FUNCTION metric_history_write();
