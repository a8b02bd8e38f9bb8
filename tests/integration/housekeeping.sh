#!/usr/bin/env bash
# The history's housekeeping, for real: pg_cron loaded beside tweetkeeper
# (shared_preload_libraries = 'pg_cron,tweetkeeper'), schedule_housekeeping() registers its jobs
# once however often it is called, the jobs run and cron.job_run_details shows them succeeding,
# and what they did is there: partitions ahead, observations from the default partition moved,
# old partitions rolled up into metric_daily and dropped. Then unschedule_housekeeping(), and the
# background worker does the same work on its own. Partitions of a minute, a retention of two.
# Prints "housekeeping: N passed, M failed".
set -uo pipefail
source "$(dirname "$0")/../lib/common.sh"
tk_workdir housekeeping
tk_pg_start "$dir" -c shared_preload_libraries=pg_cron,tweetkeeper -c cron.database_name=tweetkeeper \
  -c cron.use_background_workers=on -c max_worker_processes=16 || exit 1
tk_psql >/dev/null <<'SQL' || exit 1
CREATE EXTENSION pg_cron;
CREATE EXTENSION tweetkeeper;
ALTER DATABASE tweetkeeper SET tweetkeeper.history_partition = '1min';
ALTER DATABASE tweetkeeper SET tweetkeeper.history_retention = '2min';
SQL
# Observations from 10 and 5 minutes ago, as a system whose housekeeping had stopped would hold
# them: in the default partition. Three per tweet and minute, tweets 1 and 2.
old_rows() {
  tk_psql -c "INSERT INTO tweetkeeper.metric_history (tweet_id, lease_id, observed_at, like_count)
    SELECT t, $1 * 100 + s, date_trunc('minute', now()) - interval '$1 minutes' + s * interval '10 seconds', s
      FROM generate_series(1, 2) t, generate_series(0, 2) s"
}
tk_psql -c "DELETE FROM tweetkeeper.metric_history" # the worker's first housekeeping may have made partitions: start clean
old_rows 10
old_rows 5

# Registering the jobs: idempotent.
first=$(tk_psql -c "SELECT tweetkeeper.schedule_housekeeping('* * * * *', '* * * * *', '* * * * *')")
second=$(tk_psql -c "SELECT tweetkeeper.schedule_housekeeping('* * * * *', '* * * * *', '* * * * *')")
jobs=$(tk_psql -c "SELECT count(*) FROM cron.job WHERE jobname LIKE 'tweetkeeper-%'")
[ "$first" = "$second" ] && [ "$jobs" = 3 ]
tk_ok "schedule_housekeeping() registers three pg_cron jobs, and calling it again changes nothing ($first, $jobs jobs)" $?
out=$(tk_psql -c "SELECT tweetkeeper.schedule_housekeeping('every full moon')" 2>&1)
[ $? -ne 0 ] && [[ "$out" == *"invalid schedule"* ]]
tk_ok "a schedule pg_cron cannot read is refused" $? "$out"

# The jobs run at the next minute (pg_cron's finest grain in 1.4), side by side, one task at a
# time under the housekeeping lock: a job that waits for it longer than its lock_timeout fails
# and runs again the next minute (on a busy machine the first partitions job, an hour of
# one-minute partitions, can hold it that long; seen in a clean-clone make check). So: within
# three minutes, each has succeeded.
scheduled_at=$(tk_psql -c "SELECT now()")
succeeded="SELECT count(DISTINCT j.jobname) = 3 FROM cron.job_run_details d JOIN cron.job j USING (jobid)
            WHERE j.jobname LIKE 'tweetkeeper-%' AND d.status = 'succeeded'"
