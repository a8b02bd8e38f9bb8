# Shared by the test, demo and benchmark scripts: binaries, a throwaway cluster, the mock API.
# Source it; it sets TK_ROOT, TK_BUILD, TK_WORKER, TK_MOCK and defines the helpers below.
TK_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
TK_BUILD=${TK_BUILD:-$TK_ROOT/build}
TK_WORKER=${TK_WORKER:-$TK_BUILD/worker/tweetkeeper-worker}
TK_MOCK=${TK_MOCK:-$TK_BUILD/tests/mock_api/tweetkeeper-mock-api}
TK_PIDS=()
# The extension version this tree builds (its install script is sql/tweetkeeper--$TK_VERSION.sql).
TK_VERSION=$(sed -n "s/^default_version *= *'\(.*\)'/\1/p" "$TK_ROOT/tweetkeeper.control")

# tk_tmpdir NAME: a fresh directory that the postgres user can use.
tk_tmpdir() {
  local d
  d=$(mktemp -d "/tmp/tweetkeeper-$1.XXXXXX")
  chmod 755 "$d"
  echo "$d"
}

# tk_pg_start DIR [postgres -c options...]: start a cluster there; sets PGHOST/PGPORT/... so that
# psql and the worker's DSN reach it.
tk_pg_start() {
  local dir=$1
  shift
  "$TK_ROOT/scripts/pg-cluster.sh" start "$dir/pg" 5432 "$@" || return 1
  export PGHOST=$dir/pg PGPORT=5432 PGUSER=postgres PGDATABASE=tweetkeeper
  TK_DSN="host=$PGHOST port=$PGPORT user=postgres dbname=tweetkeeper"
}

# Further clusters beside tk_pg_start's (partitions, tests/integration/partitions.sh):
# tk_node_start NAME PORT [postgres -c options...] starts one in $dir/NAME (stopped by tk_finish);
# tk_node_dsn NAME PORT is its DSN; tk_node_psql NAME PORT [psql args] runs psql there.
TK_NODES=()
tk_node_start() {
  local name=$1 port=$2
  shift 2
  "$TK_ROOT/scripts/pg-cluster.sh" start "$dir/$name" "$port" "$@" && TK_NODES+=("$name")
}
tk_node_dsn() { echo "host=$dir/$1 port=$2 user=postgres dbname=tweetkeeper"; }
tk_node_psql() {
  local name=$1 port=$2
  shift 2
  tk_psql -h "$dir/$name" -p "$port" -U postgres -d tweetkeeper "$@"
}

# tk_partitions_start N [postgres -c options...]: partitions behind a proxy (docs/partitions.md):
# the proxy is tk_pg_start's cluster (psql and TK_DSN reach it; no tweetkeeper library preloaded:
# it holds no queue), the partitions p0..p(N-1) clusters beside it on ports 5433.. (the options
# theirs), each with the extension and the login tk_worker_login, and the proxy's cluster made of
# them (create_cluster: slot s on p(s % N)). TK_PART_DSNS: each partition's DSN. tk_part I
# [psql args]: psql on partition I.
tk_partitions_start() {
  local n=$1 i names="" dsns=""
  shift
  TK_PART_DSNS=()
  tk_pg_start "$dir" -c shared_preload_libraries= || return 1
  for ((i = 0; i < n; i++)); do
    tk_node_start "p$i" $((5433 + i)) "$@" || return 1
    tk_part "$i" -c "CREATE EXTENSION tweetkeeper" -c "CREATE ROLE tk_worker_login LOGIN IN ROLE tweetkeeper_worker" \
      >/dev/null 2>&1 || return 1
    TK_PART_DSNS+=("$(tk_node_dsn "p$i" $((5433 + i)))")
    names+="${names:+, }'p$i'" dsns+="${dsns:+, }'${TK_PART_DSNS[i]}'"
  done
  tk_psql -c "CREATE EXTENSION tweetkeeper_proxy CASCADE" \
    -c "SELECT count(*) FROM tweetkeeper.create_cluster(ARRAY[$names], ARRAY[$dsns])" >/dev/null 2>&1
}
tk_part() { tk_node_psql "p$1" $((5433 + $1)) "${@:2}"; }

tk_pg_stop() { "$TK_ROOT/scripts/pg-cluster.sh" stop "$1/pg" "${2:-fast}"; }

tk_psql() { psql -X -q -v ON_ERROR_STOP=1 -At "$@"; }

