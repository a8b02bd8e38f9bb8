#!/usr/bin/env bash
# Operating it like a service, with the real tools: two workers serve /metrics
# (--metrics-address), the PostgreSQL exporter runs deploy/prometheus/postgres-exporter-queries.yaml
# as a login of tweetkeeper_reader, and a real Prometheus (Debian prometheus) scrapes them every
# second with deploy/prometheus/alerts.yml loaded. Asserted through Prometheus' HTTP API: the
# series hold what the database holds; promtool check metrics passes on the workers' output;
# every expression of deploy/grafana/tweetkeeper.json returns data. Prints
# "prometheus: N passed, M failed".
set -uo pipefail
source "$(dirname "$0")/../lib/common.sh"
deploy=$TK_ROOT/deploy
tk_workdir prometheus
tk_pg_start "$dir" -c tweetkeeper.buffer_ttl=500ms || exit 1
# A third of the requests get a 5xx, so that the error series and the dashboard's error panel have data.
tk_mock_start "$dir/mock.log" --deleted-every 10 --protected-every 0 --fault-rate 0.3 --faults 5xx --fault-seed 7 || exit 1
tk_psql >/dev/null <<SQL || exit 1
CREATE EXTENSION tweetkeeper;
CREATE ROLE tk_worker_login LOGIN IN ROLE tweetkeeper_worker;
CREATE ROLE tk_exporter LOGIN IN ROLE tweetkeeper_reader;
$(tk_fast_policy_sql)
SELECT tweetkeeper.add_credential('alpha', 100000, interval '15 minutes', 1000000);
$(tk_fast_queue_sql 200 0 300)
SQL
umask 077
printf 'alpha=tok-alpha\n' >"$dir/credentials"
worker_dsn="host=$PGHOST port=$PGPORT user=tk_worker_login dbname=tweetkeeper"
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# The workers, each on a port of its own choosing.
TK_DSN=$worker_dsn tk_start_workers 2 prom --api-url "$TK_MOCK_URL" --credentials "$dir/credentials" \
  --metrics-address 127.0.0.1:0 --concurrency 2 --log-level info
targets=()
# metrics_port LOG: sets port to the one the worker says it serves its metrics on.
metrics_port() { port=$(sed -n 's|.*metrics at http://127.0.0.1:\([0-9]*\)/metrics.*|\1|p' "$1" | head -1); [ -n "$port" ]; }
for i in 1 2; do
  tk_wait_until 5 metrics_port "$dir/prom-$i.log" || { cat "$dir/prom-$i.log"; exit 1; }
  targets+=("127.0.0.1:$port")
done
# And a follower of two of the mock's posting Mastodon accounts (tweetkeeper-worker --follow).
tk_psql -c "SELECT tweetkeeper.follow_accounts(ARRAY(SELECT url FROM json_to_recordset(('$(
  curl -sf "$TK_MOCK_URL/mock/follow/accounts?network=mastodon&host=a.social" | jq -c '.accounts[:2]')')::json) AS a(url text)))" >/dev/null
"$TK_WORKER" --follow --provider mastodon --dsn "$worker_dsn" --name prom-follower --instance "a.social=$TK_MOCK_URL/mastodon/a.social" \
  --follow-share 1 --follow-min-poll 1 --metrics-address 127.0.0.1:0 >"$dir/prom-follower.log" 2>&1 &
TK_PIDS+=($!)
follower_pid=$!
tk_wait_until 5 metrics_port "$dir/prom-follower.log" || { cat "$dir/prom-follower.log"; exit 1; }
targets+=("127.0.0.1:$port")
out=$("$TK_WORKER" --dsn "$worker_dsn" --credentials "$dir/credentials" --metrics-address "${targets[0]}" 2>&1)
rc=$?
[ $rc -eq 1 ] && [[ "$out" == *"cannot serve metrics on '${targets[0]}'"* ]]
tk_ok "a worker whose metrics port is taken says so and exits 1 (rc $rc)" $? "$out"

