#!/usr/bin/env bash
# The X API misbehaving (issue 3): PostgreSQL + the mock X API with --fault-rate 0.3 (every kind:
# hang, slow, drop, 5xx, truncated, content-type, huge) + two workers with a short --http-timeout.
# PROVIDER=bluesky: the same faults on Bluesky's AppView (getPosts), with Bluesky posts and
# workers (issue 19).
# After RUN_SECONDS the workers get SIGTERM. The API misbehaving must never crash a worker, hang
# it past its timeout, make it spin, or lose a tweet; every failure must be logged and handed back.
# Every kind must have been injected at least once, and the mock's stats read, or the run fails.
# Prints "ok"/"not ok" lines, the fault counts and "api-faults: N passed, M failed"; exits
# non-zero on a failure. TK_BUILD chooses the build (e.g. a -DTK_SANITIZE=ON one, whose logs are then searched
# for sanitizer reports too); FAULT_SEED=n
# replays another fault sequence; KEEP=1 keeps the logs and the cluster directory.
set -uo pipefail
source "$(dirname "$0")/../lib/common.sh"
RUN_SECONDS=${RUN_SECONDS:-40}
PROVIDER=${PROVIDER:-x}
case $PROVIDER in x) suite=api-faults ;; bluesky) suite=api-faults-bluesky ;; *) echo "PROVIDER: x or bluesky" >&2; exit 2 ;; esac
FAULT_RATE=0.3
FAULT_SEED=${FAULT_SEED:-1}
BUFFER_TTL_S=1
LEASE_TTL_S=10
HTTP_TIMEOUT_S=2   # the workers' --http-timeout: a hang costs a batch this long
BATCH_SIZE=10      # small batches: a few hundred tweets make enough requests to meet every fault
SLACK_S=4          # scheduling jitter we accept: backoffs, poll interval, a busy shared 2-core box
STOP_BOUND_S=$((2 * HTTP_TIMEOUT_S + 8)) # SIGTERM to exit: the request in flight, its release, slack
YOUNG=300          # tweets 1 minute old: every 6 s
OLDER=100          # tweets 1 hour old: every 15 s

tk_workdir "$suite"
# CPU seconds (user + system) a process has used so far; "gone" when it is no longer running.
cpu_seconds() { awk -v tck="$(getconf CLK_TCK)" '{ printf "%.2f", ($14 + $15) / tck }' "/proc/$1/stat" 2>/dev/null || echo gone; }
# Worker log lines reporting a released batch whose reason matches an extended regex.
released() { cat "$dir"/worker-*.log | grep 'batch released' | grep -cE "$1"; }

tk_pg_start "$dir" -c tweetkeeper.buffer_ttl=${BUFFER_TTL_S}s -c tweetkeeper.lease_ttl=${LEASE_TTL_S}s || exit 1
# (Bluesky: every post shown, so that each is refreshed; the AppView leaves hidden ones out.)
tk_mock_start "$dir/mock.log" --fault-rate $FAULT_RATE --fault-seed "$FAULT_SEED" \
  --request-log "$dir/requests.log" $([ "$PROVIDER" = bluesky ] && echo --deleted-every 0 --protected-every 0) || exit 1

tk_psql >/dev/null <<SQL || exit 1
CREATE EXTENSION tweetkeeper;
-- Every refresh leaves a history row, unchanged or not: the gaps between them are measured.
ALTER DATABASE tweetkeeper SET tweetkeeper.history_keep_unchanged = on;
$(tk_fast_policy_sql)
$([ "$PROVIDER" = x ] && tk_fast_queue_sql $YOUNG $OLDER || tk_bluesky_queue_sql $YOUNG $OLDER)
SQL
total=$(tk_psql -c "SELECT count(*) FROM tweetkeeper.tweets")
echo "# $total $PROVIDER posts; mock with --fault-rate $FAULT_RATE --fault-seed $FAULT_SEED (all kinds);" \
  "two workers, --http-timeout $HTTP_TIMEOUT_S --concurrency 2 --batch-size $BATCH_SIZE, for ${RUN_SECONDS}s"

start=$(tk_psql -c "SELECT now()")
t_start=$(date +%s.%N)
pids=()
for w in 1 2; do
  # One token per worker, so the mock's request log tells them apart (Bluesky's AppView takes none).
  TWEETKEEPER_BEARER_TOKEN=api-faults-token-$w "$TK_WORKER" --provider "$([ "$PROVIDER" = x ] && echo x-v2 || echo bluesky)" \
    --dsn "$TK_DSN" --api-url "$TK_MOCK_URL" \
    --name "fault-worker-$w" --concurrency 2 --batch-size $BATCH_SIZE --http-timeout $HTTP_TIMEOUT_S \
    --poll-interval 200 >"$dir/worker-$w.log" 2>&1 &
  pids+=($!)
  TK_PIDS+=($!)
