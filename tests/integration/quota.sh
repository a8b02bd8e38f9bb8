#!/usr/bin/env bash
# Many credentials, every quota honoured: 3 credentials of 15 requests per 10-second window
# (the mock enforces the same), 4 workers, a backlog far larger than the quota. Checks that in
# every full window each credential made exactly 15 requests, that our own counting caused no
# 429, that the requests were spread evenly over the windows, that every credential was used; then caps one and revokes another mid-run and checks
# that the third carries the load and the stats say why. Deleted tweets get no further request.
# Prints "quota: N passed, M failed".
set -uo pipefail
source "$(dirname "$0")/../lib/common.sh"
WINDOW_S=10
PER_WINDOW=15
RUN1_S=${RUN1_S:-32}
RUN2_S=${RUN2_S:-15}
tk_workdir quota
tk_not_across_utc_midnight 120  # a cap is "until next month"; billed reads count per UTC day
sha12() { printf %s "$1" | sha256sum | cut -c1-12; }

tk_pg_start "$dir" -c tweetkeeper.buffer_ttl=1s -c tweetkeeper.lease_ttl=30s || exit 1
tk_mock_start "$dir/mock.log" --token tok-alpha-1 --token tok-beta-2 --token tok-gamma-3 \
  --rate-limit $PER_WINDOW --window-seconds $WINDOW_S --request-log "$dir/requests.log" || exit 1
umask 077
printf 'alpha=tok-alpha-1\n# a comment\nbeta=tok-beta-2\ngamma=tok-gamma-3\n' >"$dir/credentials"
tk_psql >/dev/null <<SQL || exit 1
CREATE EXTENSION tweetkeeper;
CREATE ROLE tk_worker_login LOGIN IN ROLE tweetkeeper_worker;
SELECT tweetkeeper.add_credential(n, $PER_WINDOW, interval '$WINDOW_S seconds') FROM unnest(ARRAY['alpha', 'beta', 'gamma']) n;
SELECT tweetkeeper.schedule_tweets($(tk_snowflake_sql '2 hours' 30000));
SQL

start_workers() {
  local w
  for w in 1 2 3 4; do
    "$TK_WORKER" --dsn "$TK_DSN user=tk_worker_login" --api-url "$TK_MOCK_URL" --credentials "$dir/credentials" \
      --concurrency 2 --name "quota-$w" >>"$dir/worker-$w.log" 2>&1 &
    eval "worker_$w=$!"
    TK_PIDS+=($!)
  done
}
stop_workers() {
  local w pid
  for w in 1 2 3 4; do eval "pid=\$worker_$w"; kill -TERM "$pid"; done
  for w in 1 2 3 4; do eval "pid=\$worker_$w"; tk_wait_exit "$pid" 30; [ "$TK_RC" = 0 ] || echo "# worker $w: $TK_RC"; done
}

start_workers
sleep "$RUN1_S" # sleep-ok: the run whose requests are counted per window and timed apart
curl -s "$TK_MOCK_URL/mock/stats" >"$dir/stats1.json"
echo "# per-token requests per window: $(jq -c '.windows' "$dir/stats1.json")"
echo "# statuses: $(jq -c '.status_counts' "$dir/stats1.json")"
for t in tok-alpha-1 tok-beta-2 tok-gamma-3; do
  h=$(sha12 "$t")
  # Full windows are all but the last (still running) one.
  full=$(jq -c --arg h "$h" '(.windows[$h] // [])[:-1]' "$dir/stats1.json")
  jq -e --arg h "$h" --argjson n $PER_WINDOW '((.windows[$h] // [])[:-1]) as $w | ($w | length) >= 2 and all($w[]; . == $n)' "$dir/stats1.json" >/dev/null
  tk_ok "credential of $t: exactly $PER_WINDOW requests in every full window $full" $?
done
[ "$(jq '.status_counts["429"] // 0' "$dir/stats1.json")" = 0 ]; tk_ok "no 429: our own counting never overspent" $?
# Even spending (the default): each credential's requests are spread over its window, one every
# WINDOW_S / PER_WINDOW s (0.67 s), catching up at most at twice that pace; burst would send a
# window's 15 back to back.
read -r closest median < <(awk '$2 == 200 { if (last[$4] != "") print $1 - last[$4]; last[$4] = $1 }' "$dir/requests.log" |
  sort -n | awk '{ a[NR] = $1 } END { print a[1] + 0, a[int((NR + 1) / 2)] + 0 }')