# The exporter, as the reader role.
exporter_port=$(free_port)
DATA_SOURCE_NAME="host=$PGHOST port=$PGPORT user=tk_exporter dbname=tweetkeeper sslmode=disable" \
  prometheus-postgres-exporter --web.listen-address="127.0.0.1:$exporter_port" \
  --extend.query-path="$deploy/prometheus/postgres-exporter-queries.yaml" --disable-default-metrics \
  --disable-settings-metrics --no-collector.database --no-collector.bgwriter --log.level=warn \
  >"$dir/exporter.log" 2>&1 &
TK_PIDS+=($!)

# Prometheus, scraping all three every second, with our alert rules.
prom_port=$(free_port)
cat >"$dir/prometheus.yml" <<YAML
global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files:
  - $deploy/prometheus/alerts.yml
scrape_configs:
  - job_name: tweetkeeper-worker
    static_configs:
      - targets: ['${targets[0]}', '${targets[1]}', '${targets[2]}']
  - job_name: tweetkeeper-postgres
    static_configs:
      - targets: ['127.0.0.1:$exporter_port']
YAML
prometheus --config.file="$dir/prometheus.yml" --storage.tsdb.path="$dir/tsdb" \
  --web.listen-address="127.0.0.1:$prom_port" --log.level=warn >"$dir/prometheus.log" 2>&1 &
TK_PIDS+=($!)
api="http://127.0.0.1:$prom_port/api/v1"
tk_wait_until 10 curl -sf -o /dev/null "http://127.0.0.1:$prom_port/-/ready"
tk_ok "Prometheus is ready within 10 s" $? "$(tail -5 "$dir/prometheus.log")"
# query PROMQL: the value of a one-element result ('' when empty).
query() { curl -s --data-urlencode "query=$1" "$api/query" | jq -r '.data.result[0].value[1] // empty'; }
results() { curl -s --data-urlencode "query=$1" "$api/query" | jq -r '.data.result | length'; }

# Until the workers have refreshed (over 500 stored), failed now and then (released batches) and
# met deleted tweets, and Prometheus scrapes all three targets and evaluates the rules.
worked="SELECT (SELECT coalesce(sum(stored), 0) > 500 FROM tweetkeeper.batches WHERE outcome = 'completed')
           AND EXISTS (SELECT FROM tweetkeeper.batches WHERE outcome = 'released')
           AND EXISTS (SELECT FROM tweetkeeper.tweets WHERE state = 'deleted')
           AND (SELECT sum(posts_found) > 0 FROM tweetkeeper.follows)"
all_working() {
  tk_sql_true "$worked" && [ "$(query 'sum(up)')" = 4 ] &&
    [ "$(curl -s "$api/rules" | jq '[.data.groups[].rules[] | select(.health == "ok")] | length')" = 7 ]
}
TK_POLL_S=0.5 tk_wait_until 30 all_working
up=$(query 'sum(up)')
[ "$up" = 4 ]
tk_ok "Prometheus scrapes both workers, the follower and the exporter (up: ${up:-none} of 4)" $? "$(curl -s "$api/targets" | jq -c '.data.activeTargets[] | {scrapeUrl, health, lastError}')"
for t in "${targets[@]}"; do
  curl -s "http://$t/metrics" >"$dir/metrics-$t.txt"
  out=$(promtool check metrics <"$dir/metrics-$t.txt" 2>&1)
  tk_ok "promtool check metrics passes on the worker at $t" $? "$out"
done
! grep -q 'tok-alpha' "$dir"/metrics-*.txt
tk_ok "no token in the workers' metrics" $?
rules=$(curl -s "$api/rules" | jq '[.data.groups[].rules[] | select(.health == "ok")] | length')
[ "$rules" = 7 ]
tk_ok "Prometheus loaded the 7 alert rules of deploy/prometheus/alerts.yml and evaluates them (${rules:-0} ok)" $?

