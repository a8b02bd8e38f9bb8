#!/usr/bin/env bash
# tweetkeeper-warc purge (and the worker's --warc-purge-interval): a worker records its X
# exchanges with the mock (payloads on, every other answer gzip-compressed and chunked) into WARC
# files rolled over every second; then some posts are found gone (deleted, or private/suspended):
# those of one whole answer, and one in five of the others. The purge, run with a reader's role,
# must leave every file readable (bsdtar, warcio.js, and record by record:
# tests/integration/warc_purge_check.py) with exactly the posts that stay, the captures of only
# gone posts dropped, the others rewritten and said so, and purge.log naming each post removed.
# The crash test: the purge SIGKILLs itself after step N (TWEETKEEPER_WARC_PURGE_KILL_AFTER), for
# every N until a run ends by itself: after each kill every file is still there (the old one or
# the new one, whole), and a second run finishes the job as if nothing had happened. Also:
# deleted_payloads = keep purges nothing (and --force does), a second run changes nothing, and
# a worker with --warc-purge-interval purges its directory by itself, with a reader's login.
# Prints "warc-purge: N passed, M failed".
set -uo pipefail
source "$(dirname "$0")/../lib/common.sh"
TK_WARC=${TK_WARC:-$TK_BUILD/worker/tweetkeeper-warc}
TOKEN=warc-purge-token-0123456789abcdef
tk_workdir warc_purge
tk_pg_start "$dir" -c tweetkeeper.buffer_ttl=1s -c tweetkeeper.lease_ttl=30s || exit 1
tk_mock_start "$dir/mock.log" --token "$TOKEN" --gzip-every 2 || exit 1
tk_psql >/dev/null <<SQL || exit 1
CREATE EXTENSION tweetkeeper;
ALTER DATABASE tweetkeeper SET tweetkeeper.payloads = 'changed';
$(tk_fast_policy_sql)
SELECT tweetkeeper.schedule_tweets($(tk_snowflake_sql '1 minute' 200));
CREATE ROLE purger LOGIN IN ROLE tweetkeeper_reader;
CREATE ROLE purge_worker LOGIN IN ROLE tweetkeeper_worker;
SQL
READER_DSN="host=$PGHOST port=$PGPORT user=purger dbname=tweetkeeper"
pristine=$dir/pristine
mkdir -p "$pristine"
export TWEETKEEPER_BEARER_TOKEN=$TOKEN
"$TK_WORKER" --dsn "$TK_DSN" --api-url "$TK_MOCK_URL" --batch-size 20 --concurrency 2 --name purge-rec \
  --poll-interval 200 --warc-dir "$pristine" --warc-rollover 1 --warc-purge-interval 0 >"$dir/worker.log" 2>&1 &
