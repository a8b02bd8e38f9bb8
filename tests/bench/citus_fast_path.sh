#!/usr/bin/env bash
# Issue 37 part 2: what one statement on the distributed queue costs the Citus coordinator and
# the worker nodes, by the way it names its shard. The claim's statements today filter by
# `bucket = ANY (a shard's buckets)`, which Citus's router planner prunes to the shard; Citus's
# fast path plans only a single-table statement with `bucket = constant` (a claim per bucket
# rather than per shard). The same read (the head of the claim index among a shard's or a
# bucket's X tweets) runs N times per way through pgbench on the coordinator (CLIENTS
# sessions), and once on one node without Citus; prints each way's CPU per statement per node
# (from /proc). Then the same read inside PL/pgSQL functions delegated to the shard's node
# (create_distributed_function): by the shard's buckets, by one bucket (fast path: planned once,
# generic, or with no SET clause), a function that reads nothing (the cost of a delegated call
# alone), and the function called on the shard's node directly; and those functions on one node
# without Citus. SKIP_STATEMENTS=1 runs only the functions. A measurement: checks nothing.
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
[ -n "${SKIP_STATEMENTS:-}" ] || run one-node one "$(head_sql "true")" one || exit 1
"$TK_ROOT/scripts/pg-cluster.sh" stop "$dir/one" fast

for n in c w1 w2; do tk_citus_start "$n" -c citus.shard_count=4 >/dev/null || exit 1; done
on c -c "CREATE EXTENSION tweetkeeper" >/dev/null || exit 1
for n in w1 w2; do on c -c "SELECT citus_add_node('localhost', ${port[$n]})" >/dev/null || exit 1; done
on c -c "SELECT tweetkeeper.distribute()" >/dev/null || exit 1
schedule c || exit 1
buckets=$(on c -c "SELECT buckets FROM tweetkeeper.shard_buckets WHERE 5::smallint = ANY (buckets)")
# (Each way's plan, as Citus says it: DEBUG2 names the router and the fast path.)
for way in "t.bucket = ANY ('$buckets'::smallint[])" "t.bucket = 5"; do
  on c -c "SET client_min_messages = debug2" -c "$(head_sql "$way")" 2>&1 | grep -i "router\|fast" | head -2 | sed "s/^/# ${way:0:30}...: /"
done
[ -n "${SKIP_STATEMENTS:-}" ] || run shard-buckets c "$(head_sql "t.bucket = ANY ('$buckets'::smallint[])")" c w1 w2 || exit 1
[ -n "${SKIP_STATEMENTS:-}" ] || run one-bucket c "$(head_sql "t.bucket = 5")" c w1 w2 || exit 1

# The same read inside a PL/pgSQL function delegated to the shard's node
# (create_distributed_function, routed by its bucket argument), called through the coordinator:
# by the shard's buckets (router) or by the one bucket, a parameter (Citus's fast path, whose
# local plan a delegated function may keep across calls). And the function on one node without
# Citus, for the same work's cost there. A claim per bucket needs the claim index led by the
# bucket, made here for this part (and on one node).
bucket_index="CREATE INDEX tweets_bucket_head_idx ON tweetkeeper.tweets (bucket, delay, due_at)
  WHERE due_at IS NOT NULL AND tweet_id > 0"