# Quiet the queue, then compare. A batch in flight may still be released, which makes its tweets
# due again at once: push due tweets a day away until none is left to push and no batch is in
# flight. Then nothing more can be claimed; two scrapes pass before the comparison.
quiet="WITH pushed AS (UPDATE tweetkeeper.tweets SET due_at = now() + interval '1 day'
                     WHERE due_at < now() + interval '1 hour' RETURNING 1)
SELECT NOT EXISTS (SELECT FROM pushed) AND NOT EXISTS (SELECT FROM tweetkeeper.batches WHERE outcome IS NULL)"
# (Twice in a row, with no worker statement running at that moment, so that none was committing
# a claim as it was checked.)
quiet="$quiet AND NOT EXISTS (SELECT FROM pg_stat_activity WHERE usename = 'tk_worker_login' AND state = 'active')"
tk_wait_for 30 "$quiet" && tk_wait_for 30 "$quiet"
tk_ok "the queue went quiet: nothing due, no batch in flight" $? \
  "$(tk_psql -c "SELECT lease_id, worker, claimed_at FROM tweetkeeper.batches WHERE outcome IS NULL")"
# Until every target was scraped twice since (scrapes start every second).
quiet_at=$(date +%s.%N)
scraped_since() { awk -v t="$(query 'min(timestamp(up))')" -v q="$1" 'BEGIN { exit !(t != "" && t > q + 1) }'; }
TK_POLL_S=0.2 tk_wait_until 10 scraped_since "$quiet_at"
stored_db=$(tk_psql -c "SELECT sum(stored) FROM tweetkeeper.batches WHERE outcome = 'completed'")
stored_prom=$(query 'sum(tweetkeeper_worker_tweets_stored_total)')
[ -n "$stored_prom" ] && [ "$stored_prom" = "$stored_db" ] && [ "$stored_db" -gt 500 ]
tk_ok "tweets stored by the workers, through Prometheus, equal the database's ($stored_prom, $stored_db)" $?
deleted_db=$(tk_psql -c "SELECT count(*) FROM tweetkeeper.tweets WHERE state = 'deleted'")
deleted_problems=$(query 'sum(tweetkeeper_worker_tweet_problems_total{type="resource-not-found"})')
deleted_exporter=$(query 'sum(tweetkeeper_queue_tweets{state="deleted"})')
[ "$deleted_db" -gt 0 ] && [ "$deleted_problems" = "$deleted_db" ] && [ "$deleted_exporter" = "$deleted_db" ]
tk_ok "deleted tweets: the workers' problems and the exporter's count equal the database's ($deleted_problems, $deleted_exporter, $deleted_db)" $?
requests_db=$(tk_psql -c "SELECT count(*) FROM tweetkeeper.batches WHERE outcome IN ('completed', 'released')")
requests_prom=$(query 'sum(tweetkeeper_worker_api_requests_total{provider="x-v2"})')  # (the follower's are mastodon's)
errors_prom=$(query 'sum(tweetkeeper_worker_api_requests_total{provider="x-v2",outcome="5xx"})')
released_db=$(tk_psql -c "SELECT count(*) FROM tweetkeeper.batches WHERE outcome = 'released'")
[ "$requests_prom" = "$requests_db" ] && [ "$errors_prom" = "$released_db" ] && [ "$released_db" -gt 0 ]
tk_ok "API requests ($requests_prom) and 5xx answers ($errors_prom) equal the batches answered and released ($requests_db, $released_db)" $? \
  "$(curl -s --data-urlencode 'query=sum by (outcome) (tweetkeeper_worker_api_requests_total)' "$api/query" | jq -c '.data.result[] | [.metric.outcome, .value[1]]')
