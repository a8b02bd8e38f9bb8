#!/usr/bin/env bash
# tweetkeeper-import against a real database: the three formats, bad lines reported with file,
# line and reason while the good ones are imported, idempotent re-runs, an interrupted import
# resumed by running it again, --max-errors, progress on a terminal and off it, and the errors
# that stop it (usage 2, database 1). Prints "import: N passed, M failed".
set -uo pipefail
source "$(dirname "$0")/../lib/common.sh"
IMPORT=$TK_BUILD/worker/tweetkeeper-import
tk_workdir import
tk_pg_start "$dir" || exit 1
tk_psql -c "CREATE EXTENSION tweetkeeper" -c "CREATE ROLE tk_admin LOGIN IN ROLE tweetkeeper_admin" \
  -c "CREATE ROLE tk_reader LOGIN IN ROLE tweetkeeper_reader" >/dev/null || exit 1
dsn="host=$PGHOST port=$PGPORT dbname=tweetkeeper user=tk_admin"
count() { tk_psql -c "SELECT count(*) FROM tweetkeeper.tweets${1:+ WHERE $1}"; }
base=$(python3 -c "import time; print((int(time.time() * 1000) - 3600000 - 1288834974657) << 22)")
ids() { # ids N OFFSET: N Snowflake ids of tweets made an hour ago (the same ids for the same arguments)
  python3 -c "print('\n'.join(str($base + i) for i in range($2 + 1, $2 + $1 + 1)))"
}
thousands() { python3 -c "print(f'{$1:,}')"; }

# One id per line, with bad lines among them.
{ ids 1000 0; echo "not-an-id"; echo "-5"; echo; echo "12"; ids 10 0; } >"$dir/ids.txt"
"$IMPORT" --dsn "$dsn" "$dir/ids.txt" >"$dir/out" 2>"$dir/err"
rc=$?
[ $rc -eq 3 ] && [ "$(count)" = 1000 ] &&
  grep -q "ids.txt:1001: not a tweet id or post URL: 'not-an-id'" "$dir/err" &&
  grep -q "ids.txt:1002: tweet id must be positive, got -5" "$dir/err" &&
  grep -q "ids.txt:1004: tweet id 12 predates Snowflake ids and has no created_at" "$dir/err" &&
  grep -q "1,010 ids read: 1,000 new, 10 already tracked, 3 bad lines" "$dir/err"
tk_ok "one id per line: 1,000 imported, each bad line named with file, line and reason, exit 3 (rc $rc)" $? "$(cat "$dir/err")"
"$IMPORT" --dsn "$dsn" "$dir/ids.txt" >/dev/null 2>"$dir/err"
grep -q "1,010 ids read: 0 new, 1,010 already tracked, 3 bad lines" "$dir/err" && [ "$(count)" = 1000 ]
tk_ok "a second run imports nothing again (idempotent)" $? "$(tail -1 "$dir/err")"

# Post URLs: an X post's URL tracks its id (also one already tracked as an id); Bluesky and
# Mastodon posts are tracked by their URLs, one post whatever the spelling; a bad one is named.
{ ids 3 900000 | sed 's|^|https://x.com/someone/status/|; s|$|?s=20|'; ids 1 0 | sed 's|^|https://twitter.com/i/web/status/|'
  echo "https://bsky.app/profile/alice.bsky.social/post/3l6oveex3ii2l"
  echo "at://alice.bsky.social/app.bsky.feed.post/3l6oveex3ii2l"
  echo "https://mastodon.social/@Gargron/113310863287398209"
  echo "https://mastodon.social/@Gargron/11331086328739820x"; } >"$dir/urls.txt"
"$IMPORT" --dsn "$dsn" "$dir/urls.txt" >/dev/null 2>"$dir/err"
rc=$?
[ $rc -eq 3 ] && [ "$(count "tweet_id IN ($(ids 3 900000 | paste -sd,))")" = 3 ] &&
  [ "$(tk_psql -c "SELECT string_agg(network || ' ' || url, ', ' ORDER BY network) FROM tweetkeeper.posts WHERE network <> 'x'")" = \
    "bluesky https://bsky.app/profile/alice.bsky.social/post/3l6oveex3ii2l, mastodon https://mastodon.social/@Gargron/113310863287398209" ] &&
  grep -q "urls.txt:8: not a post URL" "$dir/err" &&
  grep -q "7 ids read: 5 new, 2 already tracked, 1 bad lines" "$dir/err"
tk_ok "post URLs: X's by their ids, Bluesky's and Mastodon's by URL, one post per spelling, a bad one named (rc $rc)" $? "$(cat "$dir/err")"

# Into a collection: every post read joins it, those tracked before too; a bad name is bad usage.
"$IMPORT" --dsn "$dsn" --collection "my dataset" "$dir/urls.txt" >/dev/null 2>"$dir/err"
rc=$?
[ $rc -eq 3 ] && [ "$(tk_psql -c "SELECT c.kind, count(p.tweet_id) FROM tweetkeeper.collections c
                                    JOIN tweetkeeper.collection_posts p ON p.collection = c.name WHERE c.name = 'my dataset' GROUP BY 1")" = "import|6" ]
