#!/usr/bin/env bash
# What one refresh writes (issue 37 part 1: "measure which columns and rows each refresh writes"):
# TWEETS due X tweets (two hours old), then REFRESHES refreshes by the worker's SQL (pgbench: the
# claim and the completion, as run.sh's floor), and per refresh: WAL bytes, records and full-page
# images (pg_stat_wal), and per table rows inserted, updated (of which HOT) and deleted
# (pg_stat_user_tables); then the tweet row's width and each index's bytes per entry. Prints one
# table; checks nothing (a measurement, by hand or in make bench).
set -uo pipefail
source "$(dirname "$0")/../lib/common.sh"
tk_defaults TWEETS=200000 REFRESHES=80000
CLIENTS=4

tk_workdir refresh-writes
tk_pg_start "$dir" -c shared_buffers=512MB -c max_wal_size=4GB -c checkpoint_timeout=30min || exit 1
tk_psql -c "CREATE EXTENSION tweetkeeper" >/dev/null || exit 1
tk_psql >/dev/null <<SQL || exit 1
SELECT tweetkeeper.schedule_tweets($(tk_floor_ids_sql "$TWEETS"));
-- Today's history partition exists before the count starts (on a new cluster the background
-- worker's first housekeeping may come during the run and move the default partition's rows).
SELECT tweetkeeper.create_partitions();
VACUUM ANALYZE tweetkeeper.tweets;
CHECKPOINT;
SQL
tk_psql -c "SELECT pg_stat_reset(), pg_stat_reset_shared('wal')" >/dev/null
per_client=$((REFRESHES / 100 / CLIENTS))
pgbench -n -c "$CLIENTS" -j 2 -t "$per_client" -f "$TK_ROOT/tests/bench/claim_complete_x.pgbench" >"$dir/pgbench.log" 2>&1 ||
  { cat "$dir/pgbench.log"; exit 1; }
# (pgbench's backends flush their counts as they exit; this session's own, forced)
tk_wait_for 10 "SELECT count(*) = 0 FROM pg_stat_activity WHERE application_name = 'pgbench'" >/dev/null
tk_psql -c "SELECT pg_stat_force_next_flush()" >/dev/null
refreshes=$(tk_psql -c "SELECT sum(stored) FROM tweetkeeper.batches WHERE outcome = 'completed'")
echo "# $TWEETS due tweets; $refreshes refreshes by $CLIENTS pgbench clients (claim_batch + complete_batch, 100 a batch)"
tk_psql -F ' | ' -P footer=off -A -c "
  SELECT 'WAL' AS what, round(wal_bytes / $refreshes, 1) AS bytes_per_refresh,
         round(wal_records::numeric / $refreshes, 2) AS records_per_refresh,
         round(wal_fpi::numeric / $refreshes, 3) AS full_page_images_per_refresh
    FROM pg_stat_wal"
echo
tk_psql -F ' | ' -A -c "
  SELECT relname AS table_, round(n_tup_ins::numeric / $refreshes, 3) AS inserted,
         round(n_tup_upd::numeric / $refreshes, 3) AS updated,
         round(n_tup_hot_upd::numeric / nullif(n_tup_upd, 0), 3) AS hot_share,
         round(n_tup_del::numeric / $refreshes, 3) AS deleted
    FROM pg_stat_user_tables WHERE schemaname = 'tweetkeeper' AND n_tup_ins + n_tup_upd + n_tup_del > 0
   ORDER BY n_tup_ins + n_tup_upd + n_tup_del DESC"
echo
tk_psql -F ' | ' -A -c "
  SELECT 'tweets row' AS what, round(avg(pg_column_size(t.*))) AS bytes FROM tweetkeeper.tweets t
  UNION ALL
  SELECT 'index ' || c.relname || ' (bytes per entry, with its page overhead)',
         round(pg_relation_size(c.oid)::numeric / nullif(c.reltuples, 0))
    FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
   WHERE i.indrelid = 'tweetkeeper.tweets'::regclass"
