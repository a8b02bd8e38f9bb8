#!/usr/bin/env bash
# Issue 37 part 2, the direction measured before it is built: what the Citus coordinator spends
# per refresh when X's claim and completion are delegated to the worker node that holds the
# batch's shard (create_distributed_function, routed by a bucket), against today's path (every
# statement planned on the coordinator and sent to a worker node). A prototype: the two delegated
# entry points are wrappers defined here, in schema public, around the extension's own steps
# (claim_in, complete_batch), with no quota (no credentials registered: a delegated claim would
# not see the coordinator's credentials; quota slices are the part still to design). The shard map
# (shard_buckets) is copied to the worker nodes so that complete_batch finds a lease's buckets
# there. On a coordinator and two worker nodes (tests/lib/citus_cluster.sh), TWEETS due X tweets;
# pgbench on the coordinator, CLIENTS sessions, REFRESHES refreshes per path: first today's
# (claim_complete_x.pgbench), then the delegated one (a random bucket per claim; the fake
# observations, the same answers as claim_complete_x.pgbench gives, are made on the worker node, as
# they are on one node's floor). Prints each path's
# CPU per refresh of the coordinator and of the worker nodes (from /proc), and the share of one
# node's floor CPU per refresh (measured first, without Citus). A measurement: checks nothing.
set -uo pipefail
source "$(dirname "$0")/../lib/common.sh"
TWEETS=${TWEETS:-400000}
REFRESHES=${REFRESHES:-100000}
CLIENTS=${CLIENTS:-4}

source "$TK_ROOT/tests/lib/citus_cluster.sh"
tk_citus_bench citus-delegation one c w1 w2
schedule() {
  on "$1" >/dev/null <<SQL
SELECT tweetkeeper.schedule_tweets($(tk_snowflake_sql '2 hours' "$TWEETS" "$2"));
SELECT tweetkeeper.create_partitions();
VACUUM ANALYZE tweetkeeper.tweets;
SQL
}
# measure FIRST_NODE PGBENCH_FILE NODE...: REFRESHES refreshes by pgbench on FIRST_NODE; prints
# "refreshes cpu_seconds_of_each_node..."
measure() {
  local first=$1 file=$2 n cpu0=() cpu1=() before after out i
  shift 2
  for n in "$@"; do on "$n" -c "SELECT pg_stat_statements_reset()" >/dev/null; done
  before=$(on "$first" -c "SELECT coalesce(sum(stored), 0) FROM tweetkeeper.batches WHERE outcome = 'completed'")
  for n in "$@"; do cpu0+=("$(tk_pg_cpu "$(postmaster_of "$n")")"); done
  PGHOST=localhost PGPORT=${port[$first]} PGUSER=postgres PGDATABASE=tweetkeeper \
    pgbench -n -c "$CLIENTS" -j 2 -t $((REFRESHES / 100 / CLIENTS)) -f "$file" >"$dir/pgbench.log" 2>&1 ||
    { cat "$dir/pgbench.log" >&2; return 1; }
  for n in "$@"; do cpu1+=("$(tk_pg_cpu "$(postmaster_of "$n")")"); done
  # Where each node's time went: its statements (nested too), the five that took longest.
  for n in "$@"; do
    on "$n" -F ' | ' -c "SELECT '$n', round(total_exec_time::numeric, 0) AS ms, calls, left(regexp_replace(query, '\s+', ' ', 'g'), 100)
                           FROM pg_stat_statements ORDER BY total_exec_time DESC LIMIT ${TOP:-5}" >&2
  done
  after=$(on "$first" -c "SELECT coalesce(sum(stored), 0) FROM tweetkeeper.batches WHERE outcome = 'completed'")
  out=$((after - before))
  for i in "${!cpu0[@]}"; do out+=" $(awk "BEGIN { printf \"%.3f\", ${cpu1[$i]} - ${cpu0[$i]} }")"; done
  echo "$out"
}

echo "== one node, no Citus: the floor (claim_complete_x.pgbench)"
"$TK_ROOT/scripts/pg-cluster.sh" start "$dir/one" "${port[one]}" -c listen_addresses=localhost \
  -c shared_preload_libraries=tweetkeeper,pg_stat_statements -c pg_stat_statements.track=all >/dev/null || exit 1
on one -c "CREATE EXTENSION tweetkeeper" -c "CREATE EXTENSION pg_stat_statements" >/dev/null || exit 1
schedule one 0 || exit 1
read -r n1 cpu_one < <(measure one "$TK_ROOT/tests/bench/claim_complete_x.pgbench" one) || exit 1
"$TK_ROOT/scripts/pg-cluster.sh" stop "$dir/one" fast
one_us=$(tk_per_refresh_us "$cpu_one" "$n1")
echo "$n1 refreshes; PostgreSQL's CPU $one_us us per refresh"

echo "== Citus: a coordinator and two worker nodes, the queue distributed"
for n in c w1 w2; do
  tk_citus_start "$n" -c citus.shard_count=4 -c shared_preload_libraries=citus,tweetkeeper,pg_stat_statements \
    -c pg_stat_statements.track=all >/dev/null || exit 1
  on "$n" -c "CREATE EXTENSION pg_stat_statements" >/dev/null || exit 1