done
sleep "$RUN_SECONDS" # sleep-ok: the run, over which refreshes are checked on schedule under faults
# Then, if need be, until the mock has injected every kind of fault (a slow machine makes fewer
# requests in the run; the fault sequence is fixed by the seed, so a few more bring them all).
every_kind_injected() {
  curl -s -m 5 "$TK_MOCK_URL/mock/stats" |
    jq -e '[.faults["hang", "slow", "drop", "5xx", "truncated", "content-type", "huge"] | . // 0] | all(. > 0)' >/dev/null 2>&1
}
TK_POLL_S=0.5 tk_wait_until 60 every_kind_injected

alive=0
cpu=()
for p in "${pids[@]}"; do
  kill -0 "$p" 2>/dev/null && alive=$((alive + 1))
  cpu+=("$(cpu_seconds "$p")")
done
stop=$(tk_psql -c "SELECT now()")
wall=$(awk "BEGIN { printf \"%.1f\", $(date +%s.%N) - $t_start }")
t0=$(date +%s.%N)
kill -TERM "${pids[@]}" 2>/dev/null
rcs=()
for p in "${pids[@]}"; do
  tk_wait_exit "$p" $STOP_BOUND_S
  rcs+=("$TK_RC")
done
stop_s=$(awk "BEGIN { printf \"%.2f\", $(date +%s.%N) - $t0 }")
curl -s -m 10 "$TK_MOCK_URL/mock/stats" >"$dir/mock-stats.json"
# The mock too must stop promptly, even with connections held for hangs.
kill -TERM "$TK_MOCK_PID"
tk_wait_exit "$TK_MOCK_PID" 10
mock_rc=$TK_RC

# The mock's stats must be read: a missing or unreadable /mock/stats fails the check below, and
# every count read from it is then "unread" (never a zero that a check would take for "none").
stats_ok=1
jq -e '(.requests | type) == "number" and (.faults | type) == "object"' "$dir/mock-stats.json" >/dev/null 2>&1 && stats_ok=0
# mock_stat FILTER: a count from the stats (a kind of fault never injected has no key: 0).
mock_stat() { if [ "$stats_ok" = 0 ]; then jq -r "$1 // 0" "$dir/mock-stats.json"; else echo unread; fi; }
requests=$(mock_stat .requests)
hang=$(mock_stat .faults.hang)
slow=$(mock_stat .faults.slow)
drop=$(mock_stat .faults.drop)
err5xx=$(mock_stat '.faults["5xx"]')
truncated=$(mock_stat .faults.truncated)
ctype=$(mock_stat '.faults["content-type"]')
huge=$(mock_stat .faults.huge)
drop_reused=$(mock_stat .drops_on_reused_connections)
usable=$(mock_stat '[.batch_sizes[]] | add')
echo "# mock: $requests requests; faults: hang $hang, slow $slow, drop $drop ($drop_reused on kept-alive" \
  "connections, which libcurl resends once), 5xx $err5xx, truncated $truncated, content-type $ctype," \
  "huge $huge; $usable usable answers; status counts $(jq -c .status_counts "$dir/mock-stats.json")"
echo "# workers: exit codes ${rcs[*]} ${stop_s}s after SIGTERM; CPU ${cpu[*]} s in ${wall}s"
tk_psql -F ' ' -c "SELECT '# batches:', string_agg(coalesce(outcome::text, 'in flight') || ' ' || n, ', ')
  FROM (SELECT outcome, count(*) n FROM tweetkeeper.batches GROUP BY 1 ORDER BY 1) x"
# Why batches were handed back, as the workers told release_batch (sizes, offsets, times folded).
tk_psql -F ' ' -c "SELECT '#   released', count(*), 'x',
    substr(regexp_replace(reason, '(offset |after |than |, )[0-9]+', '\1N', 'g'), 1, 100)
  FROM tweetkeeper.batches WHERE outcome = 'released' GROUP BY 4 ORDER BY 2 DESC"

# --- the workers survived and stopped cleanly
tk_ok_if "the mock was up to the end and answered /mock/stats ($requests requests)" \
  '[ "$stats_ok" = 0 ] && jq -e ".requests > 0" "$dir/mock-stats.json" >/dev/null 2>&1'
