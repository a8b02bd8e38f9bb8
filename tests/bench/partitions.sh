#!/usr/bin/env bash
# make bench-partitions (issue 51): what partitions behind PL/Proxy cost. The same TWEETS due X
# posts refreshed end to end (the mock on loopback, one worker of CONCURRENCY slots per database)
# first on one node alone, then on two partitions behind a proxy (scheduled through the proxy, the
# worker given both partitions). Prints PostgreSQL's CPU per refresh: the single node's, each
# partition's, and the proxy's while the posts are refreshed (goal: none: it is not in the path);
# then the same reads (queue_stats, posts, lifespans, tweetkeeper-export) timed through the proxy
# and on the single node, which holds the same posts' rows; last, a third partition added and
# slots moved to it (rebalance()): posts moved per second.
set -uo pipefail
source "$(dirname "$0")/../lib/common.sh"
tk_defaults TWEETS=200000 CONCURRENCY=4 READS=3 MOVE_BATCH=1000
tk_workdir bench-partitions
ids=$(tk_floor_ids_sql "$TWEETS")

# refresh DSN... : one worker (CONCURRENCY slots on each DSN) until nothing was due for 3 s.
refresh() {
  local args=() d
  for d in "$@"; do args+=(--dsn "$d"); done
  TWEETKEEPER_BEARER_TOKEN=bench /usr/bin/time -o "$dir/worker.cpu" -f "%U %S" "$TK_WORKER" "${args[@]}" \
    --api-url "$TK_MOCK_URL" --concurrency "$CONCURRENCY" --name bench --exit-when-idle 3 --log-level warn \
    >"$dir/worker.log" 2>&1 &
  local w=$!
  TK_PIDS+=($w)
  tk_wait_exit "$w" 1800
  [ "$TK_RC" = 0 ] || { echo "worker exited with $TK_RC"; tail -20 "$dir/worker.log"; exit 1; }
}
settled_on() { tk_node_psql "$1" "$2" -c "SELECT coalesce(sum(stored + omitted), 0) FROM tweetkeeper.batches WHERE outcome = 'completed'"; }
postmaster_of() { head -1 "$dir/$1/data/postmaster.pid"; }
us() { tk_per_refresh_us "$1" "$2"; }
sub() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a - b }'; }

tk_mock_start "$dir/mock.log" --threads 32 --rate-limit 100000000 || exit 1

echo "== one node: $TWEETS due X posts"
tk_node_start one 5440 -c shared_buffers=1GB || exit 1
tk_node_psql one 5440 -c "CREATE EXTENSION tweetkeeper" -c "SELECT tweetkeeper.schedule_tweets($ids)" \
  -c "VACUUM ANALYZE tweetkeeper.tweets" -c CHECKPOINT >/dev/null 2>&1 || exit 1
c0=$(tk_pg_cpu "$(postmaster_of one)")
refresh "$(tk_node_dsn one 5440)"
c1=$(tk_pg_cpu "$(postmaster_of one)")
one_settled=$(settled_on one 5440)
one_us=$(us "$(sub "$c1" "$c0")" "$one_settled")
echo "one node: $one_settled refreshes, PostgreSQL's CPU $one_us us per refresh"

