#!/usr/bin/env bash
# The background worker: an idle system (it and three idle workers) commits at most one
# transaction per second; idle workers are woken by NOTIFY when work becomes claimable (not by
# polling: the measured worker's poll interval is 60 s), within a fraction of a second both when
# tweets are scheduled and when they fall due; and the maintenance worker survives a config reload, comes back after being terminated, and does
# nothing in a database without the extension; Bluesky's workers are woken for their posts as X's
# are for tweets. Prints "wakeup: N passed, M failed".
set -uo pipefail
source "$(dirname "$0")/../lib/common.sh"
tk_workdir wakeup
bgw_pid() { tk_psql -d "${1:-tweetkeeper}" -c "SELECT pid FROM pg_stat_activity WHERE backend_type = 'tweetkeeper maintenance'"; }
bgw_runs() { # bgw_runs [NOT_PID]: a maintenance worker (other than NOT_PID) runs
  local p
  p=$(bgw_pid postgres)
  [ -n "$p" ] && [ "$p" != "${1:-}" ]
}
wait_bgw() { # wait_bgw [NOT_PID]: until a maintenance worker (other than NOT_PID) runs; prints its pid
  tk_wait_until 15 bgw_runs "${1:-}" && bgw_pid postgres
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
# Ready: its listener has run LISTEN and both of its slots have connected.
listening="SELECT count(*) FILTER (WHERE query ILIKE 'LISTEN%tweetkeeper_due%') = 1
                  AND count(*) FILTER (WHERE application_name = 'tweetkeeper-worker waker') = 2
             FROM pg_stat_activity WHERE usename = 'tk_worker_login'"
tk_wait_for 20 "$listening"
tk_ok "the worker listens for wake-ups, its two slots connected" $? \
  "$(tk_psql -c "SELECT application_name, state, query FROM pg_stat_activity WHERE usename = 'tk_worker_login'")"

# Idle: nothing scheduled, for long. The whole system (the background worker and three idle
# workers: this one, polling every 60 s, and two with the default poll of 5 s and 4 slots each)
# may commit at most 1 transaction per second.
idle_pids=()
for n in 1 2; do
  "$TK_WORKER" --dsn "$TK_DSN user=tk_worker_login" --api-url "$TK_MOCK_URL" --concurrency 4 --name idle$n \
    >"$dir/idle$n.log" 2>&1 &
  idle_pids+=($!)
  TK_PIDS+=($!)
done
# Both up: each listening, its four slots connected.
tk_wait_for 20 "SELECT count(*) FILTER (WHERE query ILIKE 'LISTEN%tweetkeeper_due%') = 3
                       AND count(*) FILTER (WHERE application_name IN ('tweetkeeper-worker idle1', 'tweetkeeper-worker idle2')) = 8
                  FROM pg_stat_activity WHERE usename = 'tk_worker_login'"
tk_ok "two more idle workers listen, their slots connected" $?
# Not readiness: statistics reach pg_stat_database up to 10 s late (PostgreSQL's
# PGSTAT_IDLE_INTERVAL: an idle backend flushes its counts then), so the start-up's transactions
# would be counted in the window below if it began now. No event says when they are flushed.
sleep 11 # sleep-ok: PostgreSQL flushes an idle backend's statistics up to 10 s late, unannounced
xacts() { tk_psql -c "SELECT pg_stat_force_next_flush(); SELECT xact_commit FROM pg_stat_database WHERE datname = 'tweetkeeper'" | tail -1; }
x0=$(xacts)
sleep 20 # sleep-ok: the measuring window itself (transactions per 20 s of idling)
x1=$(xacts)
# The counter must be read both times, and must have moved: the measuring session's first
# transaction (x0's, flushed as it exited) is in it. A counter that stands still (statistics
# off, or not read) would make an idle count of -1, which is no measurement.
if [[ "$x0" =~ ^[0-9]+$ && "$x1" =~ ^[0-9]+$ ]] && ((x1 - x0 >= 1)); then
  idle=$((x1 - x0 - 1)) # less the measuring session's own (x0's)
  echo "# idle: $idle transactions in 20 s (background worker + 3 idle workers, 10 slots)"
  [ "$idle" -le 20 ]; tk_ok "an idle system commits at most 1 transaction per second (was $idle in 20 s)" $?
else
  tk_fail "an idle system commits at most 1 transaction per second" \
    "pg_stat_database's xact_commit read '$x0', then '$x1': no count (it must include the measuring session's own)"
fi
for p in "${idle_pids[@]}"; do kill -TERM "$p"; tk_wait_exit "$p" 20; done

# A full batch is scheduled: the background worker, woken at commit, notifies the worker, which
# claims it within a fraction of a second (its own poll is 60 s away).
t0=$(tk_psql -c "SELECT clock_timestamp()")
tk_psql -c "SELECT tweetkeeper.schedule_tweets($(tk_snowflake_sql '2 hours' 100))" >/dev/null
tk_wait_until 5 tk_sql_true "SELECT count(*) > 0 FROM tweetkeeper.batches"
latency=$(tk_psql -c "SELECT round(extract(epoch FROM min(claimed_at) - timestamptz '$t0')::numeric, 3) FROM tweetkeeper.batches")
echo "# a newly scheduled full batch was claimed after ${latency:-never} s"
tk_sql_ok "a newly scheduled full batch is claimed within 0.75 s (was ${latency:-never} s)" \
  "SELECT coalesce(min(claimed_at) - timestamptz '$t0' < interval '750 ms', false) FROM tweetkeeper.batches"

# A full batch that becomes due 3 s from now, while everything is idle: the background worker
# slept until then, not a tick at a time, and still notifies on time.
tk_psql -c "SELECT tweetkeeper.schedule_tweet(1595100000000000000 + g, now() - interval '2 minutes' + interval '3 seconds') FROM generate_series(1, 100) g" >/dev/null
x0=$(xacts)
t=$SECONDS
tk_wait_for 10 "SELECT count(*) = 1 AND bool_and(outcome = 'completed') FROM tweetkeeper.batches WHERE 1595100000000000001 = ANY (tweet_ids)"
x1=$(xacts)
due_lag=$(tk_psql -c "SELECT round(extract(epoch FROM b.claimed_at - b.oldest_due_at)::numeric, 3) FROM tweetkeeper.batches b WHERE 1595100000000000001 = ANY (b.tweet_ids)")
echo "# a full batch was claimed ${due_lag:-never} s after it became due; $((x1 - x0 - 1)) transactions in those $((SECONDS - t)) s"
tk_sql_ok "a newly due full batch is claimed within 0.75 s of its due time (was ${due_lag:-never} s)" \
  "SELECT coalesce(bool_and(claimed_at - oldest_due_at BETWEEN interval '0' AND interval '750 ms'), false) FROM tweetkeeper.batches WHERE 1595100000000000001 = ANY (tweet_ids)"

# A partial batch: claimed when its oldest tweet has waited the buffer TTL (1 s), not later.
tk_psql -c "SELECT tweetkeeper.schedule_tweet(1595000000000000000 + g, now() - interval '2 minutes' + interval '2 seconds') FROM generate_series(1, 10) g" >/dev/null
# Until all 10 were refreshed (one batch, or two: see below) and no batch is in flight.
tk_wait_for 15 "SELECT (SELECT count(*) = 10 FROM tweetkeeper.tweets WHERE tweet_id BETWEEN 1595000000000000001 AND 1595000000000000010 AND update_count > 0)
                   AND NOT EXISTS (SELECT FROM tweetkeeper.batches WHERE outcome IS NULL)"
lag=$(tk_psql -c "SELECT round(extract(epoch FROM b.claimed_at - b.oldest_due_at)::numeric, 3) FROM tweetkeeper.batches b WHERE 1595000000000000001 = ANY (b.tweet_ids)")
echo "# a partial batch was claimed ${lag:-never} s after its oldest tweet became due (buffer TTL 1 s)"
tk_sql_ok "a partial batch is claimed between 1 s and 1.75 s after it is due (was ${lag:-never} s)" \
  "SELECT coalesce(bool_and(claimed_at - oldest_due_at BETWEEN interval '1 s' AND interval '1750 ms'), false) FROM tweetkeeper.batches WHERE 1595000000000000001 = ANY (tweet_ids)"
tk_psql -F ' ' -c "SELECT '# batch', lease_id, worker, size, outcome, claimed_at FROM tweetkeeper.batches ORDER BY lease_id"
# Two slots woken by the same NOTIFY may split the partial batch (seen: 9 + 1 tweets); every
# batch must still complete.
tk_sql_ok "every batch was completed (at least three)" "SELECT count(*) >= 3 AND bool_and(outcome = 'completed') FROM tweetkeeper.batches"

# Bluesky's posts: maintenance() notifies their workers too (payload 'bluesky', claim_wait()); a
# Bluesky worker that polls once a minute claims a partial batch of them when it has waited the
# buffer TTL (1 s), not a minute later.
env -u TWEETKEEPER_BEARER_TOKEN "$TK_WORKER" --provider bluesky --dsn "$TK_DSN user=tk_worker_login" \
  --api-url "$TK_MOCK_URL" --concurrency 1 --name bwaker --poll-interval 60000 >"$dir/bworker.log" 2>&1 &
bworker=$!
TK_PIDS+=($bworker)
tk_wait_for 20 "SELECT count(*) FILTER (WHERE query ILIKE 'LISTEN%tweetkeeper_due%') = 2
                       AND count(*) FILTER (WHERE application_name = 'tweetkeeper-worker bwaker') = 1
                  FROM pg_stat_activity WHERE usename = 'tk_worker_login'"
tk_ok "a Bluesky worker listens too, its slot connected" $?
tk_psql -c "$(tk_tid_sql)" -c "SELECT tweetkeeper.schedule_post(
    format('https://bsky.app/profile/did:plc:z72i7hdynmk6r22z27h6tvur/post/%s', public.tid(now() - interval '2 minutes' + interval '2 seconds' + g * interval '1 ms', g)),
    now() - interval '2 minutes' + interval '2 seconds') FROM generate_series(1, 5) g" >/dev/null
