#!/usr/bin/env bash
# Where X's floor spends its time, statement by statement, in this tree and in each release
# (issue 37 part 1: "measure which columns and rows each refresh writes" and where a refresh costs
# more than 0.1.0's). For each version, the same fresh state as run.sh's floor (TWEETS due X
# tweets, two hours old), then REFRESHES refreshes by claim_complete_x.pgbench (CLIENTS
# sessions), with pg_stat_statements tracking every statement, nested ones too (the PL/pgSQL
# bodies of claim_batch and complete_batch), and track_functions timing every function. Prints,
# per version: each statement's time, calls, buffers dirtied and WAL per refresh, then each
# function's own time per refresh, then PostgreSQL's CPU per refresh over the run (from /proc;
# the tracking itself costs some). Only same-run comparisons mean anything: the machine's speed
# moves from hour to hour. A measurement: checks nothing.
#   tests/bench/floor_statements.sh                        # this tree and 0.1.0
#   CURRENT=0 tests/bench/floor_statements.sh              # 0.1.0 only
#   RELEASES="3c271d8:0.1.0 a55132d:0.3.0" tests/bench/floor_statements.sh
#   RELEASES=3c271d8:0.1.0 SETUP_SQL="ALTER TABLE tweetkeeper.tweets ADD pad text DEFAULT repeat('x', 72);" \
#     tests/bench/floor_statements.sh   # what a row as wide as this tree's costs 0.1.0
set -uo pipefail
source "$(dirname "$0")/../lib/common.sh"
source "$(dirname "$0")/../lib/releases.sh"
RELEASES=${RELEASES-"3c271d8:0.1.0"}
tk_defaults TWEETS=1000000 REFRESHES=200000 CLIENTS=4 TOP=25
# SQL run after CREATE EXTENSION, before the tweets are scheduled (an experiment: a wider row, say)
SETUP_SQL=${SETUP_SQL:-}
[ "$TWEETS" -gt "$REFRESHES" ] || { echo "REFRESHES ($REFRESHES) must be fewer than TWEETS ($TWEETS)" >&2; exit 2; }