tk_ok "--collection: the 6 posts read (all tracked before, one in two spellings) are the import collection's (rc $rc)" $? "$(cat "$dir/err")"
out=$("$IMPORT" --dsn "$dsn" --collection " padded" "$dir/urls.txt" 2>&1)
rc=$?
[ $rc -eq 2 ] && [[ $out == *"collection name ' padded'"* ]] && [ "$(tk_psql -c "SELECT count(*) FROM tweetkeeper.collections")" = 1 ]
tk_ok "--collection with a bad name: exit 2, saying why, nothing made (rc $rc)" $? "$out"

# CSV with a named column, quoted fields, created_at for an id from before Snowflake.
{ echo 'user,tweet,created_at'; ids 5 2000 | sed 's/^/"a, b",/; s/$/,/'; echo 'old,20,2006-04-01T10:00:00.000Z'; } >"$dir/t.csv"
"$IMPORT" --dsn "$dsn" --column tweet "$dir/t.csv" >/dev/null 2>"$dir/err"
rc=$?
[ $rc -eq 0 ] && [ "$(count "tweet_id > 1000 AND tweet_id IN (SELECT tweet_id FROM tweetkeeper.tweets ORDER BY tweet_id DESC LIMIT 5)")" = 5 ] &&
  [ "$(count "tweet_id = 20 AND created_at = '2006-04-01 10:00:00+00'")" = 1 ]
tk_ok "CSV: the named column, quoted commas, created_at for an id that encodes no time (rc $rc)" $? "$(cat "$dir/err")"
"$IMPORT" --dsn "$dsn" --column nope "$dir/t.csv" >/dev/null 2>"$dir/err"
rc=$?
[ $rc -eq 2 ] && grep -q "t.csv:1: the CSV header has no column 'nope' (--column)" "$dir/err"
tk_ok "CSV without the column: says so, exit 2 (rc $rc)" $? "$(cat "$dir/err")"

# JSON lines: a response page (as twarc2 writes them) and single tweets (flattened).
page=$(ids 50 3000 | jq -R '{id: ., created_at: "2024-01-01T00:00:00.000Z", text: "x"}' | jq -cs '{data: ., meta: {result_count: 50}}')
{ echo "$page"; ids 3 4000 | jq -Rc '{id: ., public_metrics: {like_count: 1}}'; echo '{"text": "no id"}'; echo '{oops'; } >"$dir/t.jsonl"
"$IMPORT" --dsn "$dsn" "$dir/t.jsonl" >/dev/null 2>"$dir/err"
rc=$?
[ $rc -eq 3 ] && grep -q "53 ids read: 53 new" "$dir/err" && grep -q 't.jsonl:5: no "id", "url" or "uri" field' "$dir/err" &&
  grep -q "t.jsonl:6: not JSON" "$dir/err"
tk_ok "JSON lines: a page of 50 and 3 single tweets imported, the bad lines named (rc $rc)" $? "$(cat "$dir/err")"

# stdin, off a terminal: plain progress lines. (A producer that pauses longer than
# --progress-interval: a progress line is printed by the first line read after the interval.)
# sleep-ok: the pause is the input (a slow producer), not a wait for something to happen
(ids 3000 5000; sleep 1.5; ids 3000 8000) | "$IMPORT" --dsn "$dsn" --progress-interval 1 --chunk-size 1000 >/dev/null 2>"$dir/err"
rc=$?
[ $rc -eq 0 ] && grep -q "^tweetkeeper-import: [0-9,]* ids read, [0-9,]*/s" "$dir/err" && grep -q "6,000 ids read: 6,000 new" "$dir/err"
tk_ok "stdin: imported, with plain progress lines when not on a terminal (rc $rc)" $? "$(cat "$dir/err")"
# On a terminal: a bar with rate and ETA.
ids 200000 20000 >"$dir/big.txt"
script -qec "$IMPORT --dsn '$dsn' --chunk-size 5000 $dir/big.txt" /dev/null >"$dir/tty" 2>&1
grep -aq '\[#*\.*\] *[0-9]*% [0-9,]* ids, [0-9,]*/s' "$dir/tty" && grep -aq "200,000 ids read: 200,000 new" "$dir/tty"
tk_ok "on a terminal: a progress bar with rate (and ETA while it runs)" $? "$(tr '\r' '\n' <"$dir/tty" | tail -5)"

# --max-errors: stops there; what came before is imported.
{ ids 10 300000; echo x; echo y; ids 10 300100; } >"$dir/bad.txt"
"$IMPORT" --dsn "$dsn" --max-errors 2 "$dir/bad.txt" >/dev/null 2>"$dir/err"
rc=$?
[ $rc -eq 3 ] && grep -q "stopping after 2 bad lines (--max-errors)" "$dir/err" && grep -q "10 ids read: 10 new" "$dir/err"
tk_ok "--max-errors 2 stops at the second bad line, after importing the 10 before (rc $rc)" $? "$(cat "$dir/err")"

