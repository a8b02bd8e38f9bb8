#!/usr/bin/env bash
# tweetkeeper-worker's command line and environment, as an operator meets them (the regular
# build: TK_BUILD, default build/). Every refusal must be: the documented exit status (2 usage,
# 1 runtime), exactly one line on stderr naming the offending value, nothing on stdout, and
# never the bearer token or the database password. Then a live worker (throwaway cluster with
# the extension, due tweets, an API URL on a closed local port) must keep the token out of
# `ps` and out of its log at trace level, and exit 0 on SIGTERM.
# Prints "ok"/"not ok" lines and "cli: N passed, M failed"; exits 1 on any failure.
set -uo pipefail
source "$(dirname "$0")/../lib/common.sh"

TOKEN="tk-cli-token-$$-${RANDOM}${RANDOM}"
PASSWORD="Pw${RANDOM}${RANDOM}cli"
T="TWEETKEEPER_BEARER_TOKEN=$TOKEN"
CLOSED_URL=http://127.0.0.1:1 # nothing listens on port 1: connection refused at once

TK_STOP_MODE=immediate
tk_workdir cli

if [ ! -x "$TK_WORKER" ]; then
  tk_fail "worker binary" "$TK_WORKER is missing: build first (make build, or TK_BUILD=dir)"
  tk_summary cli
  exit 1
fi

# Neither the token nor the password (nor their first 12 characters) in FILE...
leaks() {
  local f
  for f in "$@"; do
    grep -qF -- "${TOKEN:0:12}" "$f" && echo "the bearer token is printed ($(basename "$f"))"
    grep -qF -- "$PASSWORD" "$f" && echo "the database password is printed ($(basename "$f"))"
  done
}

