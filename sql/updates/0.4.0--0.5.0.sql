-- 0.4.0 -> 0.5.0, what runs once before 0.5.0's replaceable definitions (scripts/build-sql.sh
-- appends them). The rest of 0.5.0's changes are in functions, views, triggers and grants, which
-- the replaceable part re-declares.

-- Held to the end of the update: the background worker takes it shared in each of its
-- transactions before it touches a table (extension/bgworker.cpp), so it waits for the update
-- instead of locking tables beside it in another order.
SELECT pg_catalog.pg_advisory_xact_lock(8388903688909320804);

-- The internals' own schema (refused if someone else made one), which the moves below fill.
-- include sql/schema/00_internal.sql

-- Citus is retired (CHANGELOG 0.5.0): no package registry the project builds from has it, and its
-- coordinator bound the cluster. A database distributed with 0.4.0's distribute() cannot be
-- taken over in place: its rows live on the worker nodes. It is refused, with the way back.
DO $do$
DECLARE
  distributed boolean := EXISTS (SELECT FROM tweetkeeper.shard_buckets);
BEGIN
  IF NOT distributed AND pg_catalog.to_regclass('pg_catalog.pg_dist_partition') IS NOT NULL THEN
    -- (EXECUTEd: the catalog exists only where Citus is installed.)
    EXECUTE 'SELECT EXISTS (SELECT FROM pg_catalog.pg_dist_partition p WHERE p.logicalrelid = $1)'
      INTO distributed USING 'tweetkeeper.tweets'::pg_catalog.regclass;
  END IF;
  IF distributed THEN
    RAISE EXCEPTION 'tweetkeeper 0.5.0 runs on one node, and this database is distributed with Citus (tweetkeeper.distribute())'
      USING ERRCODE = 'feature_not_supported',
            HINT = 'Go back to one node with 0.4.0 first: pg_dump the coordinator''s database, restore it on a server '
                   'without Citus, run SELECT tweetkeeper.undistribute(); there, then ALTER EXTENSION tweetkeeper UPDATE. '
                   'Scale-out returns as partitions behind PL/Proxy.';
  END IF;
END $do$;

-- 0.4.0's Citus functions, and the steps whose arguments carried a shard's buckets (re-declared
-- without them by the replaceable part).
DROP FUNCTION tweetkeeper.distribute(integer);
DROP FUNCTION tweetkeeper.undistribute();
DROP FUNCTION tweetkeeper.shed_node_partitions();
DROP FUNCTION tweetkeeper.citus_worker_node();
DROP FUNCTION tweetkeeper.shards_in_turn();
DROP FUNCTION tweetkeeper.lease_buckets(bigint);
DROP FUNCTION tweetkeeper.new_lease(integer);
DROP FUNCTION tweetkeeper.shard_count();
DROP FUNCTION tweetkeeper.bucket_of(bigint);
DROP FUNCTION tweetkeeper.schedule_posts_distributed(text[]);
DROP FUNCTION tweetkeeper.full_delay_heads(smallint[]);
DROP FUNCTION tweetkeeper.lease_rows(bigint, bigint[], tid[], timestamptz, smallint[]);
DROP FUNCTION tweetkeeper.lock_due_tweets(integer, smallint[], text);
DROP FUNCTION tweetkeeper.claim_in(text, integer, text, text[], smallint[], integer);
DROP FUNCTION tweetkeeper.store_observations(bigint, jsonb, bigint[], text, smallint[], text, boolean, timestamptz,
                                             interval[], interval[]);
DROP FUNCTION tweetkeeper.link_edits(bigint[], bigint[], timestamptz, smallint[]);
DROP FUNCTION tweetkeeper.store_problems(bigint, jsonb, bigint[], smallint[], boolean, interval, timestamptz,
                                         interval[], interval[]);
DROP FUNCTION tweetkeeper.put_off_omitted(bigint, bigint[], smallint[], integer, interval, timestamptz,
                                          interval[], interval[]);
DROP FUNCTION tweetkeeper.lease_holder(tweetkeeper.batches, smallint[]);
DROP FUNCTION tweetkeeper.abandon_batch(bigint, smallint[]);
DROP FUNCTION tweetkeeper.settle_batch(tweetkeeper.batches, smallint[], integer, integer, integer, integer, jsonb,
                                       timestamptz);
DROP FUNCTION tweetkeeper.post_keys_of(bigint[], smallint[]);
DROP FUNCTION tweetkeeper.lock_endpoint_posts(text, integer, smallint[]);
DROP FUNCTION tweetkeeper.posts_in(text, integer, text, text[], smallint[], integer);
DROP TABLE tweetkeeper.shard_buckets;

