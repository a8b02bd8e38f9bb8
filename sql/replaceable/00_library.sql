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

CREATE OR REPLACE FUNCTION tweetkeeper_internal.age_policy_changed() RETURNS trigger
  AS 'MODULE_PATHNAME', 'tk_age_policy_changed' LANGUAGE C;
COMMENT ON FUNCTION tweetkeeper_internal.age_policy_changed() IS
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

CREATE OR REPLACE FUNCTION tweetkeeper_internal.backend_start() RETURNS timestamptz
  AS 'MODULE_PATHNAME', 'tk_backend_start' LANGUAGE C STABLE STRICT;
COMMENT ON FUNCTION tweetkeeper_internal.backend_start() IS
  'When this database session started (pg_stat_activity.backend_start); with its pid, it names '
  'the session that claimed a batch.';

CREATE OR REPLACE FUNCTION backend_alive(pid integer, started timestamptz) RETURNS boolean
  AS 'MODULE_PATHNAME', 'tk_backend_alive' LANGUAGE C VOLATILE STRICT;
COMMENT ON FUNCTION backend_alive(integer, timestamptz) IS
  'Whether the database session with this pid and start time still exists (a reused pid with '
  'another start time is another session).';

-- The NULL check of the functions' arguments: 22004, '<what> must not be NULL', when is_null
-- (the caller's test of them, e.g. urls IS NULL).
CREATE OR REPLACE FUNCTION tweetkeeper_internal.refuse_null(what text, is_null boolean) RETURNS void
  LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
  IF is_null THEN
    RAISE EXCEPTION '% must not be NULL', what USING ERRCODE = 'null_value_not_allowed';
  END IF;
END $$;

-- The rule of every array argument of many posts or accounts (schedule_tweets, schedule_posts,
-- follow_accounts, unwatch, unwatch_posts), in one place: not NULL and no element NULL (22004,
-- the element named by its position), at most tweetkeeper.max_ids_per_call elements (54000,
-- naming the argument; settings() first: it loads the module, which defines the setting, where
-- tweetkeeper is not preloaded). Returns the array, so that a function passes its argument on
-- checked.
CREATE OR REPLACE FUNCTION tweetkeeper_internal.array_arg(arg text, elements anyarray) RETURNS anyarray
  LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  max_ids integer;
BEGIN
  PERFORM tweetkeeper_internal.refuse_null(arg, elements IS NULL);
  PERFORM tweetkeeper.settings();
  max_ids := current_setting('tweetkeeper.max_ids_per_call')::integer;
  IF cardinality(elements) > max_ids THEN
    RAISE EXCEPTION '% has % elements, more than tweetkeeper.max_ids_per_call (%)', arg, cardinality(elements), max_ids
      USING ERRCODE = 'program_limit_exceeded', HINT = 'Split the array into several calls.';
  END IF;
  IF array_position(elements, NULL) IS NOT NULL THEN
    RAISE EXCEPTION '%[%] is NULL', arg, array_position(elements, NULL) USING ERRCODE = 'null_value_not_allowed';
  END IF;
  RETURN elements;
END $$;

-- The one owner test of every lease (a batch's claimer, a followed account's follower): whether
-- the session with this pid and start time is this one. (A SQL expression: inlined where it is
-- used; its body is bound when it is created, so it needs no search_path.)
CREATE OR REPLACE FUNCTION tweetkeeper_internal.session_is(pid integer, started timestamptz) RETURNS boolean
  LANGUAGE sql STABLE
  RETURN coalesce(pid = pg_catalog.pg_backend_pid() AND started = tweetkeeper_internal.backend_start(), false);

-- The claim's memory of each delay's head (claim_batch(); extension/claim_heads.cpp says why and
-- when it is forgotten).
CREATE OR REPLACE FUNCTION tweetkeeper_internal.claim_heads(max_age interval, OUT delays interval[], OUT heads timestamptz[])
  AS 'MODULE_PATHNAME', 'tk_claim_heads' LANGUAGE C VOLATILE STRICT;
COMMENT ON FUNCTION tweetkeeper_internal.claim_heads(interval) IS
  'claim_batch()''s memory, per session: each delay of X''s scheduled tweets with the oldest due_at '
  'it last saw (where its reads of tweets_lateness_idx start), or NULLs when a full look is due.';
CREATE OR REPLACE FUNCTION tweetkeeper_internal.remember_claim_heads(delays interval[], heads timestamptz[], full_look boolean)
  RETURNS void AS 'MODULE_PATHNAME', 'tk_remember_claim_heads' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION tweetkeeper_internal.remember_claim_heads(interval[], timestamptz[], boolean) IS
  'Keeps the delays and heads for this session''s next claims; full_look: found by a full look.';
CREATE OR REPLACE FUNCTION tweetkeeper_internal.heads_moved() RETURNS trigger AS 'MODULE_PATHNAME', 'tk_heads_moved' LANGUAGE C;
COMMENT ON FUNCTION tweetkeeper_internal.heads_moved() IS
  'Trigger on tweets: this transaction may have put an X tweet below a claim''s remembered head; '
  'at commit every session''s next claim looks fully.';

CREATE OR REPLACE FUNCTION tweetkeeper_internal.wake_maintenance() RETURNS void
  AS 'MODULE_PATHNAME', 'tk_wake_maintenance' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION tweetkeeper_internal.wake_maintenance() IS
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
