#!/usr/bin/env bash
# make bench (issue 22): what keeping more than the counts costs on the end-to-end rate. X
# workers against the mock on loopback, TWEETS due tweets, from the same fresh state each time:
#   off       tweetkeeper.payloads = none (the default)
#   changed   tweetkeeper.payloads = changed, first sight (every payload new: stored)
#   off2      payloads none, the same tweets due again (after a round of changed)
#   again     payloads changed, the same tweets due again, content unchanged (compared, nothing
#             stored): alternated with off2 on the same state
#   warc      payloads none, the workers recording every exchange with --warc-dir
# Prints each rate (the median of ROUNDS rounds), its ratio to off (target: at least 0.9 for the
# steady state of changed, where the content is unchanged, and for WARC), and bytes per post of
# the payloads table and of the WARC files. Diagnostics: CPU=1 prints each run's CPU seconds
# (PostgreSQL, mock, workers); PERF="off2 again" records those runs system-wide with perf;
# STATEMENTS=1 prints each run's costliest statements (pg_stat_statements).
set -uo pipefail
source "$(dirname "$0")/../lib/common.sh"
tk_defaults TWEETS=100000 ROUNDS=5 WORKERS=2 CONCURRENCY=4

tk_workdir archive-bench
# Autovacuum off, each table vacuumed between runs instead: on two cores, a vacuum that starts in
# the middle of one run (of the payloads a run before stored) is what its rate would measure.
tk_pg_start "$dir" ${STATEMENTS:+-c shared_preload_libraries=tweetkeeper,pg_stat_statements -c pg_stat_statements.track=all} -c shared_buffers=1GB -c max_wal_size=4GB -c checkpoint_timeout=30min -c autovacuum=off || exit 1
tk_psql -c "CREATE EXTENSION tweetkeeper" >/dev/null || exit 1
[ -n "${STATEMENTS:-}" ] && tk_psql -c "CREATE EXTENSION pg_stat_statements" >/dev/null
tk_mock_start "$dir/mock.log" --threads 32 --rate-limit 100000000 || exit 1

fresh_state() {
  tk_psql >/dev/null <<SQL
TRUNCATE tweetkeeper.tweets, tweetkeeper.metric_history_hot, tweetkeeper.metric_history_compact, tweetkeeper.batches,
  tweetkeeper.payloads, tweetkeeper.tombstones, tweetkeeper.edits;
SELECT tweetkeeper.schedule_tweets($(tk_floor_ids_sql "$TWEETS"));
SQL
  tk_psql -c "VACUUM ANALYZE tweetkeeper.tweets" -c "VACUUM ANALYZE tweetkeeper.metric_history_hot" -c "CHECKPOINT" >/dev/null
}
# run NAME [worker options...]: the workers until idle; prints the rate (posts settled per second
# from the first claim to the last completion).
run() {
  local name=$1 pids=() w
  shift
  tk_psql -c "TRUNCATE tweetkeeper.batches" >/dev/null
  local pg0 mock0
  [ -n "${STATEMENTS:-}" ] && tk_psql -c "SELECT pg_stat_statements_reset()" >/dev/null
  pg0=$(cpu "$postmaster") mock0=$(cpu "$TK_MOCK_PID")
  local perf=
  # sleep-ok: perf record says nothing when it has attached: a second for it before the measured run
  if [[ " ${PERF:-} " == *" $name "* ]]; then perf record -a -g -o "$dir/$name.perf" >/dev/null 2>&1 & perf=$!; sleep 1; fi
  for w in $(seq 1 "$WORKERS"); do
    TWEETKEEPER_BEARER_TOKEN=bench ${CPU:+/usr/bin/time -o "$dir/$name-$w.time" -f "%U %S"} "$TK_WORKER" --dsn "$TK_DSN" --api-url "$TK_MOCK_URL" --concurrency "$CONCURRENCY" \
      --name "$name-$w" --exit-when-idle 3 --log-level warn "$@" >"$dir/$name-$w.log" 2>&1 &
    pids+=($!)
    TK_PIDS+=($!)
  done
  for w in "${pids[@]}"; do
    tk_wait_exit "$w" 1200
    [ "$TK_RC" = 0 ] || { echo "worker exited with $TK_RC" >&2; tail -n 5 "$dir/$name"-*.log >&2; exit 1; }
  done
  [ -n "$perf" ] && { kill -INT "$perf"; wait "$perf"; echo "  perf data: $dir/$name.perf" >&2; }
  [ -n "${STATEMENTS:-}" ] && tk_psql -c "SELECT calls, round(total_exec_time::numeric) AS ms, round((total_exec_time / calls)::numeric, 3) AS per_call, left(regexp_replace(query, '\s+', ' ', 'g'), 70)
                  FROM pg_stat_statements ORDER BY total_exec_time DESC LIMIT 8" >&2
  [ -n "${CPU:-}" ] && echo "  $name: CPU seconds: PostgreSQL $(awk "BEGIN { print $(cpu "$postmaster") - $pg0 }"), mock $(awk "BEGIN { print $(cpu "$TK_MOCK_PID") - $mock0 }"), workers $(cat "$dir/$name"-*.time | awk '{ s += $1 + $2 } END { print s }')" >&2
  tk_psql -c "SELECT round(sum(stored) / extract(epoch FROM max(finished_at) - min(claimed_at)))
                FROM tweetkeeper.batches WHERE outcome = 'completed'"
}
ratio() { awk "BEGIN { printf \"%.2f\", $1 / $2 }"; }
# cpu PID: user+system seconds of a process and of its reaped children (PostgreSQL's backends
# are the postmaster's children; the workers are this shell's).
cpu() { awk -v hz="$(getconf CLK_TCK)" '{ printf "%.1f", ($14 + $15 + $16 + $17) / hz }' "/proc/$1/stat"; }
postmaster=$(head -1 "$dir/pg/data/postmaster.pid")