-- The bucket columns go (a catalog change: no row is rewritten). A database brought back to one
-- node by undistribute() has primary keys that include bucket, which DROP COLUMN would drop with
-- it: each such key is made again on its other columns first (unique all the same: bucket was a
-- function of tweet_id).
DO $do$
DECLARE
  k record;
BEGIN
  FOR k IN
    SELECT c.conrelid::pg_catalog.regclass AS rel, c.conname,
           pg_catalog.string_agg(pg_catalog.quote_ident(a.attname), ', ' ORDER BY x.i) AS cols
      FROM pg_catalog.pg_constraint c
      JOIN pg_catalog.pg_class r ON r.oid = c.conrelid
      JOIN pg_catalog.pg_namespace n ON n.oid = r.relnamespace AND n.nspname = 'tweetkeeper'
      CROSS JOIN LATERAL pg_catalog.unnest(c.conkey) WITH ORDINALITY AS x(attnum, i)
      JOIN pg_catalog.pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = x.attnum
     WHERE c.contype = 'p' AND c.conparentid = 0
       AND EXISTS (SELECT FROM pg_catalog.pg_attribute b
                    WHERE b.attrelid = c.conrelid AND b.attnum = ANY (c.conkey) AND b.attname = 'bucket')
       AND a.attname <> 'bucket'
     GROUP BY c.conrelid, c.conname
  LOOP
    EXECUTE pg_catalog.format('ALTER TABLE %s DROP CONSTRAINT %I, ADD CONSTRAINT %I PRIMARY KEY (%s)',
                              k.rel, k.conname, k.conname, k.cols);
  END LOOP;
END $do$;
-- (batch_stats reads batches.*: re-declared by the replaceable part, with its grants.)
DROP VIEW tweetkeeper.batch_stats;
ALTER TABLE tweetkeeper.tweets DROP COLUMN bucket;
ALTER TABLE tweetkeeper.metric_history_hot DROP COLUMN bucket;
ALTER TABLE tweetkeeper.metric_history_compact DROP COLUMN bucket;
ALTER TABLE tweetkeeper.metric_daily DROP COLUMN bucket;
ALTER TABLE tweetkeeper.batches DROP COLUMN bucket;
ALTER TABLE tweetkeeper.post_refs DROP COLUMN bucket;
ALTER TABLE tweetkeeper.payloads DROP COLUMN bucket;
ALTER TABLE tweetkeeper.tombstones DROP COLUMN bucket;
ALTER TABLE tweetkeeper.edits DROP COLUMN bucket;

-- An X follower's lease names the credential it reads with (claim_follows(credential)), the only
-- one whose refusals and reads it may report (record_follow_read()).
ALTER TABLE tweetkeeper.followed_accounts ADD COLUMN lease_credential text;
DROP FUNCTION tweetkeeper.claim_follows(text, text, integer, interval, boolean);

-- One lease model (sql/replaceable/40_claim.sql, 37_follows.sql): a followed account's lease is
-- checked by held_follow(), with session_is(), the owner test of batches too.
DROP FUNCTION tweetkeeper.follow_lease_held(tweetkeeper.followed_accounts);

-- Internals out of the user's schema (issue 49): what docs/sql-reference.md does not document moves
-- to tweetkeeper_internal, each function as it is (ALTER ... SET SCHEMA keeps it, and so the views,
-- triggers and SQL bodies that call it), to be re-declared there by the replaceable part; the
-- grants 0.4.0 gave some of them (age_delay, refresh_delay, stop_watching and delay_heads to
-- tweetkeeper_admin) are taken back by sql/replaceable/90_roles.sql, as for every function there.
DO $do$
DECLARE
  f pg_catalog.regprocedure;