all_positive() { local n; for n in "$@"; do [ "$n" -gt 0 ] 2>/dev/null || return 1; done; }
# A run in which the mock injected no fault would pass every check below at 0 = 0.
tk_ok_if "the mock injected every kind of fault (hang $hang, slow $slow, drop $drop, 5xx $err5xx, truncated $truncated, content-type $ctype, huge $huge)" \
  'all_positive "$hang" "$slow" "$drop" "$err5xx" "$truncated" "$ctype" "$huge"'
tk_ok_if "both workers were alive when the run ended ($alive of 2)" '[ "$alive" = 2 ]'
tk_ok_if "both workers exit 0 within ${STOP_BOUND_S}s of SIGTERM (${rcs[*]} after ${stop_s}s)" \
  '[ "${rcs[0]}" = 0 ] && [ "${rcs[1]}" = 0 ]'
tk_ok_if "the mock stops promptly on SIGTERM, hangs held or not (exit $mock_rc)" '[ "$mock_rc" = 0 ]'
# Sanitizer reports are looked for only in an instrumented build (TK_BUILD of -DTK_SANITIZE=ON):
# the default build has none to make (tests/sanitize/run.sh covers the sanitizers).
crash_re='Segmentation|core dumped|terminate called|Assertion|critical'
mock_re='cannot find the connection'
if ldd "$TK_WORKER" "$TK_MOCK" 2>/dev/null | grep -qE 'lib(a|ub)san'; then
  crash_re="Sanitizer|runtime error:|$crash_re"
  mock_re="Sanitizer|runtime error:|$mock_re"
  echo "# instrumented build: sanitizer reports are looked for too"
fi
crashes=$(cat "$dir"/worker-*.log | grep -cE "$crash_re")
tk_ok_if "worker logs have no crash or critical error ($crashes lines)" '[ "$crashes" = 0 ]'
[ "$crashes" = 0 ] || cat "$dir"/worker-*.log | grep -E "$crash_re" | head -5 | sed 's/^/#   /'
mock_crashes=$(grep -cE "$mock_re" "$dir/mock.log")
tk_ok_if "the mock found every socket it had to close ($mock_crashes lines)" '[ "$mock_crashes" = 0 ]'

# --- nothing lost, nothing stuck
tk_sql_ok "no tweet disappeared ($total)" "SELECT count(*) = $total FROM tweetkeeper.tweets"
tk_sql_ok "nothing is left leased after the graceful exit" \
  "SELECT count(*) = 0 FROM tweetkeeper.tweets WHERE lease_id IS NOT NULL" \
  "SELECT tweet_id, due_at, lease_id FROM tweetkeeper.tweets WHERE lease_id IS NOT NULL"
tk_sql_ok "no batch is left in flight" "SELECT count(*) = 0 FROM tweetkeeper.batches WHERE outcome IS NULL"
tk_sql_ok "no batch was left to lease expiry: every failed one was handed back" \
  "SELECT count(*) = 0 FROM tweetkeeper.batches WHERE outcome NOT IN ('completed', 'released')" \
  "SELECT lease_id, worker, outcome, reason FROM tweetkeeper.batches WHERE outcome NOT IN ('completed', 'released')"
# The history's primary key (tweet_id, lease_id) rules out duplicates; what could still go wrong
# is a lease storing more than its batch, or a failed (released) batch storing anything.
cat >"$dir/leases.sql" <<SQL
CREATE TEMP VIEW leases AS
SELECT h.lease_id, count(*) AS stored, min(b.size) AS size,
       coalesce(bool_and(b.outcome = 'completed'), false) AS completed,
       coalesce(bool_and(h.tweet_id = ANY (b.tweet_ids)), false) AS in_batch
  FROM tweetkeeper.metric_history h LEFT JOIN tweetkeeper.batches b USING (lease_id)
 GROUP BY h.lease_id;
SQL
tk_sql_ok "each lease stored at most its batch's tweets, only its own, and only as a completed batch" \
  "$(cat "$dir/leases.sql") SELECT count(*) > 0 AND bool_and(completed AND in_batch AND stored <= size) FROM leases" \
  "$(cat "$dir/leases.sql") SELECT * FROM leases WHERE NOT (completed AND in_batch AND stored <= size)"

# --- on schedule despite the faults: a failed batch is due again at once, so a tweet's gap grows
# by its failed attempts only, which the lease TTL covers.
slack="interval '$SLACK_S seconds'"
bound="interval '$((LEASE_TTL_S + BUFFER_TTL_S + SLACK_S)) seconds'"
tk_gaps_sql >"$dir/gaps.sql"
# (On a fast delay: the mock's AppView backdates a Bluesky post in 17, whose answer moves it to a
# daily refresh.)
tk_sql_ok "every scheduled post on a fast delay was refreshed at least twice" \
  "SELECT count(*) > 0 AND min(update_count) >= 2 FROM tweetkeeper.tweets WHERE state = 'scheduled' AND delay <= interval '15 seconds'" \
  "SELECT tweet_id, update_count, delay FROM tweetkeeper.tweets WHERE state = 'scheduled' ORDER BY update_count LIMIT 5"