echo "== two partitions behind a proxy: the same posts, scheduled through the proxy"
tk_partitions_start 2 -c shared_buffers=1GB || exit 1
t0=$(date +%s.%N)
tk_psql -c "SELECT tweetkeeper.schedule_tweets($ids)" >/dev/null || exit 1
t1=$(date +%s.%N)
echo "scheduling $TWEETS posts through the proxy: $(sub "$t1" "$t0") s"
for i in 0 1; do tk_part "$i" -c "VACUUM ANALYZE tweetkeeper.tweets" -c CHECKPOINT >/dev/null; done
p0=$(tk_pg_cpu "$(postmaster_of pg)")
a0=$(tk_pg_cpu "$(postmaster_of p0)")
b0=$(tk_pg_cpu "$(postmaster_of p1)")
refresh "${TK_PART_DSNS[0]}" "${TK_PART_DSNS[1]}"
p1=$(tk_pg_cpu "$(postmaster_of pg)")
a1=$(tk_pg_cpu "$(postmaster_of p0)")
b1=$(tk_pg_cpu "$(postmaster_of p1)")
s0=$(settled_on p0 5433)
s1=$(settled_on p1 5434)
p0_us=$(us "$(sub "$a1" "$a0")" "$s0")
p1_us=$(us "$(sub "$b1" "$b0")" "$s1")
echo "p0: $s0 refreshes, PostgreSQL's CPU $p0_us us per refresh ($(awk -v a="$p0_us" -v b="$one_us" 'BEGIN { printf "%.2f", a / b }') of one node's)"
echo "p1: $s1 refreshes, PostgreSQL's CPU $p1_us us per refresh ($(awk -v a="$p1_us" -v b="$one_us" 'BEGIN { printf "%.2f", a / b }') of one node's)"
echo "proxy: $(sub "$p1" "$p0") CPU-s while $((s0 + s1)) posts were refreshed: $(us "$(sub "$p1" "$p0")" $((s0 + s1))) us per refresh"

echo "== reads: through the proxy and on the single node (the same posts; best of $READS)"
# (The single node's history and the partitions' differ only by the moments of their reads.)
time_read() { # WHERE SQL: the best wall time of READS runs, in ms
  local best="" r t0 t1 ms
  for ((r = 0; r < READS; r++)); do
    t0=$(date +%s%N)
    if [ "$1" = proxy ]; then tk_psql -c "$2" >/dev/null; else tk_node_psql one 5440 -c "$2" >/dev/null; fi
    t1=$(date +%s%N)
    ms=$(((t1 - t0) / 1000000))
    [ -z "$best" ] || [ "$ms" -lt "$best" ] && best=$ms
  done
  echo "$best"
}
for q in "SELECT * FROM tweetkeeper.queue_stats" "SELECT count(*), sum(like_count) FROM tweetkeeper.posts" \
         "SELECT metric, count(*), avg(age_50) FROM tweetkeeper.lifespans GROUP BY 1" \
         "SELECT count(*) FROM tweetkeeper.metrics_at(ARRAY(SELECT post_id FROM tweetkeeper.posts LIMIT 1000), ARRAY[interval '1 hour'])"; do
  via=$(time_read proxy "$q")
  alone=$(time_read one "$q")
  echo "read: ${q:0:70}: proxy $via ms, one node $alone ms ($(awk -v a="$via" -v b="$alone" 'BEGIN { printf "%.1f", (b > 0 ? a / b : 0) }')x)"
done
t0=$(date +%s%N); "$TK_BUILD/worker/tweetkeeper-export" --dsn "$TK_DSN" --format csv -o "$dir/via.csv" 2>/dev/null; t1=$(date +%s%N)
"$TK_BUILD/worker/tweetkeeper-export" --dsn "$(tk_node_dsn one 5440)" --format csv -o "$dir/one.csv" 2>/dev/null; t2=$(date +%s%N)
echo "export csv ($(wc -l <"$dir/via.csv") lines): proxy $(((t1 - t0) / 1000000)) ms, one node $(((t2 - t1) / 1000000)) ms"
echo "== adding a third partition: rebalance() moves slots to it in batches of $MOVE_BATCH (no worker running)"
tk_node_start p2 5435 -c shared_buffers=1GB || exit 1
tk_part 2 -c "CREATE EXTENSION tweetkeeper" >/dev/null 2>&1 || exit 1
tk_psql -c "SELECT tweetkeeper.add_node('p2', '$(tk_node_dsn p2 5435)')" >/dev/null || exit 1
t0=$(date +%s.%N)
tk_psql -c "CALL tweetkeeper.rebalance($MOVE_BATCH)" >/dev/null || exit 1
t1=$(date +%s.%N)
read -r moved slots < <(tk_psql -F ' ' -c "SELECT sum(posts_moved), count(*) FROM tweetkeeper.moves")
echo "moved $moved posts ($slots slots) in $(sub "$t1" "$t0") s: $(awk -v n="$moved" -v t="$(sub "$t1" "$t0")" 'BEGIN { printf "%.0f", n / t }') posts/s"