tk_wait_for 15 "SELECT count(*) = 1 AND bool_and(outcome = 'completed') FROM tweetkeeper.batches WHERE endpoint = 'bluesky'"
blag=$(tk_psql -c "SELECT round(extract(epoch FROM b.claimed_at - b.oldest_due_at)::numeric, 3) FROM tweetkeeper.batches b WHERE endpoint = 'bluesky'")
echo "# a partial batch of Bluesky posts was claimed ${blag:-never} s after it became due (buffer TTL 1 s)"
tk_sql_ok "a partial Bluesky batch is claimed between 1 s and 1.75 s after it is due (was ${blag:-never} s; its worker polls once a minute)" \
  "SELECT coalesce(bool_and(claimed_at - oldest_due_at BETWEEN interval '1 s' AND interval '1750 ms'), false) FROM tweetkeeper.batches WHERE endpoint = 'bluesky'"
kill -TERM "$bworker"
tk_wait_exit "$bworker" 20
[ "$TK_RC" = 0 ]; tk_ok "the Bluesky worker exits 0 on SIGTERM" $?

# SIGHUP: a reload keeps the maintenance worker (same pid) and applies the new tick.
reload_at=$(tk_psql -c "SELECT clock_timestamp()")
tk_psql -c "ALTER SYSTEM SET tweetkeeper.tick_interval = '100ms'" -c "SELECT pg_reload_conf()" >/dev/null
# Until it has been through its loop since (the SIGHUP wakes it; it reads the file, then ticks).
tk_wait_for 15 "SELECT state_change > timestamptz '$reload_at' FROM pg_stat_activity WHERE pid = $pid1"
[ $? = 0 ] && [ "$(bgw_pid)" = "$pid1" ]; tk_ok "a config reload (SIGHUP) keeps the maintenance worker running" $?

