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
-- The internals (sql/schema/00_internal.sql): no role but the extension's owner uses the schema or
-- runs them; the SECURITY DEFINER functions above call them as that owner. (An updated database's
-- moved functions held grants of 0.4.0: taken back from the roles as well.)
REVOKE ALL ON ALL FUNCTIONS IN SCHEMA tweetkeeper_internal
  FROM PUBLIC, tweetkeeper_worker, tweetkeeper_reader, tweetkeeper_admin;
GRANT USAGE ON SCHEMA tweetkeeper TO tweetkeeper_worker, tweetkeeper_reader, tweetkeeper_admin;

GRANT EXECUTE ON FUNCTION claim_batch(text, integer, text, text[]),
  complete_batch(bigint, jsonb, jsonb, jsonb), release_batch(bigint, text, text, jsonb)
  TO tweetkeeper_worker;

GRANT SELECT ON ALL TABLES IN SCHEMA tweetkeeper TO tweetkeeper_reader;
GRANT EXECUTE ON FUNCTION next_delay(timestamptz), snowflake_time(bigint), settings(), lease_settings(),
  preloaded(), backend_alive(integer, timestamptz), tweet_cost(numeric), forecast(interval),
  next_month_utc(), why_due(bigint[]) TO tweetkeeper_reader;

GRANT tweetkeeper_reader TO tweetkeeper_admin;
GRANT INSERT, UPDATE, DELETE, TRUNCATE ON age_policy TO tweetkeeper_admin;
GRANT UPDATE, DELETE ON tweets TO tweetkeeper_admin;
GRANT DELETE ON metric_history, metric_history_hot, batches, daily_usage, metric_daily TO tweetkeeper_admin;
GRANT INSERT, UPDATE, DELETE ON credentials TO tweetkeeper_admin;
GRANT EXECUTE ON FUNCTION watch(bigint[], interval, interval), unwatch(bigint[]),
  set_refresh_policy(bigint[], text) TO tweetkeeper_admin;
-- Partitions: the hash is the reader's (it places posts, nothing more); making this node a
-- partition and the proxy's side of hand-overs are the admin's.
GRANT EXECUTE ON FUNCTION partition_hash(text, text, text), url_partition_hash(text) TO tweetkeeper_reader;
GRANT EXECUTE ON FUNCTION take_handovers(integer), drop_handovers(text[]), replace_age_policy(interval[], interval[], boolean)
  TO tweetkeeper_admin;
-- (Making a node a partition and moving posts between nodes, set_partition, move_out, move_in,
-- move_step, moves_here, set_credential_share, set_setting, are the superuser's, as
-- the proxy's cluster changes are: move_in writes every kind of row, history and payloads too.)
GRANT EXECUTE ON FUNCTION policy_digest(), settings_digest() TO tweetkeeper_reader;
GRANT EXECUTE ON FUNCTION schedule_tweet(bigint, timestamptz), schedule_tweets(bigint[]),
  schedule_from_trigger(), maintenance(), check_tweet(bigint, timestamptz), first_delay(),
  derived_created_at(bigint), add_credential(text, integer, interval, bigint, text, numeric),
  reset_credential(text) TO tweetkeeper_admin;
GRANT EXECUTE ON FUNCTION create_collection(text, text), collect(text, bigint[]), collect_posts(text, text[]),
  uncollect(text, bigint[]), drop_collection(text) TO tweetkeeper_admin;
GRANT EXECUTE ON FUNCTION create_partitions(), apply_retention(), housekeeping(interval),
  schedule_housekeeping(text, text, text), unschedule_housekeeping() TO tweetkeeper_admin;
GRANT EXECUTE ON FUNCTION unpack_history(bytea), history_span(timestamptz), metrics_at(bigint[], interval[]),
  crossing_seconds(numeric, bigint, bigint, bigint, timestamptz, timestamptz, timestamptz) TO tweetkeeper_reader;
GRANT EXECUTE ON FUNCTION compact_history(integer) TO tweetkeeper_admin;
-- (A dataset's history: the admin's, never a worker's, which stores only what it read.)
GRANT EXECUTE ON FUNCTION import_history(text[], timestamptz[], bigint[]) TO tweetkeeper_admin;

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
GRANT EXECUTE ON FUNCTION payload_content(jsonb, jsonb) TO tweetkeeper_reader;
GRANT DELETE ON payloads, tombstones, edits TO tweetkeeper_admin;
-- Added in 0.4.0: what payload_content() calls; when an empty claim may next find something.
GRANT EXECUTE ON FUNCTION payload_without_counts(jsonb) TO tweetkeeper_reader;
GRANT EXECUTE ON FUNCTION claim_wait(text) TO tweetkeeper_worker;
-- Added in 0.4.0: following accounts, for those who may schedule.
GRANT EXECUTE ON FUNCTION parse_profile_url(text) TO tweetkeeper_reader;
GRANT EXECUTE ON FUNCTION follow(text), follow_accounts(text[]), unfollow(text) TO tweetkeeper_admin;
GRANT EXECUTE ON FUNCTION claim_follows(text, text, integer, interval, boolean, text),
  resolve_follow(bigint, text, text, text, text),
  store_follow_posts(bigint, text[], timestamptz[], text, timestamptz, timestamptz), release_follows(),
  record_follow_read(bigint, text, bigint[], text, text), follow_read_allowed(text),
  mark_follows_read(bigint[], timestamptz), delete_followed_posts(bigint, text[]), follow_shares(text, text),
  store_account_status(bigint, boolean, text)
  TO tweetkeeper_worker;
-- The Jetstream reader of stream counts (38_stream.sql): its lease, and under it only.
GRANT EXECUTE ON FUNCTION stream_take(text, interval, interval), stream_held_posts(), stream_held_records(),
  stream_reads_due(timestamptz, integer),
  store_stream_counts(bigint, bigint, bigint, bigint[], timestamptz[], bigint[], bigint[], bigint[], smallint[], bigint[],
                      bigint[], timestamptz[], text[], bigint[]),
  store_stream_accounts(text[], boolean[], text[])
  TO tweetkeeper_worker;
-- X's compliance jobs (41_rechecks.sql): a credential's job, under its lease.
GRANT EXECUTE ON FUNCTION compliance_claim(text, text, integer, interval), compliance_update(bigint, text, text, text),
  store_compliance_results(bigint, bigint[], text[])
  TO tweetkeeper_worker;