# Interrupted (SIGKILL in the middle), then run again: everything is there, nothing twice.
ids 400000 1000000 >"$dir/resume.txt"
before=$(count)
"$IMPORT" --dsn "$dsn" --chunk-size 2000 "$dir/resume.txt" >/dev/null 2>&1 &
pid=$!
more_than() { [ "$(count)" -gt "$1" ]; }
TK_POLL_S=0.05 tk_wait_until 5 more_than $((before + 20000)) # (killed mid-run: a part imported)
kill -9 $pid 2>/dev/null
wait $pid 2>/dev/null
partial=$(($(count) - before))
"$IMPORT" --dsn "$dsn" "$dir/resume.txt" >/dev/null 2>"$dir/err"
rc=$?
[ $rc -eq 0 ] && [ "$partial" -gt 0 ] && [ "$partial" -lt 400000 ] && [ "$(($(count) - before))" = 400000 ] &&
  grep -q "400,000 ids read: $(thousands $((400000 - partial))) new, $(thousands "$partial") already tracked" "$dir/err"
tk_ok "killed after $partial of 400,000, a re-run imports the rest and says so" $? "$(tail -1 "$dir/err")"

# Hostile lines: one of 20 MB (no line is read into memory beyond 16 MiB), one that would write
# escape sequences to the terminal: each a bad line, shown escaped; the lines around them imported.
before=$(count)
{ ids 5 2000000; head -c 20000000 /dev/zero | tr '\0' 7; echo; printf '\033[2J\033[31mred\n'; ids 1 2000010; } >"$dir/hostile.txt"
"$IMPORT" --dsn "$dsn" "$dir/hostile.txt" >/dev/null 2>"$dir/err"
rc=$?
[ $rc -eq 3 ] && [ "$(count)" = $((before + 6)) ] &&
  grep -qF "hostile.txt:6: the line is longer than 16777216 bytes: skipped" "$dir/err" &&
  grep -qF "hostile.txt:7: not a tweet id or post URL: '\x1b[2J\x1b[31mred'" "$dir/err" &&
  ! grep -q $'\033' "$dir/err"
tk_ok "a 20 MB line and one of escape sequences: bad lines, shown escaped, the others imported (rc $rc)" $? "$(cat -v "$dir/err")"

# What stops it.
out=$("$IMPORT" --dsn "$dsn" "$dir/missing.txt" 2>&1)
rc=$?
[ $rc -eq 2 ] && [[ "$out" == *"cannot read $dir/missing.txt"* ]]
tk_ok "a missing file: exit 2 (rc $rc)" $? "$out"
out=$("$IMPORT" --dsn "host=$PGHOST port=$PGPORT dbname=tweetkeeper user=tk_reader" "$dir/ids.txt" 2>&1)
rc=$?
[ $rc -eq 1 ] && [[ "$out" == *"database error"*"permission denied"* ]]
tk_ok "a role that may not schedule: exit 1 with the database's reason (rc $rc)" $? "$out"
out=$("$IMPORT" --dsn "host=$PGHOST dbname=tweetkeeper password=s3cret bogus" "$dir/ids.txt" 2>&1)
rc=$?
[ $rc -eq 2 ] && [[ "$out" != *s3cret* ]]
tk_ok "a bad --dsn: exit 2, and the password is not shown (rc $rc)" $? "$out"

# The connection string from a file only its owner may read, or from libpq's environment.
ids 3 2100000 >"$dir/more.txt"
printf '# the queue\n%s password=s3cret\n' "$dsn" >"$dir/dsn"
chmod 644 "$dir/dsn"
out=$("$IMPORT" --dsn-file "$dir/dsn" "$dir/more.txt" 2>&1)
rc=$?
[ $rc -eq 2 ] && [[ "$out" == *"--dsn-file $dir/dsn: group or others may read it"*"chmod 600"* ]] && [[ "$out" != *s3cret* ]]
tk_ok "--dsn-file that others may read: exit 2, saying so, the password not shown (rc $rc)" $? "$out"
chmod 600 "$dir/dsn"
before=$(count)
out=$("$IMPORT" --dsn-file "$dir/dsn" "$dir/more.txt" 2>&1)
rc=$?
[ $rc -eq 0 ] && [ "$(count)" = $((before + 3)) ]
tk_ok "--dsn-file of mode 600: imported (rc $rc)" $? "$out"
out=$("$IMPORT" --dsn "$dsn" --dsn-file "$dir/dsn" "$dir/more.txt" 2>&1)
rc=$?
[ $rc -eq 2 ] && [[ "$out" == *"--dsn and --dsn-file are both given"* ]]
tk_ok "--dsn and --dsn-file: exit 2 (rc $rc)" $? "$out"
ids 2 2200000 >"$dir/more.txt"
out=$(PGUSER=tk_admin "$IMPORT" "$dir/more.txt" 2>&1)
rc=$?
[ $rc -eq 0 ] && [ "$(count)" = $((before + 5)) ]
tk_ok "neither: libpq's environment (PGHOST, PGPORT, PGDATABASE, PGUSER) (rc $rc)" $? "$out"
tk_summary import
