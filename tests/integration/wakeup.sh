#!/usr/bin/env bash
# The background worker: idle workers are woken by NOTIFY when work becomes claimable (not by
# polling: their poll interval here is 60 s), an idle system barely touches the database, and
# the maintenance worker survives a config reload, comes back after being terminated, and does
# nothing in a database without the extension. Prints "wakeup: N passed, M failed".
set -uo pipefail
source "$(dirname "$0")/../lib/common.sh"
dir=$(tk_tmpdir wakeup)
cleanup() { tk_cleanup; tk_pg_stop "$dir"; [ -n "${KEEP:-}" ] || rm -rf "$dir"; }
trap cleanup EXIT
passed=0
failed=0
ok() { # ok NAME CONDITION-EXIT-STATUS
  if [ "$2" = 0 ]; then echo "ok - $1"; passed=$((passed + 1)); else echo "not ok - $1"; failed=$((failed + 1)); fi
}
sql_ok() { [ "$(tk_psql -c "$2")" = t ]; ok "$1" $?; }
bgw_pid() { tk_psql -d "${1:-tweetkeeper}" -c "SELECT pid FROM pg_stat_activity WHERE backend_type = 'tweetkeeper maintenance'"; }
wait_bgw() { # wait_bgw [NOT_PID]: until a maintenance worker (other than NOT_PID) runs; prints its pid
  local i p
  for i in $(seq 1 150); do
    p=$(bgw_pid postgres)
    if [ -n "$p" ] && [ "$p" != "${1:-}" ]; then echo "$p"; return 0; fi
    sleep 0.1
  done
  return 1
}

tk_pg_start "$dir" -c tweetkeeper.buffer_ttl=1s || exit 1
tk_mock_start "$dir/mock.log" || exit 1
tk_psql -c "CREATE EXTENSION tweetkeeper; CREATE ROLE tk_worker_login LOGIN IN ROLE tweetkeeper_worker" >/dev/null
pid1=$(wait_bgw) || { echo "not ok - the maintenance worker never started"; exit 1; }
export TWEETKEEPER_BEARER_TOKEN=wakeup-test-token
"$TK_WORKER" --dsn "$TK_DSN user=tk_worker_login" --api-url "$TK_MOCK_URL" --concurrency 2 --name waker \
  --poll-interval 60000 >"$dir/worker.log" 2>&1 &
worker=$!
TK_PIDS+=($worker)
sleep 2

# Idle: nothing scheduled. Transactions in 5 s, all sources (maintenance ticks, worker polls).
x0=$(tk_psql -c "SELECT xact_commit FROM pg_stat_database WHERE datname = 'tweetkeeper'")
sleep 5
x1=$(tk_psql -c "SELECT pg_stat_force_next_flush(); SELECT xact_commit FROM pg_stat_database WHERE datname = 'tweetkeeper'" | tail -1)
idle=$((x1 - x0))
echo "# idle: $idle transactions in 5 s"
[ "$idle" -le 60 ]; ok "an idle system commits few transactions (<= 60 in 5 s, was $idle)" $?

# A full batch becomes due: picked up within a fraction of a second, by NOTIFY.
t0=$(tk_psql -c "SELECT clock_timestamp()")
tk_psql -c "SELECT tweetkeeper.schedule_tweets(ARRAY(SELECT (((extract(epoch FROM now() - interval '2 hours') * 1000)::bigint - 1288834974657) << 22) + g FROM generate_series(1, 100) g))" >/dev/null
for i in $(seq 1 50); do
  [ "$(tk_psql -c "SELECT count(*) FROM tweetkeeper.batches")" -gt 0 ] && break
  sleep 0.1
done
latency=$(tk_psql -c "SELECT round(extract(epoch FROM min(claimed_at) - timestamptz '$t0')::numeric, 3) FROM tweetkeeper.batches")
echo "# a newly due full batch was claimed after ${latency:-never} s"
sql_ok "a newly due full batch is claimed within 0.75 s (was ${latency:-never} s)" \
  "SELECT coalesce(min(claimed_at) - timestamptz '$t0' < interval '750 ms', false) FROM tweetkeeper.batches"

# A partial batch: claimed when its oldest tweet has waited the buffer TTL (1 s), not later.
tk_psql -c "SELECT tweetkeeper.schedule_tweet(1595000000000000000 + g, now() - interval '2 minutes' + interval '2 seconds') FROM generate_series(1, 10) g" >/dev/null
sleep 5
lag=$(tk_psql -c "SELECT round(extract(epoch FROM b.claimed_at - b.oldest_due_at)::numeric, 3) FROM tweetkeeper.batches b WHERE 1595000000000000001 = ANY (b.tweet_ids)")
echo "# a partial batch was claimed ${lag:-never} s after its oldest tweet became due (buffer TTL 1 s)"
sql_ok "a partial batch is claimed between 1 s and 1.75 s after it is due (was ${lag:-never} s)" \
  "SELECT coalesce(bool_and(claimed_at - oldest_due_at BETWEEN interval '1 s' AND interval '1750 ms'), false) FROM tweetkeeper.batches WHERE 1595000000000000001 = ANY (tweet_ids)"
sql_ok "both batches were completed" "SELECT count(*) = 2 AND bool_and(outcome = 'completed') FROM tweetkeeper.batches"

# SIGHUP: a reload keeps the maintenance worker (same pid) and applies the new tick.
tk_psql -c "ALTER SYSTEM SET tweetkeeper.tick_interval = '100ms'" -c "SELECT pg_reload_conf()" >/dev/null
sleep 1
[ "$(bgw_pid)" = "$pid1" ]; ok "a config reload (SIGHUP) keeps the maintenance worker running" $?

# Terminated (as after an error): the postmaster starts it again.
tk_psql -c "SELECT pg_terminate_backend($pid1)" >/dev/null
pid2=$(wait_bgw "$pid1")
ok "a terminated maintenance worker is restarted by PostgreSQL (pid $pid1 -> ${pid2:-none})" $?

# In a database without the extension it idles quietly.
tk_psql -c "ALTER SYSTEM SET tweetkeeper.database = 'postgres'" >/dev/null
tk_pg_stop "$dir"
tk_pg_start "$dir" || exit 1
pid3=$(wait_bgw)
sleep 2
[ -n "$pid3" ] && [ "$(bgw_pid postgres)" = "$pid3" ]
ok "in a database without the extension the maintenance worker stays up" $?
! grep -q 'ERROR' "$dir/pg/server.log"; ok "and the server log has no ERROR" $?

kill -TERM "$worker"
tk_wait_exit "$worker" 30
[ "$TK_RC" = 0 ]; ok "the worker survived the restarts and exits 0 on SIGTERM" $? 2>/dev/null || true
echo "wakeup: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