# tk_mock_start LOGFILE [mock options...]: start the mock API on a free port; sets TK_MOCK_URL
# and TK_MOCK_PID.
tk_mock_start() {
  local log=$1
  shift
  "$TK_MOCK" --port 0 "$@" >"$log.out" 2>"$log" &
  TK_MOCK_PID=$!
  TK_PIDS+=("$TK_MOCK_PID")
  # Until it says where it listens (or is gone).
  if tk_wait_until 10 _tk_mock_up "$log.out" && grep -q 'listening on' "$log.out"; then
    TK_MOCK_URL=$(sed -n 's/.*listening on \(http[^ ]*\).*/\1/p' "$log.out" | head -1)
    return 0
  fi
  echo "mock API did not start:" >&2
  cat "$log" "$log.out" >&2
  return 1
}

_tk_mock_up() { grep -q 'listening on' "$1" 2>/dev/null || ! kill -0 "$TK_MOCK_PID" 2>/dev/null; }

# tk_wait_until SECONDS COMMAND [ARGS...]: runs COMMAND until it succeeds (true) or SECONDS have
# passed (false), every TK_POLL_S seconds (default 0.1). The wait on a thing itself (a log line,
# a file, a process, a row): what a fixed sleep would only guess the time of.
tk_wait_until() {
  local end=$((${EPOCHREALTIME/[.,]/} + $1 * 1000000))
  shift
  while :; do
    "$@" && return 0
    ((${EPOCHREALTIME/[.,]/} < end)) || return 1
    sleep "${TK_POLL_S:-0.1}" # sleep-ok: the poll interval of tk_wait_until, a wait on a condition
  done
}
# tk_log_has FILE PATTERN: FILE has a line matching the extended regex PATTERN.
tk_log_has() { grep -Eq -- "$2" "$1" 2>/dev/null; }

# tk_mock_mastodon_url LOGFILE HOST: the URL of Mastodon server HOST's own port, which the mock
# started by tk_mock_start LOGFILE ... --mastodon-host HOST=PORT listens on (it prints every
# listener's line at once, so they are there when tk_mock_start returns). Fails, saying why on
# stderr, when there is none.
tk_mock_mastodon_url() {
  local url
  url=$(sed -n "s/^tweetkeeper-mock-api mastodon ${2//./\\.} listening on \(http[^ ]*\).*/\1/p" "$1.out" | head -1)
  if [ -z "$url" ]; then
    echo "the mock of $1 listens for no Mastodon server $2 (start it with --mastodon-host $2=0)" >&2
    return 1
  fi
  echo "$url"
}

# tk_cleanup: stop every background process we started (SIGTERM, then SIGCONT, as a stopped
# process acts on SIGTERM only once continued).
tk_cleanup() {
  local p
  for p in "${TK_PIDS[@]}"; do kill "$p" 2>/dev/null && kill -CONT "$p" 2>/dev/null; done
  for p in "${TK_PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
  TK_PIDS=()
}

# tk_forget PID: drop a reaped child from TK_PIDS, so tk_cleanup never signals a recycled pid.
tk_forget() {
  local p keep=()
  for p in "${TK_PIDS[@]}"; do [ "$p" = "$1" ] || keep+=("$p"); done
  TK_PIDS=("${keep[@]}")
}

# tk_wait_exit PID SECONDS: wait for a child to exit; sets TK_RC to its exit code, or to
# "timeout" (after killing it) if it is still running after SECONDS.
tk_wait_exit() {
  local pid=$1 limit=$2 waited=0 step=100
  # Polled, at first every 0.1 s, then ever less often (up to once a second): `sleep 0.1` ten
  # times a second for a minute took 5% of the two cores from the end-to-end benchmark that
  # waits here (perf: bash and sleep beside the workers). (A blocking `wait` with a watchdog
  # subshell is no better: a subshell signalled right after its fork runs the caller's EXIT trap.)
  while kill -0 "$pid" 2>/dev/null; do
    if ((waited >= limit * 1000)); then
      kill -9 "$pid" 2>/dev/null
      wait "$pid" 2>/dev/null
      tk_forget "$pid"
      TK_RC=timeout
      return 0
    fi
    sleep "$((step / 1000)).$(printf '%03d' $((step % 1000)))" # sleep-ok: the poll interval of a wait on a pid (bash's wait has no timeout)
    waited=$((waited + step))
    step=$((step < 1000 ? step * 2 : 1000))
  done
  wait "$pid"
  TK_RC=$?
  tk_forget "$pid"
}