w=$!
TK_PIDS+=($w)
# Until every post was read twice (30 batches of 20) and at least 4 files are closed.
recorded() {
  [ "$(ls "$pristine" | grep -c '\.warc\.gz$')" -ge 4 ] &&
    tk_sql_true "SELECT count(*) >= 30 FROM tweetkeeper.batches WHERE outcome = 'completed'"
}
TK_POLL_S=0.2 tk_wait_until 60 recorded
kill -TERM "$w"
tk_wait_exit "$w" 30
tk_forget "$w"
n_files=$(ls "$pristine"/*.warc.gz | wc -l)
[ "$TK_RC" = 0 ] && [ "$n_files" -ge 4 ]
tk_ok "a worker recorded its exchanges into $n_files closed files" $? "$(tail -5 "$dir/worker.log")"

# Gone: every post of the first answer of the first file, and one post in five of the others'
# (each answer holds 20): deleted (X's resource-not-found) or, one in two, private or suspended.
python3 "$TK_ROOT/tests/integration/warc_purge_check.py" --pick "$pristine" >"$dir/marked.txt"
n_marked=$(wc -l <"$dir/marked.txt")
ids=$(paste -sd, "$dir/marked.txt")
tk_psql >/dev/null <<SQL
UPDATE tweetkeeper.tweets SET state = 'deleted', due_at = NULL, problem_type = 'resource-not-found', problem_at = now()
 WHERE tweet_id = ANY('{$ids}'::bigint[]) AND tweet_id % 2 = 0;
UPDATE tweetkeeper.tweets SET state = 'unavailable', problem_type = 'not-authorized-for-resource', problem_at = now()
 WHERE tweet_id = ANY('{$ids}'::bigint[]) AND tweet_id % 2 = 1;
SQL
# (The mock's own deleted and protected posts are gone too: the purge takes what the view says.)
tk_psql -c "SELECT post_id FROM tweetkeeper.post_availability WHERE gone_since IS NOT NULL" >"$dir/gone.txt"
n_gone=$(wc -l <"$dir/gone.txt")
missing=$(sort "$dir/marked.txt" | comm -23 - <(sort "$dir/gone.txt") | wc -l)
[ "$n_marked" -ge 30 ] && [ "$missing" = 0 ]
tk_ok "$n_marked posts found gone in the recorded answers ($n_gone gone in post_availability, with the mock's own)" $?

npm_prefix=${TK_NPM_PREFIX:-$TK_BUILD/npm}
if [ ! -f "$npm_prefix/node_modules/warcio/package.json" ]; then
  mkdir -p "$npm_prefix"
  npm install --prefix "$npm_prefix" --no-audit --no-fund --loglevel=error warcio@2.4.11 >"$dir/npm.log" 2>&1
fi
# check DIR [--names-only]: sets $problems, the problems of DIR against the pristine files (0:
# none), bsdtar's and warcio.js's included, and $checked, what they said (the checker's first line:
# captures, dropped, rewritten, problems).
check() {
  local d=$1 bsd=0 js py
  checked=$(python3 "$TK_ROOT/tests/integration/warc_purge_check.py" "$pristine" "$d" "$dir/gone.txt" "$TOKEN" ${2:-} 2>&1)
  read -r _ _ _ py <<<"$(echo "$checked" | head -1)"
  for f in "$d"/*.warc.gz; do bsdtar -tf "$f" >/dev/null 2>&1 || bsd=$((bsd + 1)); done
  js=$(node "$TK_ROOT/tests/integration/warcio_check.cjs" "$npm_prefix" "$d"/*.warc.gz 2>&1 | head -3)
  read -r _ _ _ js_problems _ <<<"$(echo "$js" | head -1)"
  [[ "$py" =~ ^[0-9]+$ ]] || py=1
  [[ "${js_problems:-}" =~ ^[0-9]+$ ]] || js_problems=1
  problems=$((py + bsd + js_problems))
  checked="$checked; bsdtar failed on $bsd; warcio.js: $js"
}

# A worker's login (tweetkeeper_worker only) cannot read which posts are gone: said, exit 1.
cp -a "$pristine" "$dir/worker-role"
"$TK_WARC" purge --dsn "host=$PGHOST port=$PGPORT user=purge_worker dbname=tweetkeeper" --warc-dir "$dir/worker-role" \
  >"$dir/worker-role.out" 2>&1
rc=$?
[ "$rc" = 1 ] && grep -q "cannot read tweetkeeper.post_availability (it needs tweetkeeper_reader" "$dir/worker-role.out" &&
  diff -r "$pristine" "$dir/worker-role" >/dev/null
tk_ok "a worker's login: nothing purged, and it says which role it needs (exit $rc)" $? "$(cat "$dir/worker-role.out")"

# deleted_payloads = keep: nothing purged, said, exit 0; --dry-run says what would go.
tk_psql -c "ALTER DATABASE tweetkeeper SET tweetkeeper.deleted_payloads = 'keep'" >/dev/null
cp -a "$pristine" "$dir/keep"
"$TK_WARC" purge --dsn "$READER_DSN" --warc-dir "$dir/keep" >"$dir/keep.out" 2>&1
rc=$?
[ "$rc" = 0 ] && grep -q "deleted_payloads is 'keep'.*nothing purged" "$dir/keep.out" && diff -r "$pristine" "$dir/keep" >/dev/null
tk_ok "deleted_payloads = keep: nothing purged, and said (exit $rc)" $? "$(cat "$dir/keep.out")"
"$TK_WARC" purge --dsn "$READER_DSN" --warc-dir "$dir/keep" --force >"$dir/force.out" 2>&1
rc=$?
check "$dir/keep"
[ "$rc" = 0 ] && [ "$problems" = 0 ]
tk_ok "--force purges anyway: $(echo "$checked" | head -1) (captures, dropped, rewritten, problems)" $? "$checked $(cat "$dir/force.out")"
tk_psql -c "ALTER DATABASE tweetkeeper RESET tweetkeeper.deleted_payloads" >/dev/null

cp -a "$pristine" "$dir/dry"
"$TK_WARC" purge --dsn "$READER_DSN" --warc-dir "$dir/dry" --dry-run >"$dir/dry.out" 2>"$dir/dry.err"
rc=$?
dry_lines=$(grep -c '"state":"dry-run"' "$dir/dry.out")
rm -f "$dir/dry/.purge.lock"
[ "$rc" = 0 ] && [ "$dry_lines" -ge "$n_gone" ] && diff -r "$pristine" "$dir/dry" >/dev/null
tk_ok "--dry-run names what would go ($dry_lines lines) and changes nothing" $? "$(cat "$dir/dry.err")"

# The purge by hand, with a reader's role; then again: nothing left to do.
cp -a "$pristine" "$dir/hand"
"$TK_WARC" purge --dsn "$READER_DSN" --warc-dir "$dir/hand" >"$dir/hand.out" 2>&1
rc=$?
check "$dir/hand"
read -r caps dropped rewritten _ <<<"$(echo "$checked" | head -1)"
[ "$rc" = 0 ] && [ "$problems" = 0 ] && [ "${dropped:-0}" -ge 1 ] && [ "${rewritten:-0}" -ge 10 ]
tk_ok "purged by hand: $caps captures left, $dropped dropped whole, $rewritten rewritten (each with its metadata record); every file read whole by the checker, bsdtar and warcio.js; purge.log names each post removed" $? \
  "$checked $(cat "$dir/hand.out")"
ls -li "$dir/hand" >"$dir/hand.before"
"$TK_WARC" purge --dsn "$READER_DSN" --warc-dir "$dir/hand" >"$dir/again.out" 2>&1
rc=$?
ls -li "$dir/hand" | grep -v purge.log >"$dir/hand.after"
[ "$rc" = 0 ] && grep -q " 0 rewritten" "$dir/again.out" && diff <(grep -v purge.log "$dir/hand.before") "$dir/hand.after" >/dev/null
tk_ok "a second run changes nothing (the same files, the same inodes)" $? "$(cat "$dir/again.out")"

# The crash test: SIGKILL after step N, for N = 1, 2, ... until a run ends by itself; after each
# kill every file is there and whole (old or new), then a run without a kill finishes the job.
steps=0 kills=0 bad_kill=0 bad_after=0 bad_finish=0 first_bad=""
for n in $(seq 1 400); do
  rm -rf "$dir/crash"
  cp -a "$pristine" "$dir/crash"
  # (In a subshell of its own, whose stderr is dropped: bash's "Killed" line for each kill.)
  (TWEETKEEPER_WARC_PURGE_KILL_AFTER=$n "$TK_WARC" purge --dsn "$READER_DSN" --warc-dir "$dir/crash" >"$dir/crash.out" 2>&1
   exit $?) 2>/dev/null
  rc=$?
  if [ "$rc" = 0 ]; then
    steps=$((n - 1))
    break
  fi
  if [ "$rc" != 137 ]; then
    bad_kill=$((bad_kill + 1)); first_bad=${first_bad:-"step $n: exit $rc: $(cat "$dir/crash.out")"}
    continue
  fi
  kills=$((kills + 1))
  check "$dir/crash" --names-only
  [ "$problems" = 0 ] || { bad_after=$((bad_after + 1)); first_bad=${first_bad:-"after the kill at step $n: $checked"}; }
  "$TK_WARC" purge --dsn "$READER_DSN" --warc-dir "$dir/crash" >"$dir/crash.out" 2>&1
  rc=$?
  check "$dir/crash"
  [ "$rc" = 0 ] && [ "$problems" = 0 ] || { bad_finish=$((bad_finish + 1)); first_bad=${first_bad:-"the run after the kill at step $n: exit $rc, $checked"}; }
done
[ "$steps" -eq $((7 * n_files)) ] && [ "$kills" = "$steps" ] && [ "$bad_kill$bad_after$bad_finish" = 000 ]
tk_ok "SIGKILL after each of the purge's $steps steps ($kills kills): every file there and whole after each, and the next run leaves exactly what a run without a kill does" $? \
  "steps $steps, kills $kills, exits not SIGKILL $bad_kill, broken after a kill $bad_after, not finished by the next run $bad_finish: $first_bad"

# The worker purges its own directory (--warc-purge-interval): at its start, then on its cadence.
cp -a "$pristine" "$dir/worker"
# (Its purge reads with the reader's login given in a file, --warc-purge-dsn-file.)
echo "$READER_DSN" >"$dir/reader.dsn"
chmod 600 "$dir/reader.dsn"
"$TK_WORKER" --dsn "$TK_DSN" --api-url "$TK_MOCK_URL" --batch-size 20 --name purge-w --poll-interval 200 \
  --warc-dir "$dir/worker" --warc-purge-interval 3600 --warc-purge-dsn-file "$dir/reader.dsn" >"$dir/worker-purge.log" 2>&1 &
w=$!
TK_PIDS+=($w)
TK_POLL_S=0.2 tk_wait_until 30 tk_log_has "$dir/worker-purge.log" "WARC purge: .* rewritten"
kill -TERM "$w"
tk_wait_exit "$w" 30
tk_forget "$w"
mkdir -p "$dir/worker-old"
for f in "$pristine"/*.warc.gz; do cp -a "$dir/worker/$(basename "$f")" "$dir/worker-old/"; done
cp "$dir/worker/purge.log" "$dir/worker-old/"
check "$dir/worker-old"
[ "$TK_RC" = 0 ] && [ "$problems" = 0 ] && grep -q "WARC purge: $n_gone posts gone; .* $n_files rewritten" "$dir/worker-purge.log"
tk_ok "a worker with --warc-purge-interval purges the closed files of its directory by itself" $? \
  "$checked $(grep -i purge "$dir/worker-purge.log" | tail -3)"
# Bluesky and Mastodon: a worker of each records its reads (Mastodon's server a.social asked at
# the mock's address, --instance), a third of the posts go missing, and the purge takes exactly
# those out of the answers: by at:// URI, and by the status's own page on a.social.
tk_psql >/dev/null <<SQL
$(tk_tid_sql)
$(tk_bluesky_posts_sql '1 minute' 60 '1 ms')
SELECT tweetkeeper.schedule_posts(ARRAY(
  SELECT format('https://a.social/@u/%s', ((extract(epoch FROM now() - interval '1 minute') * 1000)::bigint << 16) + g)
    FROM generate_series(1, 40) g));
SQL
multi=$dir/multi
mkdir -p "$multi"
env -u TWEETKEEPER_BEARER_TOKEN "$TK_WORKER" --provider bluesky --dsn "$TK_DSN" --api-url "$TK_MOCK_URL" --name purge-b \
  --poll-interval 200 --warc-dir "$multi" --warc-purge-interval 0 >"$dir/bsky.log" 2>&1 &
wb=$!
TK_PIDS+=($wb)
env -u TWEETKEEPER_BEARER_TOKEN "$TK_WORKER" --provider mastodon --instance "a.social=$TK_MOCK_URL/mastodon/a.social" \
  --dsn "$TK_DSN" --name purge-m --poll-interval 200 --warc-dir "$multi" --warc-purge-interval 0 >"$dir/masto.log" 2>&1 &
wm=$!
TK_PIDS+=($wm)
tk_wait_for 60 "SELECT count(*) = 0 FROM tweetkeeper.tweets WHERE tweet_id < 0 AND updated_at IS NULL AND state = 'scheduled'"
kill -TERM "$wb" "$wm"
tk_wait_exit "$wb" 30
tk_forget "$wb"
tk_wait_exit "$wm" 30
tk_forget "$wm"
tk_psql >/dev/null <<SQL
UPDATE tweetkeeper.tweets SET state = 'missing', problem_at = now()
 WHERE tweet_id < 0 AND state = 'scheduled' AND tweet_id % 3 = 0;
SQL
tk_psql -c "SELECT CASE r.network WHEN 'bluesky' THEN 'at://' || r.author || '/app.bsky.feed.post/' || r.post_key
                                  ELSE 'mastodon:' || r.host || '/' || r.post_key END
              FROM tweetkeeper.post_availability a JOIN tweetkeeper.post_refs r ON r.tweet_id = a.post_id
             WHERE a.gone_since IS NOT NULL" | sort >"$dir/multi-gone.txt"
python3 "$TK_ROOT/tests/integration/warc_purge_check.py" --keys "$multi" >"$dir/multi-before.txt"
"$TK_WARC" purge --dsn "$READER_DSN" --warc-dir "$multi" >"$dir/multi.out" 2>&1
rc=$?
python3 "$TK_ROOT/tests/integration/warc_purge_check.py" --keys "$multi" >"$dir/multi-after.txt"
gone_b=$(comm -12 "$dir/multi-before.txt" "$dir/multi-gone.txt" | grep -c '^at://')
gone_m=$(comm -12 "$dir/multi-before.txt" "$dir/multi-gone.txt" | grep -c '^mastodon:a.social/')
kept=$(comm -23 "$dir/multi-before.txt" "$dir/multi-gone.txt" | wc -l)
bsd=0
for f in "$multi"/*.warc.gz; do bsdtar -tf "$f" >/dev/null 2>&1 || bsd=$((bsd + 1)); done
js=$(node "$TK_ROOT/tests/integration/warcio_check.cjs" "$npm_prefix" "$multi"/*.warc.gz 2>&1 | head -3)
read -r _ _ _ js_problems _ <<<"$(echo "$js" | head -1)"
[ "$rc" = 0 ] && [ "$gone_b" -ge 5 ] && [ "$gone_m" -ge 5 ] &&
  diff <(comm -23 "$dir/multi-before.txt" "$dir/multi-gone.txt") "$dir/multi-after.txt" >/dev/null &&
  [ "$bsd" = 0 ] && [ "${js_problems:-1}" = 0 ]
tk_ok "Bluesky and Mastodon: the $gone_b Bluesky and $gone_m Mastodon posts gone are out of the files, the other $kept posts in, every file read by bsdtar and warcio.js" $? \
  "exit $rc, bsdtar failed on $bsd, warcio.js $js; $(cat "$dir/multi.out"); $(diff <(comm -23 "$dir/multi-before.txt" "$dir/multi-gone.txt") "$dir/multi-after.txt" | head -5)"
tk_summary warc-purge
