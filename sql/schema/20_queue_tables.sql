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
  payload_hash bytea,            -- the content hash of its last kept payload (tweetkeeper.payloads),
                                 --   kept by complete_batch(), handed to the worker by the claim
  refresh_policy text,           -- its own refresh policy (set_refresh_policy()): 'age' or 'adaptive';
                                 --   NULL: its network's (tweetkeeper.refresh_policy)
  adaptive_state bigint,         -- the adaptive policy's state after its last read (extension/adaptive.cpp:
                                 --   the gap chosen, when its counts last moved, why; why_due shows it)
  rechecked_at timestamptz,      -- past its last refresh: when an X compliance job last found it there
  CONSTRAINT tweets_pkey PRIMARY KEY (tweet_id),
  CONSTRAINT tweets_due_unless_finished CHECK ((state IN ('done', 'deleted')) = (due_at IS NULL)),
  CONSTRAINT tweets_delay_when_due CHECK (due_at IS NULL OR delay IS NOT NULL),
  CONSTRAINT tweets_watch_complete CHECK ((watch_every IS NULL) = (watch_until IS NULL)),
  CONSTRAINT tweets_key_network CHECK ((tweet_id > 0) = (endpoint IS NULL)),
  CONSTRAINT tweets_refresh_policy_known CHECK (refresh_policy IN ('age', 'adaptive')),
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
-- is a hash of what names it there (tweetkeeper_internal.post_id(); post_refs keeps the names): one
-- bigint column still names every post, and the id follows from the post itself, so the same
-- post in any spelling finds the same row without a shared counter. The sign says which: X's
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
-- Posts past their last refresh, by when they were last found there (read, or an X compliance
-- job): the next to check for deletion (tweetkeeper.done_recheck; sql/replaceable/41_rechecks.sql),
-- X's by compliance jobs, the others' by reads.
CREATE INDEX tweets_x_recheck_idx ON tweets ((greatest(updated_at, rechecked_at, created_at)))
  WHERE state = 'done' AND tweet_id > 0;
CREATE INDEX tweets_posts_recheck_idx ON tweets ((greatest(updated_at, rechecked_at, created_at)))
  WHERE state = 'done' AND tweet_id < 0;
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
  impression_count bigint
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
