#!/usr/bin/env bash
# A credential shared by partitions (issue 51): one token, one window and one monthly cap at the
# API, two nodes spending it without asking each other. The credential is registered through the
# proxy; each node keeps its share (its slots' 64ths: 8 of 16 requests a window, 240 of 480
# billed reads a month). One worker serves both nodes, with a backlog far larger than the quota,
# until both shares of the cap are spent. Checks, from the mock's own counts: no 429 at all (not
# rate-limited, not usage-capped), every full window used to the request (16), the reads billed
# exactly the cap, and each node stopped at its share.
set -uo pipefail
source "$(dirname "$0")/../lib/common.sh"
WINDOW_S=3
PER_WINDOW=16
CAP=480
tk_workdir partitions-quota
tk_not_across_utc_midnight 120  # billed reads count per UTC day, the cap per month
sha12() { printf %s "$1" | sha256sum | cut -c1-12; }

tk_partitions_start 2 -c tweetkeeper.buffer_ttl=1s -c tweetkeeper.lease_ttl=30s || exit 1
tk_mock_start "$dir/mock.log" --token tok-shared-1 --rate-limit $PER_WINDOW --window-seconds $WINDOW_S \
  --monthly-cap $CAP --deleted-every 0 --protected-every 0 --request-log "$dir/requests.log" || exit 1
umask 077
printf 'shared=tok-shared-1\n' >"$dir/credentials"
umask 022
tk_psql >/dev/null <<SQL || exit 1
SELECT tweetkeeper.add_credential('shared', $PER_WINDOW, interval '$WINDOW_S seconds', $CAP);
SELECT tweetkeeper.schedule_tweets($(tk_snowflake_sql '2 hours' 4000));
SQL
tk_ok_if "each node keeps half the window and half the cap" \
  '[ "$(tk_part 0 -c "SELECT requests_per_window, monthly_cap FROM tweetkeeper.credentials")" = "8|240" ] &&
   [ "$(tk_part 1 -c "SELECT requests_per_window, monthly_cap FROM tweetkeeper.credentials")" = "8|240" ]'
tk_sql_ok "the proxy shows the credential whole" \
  "SELECT requests_per_window = $PER_WINDOW AND monthly_cap = $CAP FROM tweetkeeper.credentials WHERE name = 'shared'"

"$TK_WORKER" --dsn "${TK_PART_DSNS[0]} user=tk_worker_login" --dsn "${TK_PART_DSNS[1]} user=tk_worker_login" \
  --api-url "$TK_MOCK_URL" --credentials "$dir/credentials" --batch-size 5 --name quota-both >"$dir/worker.log" 2>&1 &
TK_PIDS+=($!)
worker=$!
capped() { [ "$(tk_part "$1" -c "SELECT status FROM tweetkeeper.credentials")" = capped ] ||
           [ "$(tk_part "$1" -c "SELECT month_used >= monthly_cap FROM tweetkeeper.credentials")" = t ]; }
both_spent() { capped 0 && capped 1; }
tk_wait_until 120 both_spent
tk_ok "both nodes spent their share of the cap" $? "$(tk_psql -c "SELECT * FROM tweetkeeper.credential_stats")"
kill -TERM "$worker"
tk_wait_exit "$worker" 30
curl -s "$TK_MOCK_URL/mock/stats" >"$dir/stats.json"
h=$(sha12 tok-shared-1)
echo "# requests per window: $(jq -c --arg h "$h" '.windows[$h]' "$dir/stats.json"); statuses: $(jq -c '.status_counts' "$dir/stats.json")"
[ "$(jq '.status_counts["429"] // 0' "$dir/stats.json")" = 0 ]
tk_ok "no 429: the nodes together never exceeded the window or the cap" $? \
  "$(grep -n ' 429 ' "$dir/requests.log" | head -3; echo "of $(wc -l <"$dir/requests.log") requests; the worker:"; grep -iE 'cap|429|window' "$dir/worker.log" | tail -8)"
# Full windows: all but the first (the nodes learn where the API's windows start from its
# answers) and the last two (the caps were reached in them, at different moments).
jq -e --arg h "$h" --argjson n $PER_WINDOW '((.windows[$h] // [])[1:-2]) as $w | ($w | length) >= 2 and all($w[]; . == $n)' \
  "$dir/stats.json" >/dev/null
tk_ok "every full window was used to the request ($PER_WINDOW: the two shares together)" $?
billed=$(jq --arg h "$h" '.billed[$h] // .billed_reads[$h] // empty' "$dir/stats.json")
used=$(( $(tk_part 0 -c "SELECT month_used FROM tweetkeeper.credentials") + $(tk_part 1 -c "SELECT month_used FROM tweetkeeper.credentials") ))
tk_ok_if "the reads billed are the cap exactly: $used by our count, ${billed:-?} by the API's" '[ "$used" = $CAP ] && [ "$billed" = $CAP ]'
tk_ok_if "no token in any log" '! grep -q tok-shared-1 "$dir/worker.log" "$dir"/p*/server.log "$dir/pg/server.log"'
tk_summary partitions-quota