# head_function NAME ARGS WHERE [SET_CLAUSE]: a PL/pgSQL function NAME(bucket smallint ARGS)
# returning the head read with WHERE (into a variable: a subquery in RETURN (...) would make it
# no fast-path query).
head_function() {
  cat <<SQL
CREATE FUNCTION public.$1(bucket smallint$2) RETURNS bigint
  LANGUAGE plpgsql ${4-SET search_path = pg_catalog, pg_temp} AS \$\$
DECLARE
  head bigint;
BEGIN
  $(head_sql "$3" | sed 's/ FROM / INTO head FROM /')
  RETURN head;
END \$\$;
SQL
}
functions_sql() {
  head_function head_of_shard ", buckets smallint[]" "t.bucket = ANY (head_of_shard.buckets)"
  head_function head_of_bucket "" "t.bucket = head_of_bucket.bucket"
  head_function head_of_bucket_generic "" "t.bucket = head_of_bucket_generic.bucket" \
    "SET search_path = pg_catalog, pg_temp SET plan_cache_mode = force_generic_plan"
  head_function head_of_bucket_unset "" "t.bucket = head_of_bucket_unset.bucket" ""
  cat <<SQL
CREATE FUNCTION public.nothing_in(bucket smallint) RETURNS smallint
  LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS \$\$
BEGIN
  RETURN nothing_in.bucket;
END \$\$;
SQL
}
functions_sql | on c >/dev/null || exit 1
on c -c "$bucket_index" -c "ANALYZE tweetkeeper.tweets" >/dev/null || exit 1
on c -c "SELECT create_distributed_function('public.head_of_shard(smallint, smallint[])', 'bucket', colocate_with := 'tweetkeeper.tweets')" \
  -c "SELECT create_distributed_function('public.head_of_bucket(smallint)', 'bucket', colocate_with := 'tweetkeeper.tweets')" \
  -c "SELECT create_distributed_function('public.nothing_in(smallint)', 'bucket', colocate_with := 'tweetkeeper.tweets')" \
  -c "SELECT create_distributed_function('public.head_of_bucket_generic(smallint)', 'bucket', colocate_with := 'tweetkeeper.tweets')" \
  -c "SELECT create_distributed_function('public.head_of_bucket_unset(smallint)', 'bucket', colocate_with := 'tweetkeeper.tweets')" >/dev/null || exit 1
for call in "head_of_shard(5::smallint, '$buckets'::smallint[])" "head_of_bucket(5::smallint)" \
  "head_of_bucket_generic(5::smallint)" "head_of_bucket_unset(5::smallint)" "nothing_in(5::smallint)"; do
  debug=$(on c -c "SET client_min_messages = debug1" -c "SELECT public.$call" 2>&1)
  grep -q "pushing down the function call" <<<"$debug" || { echo "$debug" >&2; echo "public.$call was not delegated" >&2; exit 1; }
done
run delegated-shard-buckets c "SELECT public.head_of_shard(5::smallint, '$buckets'::smallint[]);" c w1 w2 || exit 1
run delegated-one-bucket c "SELECT public.head_of_bucket(5::smallint);" c w1 w2 || exit 1
run delegated-nothing c "SELECT public.nothing_in(5::smallint);" c w1 w2 || exit 1
run delegated-one-bucket-generic c "SELECT public.head_of_bucket_generic(5::smallint);" c w1 w2 || exit 1
run delegated-one-bucket-unset c "SELECT public.head_of_bucket_unset(5::smallint);" c w1 w2 || exit 1
# (The function called on the shard's node itself, not through the coordinator.)
shard_node=$(on c -c "SELECT CASE WHEN n.nodeport = ${port[w1]} THEN 'w1' ELSE 'w2' END
                      FROM pg_dist_placement p JOIN pg_dist_node n USING (groupid)
                     WHERE p.shardid = get_shard_id_for_distribution_column('tweetkeeper.tweets', 5::smallint)")
run on-shard-node "$shard_node" "SELECT public.head_of_bucket(5::smallint);" "$shard_node" || exit 1
tk_citus_stop
"$TK_ROOT/scripts/pg-cluster.sh" start "$dir/one" "${port[one]}" -c listen_addresses=localhost >/dev/null || exit 1
functions_sql | on one >/dev/null || exit 1
on one -c "$bucket_index" -c "ANALYZE tweetkeeper.tweets" >/dev/null || exit 1
run function-one-node one "SELECT public.head_of_bucket(5::smallint);" one || exit 1
run nothing-one-node one "SELECT public.nothing_in(5::smallint);" one || exit 1
run function-one-node-generic one "SELECT public.head_of_bucket_generic(5::smallint);" one || exit 1
