-- Who may call what: for every function of the extension and every role (the worker, the
-- reader, the admin, and a role with no grant of the extension's), whether it may EXECUTE it, set
-- against the contract below (README's Roles, SECURITY.md). A function added or granted without
-- this list saying so fails here, as does a grant that goes missing.
\ir lib/begin.sql
SELECT plan(7);
SET LOCAL search_path = public, pg_catalog;  -- (names below schema-qualified: tweetkeeper.f(...))
CREATE ROLE tk_test_anyone NOLOGIN;

CREATE TEMP TABLE contract (role text, fn text);
-- The worker: claim, complete, release, its handles, when to claim again; nothing else.
INSERT INTO contract SELECT 'tweetkeeper_worker', f::regprocedure::text FROM unnest(ARRAY[
  'tweetkeeper.claim_batch(text, integer, text, text[])', 'tweetkeeper.complete_batch(bigint, jsonb, jsonb, jsonb)',
  'tweetkeeper.release_batch(bigint, text, text, jsonb)', 'tweetkeeper.claim_posts(text, integer, text, text[])',
  'tweetkeeper.complete_handles(bigint, jsonb)', 'tweetkeeper.claim_wait(text)',
  'tweetkeeper.claim_follows(text, text, integer, interval, boolean, text)',
  'tweetkeeper.resolve_follow(bigint, text, text, text, text)',
  'tweetkeeper.store_follow_posts(bigint, text[], timestamptz[], text, timestamptz, timestamptz)',
  'tweetkeeper.release_follows()', 'tweetkeeper.record_follow_read(bigint, text, bigint[], text, text)',
  'tweetkeeper.follow_read_allowed(text)', 'tweetkeeper.mark_follows_read(bigint[], timestamptz)',
  'tweetkeeper.delete_followed_posts(bigint, text[])', 'tweetkeeper.follow_shares(text, text)',
  'tweetkeeper.store_account_status(bigint, boolean, text)', 'tweetkeeper.store_stream_accounts(text[], boolean[], text[])',
  'tweetkeeper.compliance_claim(text, text, integer, interval)', 'tweetkeeper.compliance_update(bigint, text, text, text)',
  'tweetkeeper.store_compliance_results(bigint, bigint[], text[])',
  'tweetkeeper.stream_take(text, interval, interval)', 'tweetkeeper.stream_held_posts()',
  'tweetkeeper.stream_held_records()', 'tweetkeeper.stream_reads_due(timestamptz, integer)',
  'tweetkeeper.store_stream_counts(bigint, bigint, bigint, bigint[], timestamptz[], bigint[], bigint[], bigint[], smallint[], bigint[], bigint[], timestamptz[], text[], bigint[])']) f;
-- The reader: what the views and their queries need.
INSERT INTO contract SELECT 'tweetkeeper_reader', f::regprocedure::text FROM unnest(ARRAY[
  'tweetkeeper.next_delay(timestamptz)', 'tweetkeeper.snowflake_time(bigint)', 'tweetkeeper.settings()',
  'tweetkeeper.lease_settings()', 'tweetkeeper.preloaded()', 'tweetkeeper.backend_alive(integer, timestamptz)',
  'tweetkeeper.tweet_cost(numeric)', 'tweetkeeper.forecast(interval)', 'tweetkeeper.next_month_utc()',
  'tweetkeeper.unpack_history(bytea)', 'tweetkeeper.history_span(timestamptz)', 'tweetkeeper.first_delay()',
  'tweetkeeper.parse_post_url(text)', 'tweetkeeper.payload_content(jsonb, jsonb)',
  'tweetkeeper.payload_without_counts(jsonb)', 'tweetkeeper.parse_profile_url(text)',
  'tweetkeeper.metrics_at(bigint[], interval[])', 'tweetkeeper.why_due(bigint[])',
  'tweetkeeper.partition_hash(text, text, text)', 'tweetkeeper.url_partition_hash(text)', 'tweetkeeper.policy_digest()',
  'tweetkeeper.settings_digest()',
  'tweetkeeper.crossing_seconds(numeric, bigint, bigint, bigint, timestamptz, timestamptz, timestamptz)']) f;
-- The admin: the reader's, and scheduling, watching, credentials, upkeep.
INSERT INTO contract SELECT 'tweetkeeper_admin', fn FROM contract WHERE role = 'tweetkeeper_reader';
INSERT INTO contract SELECT 'tweetkeeper_admin', f::regprocedure::text FROM unnest(ARRAY[
  'tweetkeeper.watch(bigint[], interval, interval)', 'tweetkeeper.unwatch(bigint[])',
  'tweetkeeper.set_refresh_policy(bigint[], text)',
  'tweetkeeper.take_handovers(integer)', 'tweetkeeper.drop_handovers(text[])',
  'tweetkeeper.replace_age_policy(interval[], interval[], boolean)',
  'tweetkeeper.schedule_tweet(bigint, timestamptz)', 'tweetkeeper.schedule_tweets(bigint[])',
  'tweetkeeper.schedule_from_trigger()', 'tweetkeeper.maintenance()', 'tweetkeeper.check_tweet(bigint, timestamptz)',
  'tweetkeeper.derived_created_at(bigint)', 'tweetkeeper.add_credential(text, integer, interval, bigint, text, numeric)',
  'tweetkeeper.reset_credential(text)', 'tweetkeeper.create_partitions()', 'tweetkeeper.apply_retention()',
  'tweetkeeper.housekeeping(interval)', 'tweetkeeper.schedule_housekeeping(text, text, text)',
  'tweetkeeper.unschedule_housekeeping()', 'tweetkeeper.compact_history(integer)',
  'tweetkeeper.schedule_post(text, timestamptz)', 'tweetkeeper.schedule_posts(text[])',
  'tweetkeeper.watch_posts(text[], interval, interval)', 'tweetkeeper.unwatch_posts(text[])',
  'tweetkeeper.follow(text)', 'tweetkeeper.follow_accounts(text[])',
  'tweetkeeper.unfollow(text)', 'tweetkeeper.create_collection(text, text)', 'tweetkeeper.collect(text, bigint[])',
  'tweetkeeper.collect_posts(text, text[])', 'tweetkeeper.uncollect(text, bigint[])',
  'tweetkeeper.drop_collection(text)', 'tweetkeeper.import_history(text[], timestamptz[], bigint[])']) f;

CREATE TEMP VIEW may AS
  SELECT r.role, p.oid::regprocedure::text AS fn
    FROM pg_depend d JOIN pg_proc p ON p.oid = d.objid
   CROSS JOIN unnest(ARRAY['tweetkeeper_worker', 'tweetkeeper_reader', 'tweetkeeper_admin', 'tk_test_anyone']) r(role)
   WHERE d.classid = 'pg_proc'::regclass AND d.deptype = 'e'
     AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'tweetkeeper')
     AND has_function_privilege(r.role, p.oid, 'EXECUTE');

SELECT cmp_ok((SELECT count(*) FROM pg_depend WHERE classid = 'pg_proc'::regclass AND deptype = 'e'
                  AND refobjid = (SELECT oid FROM pg_extension WHERE extname = 'tweetkeeper')), '>', 50::bigint,
              'the extension''s functions are all looked at (more than 50)');
SELECT set_eq($$SELECT fn FROM may WHERE role = 'tweetkeeper_worker'$$, $$SELECT fn FROM contract WHERE role = 'tweetkeeper_worker'$$,
              'the worker may call exactly its functions (batches and the followers'' leases)');
SELECT set_eq($$SELECT fn FROM may WHERE role = 'tweetkeeper_reader'$$, $$SELECT fn FROM contract WHERE role = 'tweetkeeper_reader'$$,
              'the reader may call exactly what its views and queries need');
SELECT set_eq($$SELECT fn FROM may WHERE role = 'tweetkeeper_admin'$$, $$SELECT fn FROM contract WHERE role = 'tweetkeeper_admin'$$,
              'the admin may call exactly the reader''s and its own');
SELECT is_empty($$SELECT fn FROM may WHERE role = 'tk_test_anyone'$$,
                'a role without the extension''s grants may call none of its functions (nothing granted to PUBLIC)');
-- And what the contract withholds is withheld in fact: a call as each role, refused (42501).
SET LOCAL ROLE tk_test_anyone;
SELECT throws_ok($$SELECT tweetkeeper.settings()$$, '42501', NULL, 'a call without the grant is refused (42501)');
RESET ROLE;

-- Every view reads as the reader, rows in it: a function a view calls is checked against who reads
-- the view, not its owner (an internal function in a view refuses the reader; it once did, in
-- stream_stats and post_availability). A post gone, a stream, a collection: rows for each view.
SET LOCAL tweetkeeper.bluesky_stream_counts = on;
INSERT INTO tweetkeeper.tweets (tweet_id, created_at, state, problem_type, problem_at)
  VALUES (1460323737035677698, now() - interval '2 days', 'deleted', 'resource-not-found', now());
INSERT INTO tweetkeeper.tombstones (tweet_id, reason, observed_at, gone_since)
  VALUES (1460323737035677698, 'resource-not-found', now(), now());
INSERT INTO tweetkeeper.stream_state (stream, position_us, flushed_at) VALUES ('bluesky', 1, now());
SELECT tweetkeeper.collect('c', ARRAY[1460323737035677698]);
CREATE TEMP TABLE view_errors (view text, error text);
GRANT INSERT ON view_errors TO tweetkeeper_reader;
SET LOCAL ROLE tweetkeeper_reader;
DO $$
DECLARE
  v text;
BEGIN
  FOR v IN SELECT c.relname FROM pg_catalog.pg_class c
            WHERE c.relnamespace = 'tweetkeeper'::regnamespace AND c.relkind = 'v' ORDER BY 1 LOOP
    BEGIN
      EXECUTE format('SELECT * FROM tweetkeeper.%I', v);
    EXCEPTION WHEN OTHERS THEN
      INSERT INTO view_errors VALUES (v, SQLERRM);
    END;
  END LOOP;
END $$;
RESET ROLE;
SELECT is_empty($$SELECT * FROM view_errors$$, 'every view of the schema reads as tweetkeeper_reader, with rows in it');

SELECT * FROM finish();
ROLLBACK;