tk_workdir floor-statements
declare -A path
versions=()
[ "${CURRENT:-1}" = 1 ] && versions+=(current)  # CURRENT=0: the releases only
for rel in $RELEASES; do
  tk_build_release "${rel%%:*}" "${rel#*:}" || exit 1
  versions+=("${rel#*:}")
  path[${rel#*:}]=$TK_RELEASE_PATH
done

measure() {
  tk_pg_start "$dir" -c shared_buffers=1GB -c max_wal_size=4GB -c checkpoint_timeout=30min \
    -c shared_preload_libraries=tweetkeeper,pg_stat_statements -c pg_stat_statements.track=all \
    -c pg_stat_statements.max=1000 -c track_functions=all >/dev/null || return 1
  tk_psql >/dev/null <<SQL || return 1
CREATE EXTENSION tweetkeeper;
CREATE EXTENSION pg_stat_statements;
$SETUP_SQL
SELECT tweetkeeper.schedule_tweets($(tk_floor_ids_sql "$TWEETS"));
-- Today's history partition exists before the count starts (0.3.0 on: the background worker's
-- first housekeeping would otherwise move the default partition's rows during the run).
DO \$\$ BEGIN
  IF to_regproc('tweetkeeper.create_partitions') IS NOT NULL THEN PERFORM tweetkeeper.create_partitions(); END IF;
END \$\$;
VACUUM ANALYZE tweetkeeper.tweets;
CHECKPOINT;
SQL
  tk_psql -c "SELECT pg_stat_statements_reset(), pg_stat_reset(), pg_stat_reset_shared('wal')" >/dev/null
  local postmaster cpu0 cpu1 refreshes batches
  postmaster=$(head -1 "$dir/pg/data/postmaster.pid")
  cpu0=$(tk_pg_cpu "$postmaster")
  pgbench -n -c "$CLIENTS" -j 2 -t $((REFRESHES / 100 / CLIENTS)) -f "$TK_ROOT/tests/bench/claim_complete_x.pgbench" \
    >"$dir/pgbench.log" 2>&1 || { cat "$dir/pgbench.log"; return 1; }
  cpu1=$(tk_pg_cpu "$postmaster")
  tk_psql -c "SELECT pg_stat_force_next_flush()" >/dev/null
  read -r refreshes batches < <(tk_psql -F ' ' -c "SELECT sum(stored), count(*) FROM tweetkeeper.batches WHERE outcome = 'completed'")
  echo "# $1: $refreshes refreshes in $batches batches by $CLIENTS pgbench sessions; $(tk_per_refresh_us "$(awk -v a="$cpu0" -v b="$cpu1" 'BEGIN { print b - a }')" "$refreshes") us of PostgreSQL CPU per refresh (with the tracking)"
  echo "## statements (top $TOP by time; top: 1 = sent by pgbench, 0 = run inside a function)"
  tk_psql -F ' | ' -P footer=off -c "
    SELECT round((total_exec_time * 1000 / $refreshes)::numeric, 2) AS us_per_refresh,
           CASE WHEN toplevel THEN 1 ELSE 0 END AS top,
           round(calls::numeric / $batches, 2) AS calls_per_batch,
           round(rows::numeric / greatest(calls, 1), 1) AS rows_per_call,
           round(shared_blks_hit::numeric / $refreshes, 2) AS hit_per_refresh,
           round(shared_blks_dirtied::numeric / $refreshes, 3) AS dirtied_per_refresh,
           round(wal_bytes / $refreshes, 1) AS wal_bytes_per_refresh,
           round(wal_fpi::numeric / $refreshes, 3) AS fpi_per_refresh,
           left(regexp_replace(query, '\s+', ' ', 'g'), 90) AS query
      FROM pg_stat_statements WHERE calls > 0 AND query NOT LIKE '%pg_stat_%'
     ORDER BY total_exec_time DESC LIMIT $TOP" | column -t -s '|' -o '|'
  echo "## functions (track_functions: own time excludes the functions each one calls)"
  tk_psql -F ' | ' -P footer=off -c "
    SELECT round((self_time * 1000 / $refreshes)::numeric, 2) AS self_us_per_refresh,
           round((total_time * 1000 / $refreshes)::numeric, 2) AS total_us_per_refresh,
           round(calls::numeric / $batches, 2) AS calls_per_batch, schemaname || '.' || funcname AS function
      FROM pg_stat_user_functions ORDER BY self_time DESC LIMIT $TOP" | column -t -s '|' -o '|'
  echo "## tables (per refresh)"
  tk_psql -F ' | ' -P footer=off -c "
    SELECT relname, round(n_tup_ins::numeric / $refreshes, 3) AS ins, round(n_tup_upd::numeric / $refreshes, 3) AS upd,
           round(n_tup_hot_upd::numeric / $refreshes, 3) AS hot, round(n_tup_del::numeric / $refreshes, 3) AS del
      FROM pg_stat_user_tables WHERE n_tup_ins + n_tup_upd + n_tup_del > 0 ORDER BY relname" | column -t -s '|' -o '|'
  tk_psql -F ' | ' -P footer=off -c "
    SELECT 'WAL' AS what, round(wal_bytes / $refreshes, 1) AS bytes_per_refresh,
           round(wal_records::numeric / $refreshes, 2) AS records_per_refresh, round(wal_fpi::numeric / $refreshes, 3) AS fpi_per_refresh
      FROM pg_stat_wal" | column -t -s '|' -o '|'
  tk_pg_stop "$dir"
  rm -rf "$dir/pg"
}

for v in "${versions[@]}"; do
  if [ "$v" = current ]; then
    measure "this tree ($TK_VERSION)" || exit 1
  else
    PATH=${path[$v]} measure "$v" || exit 1
  fi
  echo
done