# tk_start_workers N NAME [worker options...]: start N workers named NAME-1..NAME-N against TK_DSN
# (logs in $dir/NAME-i.log); their pids in TK_WORKERS. tk_stop_workers: SIGTERM them and wait
# (30 s each), printing any that did not exit 0.
tk_start_workers() {
  local n=$1 name=$2 i
  shift 2
  TK_WORKERS=()
  for ((i = 1; i <= n; i++)); do
    "$TK_WORKER" --dsn "$TK_DSN" --name "$name-$i" "$@" >"$dir/$name-$i.log" 2>&1 &
    TK_WORKERS+=($!)
    TK_PIDS+=($!)
  done
}
tk_stop_workers() {
  local p
  for p in "${TK_WORKERS[@]}"; do kill -TERM "$p" 2>/dev/null; done
  for p in "${TK_WORKERS[@]}"; do
    tk_wait_exit "$p" 30
    [ "$TK_RC" = 0 ] || echo "# worker $p: exit $TK_RC"
  done
}

# Checks and the summary line, for suites that count with these (run-all.sh adds up the
# "<suite>: N passed, M failed" lines).
TK_PASSED=0
TK_FAILED=0
TK_SKIPPED=()
# tk_ok NAME STATUS [DETAIL]: passes when STATUS is 0; DETAIL is printed under a failure.
tk_ok() {
  if [ "$2" = 0 ]; then
    echo "ok - $1"
    TK_PASSED=$((TK_PASSED + 1))
  else
    echo "not ok - $1"
    [ -n "${3:-}" ] && printf '%s\n' "$3" | head -20 | sed 's/^/#   /'
    TK_FAILED=$((TK_FAILED + 1))
  fi
  return 0
}
# tk_pass NAME; tk_fail NAME [REASON...]: the two outcomes spelled out, one reason per line.
tk_pass() { tk_ok "$1" 0; }
tk_fail() {
  local name=$1
  shift
  tk_ok "$name" 1 "$(printf '%s\n' "$@")"
}
# tk_ok_if NAME 'SHELL CONDITION': passes when the condition (evaluated here) holds.
tk_ok_if() {
  if eval "$2"; then tk_ok "$1" 0; else tk_ok "$1" 1; fi
}
# tk_sql_ok NAME SQL [DETAIL-SQL]: passes when SQL returns t.
tk_sql_ok() {
  if [ "$(tk_psql -c "$2" 2>&1)" = t ]; then tk_ok "$1" 0; else tk_ok "$1" 1 "$([ -n "${3:-}" ] && tk_psql -c "$3" 2>&1)"; fi
}
# tk_skip NAME REASON: a check that could not run here (what it needs is not at hand), said so
# and counted: printed now as "skip - NAME (REASON)", and named again after the summary line.
tk_skip() {
  echo "skip - $1 ($2)"
  TK_SKIPPED+=("$1")
}
# tk_summary SUITE: the summary line, "SUITE: N passed, M failed" (the format run-all.sh reads),
# then, when checks were skipped, "# skipped: K (NAME; NAME...)" on a line of its own; returns
# non-zero when anything failed or nothing ran.
tk_summary() {
  echo "$1: $TK_PASSED passed, $TK_FAILED failed"
  if ((${#TK_SKIPPED[@]})); then
    local names
    names=$(printf '%s; ' "${TK_SKIPPED[@]}")
    echo "# skipped: ${#TK_SKIPPED[@]} (${names%; })"
  fi
  [ "$TK_FAILED" -eq 0 ] && [ "$TK_PASSED" -gt 0 ]
}
# tk_snowflake_sql AGE N [OFFSET]: SQL for an array of N Snowflake ids of tweets created AGE ago
# (an interval literal), OFFSET+1 .. OFFSET+N in their low bits.
tk_snowflake_sql() {
  local off=${3:-0}
  echo "ARRAY(SELECT (((extract(epoch FROM now() - interval '$1') * 1000)::bigint - 1288834974657) << 22) + g FROM generate_series($((off + 1)), $((off + $2))) g)"
}
# tk_floor_ids_sql N: SQL for an array of N X tweet ids two hours old, made 10 to a millisecond
# (100 s of creation times for a million, the firehose's pace at its busiest), not all in one:
# a million equal keys in the claim's index is no queue a user has. The benches that compare
# versions or shapes on the floor's queue (run.sh, release_ab.sh through it, ...) all use it.
tk_floor_ids_sql() {
  echo "ARRAY(SELECT (((extract(epoch FROM now() - interval '2 hours') * 1000)::bigint - g / 10 - 1288834974657) << 22) + g FROM generate_series(1, $1) g)"
}
# tk_fast_policy_sql [YOUNG_AGE [YOUNG_DELAY]]: SQL that replaces the age policy with the suites'
# fast one: tweets younger than YOUNG_AGE (5 minutes) every YOUNG_DELAY (6 seconds), up to 2 hours
# every 15 seconds, up to 30 days daily. A run of a minute sees many refreshes.
tk_fast_policy_sql() {
  echo "DELETE FROM tweetkeeper.age_policy;
INSERT INTO tweetkeeper.age_policy VALUES ('${1:-5 minutes}', '${2:-6 seconds}'), ('2 hours', '15 seconds'), ('30 days', '1 day');"
}
# tk_fast_queue_sql YOUNG OLDER OLD: SQL that schedules YOUNG tweets made a minute ago (the fast
# policy's first bucket), OLDER made an hour ago (every 15 s) and OLD made 40 days ago (fetched
# once, then done). Their ids start at 1, 5001 and 9001.
tk_fast_queue_sql() {
  echo "SELECT tweetkeeper.schedule_tweets($(tk_snowflake_sql '1 minute' "$1" 0));
SELECT tweetkeeper.schedule_tweets($(tk_snowflake_sql '1 hour' "$2" 5000));"
  [ "${3:-0}" -gt 0 ] && echo "SELECT tweetkeeper.schedule_tweets($(tk_snowflake_sql '40 days' "$3" 9000));"
  return 0
}
# tk_tid_sql: SQL creating public.tid(time, clock id), a Bluesky record key (TID) for them:
# microseconds << 10 | clock id, base32-sortable, 13 characters.
tk_tid_sql() {
  echo "CREATE FUNCTION public.tid(t timestamptz, clock int) RETURNS text LANGUAGE sql IMMUTABLE AS \$\$
  SELECT string_agg(substr('234567abcdefghijklmnopqrstuvwxyz', ((v >> (5 * (12 - i))) & 31)::int + 1, 1), '' ORDER BY i)
    FROM (SELECT ((extract(epoch FROM t) * 1000000)::bigint << 10) | clock AS v) x, generate_series(0, 12) i \$\$;"
}
# tk_bluesky_queue_sql YOUNG OLDER: as tk_fast_queue_sql, for Bluesky posts (at:// URIs by DID,
# record keys of those times, clock ids 1..YOUNG and 1..OLDER); defines public.tid.
tk_bluesky_queue_sql() {
  tk_tid_sql
  tk_bluesky_posts_sql '1 minute' "$1" '1 ms'
  tk_bluesky_posts_sql '1 hour' "$2" '1 ms'
}
# tk_bluesky_posts_sql AGE N STEP: SQL that schedules N Bluesky posts (at:// URIs by DID) made AGE
# ago, STEP apart, clock ids 1.. (mod 1024); needs public.tid (tk_tid_sql).
tk_bluesky_posts_sql() {
  echo "SELECT tweetkeeper.schedule_posts(ARRAY(
  SELECT format('at://did:plc:z72i7hdynmk6r22z27h6tvur/app.bsky.feed.post/%s',
                public.tid(now() - interval '$1' + g * interval '$3', (g % 1024)::int))
    FROM generate_series(1, $2) g));"
}
# tk_mixed_queue_sql N: SQL that schedules N posts of five ages (10 minutes, 30 minutes, 12 hours,
# 3 days, 20 days): 60% X tweets, 30% Bluesky posts (by DID, a microsecond apart), 10% Mastodon
# statuses (ids: ms << 16) on m0.social .. m19.social, a millisecond apart; one call per age and
# network. Needs public.tid (tk_tid_sql). make bench-scale's queue, and the upgrade bench's.
tk_mixed_queue_sql() {
  local x=$(($1 * 6 / 10 / 5)) b=$(($1 * 3 / 10 / 5)) m=$(($1 / 10 / 5)) age i=0
  for age in '10 minutes' '30 minutes' '12 hours' '3 days' '20 days'; do
    echo "SELECT tweetkeeper.schedule_tweets($(tk_snowflake_sql "$age" $x $((i * 20000000))));"
    i=$((i + 1))
  done
  for age in '10 minutes' '30 minutes' '12 hours' '3 days' '20 days'; do
    tk_bluesky_posts_sql "$age" "$b" '1 microsecond'
    echo "SELECT tweetkeeper.schedule_posts(ARRAY(
  SELECT format('https://m%s.social/@u/%s', g % 20,
                ((extract(epoch FROM now() - interval '$age' + g * interval '1 ms') * 1000)::bigint << 16) + g % 65536)
    FROM generate_series(1, $m) g));"
  done
}
# tk_expected_sql DELETED_EVERY PROTECTED_EVERY: SQL for public.expected (tweet_id, state), the
# state each tracked tweet must end in when the mock runs with --deleted-every and
# --protected-every.
tk_expected_sql() {
  echo "CREATE TABLE public.expected AS
SELECT tweet_id,
       CASE WHEN tweet_id % $1 = 7 THEN 'deleted'
            WHEN tweet_id % $2 = 11 THEN 'unavailable'
            WHEN created_at < now() - interval '30 days' THEN 'done'
            ELSE 'scheduled' END AS state
  FROM tweetkeeper.tweets;"
}
# tk_gaps_sql: SQL for the temporary view gaps (tweet_id, gap, delay): the time between each two
# observations of a scheduled tweet, beside the delay its age policy gives it.
tk_gaps_sql() {
  echo "CREATE TEMP VIEW gaps AS
SELECT h.tweet_id, h.observed_at - lag(h.observed_at) OVER w AS gap, tweetkeeper.next_delay(t.created_at) AS delay
  FROM tweetkeeper.metric_history h JOIN tweetkeeper.tweets t USING (tweet_id)
 WHERE t.state = 'scheduled'
WINDOW w AS (PARTITION BY h.tweet_id ORDER BY h.lease_id);"
}
# tk_on_schedule_ok WHAT STOP BOUND: two checks that scheduled tweets were refreshed on time: no
# gap between two observations exceeded the tweet's delay + BOUND (an SQL interval expression),
# and none was overdue by more than BOUND when the run ended at STOP. WHAT names BOUND.
tk_on_schedule_ok() {
  local gaps late
  gaps=$(tk_gaps_sql)
  late="FROM tweetkeeper.tweets WHERE state = 'scheduled' AND due_at < timestamptz '$2' - ($3)"
  tk_sql_ok "no refresh came later than delay + $1" \
    "$gaps SELECT coalesce(bool_and(gap <= delay + ($3)), false) FROM gaps WHERE gap IS NOT NULL" \
    "$gaps SELECT tweet_id, gap, delay FROM gaps WHERE gap > delay + ($3) ORDER BY gap DESC"
  tk_sql_ok "no scheduled tweet was overdue by more than $1 when the run ended" \
    "SELECT count(*) = 0 $late" "SELECT tweet_id, due_at, timestamptz '$2' - due_at AS late $late"
}
# tk_not_across_utc_midnight SECONDS: for a suite whose checks count per UTC day or month (X
# bills a post once per UTC day; caps are monthly): when the next UTC midnight is less than
# SECONDS away, waits until it has passed, so that the suite's run does not straddle it.
tk_not_across_utc_midnight() {
  local now left
  now=$(date -u +%s)
  left=$((86400 - now % 86400))
  if ((left < $1)); then
    echo "# UTC midnight in ${left}s: waiting for it, so that this run counts within one UTC day"
    sleep $((left + 2)) # sleep-ok: the wait is for a time of day (UTC midnight) to pass
  fi
}
# tk_wait_for SECONDS SQL: polls (5 times a second) until SQL answers t; false after SECONDS.
tk_wait_for() { TK_POLL_S=0.2 tk_wait_until "$1" tk_sql_true "$2"; }
# tk_sql_true SQL: SQL answers t.
tk_sql_true() { [ "$(tk_psql -c "$1" 2>/dev/null)" = t ]; }
# tk_snapshot DB FILE [TABLE...]: every row of the extension's tables (by default all of them,
# tk_tables) and the state of its sequences, sorted, to compare two
# databases with diff. TK_COLUMNS[table], when set, names the columns to take (e.g. only those
# an older version had).
declare -A TK_COLUMNS=()
tk_snapshot() {
  local db=$1 out=$2 t
  shift 2
  local tables=("$@")
  ((${#tables[@]})) || read -ra tables <<<"$(tk_tables "$db" r)"
  : >"$out"
  for t in "${tables[@]}"; do
    echo "-- $t" >>"$out"
    tk_psql -d "$db" -c "COPY (SELECT ${TK_COLUMNS[$t]:-*} FROM tweetkeeper.$t) TO STDOUT" | LC_ALL=C sort >>"$out"
  done
  # (TK_SEQUENCES, when set, names the sequences: the upgrade test compares those a release had.)
  for t in ${TK_SEQUENCES-$(tk_tables "$db" S)}; do
    tk_psql -d "$db" -c "SELECT '$t', last_value, is_called FROM tweetkeeper.$t" >>"$out"
  done
}
# tk_tables DB KIND: the extension's tables (KIND r, partitions left out: their parent reads
# them) or sequences (KIND S), by name, on one line.
tk_tables() {
  tk_psql -d "$1" -c "SELECT string_agg(c.relname, ' ' ORDER BY c.relname)
                        FROM pg_depend d JOIN pg_class c ON c.oid = d.objid
                       WHERE d.classid = 'pg_class'::regclass AND d.deptype = 'e'
                         AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'tweetkeeper')
                         AND CASE '$2' WHEN 'r' THEN c.relkind IN ('r', 'p') AND NOT c.relispartition
                                       ELSE c.relkind = '$2' END"
}
# tk_defaults NAME=VALUE...: a script's sizes and settings, in one line: each NAME keeps the value
# the environment gives it (an empty one counts as none) and takes VALUE otherwise, as
# NAME=${NAME:-VALUE} would, one line each.
tk_defaults() {
  local pair name
  for pair in "$@"; do
    name=${pair%%=*}
    [ -n "${!name:-}" ] || printf -v "$name" %s "${pair#*=}"
  done
}
# tk_workdir NAME: sets dir to a fresh directory for this suite; at exit, every process started
# here is stopped, the cluster too (pg_ctl -m TK_STOP_MODE, default fast), and the directory removed (kept, and named, with KEEP=1).
tk_workdir() {
  dir=$(tk_tmpdir "$1")
  trap tk_finish EXIT
}
tk_finish() {
  local node
  tk_cleanup
  tk_pg_stop "$dir" "${TK_STOP_MODE:-fast}"
  for node in "${TK_NODES[@]}"; do "$TK_ROOT/scripts/pg-cluster.sh" stop "$dir/$node" "${TK_STOP_MODE:-fast}"; done
  if [ -n "${KEEP:-}" ]; then echo "# kept $dir"; else rm -rf "$dir"; fi
}

# tk_pg_cpu POSTMASTER_PID: CPU seconds a PostgreSQL cluster has used so far: the postmaster's own
# and its reaped children's (backends that exited), and its live children's (backends, background
# workers, autovacuum). Read it when no client is connected (only PostgreSQL's own processes run):
# a backend's CPU is in the postmaster's cutime only once it is reaped, and one that is exiting
# shows less than it used (measured: up to a backend's whole share missing right after pgbench
# returns). So it first waits, at most 10 s, until no client backend is left (a zombie's cmdline
# is empty; a client backend's is "postgres: USER DATABASE ...").
tk_pg_cpu() {
  local postmaster=$1 c
  tk_wait_until 10 _tk_no_client_backend "$postmaster"
  { cat "/proc/$postmaster/stat"; for c in $(pgrep -P "$postmaster"); do cat "/proc/$c/stat" 2>/dev/null; done; } |
    awk -v hz="$(getconf CLK_TCK)" 'NR == 1 { s += $16 + $17 } { s += $14 + $15 } END { printf "%.3f", s / hz }'
}

_tk_no_client_backend() { # POSTMASTER_PID: none of its children is a client backend (or a zombie)
  local c
  for c in $(pgrep -P "$1"); do
    case "$(tr '\0' ' ' 2>/dev/null <"/proc/$c/cmdline")" in
      "postgres: "*" tweetkeeper "* | "postgres: "*" postgres "* | "") return 1 ;;
    esac
  done
  return 0
}

# tk_per_refresh_us CPU_SECONDS REFRESHES: microseconds of CPU per refresh, rounded (0 when none).
tk_per_refresh_us() { awk -v c="$1" -v n="$2" 'BEGIN { printf "%.0f", (n > 0 ? c * 1e6 / n : 0) }'; }