echo "== $TWEETS due X tweets, $WORKERS workers x $CONCURRENCY batches in flight, mock API on loopback"
# again_state: every tweet due again (the second round of the same tweets).
again_state() {
  tk_psql -c "UPDATE tweetkeeper.tweets SET due_at = now() - interval '1 minute' WHERE due_at IS NOT NULL" >/dev/null
  # (and the payloads a first round stored vacuumed now, not by autovacuum during the next run)
  tk_psql -c "VACUUM ANALYZE tweetkeeper.tweets" -c "VACUUM ANALYZE tweetkeeper.payloads" \
    -c "VACUUM ANALYZE tweetkeeper.metric_history_hot" -c "CHECKPOINT" >/dev/null
}
median() { printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
payloads() { tk_psql -c "ALTER DATABASE tweetkeeper SET tweetkeeper.payloads = '$1'" >/dev/null; }
# ROUNDS rounds, the configurations interleaved; each rate is the median of its rounds (on two
# shared cores one run can be off by a third either way). The steady state of changed (content
# unchanged, nothing stored) is compared with payloads none on the same tweets, history and
# payloads: two pairs per round, in the order none, changed, changed, none, so that what grows
# from run to run (the history) weighs on both alike.
offs=() offs2=() news=() sames=() warcs=()
for round in $(seq 1 "$ROUNDS"); do
  fresh_state
  offs+=("$(run off)")

  fresh_state
  payloads changed
  news+=("$(run changed)")
  read -r kept bytes < <(tk_psql -F ' ' -c "SELECT count(*), pg_total_relation_size('tweetkeeper.payloads') FROM tweetkeeper.payloads")
  for mode in none changed changed none; do
    payloads "$mode"
    again_state
    if [ "$mode" = none ]; then offs2+=("$(run off2)"); else sames+=("$(run again)"); fi
  done
  more=$(( $(tk_psql -c "SELECT count(*) FROM tweetkeeper.payloads") - kept ))
  payloads none

  fresh_state
  rm -rf "$dir/warc"
  mkdir -p "$dir/warc"
  warcs+=("$(run warc --warc-dir "$dir/warc")")
  warc_bytes=$(du -sb "$dir/warc" | cut -f1)
  echo "round $round: none ${offs[-1]}, changed new ${news[-1]}, WARC ${warcs[-1]} updates/s; steady: none ${offs2[-2]} ${offs2[-1]}, changed same ${sames[-2]} ${sames[-1]}"
done
off=$(median "${offs[@]}") off2=$(median "${offs2[@]}") new=$(median "${news[@]}") same=$(median "${sames[@]}") warc=$(median "${warcs[@]}")
echo "== medians of $ROUNDS rounds (the steady state: of $((2 * ROUNDS)) runs each)"
echo "payloads none:             $off updates/s (first round), $off2 (steady state: the tweets due again)"
echo "payloads changed, new:     $new updates/s, ratio $(ratio "$new" "$off") to none (every payload stored: $((bytes / (kept > 0 ? kept : 1))) bytes per post, table, TOAST and index, $kept payloads)"
echo "payloads changed, same:    $same updates/s, ratio $(ratio "$same" "$off2") to none's steady state (target >= 0.9; $more payloads more)"
echo "WARC recording:            $warc updates/s, ratio $(ratio "$warc" "$off") to none (target >= 0.9); $((warc_bytes / TWEETS)) bytes per post"