tk_wait_for 180 "$succeeded"
runs=$(tk_psql -c "SELECT string_agg(format('%s %s %s', j.jobname, d.status, d.return_message), '; ')
                    FROM cron.job_run_details d JOIN cron.job j USING (jobid)")
[ "$(tk_psql -c "$succeeded")" = t ]
tk_ok "the three jobs ran and cron.job_run_details shows them succeeding ($runs)" $?
# Whatever finished last, the jobs are done: wait for the retention job to have dropped.
tk_wait_for 10 "SELECT count(*) = 0 FROM tweetkeeper.metric_history"
tk_sql_ok "the old observations were rolled up and their partitions dropped" \
  "SELECT (SELECT count(*) = 0 FROM tweetkeeper.metric_history)
      AND (SELECT count(*) = 0 FROM tweetkeeper.metric_history_default)
      AND (SELECT count(DISTINCT tweet_id) = 2 AND sum(observations) = 12 FROM tweetkeeper.metric_daily)" \
  "SELECT * FROM tweetkeeper.metric_daily"
# (An hour ahead and none older than the retention as of each job's last run, not as of now: a
# check made just after a minute begins may come before that minute's run of either job.)
tk_sql_ok "partitions cover now and an hour ahead, none older than the retention" \
  "SELECT bool_or(starts <= now() AND ends > now())
      AND max(ends) > (SELECT last_run FROM tweetkeeper.housekeeping_runs WHERE task = 'partitions') + interval '59 minutes'
      AND min(starts) >= (SELECT last_run FROM tweetkeeper.housekeeping_runs WHERE task = 'retention') - interval '3 minutes'
     FROM tweetkeeper.history_partitions" \
  "SELECT format('now %s; partitions ran %s, retention %s; %s partitions from %s to %s', now(),
                 (SELECT last_run FROM tweetkeeper.housekeeping_runs WHERE task = 'partitions'),
                 (SELECT last_run FROM tweetkeeper.housekeeping_runs WHERE task = 'retention'),
                 count(*), min(starts), max(ends)) FROM tweetkeeper.history_partitions"
# (Polled: a job's row can follow cron's "succeeded" by a few seconds; seen once in a clean-clone
# make check, where the partitions row was written 5 s after the check had read it.)
tk_wait_for 30 "SELECT count(*) = 3 AND bool_and(last_run > timestamptz '$scheduled_at') AND bool_and(result NOT LIKE 'failed%')
                  FROM tweetkeeper.housekeeping_runs"
tk_ok "housekeeping_runs says what the jobs did" $? \
  "$(tk_psql -c "SELECT now(), '$scheduled_at' AS scheduled_at" -c "SELECT * FROM tweetkeeper.housekeeping_runs")"

removed=$(tk_psql -c "SELECT tweetkeeper.unschedule_housekeeping()")
left=$(tk_psql -c "SELECT count(*) FROM cron.job WHERE jobname LIKE 'tweetkeeper-%'")
again=$(tk_psql -c "SELECT tweetkeeper.unschedule_housekeeping()")
[ "$removed" = 3 ] && [ "$left" = 0 ] && [ "$again" = 0 ]
tk_ok "unschedule_housekeeping() removes the three jobs, and then none ($removed, $left left, $again)" $?

# Without the jobs, the background worker does the same, every housekeeping_interval.
tk_psql -c "ALTER SYSTEM SET tweetkeeper.housekeeping_interval = '10s'" -c "SELECT pg_reload_conf()" >/dev/null
tk_psql -c "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE backend_type = 'tweetkeeper maintenance'" >/dev/null
old_rows 9
# It restarts within 5 s and runs at once, but skips what pg_cron did less than 10 s before; then
# every 10 s.
tk_wait_for 40 "SELECT count(*) = 0 FROM tweetkeeper.metric_history"
tk_sql_ok "the background worker rolled up and dropped them too" \
  "SELECT (SELECT count(*) = 0 FROM tweetkeeper.metric_history)
      AND (SELECT count(DISTINCT tweet_id) = 2 AND sum(observations) = 18 FROM tweetkeeper.metric_daily)" \
  "SELECT format('%s rows left; daily %s; runs %s', (SELECT count(*) FROM tweetkeeper.metric_history),
     (SELECT string_agg(format('%s %s %s', tweet_id, day, observations), ', ') FROM tweetkeeper.metric_daily),
     (SELECT string_agg(format('%s %s %s', task, last_run, result), ', ') FROM tweetkeeper.housekeeping_runs))"

# A completion while a partition for now is being attached: it waits for the partition and
# stores there. (With ATTACH's own lock it routed to the default partition, then failed its
# partition check: SQLSTATE 23514, a request paid for and not stored.) The partitions from a
# day back are dropped, so that the next create_partitions() has one for now to attach; it
# holds its transaction open for 3 s while the completion comes.
tk_psql -c "SELECT tweetkeeper.unschedule_housekeeping()" \
  -c "ALTER SYSTEM SET tweetkeeper.housekeeping_interval = '1h'" -c "SELECT pg_reload_conf()" >/dev/null
for p in $(tk_psql -c "SELECT partition FROM tweetkeeper.history_partitions WHERE ends > now() - interval '1 day'"); do
  tk_psql -c "DROP TABLE $p" >/dev/null
done
tk_psql -c "SELECT tweetkeeper.schedule_tweets($(tk_snowflake_sql '1 hour' 3))" >/dev/null
tk_psql -c "BEGIN" -c "SELECT tweetkeeper.create_partitions()" -c "SELECT pg_sleep(3)" -c "COMMIT" >"$dir/attach.log" 2>&1 &
attach=$!
# Claim and complete in one session (a batch whose session ended is handed back by maintenance),
# the completion once create_partitions() has attached (its transaction open, sleeping).
out=$(tk_psql 2>&1 <<'SQL'
SET tweetkeeper.buffer_ttl = 0;
SELECT lease_id AS lease FROM tweetkeeper.claim_batch('race', 100) \gset
DO $$
BEGIN
  FOR i IN 1..50 LOOP
    EXIT WHEN EXISTS (SELECT FROM pg_stat_activity WHERE query = 'SELECT pg_sleep(3)' AND state = 'active');
    PERFORM pg_sleep(0.1);
    PERFORM pg_stat_clear_snapshot();  -- pg_stat_activity is otherwise read once a transaction
  END LOOP;
END $$;
SELECT tweetkeeper.complete_batch(:lease,
         (SELECT jsonb_agg(jsonb_build_object('id', id, 'like_count', 1))
            FROM unnest((SELECT tweet_ids FROM tweetkeeper.batches WHERE lease_id = :lease)) id), '[]');
SQL
)
rc=$?
wait $attach
lease=$(tk_psql -c "SELECT max(lease_id) FROM tweetkeeper.batches WHERE worker = 'race'")
[ $rc -eq 0 ] && [ "$out" = 3 ]
tk_ok "a completion while a partition for now is attached stores every observation (rc $rc, stored ${out:-none})" $? \
  "$out $(cat "$dir/attach.log")"
tk_sql_ok "and they are in the new partition, none in the default one" \
  "SELECT count(*) = 3 AND bool_and(tableoid <> 'tweetkeeper.metric_history_default'::regclass)
     FROM tweetkeeper.metric_history_hot WHERE lease_id = $lease" \
  "SELECT tableoid::regclass, count(*) FROM tweetkeeper.metric_history_hot GROUP BY 1"

# A task that waits for another's housekeeping lock longer than its 2 s lock_timeout still runs
# (pg_cron starts the three side by side; under load retention, started last, timed out every
# minute): a session holds the lock for 4 s, and retention, started while it holds it, succeeds.
tk_psql -c "SELECT pg_advisory_xact_lock(hashtext('tweetkeeper.housekeeping')), pg_sleep(4)" >/dev/null &
holder=$!
tk_wait_for 10 "SELECT count(*) = 1 FROM pg_locks WHERE locktype = 'advisory' AND granted
                  AND objid = hashtext('tweetkeeper.housekeeping')::oid"
out=$(tk_psql -c "SELECT tweetkeeper.apply_retention() IS NOT NULL" 2>&1)
wait "$holder"
[ "$out" = t ]
tk_ok "retention waits for the housekeeping lock another task holds for longer than its lock_timeout (got: $out)" $? "$out"

tk_summary housekeeping
