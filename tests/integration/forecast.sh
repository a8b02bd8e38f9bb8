#!/usr/bin/env bash
# The forecast against what really happens: a fast policy, 500 tweets on a 3 s delay and 200 on
# a 15 s delay, one credential with room to spare; forecast() for the next RUN_S seconds is read
# just before two workers start, then compared with what the mock counted in those seconds:
# tweets read, requests answered, billed reads. Each within 10%. Prints "forecast: N passed, M failed".
set -uo pipefail
source "$(dirname "$0")/../lib/common.sh"
RUN_S=${RUN_S:-60}
tk_workdir forecast

tk_pg_start "$dir" -c tweetkeeper.buffer_ttl=1s -c tweetkeeper.lease_ttl=30s || exit 1
tk_mock_start "$dir/mock.log" --token tok-fc --rate-limit 100000 --window-seconds 900 \
  --deleted-every 0 --protected-every 0 || exit 1
umask 077
printf 'fc=tok-fc\n' >"$dir/credentials"
tk_psql >/dev/null <<SQL || exit 1
CREATE EXTENSION tweetkeeper;
$(tk_fast_policy_sql '10 minutes' '3 seconds')
SELECT tweetkeeper.add_credential('fc', 100000, interval '15 minutes');
SELECT tweetkeeper.schedule_tweets($(tk_snowflake_sql '1 minute' 500));
SELECT tweetkeeper.schedule_tweets($(tk_snowflake_sql '1 hour' 200 5000));
SQL

read -r f_refreshes f_requests f_billed < <(tk_psql -F ' ' -c "SELECT * FROM tweetkeeper.forecast(interval '$RUN_S seconds')")
tk_start_workers 2 fc --api-url "$TK_MOCK_URL" --credentials "$dir/credentials" --concurrency 2
sleep "$RUN_S" # sleep-ok: the span forecast() was asked about: what the workers do in it is compared with the forecast
tk_stop_workers
curl -s "$TK_MOCK_URL/mock/stats" >"$dir/stats.json"
read -r m_reads m_requests m_billed < <(jq -r '"\(.ids_requested) \(.status_counts["200"] // 0) \(.billed_reads)"' "$dir/stats.json")
echo "# forecast for ${RUN_S}s: $f_refreshes refreshes, $f_requests requests, $f_billed billed reads"
echo "# the mock counted:   $m_reads tweets read, $m_requests requests, $m_billed billed reads"
within() { awk -v f="$1" -v m="$2" 'BEGIN { d = (m - f) / f; if (d < 0) d = -d; exit !(f > 0 && d <= 0.10) }'; }
within "$f_refreshes" "$m_reads"; tk_ok "tweets read within 10% of the forecast ($m_reads vs $f_refreshes)" $?
within "$f_requests" "$m_requests"; tk_ok "requests within 10% of the forecast ($m_requests vs $f_requests)" $?
within "$f_billed" "$m_billed"; tk_ok "billed reads within 10% of the forecast ($m_billed vs $f_billed)" $?
tk_summary forecast
