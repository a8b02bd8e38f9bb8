#!/usr/bin/env bash
# Billing-true counts, the issue's case: 500 young tweets on a 3 s delay, one credential whose
# monthly cap is 1,000 post reads, against a mock that bills as X does (a post once per UTC day
# and token) and enforces the same cap. Counting every read, 0.1.0 stopped after two refreshes
# of each tweet; counting billed reads, the workers keep refreshing all day for 500 reads, and
# the database's counts equal the mock's. Then a second credential with a cap below what is due:
# it ends capped, saying it is the monthly cap (not "window used up"), and never overspends.
# Prints "billing: N passed, M failed".
set -uo pipefail
source "$(dirname "$0")/../lib/common.sh"
RUN_S=${RUN_S:-20}
TWEETS=500
tk_workdir billing
tk_not_across_utc_midnight 120  # it counts billed reads per UTC day and month
sha12() { printf %s "$1" | sha256sum | cut -c1-12; }

tk_pg_start "$dir" -c tweetkeeper.buffer_ttl=1s -c tweetkeeper.lease_ttl=30s || exit 1
# Every tweet exists (no deleted or protected ones), so every read is a billed read.
tk_mock_start "$dir/mock.log" --token tok-alpha --token tok-beta --monthly-cap 1000 \
  --rate-limit 3000 --window-seconds 900 --deleted-every 0 --protected-every 0 || exit 1
umask 077
printf 'alpha=tok-alpha\nbeta=tok-beta\n' >"$dir/credentials"
tk_psql >/dev/null <<SQL || exit 1
CREATE EXTENSION tweetkeeper;
-- Every read leaves a history row, unchanged or not: reads are counted against them.
ALTER DATABASE tweetkeeper SET tweetkeeper.history_keep_unchanged = on;
CREATE ROLE tk_worker_login LOGIN IN ROLE tweetkeeper_worker;
$(tk_fast_policy_sql '10 minutes' '3 seconds')
SELECT tweetkeeper.add_credential('alpha', 3000, interval '15 minutes', 1000);
SELECT tweetkeeper.schedule_tweets($(tk_snowflake_sql '1 minute' $TWEETS));
SQL

run_worker() { # run_worker NAME SECONDS COMMAND...: a worker until COMMAND succeeds, at most SECONDS
  "$TK_WORKER" --dsn "$TK_DSN user=tk_worker_login" --api-url "$TK_MOCK_URL" --credentials "$dir/credentials" \
    --concurrency 2 --name "$1" >"$dir/$1.log" 2>&1 &
  local pid=$!
  TK_PIDS+=($pid)
  tk_wait_until "$2" "${@:3}"
  kill -TERM "$pid"
  tk_wait_exit "$pid" 30
}

# Until every tweet has been refreshed three times: 0.1.0 stopped at two (counting every read
# against the cap); at most 3 x RUN_S.
run_worker billing-1 $((3 * RUN_S)) tk_sql_true "SELECT min(update_count) > 2 FROM tweetkeeper.tweets"
curl -s "$TK_MOCK_URL/mock/stats" >"$dir/stats1.json"
mock_billed=$(jq --arg h "$(sha12 tok-alpha)" '.billed[$h] // 0' "$dir/stats1.json")
tk_psql -F ' ' -c "SELECT '# after billing-1: refreshes per tweet min', min(update_count), 'max', max(update_count),
                          '; month_used', (SELECT month_used FROM tweetkeeper.credentials WHERE name = 'alpha'),
                          '; mock billed $mock_billed; statuses $(jq -c '.status_counts' "$dir/stats1.json")'
                     FROM tweetkeeper.tweets"
tk_sql_ok "every tweet was refreshed more than twice (a cap of 1,000 reads no longer stops at 2 each)" \
  "SELECT min(update_count) > 2 FROM tweetkeeper.tweets"
tk_sql_ok "the credential is still active and has used 500 billed reads of its 1,000" \
  "SELECT status = 'active' AND month_used = $TWEETS FROM tweetkeeper.credential_stats WHERE name = 'alpha'"
tk_sql_ok "the database's billed reads equal the mock's ($mock_billed)" \
  "SELECT billed_reads_today = $mock_billed AND $mock_billed = $TWEETS FROM tweetkeeper.usage_stats WHERE credential = 'alpha'"
tk_sql_ok "tweets read count every read: they equal the observations stored" \
  "SELECT (SELECT sum(tweets_read_today) FROM tweetkeeper.usage_stats) = (SELECT count(*) FROM tweetkeeper.metric_history)"
tk_sql_ok "usage_stats prices it: 500 billed reads at 0.005 = 2.50" \
  "SELECT cost_today = 2.50 AND cost_this_month = 2.50 FROM tweetkeeper.usage_stats WHERE credential = 'alpha'"
[ "$(jq '.status_counts["429"] // 0' "$dir/stats1.json")" = 0 ]; tk_ok "no 429 from the mock's cap" $?

# A cap below what is due: beta may bill 300 reads; 500 tweets have not been read by it today.
tk_psql >/dev/null <<SQL || exit 1
DELETE FROM tweetkeeper.credentials WHERE name = 'alpha';
SELECT tweetkeeper.add_credential('beta', 3000, interval '15 minutes', 300);
UPDATE tweetkeeper.tweets SET due_at = now() WHERE state = 'scheduled';
SQL
# Until beta is capped and its worker has said why it waits (at most 30 s).
beta_capped() {
  tk_sql_true "SELECT status = 'capped' FROM tweetkeeper.credentials WHERE name = 'beta'" &&
    tk_log_has "$dir/billing-2.log" "beta capped: monthly cap reached"
}
run_worker billing-2 30 beta_capped
curl -s "$TK_MOCK_URL/mock/stats" >"$dir/stats2.json"
beta_billed=$(jq --arg h "$(sha12 tok-beta)" '.billed[$h] // 0' "$dir/stats2.json")
tk_psql -F ' ' -c "SELECT '# beta:', status, reason, month_used FROM tweetkeeper.credential_stats"
tk_sql_ok "beta is capped at its 300 billed reads, saying so" \
  "SELECT status = 'capped' AND reason = 'monthly cap reached: 300 of 300 billed reads used' AND month_used = 300
     FROM tweetkeeper.credential_stats WHERE name = 'beta'"
[ "$beta_billed" = 300 ]; tk_ok "and the mock billed it exactly 300 reads (was $beta_billed)" $?
grep -q "beta capped: monthly cap reached" "$dir/billing-2.log"
tk_ok "the worker logs the monthly cap as the reason it waits" $? "$(grep 'no credential has quota' "$dir/billing-2.log")"
! grep -q "window used up" "$dir/billing-2.log"; tk_ok "and never 'window used up'" $?

tk_summary billing