echo "# gaps between two requests of one credential: closest ${closest} ms, median ${median} ms"
[ "$closest" -ge 300 ] && [ "$median" -ge 600 ]
tk_ok "requests are paced: never two of a credential within 0.3 s (closest ${closest} ms, median ${median} ms)" $?
tk_sql_ok "every credential was used" "SELECT bool_and(requests > 0) AND count(*) = 3 FROM tweetkeeper.credentials"
tk_sql_ok "the backlog is far larger than the quota (tweets still due)" \
  "SELECT count(*) > 10000 FROM tweetkeeper.tweets WHERE due_at <= now()"
grep -h "no credential has quota until" "$dir"/worker-*.log | head -1 | sed 's/^/# /'
grep -q "no credential has quota until" "$dir"/worker-*.log; tk_ok "workers say until when they wait for quota" $?

# One credential capped and one revoked mid-run: the third carries the load, the stats say why.
curl -s -X POST "$TK_MOCK_URL/mock/cap?token=tok-beta-2" >/dev/null
curl -s -X POST "$TK_MOCK_URL/mock/revoke?token=tok-gamma-3" >/dev/null
a0=$(tk_psql -c "SELECT requests FROM tweetkeeper.credentials WHERE name = 'alpha'")
sleep "$RUN2_S" # sleep-ok: the run in which the third credential carries the load, counted
stop_workers
curl -s "$TK_MOCK_URL/mock/stats" >"$dir/stats2.json"
tk_psql -F ' | ' -c "SELECT '#', name, status, reason, remaining, requests FROM tweetkeeper.credential_stats"
tk_sql_ok "the capped credential is marked capped until next month, with the API's words" \
  "SELECT status = 'capped' AND reason LIKE '%Usage cap exceeded%' AND until = date_trunc('month', now(), 'UTC') + interval '1 month' FROM tweetkeeper.credential_stats WHERE name = 'beta'"
tk_sql_ok "the revoked credential is marked rejected, with the API's words" \
  "SELECT status = 'rejected' AND reason LIKE '%Forbidden%' FROM tweetkeeper.credential_stats WHERE name = 'gamma'"
tk_sql_ok "the remaining credential carried the load" \
  "SELECT requests > $a0 FROM tweetkeeper.credentials WHERE name = 'alpha'"
capped_after=$(jq --arg h "$(sha12 tok-beta-2)" '.tokens[$h]["429"] // 0' "$dir/stats2.json")
revoked_after=$(jq --arg h "$(sha12 tok-gamma-3)" '.tokens[$h]["403"] // 0' "$dir/stats2.json")
# Batches already in flight with it when it was refused get the same answer: 4 workers x 2 slots.
[ "$capped_after" -ge 1 ] && [ "$capped_after" -le 8 ]
tk_ok "the capped credential was not retried (usage-capped 429s: $capped_after; at most one per batch in flight, 8)" $?
[ "$revoked_after" -ge 1 ] && [ "$revoked_after" -le 8 ]
tk_ok "the revoked credential was not retried (403s: $revoked_after; at most 8)" $?
tk_sql_ok "no tweet lost, nothing left leased" \
  "SELECT count(*) = 30000 AND count(*) FILTER (WHERE lease_id IS NOT NULL) = 0 FROM tweetkeeper.tweets"
tk_sql_ok "a deleted tweet was requested once and never again" \
  "SELECT count(*) > 0 AND bool_and(n = 1) FROM (SELECT t.tweet_id, (SELECT count(*) FROM tweetkeeper.batches b WHERE t.tweet_id = ANY (b.tweet_ids) AND b.outcome = 'completed') n FROM tweetkeeper.tweets t WHERE t.state = 'deleted') x"
tk_sql_ok "a protected tweet was requested once, then left until its recheck (unavailable_recheck, 7 days)" \
  "SELECT count(*) > 0 AND bool_and(n = 1 AND due_at > now() + interval '6 days') FROM (SELECT t.tweet_id, t.due_at, (SELECT count(*) FROM tweetkeeper.batches b WHERE t.tweet_id = ANY (b.tweet_ids) AND b.outcome = 'completed') n FROM tweetkeeper.tweets t WHERE t.state = 'unavailable') x"
! grep -q -e tok-alpha-1 -e tok-beta-2 -e tok-gamma-3 "$dir"/worker-*.log "$dir/pg/server.log"; tk_ok "no token in any log" $?
tk_summary quota