# expect NAME WANT_RC TEXT [VAR=VALUE...] -- ARGS...: run the worker with only the given
# environment (plus PATH/HOME/LANG) and check the refusal.
expect() {
  local name=$1 want_rc=$2 text=$3
  shift 3
  local envs=()
  while [ "$1" != -- ]; do envs+=("$1"); shift; done
  shift
  env -i PATH="$PATH" HOME="${HOME:-/root}" LANG=C.UTF-8 "${envs[@]}" \
    timeout 30 "$TK_WORKER" "$@" >"$dir/stdout" 2>"$dir/stderr"
  local rc=$? problems=()
  [ "$rc" = "$want_rc" ] || problems+=("exit status $rc, want $want_rc")
  local lines
  lines=$(grep -c '' "$dir/stderr")
  [ "$lines" -eq 1 ] || problems+=("$lines lines on stderr, want exactly 1")
  [ -s "$dir/stdout" ] && problems+=("stdout is not empty")
  grep -qF -- "$text" "$dir/stderr" || problems+=("stderr does not name: $text")
  while IFS= read -r l; do problems+=("$l"); done < <(leaks "$dir/stdout" "$dir/stderr")
  if ((${#problems[@]})); then
    tk_fail "$name" "${problems[@]}" "stderr: $(head -c 600 "$dir/stderr")"
  else
    tk_pass "$name"
  fi
}

D="host=/nonexistent dbname=tweetkeeper password=$PASSWORD" # valid syntax; never reached

# --- usage errors: exit 2 ---------------------------------------------------------------------
expect "--dsn-file that does not exist" 2 "--dsn-file /nonexistent/dsn: cannot open it" "$T" -- --dsn-file /nonexistent/dsn
expect "--dsn and --dsn-file" 2 "--dsn and --dsn-file are both given" "$T" -- --dsn "$D" --dsn-file /nonexistent/dsn
expect "empty --dsn" 2 "--dsn" "$T" -- --dsn ""
expect "malformed --dsn (unknown keyword)" 2 "bogus" "$T" -- --dsn "host=db bogus=1 password=$PASSWORD"
expect "malformed --dsn (unterminated quote)" 2 "--dsn" "$T" -- --dsn "host=db password='$PASSWORD"
expect "malformed --dsn URI (password in it)" 2 "--dsn" "$T" -- --dsn "postgresql://u:$PASSWORD@[db/x"
expect "malformed --dsn URI (bad %-escape)" 2 "--dsn" "$T" -- --dsn "postgresql://u:${PASSWORD}%zz@db/x"
for url in "ftp://x" "http://" "not a url" "http://host:99999" "http://host:0" "https://api.x.com?x=1"; do
  expect "malformed --api-url '$url'" 2 "'$url'" "$T" -- --dsn "$D" --api-url "$url"
done
expect "--api-url with user info: refused, not echoed" 2 "--api-url" "$T" -- \
  --dsn "$D" --api-url "https://u:$PASSWORD@api.x.com"
expect "TWEETKEEPER_BEARER_TOKEN missing" 2 "TWEETKEEPER_BEARER_TOKEN" -- --dsn "$D"
expect "TWEETKEEPER_BEARER_TOKEN empty" 2 "TWEETKEEPER_BEARER_TOKEN" TWEETKEEPER_BEARER_TOKEN= -- --dsn "$D"
expect "TWEETKEEPER_BEARER_TOKEN with a newline: refused, not echoed" 2 "TWEETKEEPER_BEARER_TOKEN" \
  "TWEETKEEPER_BEARER_TOKEN=$TOKEN"$'\n' -- --dsn "$D"
for v in 0 65 -1 abc 1.5 ""; do
  expect "--concurrency '$v'" 2 "--concurrency" "$T" -- --dsn "$D" --concurrency "$v"
done
for v in 0 101 x; do
  expect "--batch-size '$v'" 2 "--batch-size: Value $v" "$T" -- --dsn "$D" --batch-size "$v"
done
expect "--concurrency names its value" 2 "Value 0" "$T" -- --dsn "$D" --concurrency 0
expect "--http-timeout 0" 2 "--http-timeout" "$T" -- --dsn "$D" --http-timeout 0
expect "--log-level loud" 2 "loud" "$T" -- --dsn "$D" --log-level loud
expect "unknown option" 2 "--bogus" "$T" -- --dsn "$D" --bogus
expect "stray argument" 2 "extra" "$T" -- --dsn "$D" extra
# An operator who forgets to quote a key=value DSN: the shell splits it, CLI11 quotes the stray
# words, the password among them.
expect "unquoted --dsn: stray password=... not echoed" 2 "not expected" "$T" -- \
  --dsn host=db "password=$PASSWORD" dbname=tweetkeeper
expect "a value with a newline stays on one line (--api-url)" 2 "--api-url" "$T" -- \
  --dsn "$D" --api-url $'http://a\nb'
expect "a value with a newline stays on one line (--concurrency)" 2 "--concurrency" "$T" -- \
  --dsn "$D" --concurrency $'1\n2'

# --help: exit 0, on stdout, names the token's variable (and never needs it).
env -i PATH="$PATH" "$TK_WORKER" --help >"$dir/stdout" 2>"$dir/stderr"
rc=$?
if [ "$rc" -eq 0 ] && grep -q TWEETKEEPER_BEARER_TOKEN "$dir/stdout" && [ ! -s "$dir/stderr" ]; then
  tk_pass "--help exits 0 and mentions TWEETKEEPER_BEARER_TOKEN"
else
  tk_fail "--help exits 0 and mentions TWEETKEEPER_BEARER_TOKEN" "exit $rc, stderr: $(head -c 300 "$dir/stderr")"
fi

# --- a database that is not there: waited for, up to --startup-timeout; then exit 1 ----------------
# expect_wait NAME TEXT -- ARGS...: exit 1 after the wait, with exactly two lines on stderr: one
# "waiting" line (however many retries), then the reason naming TEXT.
expect_wait() {
  local name=$1 text=$2
  shift 3
  env -i PATH="$PATH" HOME="${HOME:-/root}" LANG=C.UTF-8 "$T" \
    timeout 30 "$TK_WORKER" "$@" >"$dir/stdout" 2>"$dir/stderr"
  local rc=$? problems=()
  [ "$rc" = 1 ] || problems+=("exit status $rc, want 1")
  [ "$(grep -c '' "$dir/stderr")" -eq 2 ] || problems+=("$(grep -c '' "$dir/stderr") lines on stderr, want 2")
  [ "$(grep -c 'waiting for it' "$dir/stderr")" -eq 1 ] || problems+=("not exactly one 'waiting' line")
  tail -1 "$dir/stderr" | grep -q -- "--startup-timeout.*$text" || problems+=("the last line does not name --startup-timeout and $text")
  while IFS= read -r l; do problems+=("$l"); done < <(leaks "$dir/stdout" "$dir/stderr")
  if ((${#problems[@]})); then tk_fail "$name" "${problems[@]}" "stderr: $(head -c 600 "$dir/stderr")"; else tk_pass "$name"; fi
}
expect_wait "unreachable database (no such socket directory): waited for, then exit 1" "/nonexistent" -- \
  --dsn "$D" --api-url "$CLOSED_URL" --startup-timeout 2
expect_wait "unreachable database (TCP, connection refused): waited for, then exit 1" "127.0.0.1" -- \
  --dsn "host=127.0.0.1 port=1 dbname=tweetkeeper password=$PASSWORD connect_timeout=5" --api-url "$CLOSED_URL" \
  --startup-timeout 2
expect "--startup-timeout -1" 2 "--startup-timeout" "$T" -- --dsn "$D" --startup-timeout -1
# The follower (--follow) waits for the database as the refresher does (worker/service/connect).
expect_wait "follower, unreachable database: waited for, then exit 1" "/nonexistent" -- \
  --follow --dsn "$D" --api-url "$CLOSED_URL" --startup-timeout 2

# --- a live worker --------------------------------------------------------------------------------
if ! tk_pg_start "$dir" -c tweetkeeper.buffer_ttl=0 >"$dir/pg-start.log" 2>&1 ||
   ! tk_psql -c "CREATE EXTENSION tweetkeeper" >/dev/null; then
  tk_fail "throwaway cluster with the extension" "$(tail -5 "$dir/pg-start.log")"
  tk_summary cli
  exit 1
fi
expect "database without the extension" 1 "CREATE EXTENSION" "$T" -- \
  --dsn "host=$PGHOST port=$PGPORT user=postgres dbname=postgres password=$PASSWORD" --api-url "$CLOSED_URL"
# What waiting cannot fix: exit 1 at once (expect's `timeout 30` would show a wait), one line.
tk_psql -c "CREATE ROLE tk_nogrants LOGIN; CREATE ROLE tk_pw LOGIN PASSWORD 'right' IN ROLE tweetkeeper_worker" >/dev/null
sed -i '1i local all tk_pw scram-sha-256' "$dir/pg/data/pg_hba.conf"
tk_psql -c "SELECT pg_reload_conf()" >/dev/null
expect "a wrong password: exit 1 at once" 1 "password authentication failed" "$T" -- \
  --dsn "host=$PGHOST port=$PGPORT user=tk_pw dbname=tweetkeeper password=$PASSWORD" --api-url "$CLOSED_URL"
expect "a database that does not exist: exit 1 at once" 1 'database "nosuchdb" does not exist' "$T" -- \
  --dsn "host=$PGHOST port=$PGPORT user=postgres dbname=nosuchdb password=$PASSWORD" --api-url "$CLOSED_URL"
expect "a role without the worker grants: exit 1 at once, naming the GRANT" 1 "GRANT tweetkeeper_worker TO \"tk_nogrants\"" "$T" -- \
  --dsn "host=$PGHOST port=$PGPORT user=tk_nogrants dbname=tweetkeeper password=$PASSWORD" --api-url "$CLOSED_URL"
# ... and so does the follower: a refused login is not waited for (it was, forever, before 0.5.0).
expect "follower, a wrong password: exit 1 at once" 1 "password authentication failed" "$T" -- --follow \
  --dsn "host=$PGHOST port=$PGPORT user=tk_pw dbname=tweetkeeper password=$PASSWORD" --api-url "$CLOSED_URL"
expect "follower, a role without the grants: exit 1 at once" 1 "may not follow accounts" "$T" -- --follow \
  --dsn "host=$PGHOST port=$PGPORT user=tk_nogrants dbname=tweetkeeper password=$PASSWORD" --api-url "$CLOSED_URL"

# Due tweets (created an hour ago), so the worker claims them and sends requests with the token.
tk_psql -c "SELECT tweetkeeper.schedule_tweets($(tk_snowflake_sql '1 hour' 20))" >/dev/null
env -i PATH="$PATH" HOME="${HOME:-/root}" "$T" "$TK_WORKER" --dsn "$TK_DSN password=$PASSWORD" \
  --api-url "$CLOSED_URL" --concurrency 2 --batch-size 10 --http-timeout 2 --poll-interval 100 \
  --log-level trace >"$dir/worker.log" 2>&1 &
worker=$!
TK_PIDS+=("$worker")
# failed_or_gone LOG PID: a request has failed (and so has been made), or the worker is gone.
failed_or_gone() { tk_log_has "$1" 'API request for .* failed' || ! kill -0 "$2" 2>/dev/null; }
tk_wait_until 10 failed_or_gone "$dir/worker.log" "$worker"
if grep -q 'API request for .* failed' "$dir/worker.log" && kill -0 "$worker" 2>/dev/null; then
  tk_pass "live worker: claims, requests the closed API port, keeps running"
else
  tk_fail "live worker: claims, requests the closed API port, keeps running" "$(tail -5 "$dir/worker.log")"
fi

ps_ok=0
ps -ww -eo pid,args >"$dir/ps.txt" 2>&1 && grep -q "^ *$worker " "$dir/ps.txt" && ps_ok=1
cmdline=$(tr '\0' ' ' <"/proc/$worker/cmdline" 2>/dev/null)
if [ "$ps_ok" = 0 ]; then
  tk_fail "the token is not in ps -ww -eo args nor /proc/PID/cmdline" \
    "ps did not list the worker (Debian: procps): $(head -c 200 "$dir/ps.txt")"
elif [ -n "$cmdline" ] && ! grep -qF -- "$TOKEN" "$dir/ps.txt" && [[ $cmdline != *"$TOKEN"* ]]; then
  tk_pass "the token is not in ps -ww -eo args nor /proc/PID/cmdline"
else
  tk_fail "the token is not in ps -ww -eo args nor /proc/PID/cmdline" "$(grep -F -- "$TOKEN" "$dir/ps.txt" | head -2)"
fi

kill -TERM "$worker"
tk_wait_exit "$worker" 20
if [ "$TK_RC" = 0 ]; then
  tk_pass "SIGTERM: exit 0"
else
  tk_fail "SIGTERM: exit 0" "exit status $TK_RC" "$(tail -3 "$dir/worker.log")"
fi
leaked=$(leaks "$dir/worker.log")
if [ -z "$leaked" ] && [ -s "$dir/worker.log" ]; then
  tk_pass "the token and the password are not in the log (trace level, $(grep -c '' "$dir/worker.log") lines)"
else
  mapfile -t lines <<<"${leaked:-the log is empty}"
  tk_fail "the token and the password are not in the log" "${lines[@]}"
fi
leased=$(tk_psql -c "SELECT count(*) FROM tweetkeeper.tweets WHERE lease_id IS NOT NULL")
if [ "$leased" = 0 ]; then
  tk_pass "failed requests handed their batches back (nothing left leased)"
else
  tk_fail "failed requests handed their batches back (nothing left leased)" "$leased tweets still leased"
fi

# An API (or a proxy in front of it) whose error page echoes the request headers: the worker
# quotes error bodies in its log and in batches.reason, but must not copy the token there.
name="an error page echoing the Authorization header: token not in the log nor batches.reason"
if ! command -v python3 >/dev/null; then
  tk_fail "$name" "python3 is missing (Debian: python3)"
else
  python3 "$TK_ROOT/tests/cli/echo_api.py" 0 >"$dir/echo.out" 2>"$dir/echo.log" &
  TK_PIDS+=($!)
  tk_wait_until 5 tk_log_has "$dir/echo.out" '^listening on http'
  echo_url=$(sed -n 's/^listening on \(http[^ ]*\).*/\1/p' "$dir/echo.out")
  env -i PATH="$PATH" HOME="${HOME:-/root}" "$T" "$TK_WORKER" --dsn "$TK_DSN" --api-url "$echo_url" \
    --concurrency 1 --batch-size 10 --http-timeout 5 --poll-interval 100 --log-level trace >"$dir/worker-echo.log" 2>&1 &
  worker=$!
  TK_PIDS+=("$worker")
  tk_wait_until 10 failed_or_gone "$dir/worker-echo.log" "$worker"
  kill -TERM "$worker" 2>/dev/null
  tk_wait_exit "$worker" 20
  tk_psql -c "SELECT coalesce(string_agg(reason, E'\n'), '') FROM tweetkeeper.batches" >"$dir/reasons.txt"
  leaked=$(leaks "$dir/worker-echo.log" "$dir/reasons.txt")
  if [ -z "$echo_url" ] || ! grep -q 'HTTP 502' "$dir/worker-echo.log"; then
    tk_fail "$name" "the worker never got the echo API's 502 ($echo_url)" "$(tail -3 "$dir/worker-echo.log")"
  elif [ -n "$leaked" ]; then
    mapfile -t lines <<<"$leaked"
    tk_fail "$name" "${lines[@]}" "$(grep -m1 'HTTP 502' "$dir/worker-echo.log" | cut -c1-300)"
  else
    tk_pass "$name"
  fi
fi

# --- started while PostgreSQL is down, then while it is a standby: waits, then works ----------------
# wait_log FILE PATTERN SECONDS: until the worker's log has PATTERN.
wait_log() { tk_wait_until "$3" tk_log_has "$1" "$2"; }
tk_pg_stop "$dir"
# First one that gives up after 4 s (--startup-timeout): its exit ends the wait, and by then it
# has tried at 0, 0.5, 1.5 and 3.5 s (backoff 0.5, 1, 2 s ...): several attempts, one line.
env -i PATH="$PATH" HOME="${HOME:-/root}" "$T" "$TK_WORKER" --dsn "$TK_DSN" --api-url "$CLOSED_URL" \
  --concurrency 2 --batch-size 10 --http-timeout 2 --poll-interval 100 --startup-timeout 4 >"$dir/worker-gives-up.log" 2>&1 &
worker=$!
TK_PIDS+=("$worker")
tk_wait_exit "$worker" 30
waits=$(grep -c 'waiting for it' "$dir/worker-gives-up.log")
if [ "$TK_RC" = 1 ] && [ "$waits" = 1 ] && grep -q 'database unreachable' "$dir/worker-gives-up.log" &&
   grep -Eq 'database still unreachable .* after 4 s \(--startup-timeout\)' "$dir/worker-gives-up.log"; then
  tk_pass "started while PostgreSQL is down: the worker waits, saying so once in 4 s of retries, then gives up (--startup-timeout)"
else
  tk_fail "started while PostgreSQL is down: the worker waits, saying so once in 4 s of retries, then gives up (--startup-timeout)" \
    "exit $TK_RC, $waits waiting lines" "$(tail -3 "$dir/worker-gives-up.log")"
fi
# Then one that waits for as long as it takes: said once, and still running.
env -i PATH="$PATH" HOME="${HOME:-/root}" "$T" "$TK_WORKER" --dsn "$TK_DSN" --api-url "$CLOSED_URL" \
  --concurrency 2 --batch-size 10 --http-timeout 2 --poll-interval 100 >"$dir/worker-wait.log" 2>&1 &
worker=$!
TK_PIDS+=("$worker")
if wait_log "$dir/worker-wait.log" 'database unreachable.*waiting for it' 20 && kill -0 "$worker" 2>/dev/null; then
  tk_pass "without --startup-timeout it waits on"
else
  tk_fail "without --startup-timeout it waits on" "$(tail -3 "$dir/worker-wait.log")"
fi
# A server that is ready by the time the worker asks why its attempt failed (PQping says up):
# the attempt's "the database system is starting up" (57P03) is still a reason to wait, not a
# refused login. (tests/cli/starting_pg.py makes that race happen on every attempt.)
python3 "$TK_ROOT/tests/cli/starting_pg.py" "$dir/starting" >"$dir/starting.out" 2>&1 &
TK_PIDS+=($!)
tk_wait_until 5 tk_log_has "$dir/starting.out" '^listening'
env -i PATH="$PATH" HOME="${HOME:-/root}" "$T" "$TK_WORKER" --dsn "host=$dir/starting port=5432 dbname=tweetkeeper user=x" \
  --api-url "$CLOSED_URL" --startup-timeout 3 >"$dir/worker-starting.log" 2>&1 &
starting=$!
TK_PIDS+=("$starting")
tk_wait_exit "$starting" 30
name="a server that is starting up when the worker tries, and up when it asks why: the worker waits (--startup-timeout 3)"
if [ "$TK_RC" = 1 ] && grep -q 'database not accepting connections yet.*waiting for it' "$dir/worker-starting.log" &&
   grep -Eq 'database still not accepting connections yet .* after 3 s \(--startup-timeout\)' "$dir/worker-starting.log"; then
  tk_pass "$name"
else
  tk_fail "$name" "exit $TK_RC" "$(tail -3 "$dir/worker-starting.log")"
fi
# Back as a standby (in recovery, read-only): a new state, said once more; promoted: it works.
touch "$dir/pg/data/standby.signal"
chown postgres "$dir/pg/data/standby.signal" 2>/dev/null
tk_pg_start "$dir" >/dev/null 2>&1
if wait_log "$dir/worker-wait.log" 'database in recovery' 40 && kill -0 "$worker" 2>/dev/null; then
  tk_pass "PostgreSQL back as a standby: the worker says it waits for recovery to end"
else
  tk_fail "PostgreSQL back as a standby: the worker says it waits for recovery to end" "$(tail -3 "$dir/worker-wait.log")"
fi
runuser -u postgres -- "$(pg_config --bindir)/pg_ctl" -D "$dir/pg/data" promote -w >/dev/null 2>&1
if wait_log "$dir/worker-wait.log" 'database available after' 40 && wait_log "$dir/worker-wait.log" 'API request for .* failed' 20; then
  tk_pass "promoted: the worker connects and claims ($(grep -c 'waiting for it' "$dir/worker-wait.log") waiting lines in all)"
else
  tk_fail "promoted: the worker connects and claims" "$(tail -3 "$dir/worker-wait.log")"
fi
kill -TERM "$worker"
tk_wait_exit "$worker" 20
if [ "$TK_RC" = 0 ]; then tk_pass "and exits 0 on SIGTERM"; else tk_fail "and exits 0 on SIGTERM" "exit $TK_RC"; fi

tk_summary cli
