#!/usr/bin/env bash
# make bench-citus: what the Citus coordinator spends per refresh (issue 37 part 2). TWEETS due X
# tweets (an hour old) refreshed once each, end to end (the mock API on loopback, WORKERS workers x
# CONCURRENCY batches in flight, until idle), first on one node without Citus, then on a cluster of
# a coordinator and two worker nodes (tests/lib/citus_cluster.sh, Citus built by
# tests/citus/build.sh) with the queue distributed, the workers connected to the coordinator.
# Prints, per setup and per node, PostgreSQL's CPU per refresh (from /proc: each node's postmaster
# and its children, read when no client is connected), and the coordinator's CPU per refresh as a
# share of the one node's (issue 37's target: at most 25%). Checks nothing: a measurement. The
# machine's two cores are shared by every node, the workers and the mock, so rates are low here:
# CPU per refresh is the number to read.
set -uo pipefail
source "$(dirname "$0")/../lib/common.sh"
TWEETS=${TWEETS:-200000}
WORKERS=${WORKERS:-2}
CONCURRENCY=${CONCURRENCY:-4}

source "$TK_ROOT/tests/lib/citus_cluster.sh"
tk_citus_bench bench-citus one c w1 w2
echo "# $TK_CITUS_BUILD"
tk_mock_start "$dir/mock.log" --threads 32 --rate-limit 100000000 || exit 1

# run NODE...: TWEETS due tweets scheduled through the first node, the workers on it until idle;
# prints "refreshes seconds cpu_of_each_node..." (CPU seconds of each node named, in order).
run() {
  local first=$1 n p cpu0=() cpu1=() pids=() w
  on "$first" >/dev/null <<SQL || return 1
SELECT tweetkeeper.schedule_tweets($(tk_snowflake_sql '1 hour' "$TWEETS"));
SELECT tweetkeeper.create_partitions();
VACUUM ANALYZE tweetkeeper.tweets;
SQL
  for n in "$@"; do cpu0+=("$(tk_pg_cpu "$(postmaster_of "$n")")"); done
  for w in $(seq 1 "$WORKERS"); do
    TWEETKEEPER_BEARER_TOKEN=bench "$TK_WORKER" --dsn "host=localhost port=${port[$first]} user=postgres dbname=tweetkeeper" \
      --api-url "$TK_MOCK_URL" --concurrency "$CONCURRENCY" --name "bench-$w" --exit-when-idle 3 --log-level warn \
      >"$dir/worker-$first-$w.log" 2>&1 &
    pids+=($!)
    TK_PIDS+=($!)
  done
  for p in "${pids[@]}"; do
    tk_wait_exit "$p" 1200
    [ "$TK_RC" = 0 ] || { echo "a worker exited with $TK_RC" >&2; tail -n 20 "$dir"/worker-"$first"-*.log >&2; return 1; }
  done
  for n in "$@"; do cpu1+=("$(tk_pg_cpu "$(postmaster_of "$n")")"); done
  local i out
  out=$(on "$first" -F ' ' -c "SELECT sum(stored), round(extract(epoch FROM max(finished_at) - min(claimed_at))::numeric, 1)
                               FROM tweetkeeper.batches WHERE outcome = 'completed'")
  for i in "${!cpu0[@]}"; do out+=" $(awk "BEGIN { printf \"%.3f\", ${cpu1[$i]} - ${cpu0[$i]} }")"; done
  echo "$out"
}

echo "== one node, no Citus: $TWEETS due tweets, $WORKERS workers x $CONCURRENCY batches in flight"
"$TK_ROOT/scripts/pg-cluster.sh" start "$dir/one" "${port[one]}" -c listen_addresses=localhost >/dev/null || exit 1
on one -c "CREATE EXTENSION tweetkeeper" || exit 1
read -r n1 s1 cpu_one < <(run one) || exit 1
[ -n "${n1:-}" ] || exit 1
"$TK_ROOT/scripts/pg-cluster.sh" stop "$dir/one" fast
one_us=$(tk_per_refresh_us "$cpu_one" "$n1")
echo "refreshed $n1 in $s1 s; PostgreSQL's CPU $one_us us per refresh"

echo "== Citus: a coordinator and two worker nodes, the queue distributed, the workers on the coordinator"
for n in c w1 w2; do tk_citus_start "$n" -c citus.shard_count=4 >/dev/null || exit 1; done
on c -c "CREATE EXTENSION tweetkeeper" || exit 1
for n in w1 w2; do on c -c "SELECT citus_add_node('localhost', ${port[$n]})" >/dev/null || exit 1; done
on c -c "SELECT tweetkeeper.distribute()" >/dev/null 2>&1 || { on c -c "SELECT tweetkeeper.distribute()"; exit 1; }
read -r n2 s2 cpu_c cpu_w1 cpu_w2 < <(run c w1 w2) || exit 1
[ -n "${n2:-}" ] || exit 1
c_us=$(tk_per_refresh_us "$cpu_c" "$n2")
w_us=$(tk_per_refresh_us "$(awk "BEGIN { print $cpu_w1 + $cpu_w2 }")" "$n2")
echo "refreshed $n2 in $s2 s; PostgreSQL's CPU per refresh: coordinator $c_us us, worker nodes $w_us us" \
  "(w1 $(tk_per_refresh_us "$cpu_w1" "$n2"), w2 $(tk_per_refresh_us "$cpu_w2" "$n2")), the cluster $((c_us + w_us)) us"
echo "== result"
echo "citus: the coordinator's CPU per refresh $c_us us, $(awk "BEGIN { printf \"%.0f\", 100 * $c_us / $one_us }")% of one node's ($one_us us; target <= 25%)"