done
on c -c "CREATE EXTENSION tweetkeeper" >/dev/null || exit 1
for n in w1 w2; do on c -c "SELECT citus_add_node('localhost', ${port[$n]})" >/dev/null || exit 1; done
on c -c "SELECT tweetkeeper.distribute()" >/dev/null || exit 1
schedule c 0 || exit 1
map=$(on c -c "SELECT string_agg(format('(%s, %L)', shard, buckets), ', ') FROM tweetkeeper.shard_buckets")
# (And each worker node's lease sequence moved far past the coordinator's: a delegated claim takes
# its lease id from the node it runs on, and the ids must not meet those the coordinator's path
# handed out for the same shard. The real thing needs the node in the id, as its shard is.)
for n in w1 w2; do
  on "$n" -c "INSERT INTO tweetkeeper.shard_buckets (shard, buckets) VALUES $map" \
    -c "SELECT setval('tweetkeeper.lease_id_seq', 1000000000000)" >/dev/null || exit 1
done
on c >/dev/null <<'SQL' || exit 1
CREATE FUNCTION public.claim_delegated(bucket smallint, max_size integer, OUT lease_id bigint, OUT tweet_ids bigint[])
  RETURNS SETOF record LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  sh record;
BEGIN
  SELECT * INTO sh FROM tweetkeeper.shard_buckets s WHERE claim_delegated.bucket = ANY (s.buckets);
  RETURN QUERY SELECT c.lease_id, c.tweet_ids
                 FROM tweetkeeper.claim_in('delegated', max_size, 'x-v2', NULL, sh.buckets, sh.shard) c;
END $$;
CREATE FUNCTION public.complete_delegated(bucket smallint, lease bigint, ids bigint[]) RETURNS integer
  LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
  -- (The answer claim_complete_x.pgbench gives: counts, and the mock's problems for its ids.)
  RETURN tweetkeeper.complete_batch(lease,
    coalesce((SELECT jsonb_agg(jsonb_build_object('id', id, 'retweet_count', 1, 'reply_count', 2, 'like_count', 3,
                                                  'quote_count', 4, 'bookmark_count', 5, 'impression_count', 6))
                FROM unnest(ids) AS id WHERE id % 53 <> 7 AND id % 61 <> 11), '[]'),
    coalesce((SELECT jsonb_agg(CASE WHEN id % 53 = 7
                                    THEN jsonb_build_object('id', id, 'type', 'resource-not-found',
                                           'detail', format('Could not find tweet with ids: [%s].', id))
                                    ELSE jsonb_build_object('id', id, 'type', 'not-authorized-for-resource',
                                           'detail', format('Sorry, you are not authorized to see the Tweet with ids: [%s].', id))
                               END)
                FROM unnest(ids) AS id WHERE id % 53 = 7 OR id % 61 = 11), '[]'));
END $$;
SELECT create_distributed_function('public.claim_delegated(smallint, integer)', 'bucket', colocate_with := 'tweetkeeper.tweets');
SELECT create_distributed_function('public.complete_delegated(smallint, bigint, bigint[])', 'bucket',
                                   colocate_with := 'tweetkeeper.tweets');
SQL
# Is the call delegated? Citus says so at DEBUG1.
on c -c "SET client_min_messages = debug1" -c "SELECT * FROM public.claim_delegated(1::smallint, 1)" >"$dir/debug.log" 2>&1
grep -q "pushing down the function call" "$dir/debug.log" || { cat "$dir/debug.log" >&2; echo "the claim was not delegated" >&2; exit 1; }
read -r n2 cpu_c2 cpu_w12 cpu_w22 < <(measure c "$TK_ROOT/tests/bench/claim_complete_x.pgbench" c w1 w2) || exit 1
cat >"$dir/delegated.pgbench" <<'PGB'
\set b random(0, 1023)
SELECT coalesce(max(lease_id), 0) AS lease_id, coalesce(max(tweet_ids::text), '{}') AS tweet_ids
  FROM public.claim_delegated(:b::smallint, 100) \gset
\if :lease_id > 0
SELECT public.complete_delegated(:b::smallint, :lease_id, ':tweet_ids'::bigint[]);
\endif
PGB
read -r n3 cpu_c3 cpu_w13 cpu_w23 < <(measure c "$dir/delegated.pgbench" c w1 w2) || exit 1
# EXPLAIN=1: one more delegated claim and completion with Citus logging every command the worker
# nodes run, locally and remotely; prints what they logged.
if [ "${EXPLAIN:-0}" = 1 ]; then
  for n in w1 w2; do
    on "$n" -c "ALTER SYSTEM SET citus.log_remote_commands = on" -c "ALTER SYSTEM SET citus.log_local_commands = on" \
      -c "ALTER SYSTEM SET log_min_duration_statement = 0" -c "SELECT pg_reload_conf()" >/dev/null
    wc -l <"$dir/$n/server.log" >"$dir/$n.lines"
  done
  on c -v ON_ERROR_STOP=1 >/dev/null <<'SQL'
SELECT lease_id AS l, tweet_ids AS ids FROM public.claim_delegated(0::smallint, 100) \gset
SELECT public.complete_delegated(0::smallint, :l, :'ids'::bigint[]);
SQL
  for n in w1 w2; do echo "== $n"; tail -n +$(($(cat "$dir/$n.lines") + 1)) "$dir/$n/server.log"; done
fi
report() {
  local c_us w_us
  c_us=$(tk_per_refresh_us "$2" "$1")
  w_us=$(tk_per_refresh_us "$(awk "BEGIN { print $3 + $4 }")" "$1")
  echo "$5: $1 refreshes; CPU per refresh: coordinator $c_us us ($(awk "BEGIN { printf \"%.0f\", 100 * $c_us / $one_us }")% of one node's $one_us us), worker nodes $w_us us"
}
echo "== result"
report "$n2" "$cpu_c2" "$cpu_w12" "$cpu_w22" "today's path (every statement through the coordinator)"
report "$n3" "$cpu_c3" "$cpu_w13" "$cpu_w23" "delegated (claim and completion run on the shard's node)"