tk_on_schedule_ok "lease TTL + buffer TTL + ${SLACK_S}s" "$stop" "$bound"
tk_psql -F ' ' -c "$(cat "$dir/gaps.sql") SELECT '# gaps between observations: delay 6 s: max', max(gap) FILTER (WHERE delay = '6 s'),
  '; delay 15 s: max', max(gap) FILTER (WHERE delay = '15 s'), '; bound: delay +', $bound FROM gaps"

# --- no spinning: requests bounded by what a fault-free run needs, and idle CPU
needed=$(tk_psql -c "SELECT ceil(sum(1 + extract(epoch FROM timestamptz '$stop' - timestamptz '$start')
    / extract(epoch FROM CASE WHEN created_at > now() - interval '5 minutes' THEN interval '6 seconds'
                              ELSE interval '15 seconds' END)) / $BATCH_SIZE)::int FROM tweetkeeper.tweets")
completed=$(tk_psql -c "SELECT count(*) FROM tweetkeeper.batches WHERE outcome = 'completed'")
tk_ok_if "requests to the mock stay bounded: $requests <= 3 x $needed that a fault-free run needs ($completed batches completed)" \
  '[ "$requests" -le $((3 * needed)) ]'
busy=$(awk -v w="$wall" -v a="${cpu[0]}" -v b="${cpu[1]}" 'BEGIN { print (a > 0.25 * w || b > 0.25 * w) ? 1 : 0 }')
tk_ok_if "no busy loop: each worker used under 25% of one core (${cpu[*]} CPU s in ${wall}s)" \
  '[ "$busy" = 0 ] && [[ "${cpu[*]}" != *gone* ]]'

# --- every fault that reached a worker was logged as a released batch, one line each
f_timeout=$(released 'Timeout was reached')
f_empty=$(released 'Empty reply from server|Server returned nothing')
f_server=$(released '\(server\): HTTP 5[0-9][0-9]')
f_unparsable=$(released '\(unparsable\)')
f_huge=$(released 'response body larger than')
tk_ok_if "every hang was logged as a timeout and a release ($hang hangs, $f_timeout timeouts logged)" \
  '[ "$f_timeout" -ge "$hang" ]'
tk_ok_if "every drop that reached a worker was logged as a release ($drop drops - $drop_reused resent = $f_empty logged)" \
  '[ "$f_empty" -eq $((drop - drop_reused)) ]'
tk_ok_if "every 5xx was logged as a release ($err5xx answers, $f_server logged)" '[ "$f_server" -eq "$err5xx" ]'
tk_ok_if "every truncated or text/html 200 was logged as unparsable and released ($truncated + $ctype, $f_unparsable logged)" \
  '[ "$f_unparsable" -eq $((truncated + ctype)) ]'
tk_ok_if "every huge answer was cut off at the body limit and released ($huge answers, $f_huge logged)" \
  '[ "$f_huge" -eq "$huge" ]'
# Released batches (the database's view) = faults that reached a worker + usable answers that came
# too late (a slow one past --http-timeout on a loaded machine), nothing else.
reached=$((hang + drop - drop_reused + err5xx + truncated + ctype + huge))
released_db=$(tk_psql -c "SELECT count(*) FROM tweetkeeper.batches WHERE outcome = 'released' AND reason IS DISTINCT FROM 'worker shutting down'")
tk_ok_if "released batches = faults that reached a worker + usable answers not kept ($released_db = $reached + $((usable - completed)))" \
  '[ "$released_db" -eq $((reached + usable - completed)) ] && [ "$usable" -ge "$completed" ]'
for kind in "(transport): Timeout" "(transport): Server returned nothing" "(transport): response body" "(server): HTTP 503" \
  "(server): HTTP 500" "unparsable 200 body"; do
  cat "$dir"/worker-*.log | grep -F "$kind" | head -1 | cut -c1-250 | sed 's/^/# log: /'
done
cat "$dir"/worker-*.log | grep 'stopped after' | sed 's/^/# log: /'

if [ "$TK_FAILED" -gt 0 ]; then
  echo "# worker logs:"
  tail -n 15 "$dir"/worker-*.log | sed 's/^/#   /'
fi
tk_summary "$suite"
