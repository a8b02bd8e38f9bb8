#!/usr/bin/env bash
# Backups that restore: a database in use (tests/lib/sample_queue.sql: tweets in every state, a
# batch in flight, history, credentials, an edited policy) is dumped with pg_dump -Fc and
# restored with pg_restore into a fresh database of a server that preloads tweetkeeper. Every
# row of every table and the lease sequence must come back identical, the restore must report no
# error, and workers must carry on against the restored copy (the batch that was in flight is
# handed back, new leases continue the sequence). Prints "backup: N passed, M failed".
set -uo pipefail
source "$(dirname "$0")/../lib/common.sh"
tk_workdir backup
tk_pg_start "$dir" || exit 1
tk_mock_start "$dir/mock.log" || exit 1

bgw_restart() { # the maintenance worker reads database settings when it connects
  tk_psql -c "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE backend_type = 'tweetkeeper maintenance'" >/dev/null
}

# The source: its own database, where no background worker runs, so its batch stays in flight.
tk_psql -d postgres -c "CREATE DATABASE source"
tk_psql -d source -c "CREATE EXTENSION tweetkeeper" 2>/dev/null
tk_psql -d source -f "$TK_ROOT/tests/lib/sample_queue.sql" >/dev/null
# History in partitions made by the housekeeping (not members of the extension), compacted
# history (observations of twelve days ago, in a partition of their own, then compacted) and, from
# ten days ago, a row that no partition covers, in the default partition (a member).
tk_psql -d source -c "SELECT tweetkeeper.create_partitions()" \
  -c "INSERT INTO tweetkeeper.metric_history (tweet_id, lease_id, observed_at, like_count, impression_count)
      SELECT tweet_id, 2, now() - interval '12 days' + (tweet_id % 7) * interval '1 minute', tweet_id % 1000, NULL
        FROM tweetkeeper.tweets" \
  -c "SELECT tweetkeeper.create_partitions()" -c "SELECT tweetkeeper.compact_history()" \
  -c "INSERT INTO tweetkeeper.metric_history (tweet_id, lease_id, observed_at, like_count)
      SELECT tweet_id, 1, now() - interval '10 days', 1 FROM tweetkeeper.tweets ORDER BY tweet_id LIMIT 1" >/dev/null
layout="SELECT string_agg(format('%s %s %s', partition, starts, ends), '; ' ORDER BY starts)
          || ' default ' || (SELECT count(*) FROM tweetkeeper.metric_history_default) FROM tweetkeeper.history_partitions"
source_layout=$(tk_psql -d source -c "$layout")
# Every table but housekeeping_runs, where the background worker records its own runs in the
# restored copy.
tables=$(tk_tables source r | sed 's/ *housekeeping_runs//')
tk_snapshot source "$dir/source.txt" $tables
rows=$(grep -vc '^--' "$dir/source.txt")
tk_psql -d source -c "SELECT state, count(*) FROM tweetkeeper.tweets GROUP BY 1 ORDER BY 1" | tr '\n' ' ' | sed 's/^/# source tweets by state: /'
echo
PGDATABASE=source tk_sql_ok "the source holds tweets in every state, a batch in flight, an edited policy and compacted history" "
  SELECT (SELECT count(DISTINCT state) = 4 FROM tweetkeeper.tweets)
     AND (SELECT count(*) = 1 FROM tweetkeeper.batches WHERE outcome IS NULL)
     AND (SELECT bool_and(source = 'user') FROM tweetkeeper.age_policy)
     AND (SELECT count(*) > 0 FROM tweetkeeper.metric_history_compact)"

out=$(pg_dump -Fc -d source -f "$dir/source.dump" 2>&1)
tk_ok "pg_dump -Fc of a database in use" $? "$out"

# The target: the database the background worker serves, restored while it does not reclaim
# abandoned batches (so the comparison sees the rows as dumped); then switched on.
tk_psql -d postgres -c "ALTER DATABASE tweetkeeper SET tweetkeeper.reclaim_abandoned = off"
bgw_restart
out=$(pg_restore -d tweetkeeper --single-transaction "$dir/source.dump" 2>&1)
tk_ok "pg_restore into a fresh database reports no error" $? "$out"
tk_snapshot tweetkeeper "$dir/restored.txt" $tables
diff -u "$dir/source.txt" "$dir/restored.txt" >"$dir/restore.diff"
tk_ok "every row ($rows) and the lease sequence are restored identical" $? "$(head -20 "$dir/restore.diff")"
restored_layout=$(tk_psql -c "$layout")
[ "$restored_layout" = "$source_layout" ] && [[ "$source_layout" == *"default 1" ]]
tk_ok "the history's partitions are restored with their bounds and rows ($source_layout)" $? "$restored_layout"
tk_sql_ok "the restored policy is the edited one, in force" \
  "SELECT tweetkeeper.next_delay(now() - interval '2 hours') = interval '1 hour' AND count(*) = 6 FROM tweetkeeper.age_policy"

# Workers carry on. The batch in flight is read before the background worker may reclaim it
# (once switched on, it can hand the batch back before this script's next statement).
max_lease=$(tk_psql -c "SELECT max(lease_id) FROM tweetkeeper.batches")
in_flight=$(tk_psql -c "SELECT lease_id FROM tweetkeeper.batches WHERE outcome IS NULL")
[ -n "$in_flight" ]
tk_ok "the restored copy holds the batch in flight (lease $in_flight) until reclaiming is on" $?
tk_psql -d postgres -c "ALTER DATABASE tweetkeeper RESET tweetkeeper.reclaim_abandoned"
bgw_restart
printf 'alpha=backup-test-token\nbeta=backup-revoked-token\n' >"$dir/credentials"
chmod 600 "$dir/credentials"
"$TK_WORKER" --dsn "$TK_DSN" --api-url "$TK_MOCK_URL" --credentials "$dir/credentials" --concurrency 2 \
  --name restored --poll-interval 200 >"$dir/worker.log" 2>&1 &
TK_PIDS+=($!)
# The tweets of that batch, each refreshed (observed, or found deleted or hidden) since.
refreshed="SELECT count(*) = 100 FROM tweetkeeper.tweets t, tweetkeeper.batches b
  WHERE b.lease_id = $in_flight AND t.tweet_id = ANY (b.tweet_ids) AND t.lease_id IS NULL
    AND (t.updated_at > b.claimed_at OR t.problem_at > b.claimed_at)"
tk_wait_for 30 "$refreshed"
tk_sql_ok "the batch in flight at dump time was handed back (abandoned: its session is gone)" \
  "SELECT outcome = 'abandoned' FROM tweetkeeper.batches WHERE lease_id = $in_flight"
tk_sql_ok "workers refreshed all 100 of its tweets" "$refreshed"
tk_sql_ok "new leases continue the restored sequence" \
  "SELECT count(*) > 0 AND min(lease_id) > $max_lease FROM tweetkeeper.batches WHERE worker = 'restored'"
tk_sql_ok "and only the active credential was spent; the rejected one stays rejected" \
  "SELECT (SELECT status FROM tweetkeeper.credentials WHERE name = 'beta') = 'rejected'
      AND (SELECT bool_and(credential = 'alpha') FROM tweetkeeper.batches WHERE worker = 'restored')"
tk_summary backup