$(tk_psql -c "SELECT lease_id, worker, claimed_at, finished_at, reason FROM tweetkeeper.batches WHERE outcome = 'released' ORDER BY lease_id")
$(grep -h 'released\|failed' "$dir"/prom-*.log | tail -n 20)"
claimed=$(query 'sum(tweetkeeper_worker_batches_total{event="claimed"})')
finished=$(query 'sum(tweetkeeper_worker_batches_total{event=~"completed|released"})')
[ -n "$claimed" ] && [ "$claimed" = "$finished" ] && [ "$claimed" = "$requests_db" ]
tk_ok "batches claimed ($claimed) = completed + released ($finished)" $?
remaining_db=$(tk_psql -c "SELECT remaining FROM tweetkeeper.credential_stats WHERE name = 'alpha'")
remaining_prom=$(query 'tweetkeeper_credential_remaining{credential="alpha"}')
# Both read (a number each: two empty answers are no agreement), equal, and the window's use
# shows: alpha (100,000 a window) answered this run's requests in the window it is in.
[[ "$remaining_db" =~ ^[0-9]+$ ]] && [ "$remaining_prom" = "$remaining_db" ] && [ "$remaining_db" -lt 100000 ]
tk_ok "the credential's remaining quota, through the exporter, is the database's and shows this run's use (${remaining_prom:-none}, ${remaining_db:-none} of 100000)" $? \
  "$(tk_psql -c "SELECT name, remaining, requests_per_window, window_reset_at, requests FROM tweetkeeper.credential_stats")"
# The exporter caches queue_stats for 10 s (cache_seconds in postgres-exporter-queries.yaml): the
# series may still show what was due before the queue went quiet, so wait out one cache period.
# (X's queue only: the follower goes on scheduling the Mastodon posts it finds, and no worker here
# refreshes Mastodon, so those may be due at any time.)
nothing_due_nor_short() {
  due=$(query 'sum(tweetkeeper_queue_due_now{network="x"})')
  short=$(query 'tweetkeeper_capacity_short{provider="x-v2"}')
  [ "$due" = 0 ] && [ "$short" = 0 ]
}
TK_POLL_S=1 tk_wait_until 30 nothing_due_nor_short
[ "$due" = 0 ] && [ "$short" = 0 ]
tk_ok "queue and capacity series are there (due now $due, forecast short $short)" $?
states=$(results 'tweetkeeper_queue_tweets{network="x"}')
claims=$(results 'tweetkeeper_batches_claimed_last_5m{network="x"}')
[ "$states" = 5 ] && [ "$claims" = 1 ]
tk_ok "queue and batch series carry the network (x: $states states, $claims batch series)" $?
# The newest success the workers report is the database's last completed batch (within seconds:
# the gauge is set as the worker's commit returns). Not the wall clock: the queue has been quiet
# for as long as the checks above took.
last=$(query 'max(tweetkeeper_worker_last_success_timestamp_seconds)')
last_db=$(tk_psql -c "SELECT extract(epoch FROM max(finished_at)) FROM tweetkeeper.batches WHERE outcome = 'completed'")
awk -v l="${last:-0}" -v d="${last_db:-0}" 'BEGIN { exit !(d > 0 && l - d >= -0.5 && l - d < 5) }'
tk_ok "the time of the last success is the last completed batch's (${last:-none}, ${last_db:-none})" $?

# Every expression of the dashboard returns data.
empty=()
n=0
while IFS= read -r expr; do
  n=$((n + 1))
  [ "$(results "$expr")" -gt 0 ] 2>/dev/null || empty+=("$expr")
done < <(jq -r '.panels[].targets[].expr' "$deploy/grafana/tweetkeeper.json")
[ "$n" -ge 10 ] && [ ${#empty[@]} -eq 0 ]
tk_ok "each of the dashboard's $n expressions returns data from the real Prometheus" $? "$(printf 'empty: %s\n' "${empty[@]}")"
tk_stop_workers
tk_summary prometheus
