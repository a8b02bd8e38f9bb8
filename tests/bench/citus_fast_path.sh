#!/usr/bin/env bash
# Issue 37 part 2: what one statement on the distributed queue costs the Citus coordinator and
# the worker nodes, by the way it names its shard. The claim's statements today filter by
# `bucket = ANY (a shard's buckets)`, which Citus's router planner prunes to the shard; Citus's
# fast path plans only a single-table statement with `bucket = constant` (a claim per bucket
# rather than per shard). The same read (the head of the claim index among a shard's or a
# bucket's X tweets) runs N times per way through pgbench on the coordinator (CLIENTS
# sessions), and once on one node without Citus; prints each way's CPU per statement per node
# (from /proc). A measurement: checks nothing.
set -uo pipefail
source "$(dirname "$0")/../lib/common.sh"
TWEETS=${TWEETS:-200000}
N=${N:-20000}
CLIENTS=${CLIENTS:-4}
MODE=${MODE:-prepared}  # pgbench's protocol: prepared (plans kept, as in PL/pgSQL) or simple

source "$TK_ROOT/tests/lib/citus_cluster.sh"
tk_citus_bench citus-fast-path one c w1 w2
schedule() {
  on "$1" >/dev/null <<SQL
SELECT tweetkeeper.schedule_tweets($(tk_snowflake_sql '2 hours' "$TWEETS"));
VACUUM ANALYZE tweetkeeper.tweets;
SQL
}
# run NAME FIRST_NODE SQL NODE...: N runs of SQL on FIRST_NODE; prints "NAME: node us ..." per node
run() {
  local name=$1 first=$2 sql=$3 n cpu0=() cpu1=() i out
  shift 3
  echo "$sql" >"$dir/$name.sql"
  for n in "$@"; do cpu0+=("$(tk_pg_cpu "$(postmaster_of "$n")")"); done
  PGHOST=localhost PGPORT=${port[$first]} PGUSER=postgres PGDATABASE=tweetkeeper \
    pgbench -n -M "$MODE" -c "$CLIENTS" -j 2 -t $((N / CLIENTS)) -f "$dir/$name.sql" >"$dir/$name.log" 2>&1 ||
    { cat "$dir/$name.log" >&2; return 1; }
  for n in "$@"; do cpu1+=("$(tk_pg_cpu "$(postmaster_of "$n")")"); done
  out="$name:"
  for i in "${!cpu0[@]}"; do
    out+=" ${*:i+1:1} $(awk -v a="${cpu0[$i]}" -v b="${cpu1[$i]}" -v n="$N" 'BEGIN { printf "%.0f", (b - a) * 1e6 / n }') us"
  done
  echo "$out per statement"
}
head_sql() { echo "SELECT t.tweet_id FROM tweetkeeper.tweets t WHERE $1 AND t.due_at IS NOT NULL AND t.tweet_id > 0 ORDER BY t.delay, t.due_at LIMIT 1;"; }

"$TK_ROOT/scripts/pg-cluster.sh" start "$dir/one" "${port[one]}" -c listen_addresses=localhost >/dev/null || exit 1
on one -c "CREATE EXTENSION tweetkeeper" >/dev/null || exit 1
schedule one || exit 1
run one-node one "$(head_sql "true")" one || exit 1
"$TK_ROOT/scripts/pg-cluster.sh" stop "$dir/one" fast

for n in c w1 w2; do tk_citus_start "$n" -c citus.shard_count=4 >/dev/null || exit 1; done
on c -c "CREATE EXTENSION tweetkeeper" >/dev/null || exit 1
for n in w1 w2; do on c -c "SELECT citus_add_node('localhost', ${port[$n]})" >/dev/null || exit 1; done
on c -c "SELECT tweetkeeper.distribute()" >/dev/null || exit 1
schedule c || exit 1
buckets=$(on c -c "SELECT buckets FROM tweetkeeper.shard_buckets WHERE 5::smallint = ANY (buckets)")
# (Each way's plan, as Citus says it: DEBUG2 names the router and the fast path.)
for way in "t.bucket = ANY ('$buckets'::smallint[])" "t.bucket = 5"; do
  on c -c "SET client_min_messages = debug2" -c "$(head_sql "$way")" 2>&1 | grep -i "router\|fast" | head -2 | sed "s/^/# $way: /"
done
run shard-buckets c "$(head_sql "t.bucket = ANY ('$buckets'::smallint[])")" c w1 w2 || exit 1
run one-bucket c "$(head_sql "t.bucket = 5")" c w1 w2 || exit 1