BEGIN
  FOR f IN
    SELECT p.oid FROM pg_catalog.pg_proc p
     WHERE p.pronamespace = 'tweetkeeper'::pg_catalog.regnamespace
       AND p.proname = ANY (ARRAY[
        'abandon_batch', 'after', 'age_delay', 'age_policy_adopt', 'age_policy_before_insert',
        'age_policy_changed', 'answer_window', 'backend_start', 'billable_reads', 'billed_by_after',
        'bills', 'bury', 'check_claim', 'choose_credential',
        'claim_endpoint', 'claim_heads', 'count_endpoint_request', 'count_usage', 'delay_heads',
        'delay_shares', 'end_leases', 'endpoint_batch_max', 'endpoint_hold', 'enqueue_post',
        'enter_post_ref', 'fenced_batch', 'followed_ids', 'forecast_off_schedule', 'full_delay_heads',
        'hand_back', 'heads_moved', 'held_follow', 'keep_observed', 'lease_holder', 'lease_rows',
        'link_edits', 'lock_due_tweets', 'lock_endpoint_posts', 'metric_history_write',
        'observations_in', 'open_lease', 'policy_delay', 'post_author', 'post_endpoint', 'post_id',
        'post_identity', 'post_keys_of', 'post_ref_id', 'post_ref_url', 'posts_wanted', 'profile_arg',
        'put_off_omitted', 'quota_wait', 'reads_today', 'record_endpoint_quota', 'record_housekeeping',
        'record_quota', 'refresh_delay', 'refresh_delay_at', 'refusal_state', 'refuse_null',
        'remember_claim_heads', 'rollup_history', 'session_is', 'settle_batch', 'share_window',
        'stop_watching', 'store_observations', 'store_problems', 'url_post_ids', 'wake_maintenance',
        'x_claimable'])
  LOOP
    EXECUTE pg_catalog.format('ALTER FUNCTION %s SET SCHEMA tweetkeeper_internal', f);
  END LOOP;
END $do$;

-- The adaptive refresh policy (issue 50): each post's own policy, if it has one, and the state the
-- adaptive policy keeps between reads. Both NULL on every existing post: each follows its
-- network's policy (tweetkeeper.refresh_policy, age by default), as before.
ALTER TABLE tweetkeeper.tweets ADD COLUMN refresh_policy text, ADD COLUMN adaptive_state bigint,
  ADD CONSTRAINT tweets_refresh_policy_known CHECK (refresh_policy IN ('age', 'adaptive'));

-- Partitions behind PL/Proxy (issue 51): which slots this node holds (none said: alone, all of
-- them, as before) and the posts it hands over to the node that holds them.
-- include sql/schema/36_partitions.sql

-- Stream counts (issue 52): Bluesky counts from Jetstream, reads only reconcile them. Empty until
-- tweetkeeper.bluesky_stream_counts is on and a reader runs.
-- include sql/schema/38_stream.sql

-- Collections (issue 53): what mortality and datasets are reported by.
-- include sql/schema/39_collections.sql

-- A tombstone says since when its post is gone (issue 53: mortality): the first time it was found
-- gone, which 0.4.0 did not keep (observed_at is the last): its observed_at stands in. Posts
-- missing already for being left out of answers get the tombstone they get from 0.5.0 on, since their
-- last problem; their payloads stay (from 0.5.0 on a post turning missing has them erased, unless
-- tweetkeeper.deleted_payloads = keep).
ALTER TABLE tweetkeeper.tombstones ADD COLUMN gone_since timestamptz;
UPDATE tweetkeeper.tombstones SET gone_since = observed_at;
ALTER TABLE tweetkeeper.tombstones ALTER COLUMN gone_since SET NOT NULL;
COMMENT ON TABLE tweetkeeper.tombstones IS
  'Posts found deleted, unavailable or missing: since when, why, and how many payloads were erased. '
  'A post seen again loses its tombstone.';
-- (As text: updated from 0.1.0 in one transaction, 'missing' is a value this update's chain added,
-- which may not be read as the enum's before it commits.)
INSERT INTO tweetkeeper.tombstones (tweet_id, reason, observed_at, payloads_erased, gone_since)
SELECT t.tweet_id, 'omitted', coalesce(t.problem_at, now()), 0, coalesce(t.problem_at, now())
  FROM tweetkeeper.tweets t WHERE t.state::text = 'missing' AND t.problem_type = 'omitted'
ON CONFLICT ON CONSTRAINT tombstones_pkey DO NOTHING;

-- An author's posts, found by a Bluesky account event (issue 53: a deleted, taken down, suspended or
-- deactivated account takes its posts with it).
CREATE INDEX post_refs_author_idx ON tweetkeeper.post_refs (network, host, author);

-- Posts past their last refresh are checked for deletion (issue 53, tweetkeeper.done_recheck): when
-- an X compliance job last found each there, the jobs, and the indexes the next checks are read from.
ALTER TABLE tweetkeeper.tweets ADD COLUMN rechecked_at timestamptz;
CREATE INDEX tweets_x_recheck_idx ON tweetkeeper.tweets ((greatest(updated_at, rechecked_at, created_at)))
  WHERE state = 'done' AND tweet_id > 0;
CREATE INDEX tweets_posts_recheck_idx ON tweetkeeper.tweets ((greatest(updated_at, rechecked_at, created_at)))
  WHERE state = 'done' AND tweet_id < 0;
-- include sql/schema/41_rechecks.sql