# Terminated (as after an error): the postmaster starts it again.
tk_psql -c "SELECT pg_terminate_backend($pid1)" >/dev/null
pid2=$(wait_bgw "$pid1")
tk_ok "a terminated maintenance worker is restarted by PostgreSQL (pid $pid1 -> ${pid2:-none})" $?

# In a database without the extension it idles quietly.
tk_psql -c "ALTER SYSTEM SET tweetkeeper.database = 'postgres'" >/dev/null
tk_pg_stop "$dir"
tk_pg_start "$dir" || exit 1
pid3=$(wait_bgw)
# Until it has been through its first tick there (idle in its wait since).
tk_wait_for 15 "SELECT state = 'idle' AND state_change IS NOT NULL AND wait_event = 'Extension' FROM pg_stat_activity WHERE pid = ${pid3:-0}"
[ -n "$pid3" ] && [ "$(bgw_pid postgres)" = "$pid3" ]
tk_ok "in a database without the extension the maintenance worker stays up" $?
! grep -q 'ERROR' "$dir/pg/server.log"; tk_ok "and the server log has no ERROR" $? "$(grep -A1 'ERROR' "$dir/pg/server.log" | head -6)"

kill -TERM "$worker"
tk_wait_exit "$worker" 30
[ "$TK_RC" = 0 ]; tk_ok "the worker survived the restarts and exits 0 on SIGTERM" $?
tk_summary wakeup
