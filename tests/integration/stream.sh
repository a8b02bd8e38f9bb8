#!/usr/bin/env bash
# Stream counts (issue 52) on the mock's Jetstream: six Bluesky posts whose likes, reposts, replies
# and quotes grow by the second (an --engagement file; the mock undoes a share of them: unlikes,
# unreposts, replies and quotes deleted), among the network's other traffic. The reader
# (tweetkeeper-worker --stream-counts) counts them, and each time the test looks, every post's four
# counts in the database equal the mock's truth at the stream's stored position, to the unit:
# live, after the mock drops the stream (reconnection from the cursor), after the reader is
# SIGKILLed and another takes over, after PostgreSQL restarts under it. getPosts reads reconcile
# (compared at their own Date) and differ by nothing; deletes were subtracted (the stream counted
# more events than the counts grew). A position older than Jetstream replays is a gap: every post
# is read again and counted anew.
# Prints "ok"/"not ok" lines and "stream: N passed, M failed".
set -uo pipefail
source "$(dirname "$0")/../lib/common.sh"
POSTS=6

tk_workdir stream
tk_pg_start "$dir" || exit 1
# The posts, made 2 s ago (record keys of that time; clock ids 30..35, which the mock neither
# deletes, hides nor backdates), and their curves for 10 minutes: from 15 s of age (once the
# reader runs: a like made before a post is tracked and deleted after names no post the reader
# knows, so only the next read could put it right), per second, post i gains (i + 2) likes, and a
# repost, a reply and a quote every 2, 3 and 4 s.
python3 - "$dir/posts" "$dir/curves.csv" "$POSTS" <<'PY'
import sys, time
posts, curves, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
alphabet = '234567abcdefghijklmnopqrstuvwxyz'
def tid(us, clock):
    v = (us << 10) | clock
    return ''.join(alphabet[(v >> (5 * (12 - i))) & 31] for i in range(13))
made = int((time.time() - 2) * 1e6)
with open(posts, 'w') as p, open(curves, 'w') as c:
    c.write('network,key,age_seconds,reposts,replies,likes,quotes,bookmarks,views\n')
    for i in range(n):
        uri = 'at://did:plc:streamtest%s%s/app.bsky.feed.post/%s' % ('a' * 13, chr(97 + i), tid(made + i, 30 + i))
        p.write(uri + '\n')
        for a in range(0, 601):
            b = max(0, a - 15)
            c.write('bluesky,%s,%d,%d,%d,%d,%d,0,0\n' % (uri, a, b // 2, b // 3, (i + 2) * b, b // 4))
PY
mapfile -t uris <"$dir/posts"
tk_mock_start "$dir/mock.log" --engagement "$dir/curves.csv" --jetstream-port 0 --jetstream-rate 500 || exit 1
jetstream=$(sed -n 's/.*jetstream listening on \(ws[^ ]*\).*/\1/p' "$dir/mock.log.out")
registered=$(curl -sf -H "Content-Type: text/plain" --data-binary @"$dir/posts" "$TK_MOCK_URL/mock/jetstream/posts")
tk_ok "the mock streams the six posts' engagement" "$([[ $registered == *'"registered":6'* ]]; echo $?)" "$registered"

tk_psql >/dev/null <<SQL || exit 1
CREATE EXTENSION tweetkeeper;
CREATE ROLE tk_worker LOGIN IN ROLE tweetkeeper_worker;
ALTER DATABASE tweetkeeper SET tweetkeeper.bluesky_stream_counts = on;
ALTER DATABASE tweetkeeper SET tweetkeeper.stream_reconcile_factor = 2;
ALTER DATABASE tweetkeeper SET tweetkeeper.buffer_ttl = 0;
$(tk_fast_policy_sql '5 minutes' '4 seconds')
SELECT tweetkeeper.schedule_posts(ARRAY[$(printf "'%s'," "${uris[@]}" | sed 's/,$//')]);
SQL

reader() { # reader NAME [OPTION...]: a stream reader in the background; its pid in $!
  "$TK_WORKER" --dsn "$TK_DSN user=tk_worker" --name "$1" --provider bluesky --stream-counts --jetstream-url "$jetstream" \
    --stream-flush 0.5 --log-level debug "${@:2}" >>"$dir/$1.log" 2>&1 &
  TK_PIDS+=($!)
}
reader reader-1
reader_pid=$!
"$TK_WORKER" --dsn "$TK_DSN user=tk_worker" --name refresher --provider bluesky --api-url "$TK_MOCK_URL" \
  >"$dir/refresher.log" 2>&1 &
TK_PIDS+=($!)

tk_wait_for 30 "SELECT count(*) = $POSTS FROM tweetkeeper.stream_posts" ||
  tk_fail "every post joins the stream from its first read" "$(tk_psql -c 'TABLE tweetkeeper.stream_stats')"

# exact WHEN: each post's four counts, as stored with the stream's position (one flush, one
# transaction), equal the mock's net counts of the events up to that position.
exact() {
  local rows position mismatches=0 url counts truth n=0
  rows=$(tk_psql -F ' ' -c "SELECT s.position_us, r.url, concat_ws(',', t.like_count, t.retweet_count, t.reply_count, t.quote_count)
                               FROM tweetkeeper.stream_state s, tweetkeeper.tweets t JOIN tweetkeeper.post_refs r USING (tweet_id)
                              ORDER BY r.url")
  local bad=""
  while read -r position url counts; do
    n=$((n + 1))
    local uri="at://${url#https://bsky.app/profile/}"
    uri=${uri/\/post\//\/app.bsky.feed.post\/}
    truth=$(curl -sf "$TK_MOCK_URL/mock/truth?network=bluesky&key=$uri&at_us=$((position + 1))" |
      python3 -c 'import json,sys; t=json.load(sys.stdin); print("%d,%d,%d,%d" % (t["likes"], t["reposts"], t["replies"], t["quotes"]))')
    [ "$counts" = "$truth" ] || { mismatches=$((mismatches + 1)); bad+=" ${uri##*/}: stored $counts, truth $truth;"; }
  done <<<"$rows"
  tk_ok "$1: every post's likes, reposts, replies and quotes are the mock's truth at the stored position" \
    "$([ "$mismatches" = 0 ] && [ "$n" = "$POSTS" ]; echo $?)" "$mismatches of $n differ:$bad"
}
# past WHEN_US: the stream has stored a position past that moment (Unix microseconds).
past() { tk_wait_for 30 "SELECT position_us > $1 FROM tweetkeeper.stream_state"; }
now_us() { echo "${EPOCHREALTIME/[.,]/}"; }
passed() { [ "$(now_us)" -ge "$1" ]; }

tk_wait_for 60 "SELECT bool_and(like_count > 0 AND retweet_count > 0 AND reply_count > 0 AND quote_count > 0)
                  FROM tweetkeeper.tweets"
past "$(($(now_us) + 3000000))"
exact "live"
moved=$(tk_psql -c "SELECT count(*) FILTER (WHERE like_count > 0 AND retweet_count > 0 AND reply_count > 0 AND quote_count > 0)
                      FROM tweetkeeper.tweets")
tk_ok "every post has likes, reposts, replies and quotes counted" "$([ "$moved" = "$POSTS" ]; echo $?)" "$moved"

# Reconnection: the mock drops the stream; the reader connects again from its cursor.
curl -sf -X POST "$TK_MOCK_URL/mock/jetstream/drop" >/dev/null
past "$(($(now_us) + 2000000))"
exact "after the stream dropped"

# A reader SIGKILLed: the next one takes the stream (the dead session's lease is free) and goes on
# from the stored position, counting the events it missed once. It reads the stream compressed
# (zstd, with the mock's dictionary: --jetstream-dictionary).
kill -KILL "$reader_pid"
killed=$(now_us)
# (The outage's length is the fault injected: 2 s of events the next reader must catch up on.)
tk_wait_until 10 passed $((killed + 2000000))
curl -sf "$TK_MOCK_URL/mock/jetstream/dictionary" -o "$dir/dictionary" || tk_fail "the mock serves its dictionary"
reader reader-2 --jetstream-dictionary "$dir/dictionary"
reader_pid=$!
past "$((killed + 2000000))"
exact "after the reader was killed and another took over"
tk_ok "the second reader holds the stream, compressed" \
  "$([ "$(tk_psql -c 'SELECT reader FROM tweetkeeper.stream_stats')" = reader-2 ] &&
     tk_log_has "$dir/mock.log" 'zstd-compressed subscription' && tk_log_has "$dir/reader-2.log" 'compressed, with zstd dictionary'; echo $?)" \
  "$(grep -c zstd "$dir/mock.log")"

# PostgreSQL restarts under the reader.
tk_pg_stop "$dir" immediate >/dev/null
tk_pg_start "$dir" >/dev/null || { tk_fail "PostgreSQL restarts" ""; tk_summary stream; exit 1; }
restarted=$(now_us)
past "$((restarted + 2000000))"
exact "after PostgreSQL restarted"

# Reads reconcile: compared at their own moment, they differ by nothing; deletes were subtracted.
tk_wait_for 30 "SELECT reconciled >= $POSTS FROM tweetkeeper.stream_stats" ||
  tk_fail "reads are compared with the stream" "$(tk_psql -c 'TABLE tweetkeeper.stream_stats')"
stats=$(tk_psql -F ' ' -c "SELECT reconciled, differed, difference FROM tweetkeeper.stream_stats")
tk_ok "every read compared agreed with the stream (reconciled, differed, difference: $stats)" \
  "$([ "$(cut -d' ' -f2- <<<"$stats")" = "0 0" ]; echo $?)" "$(tk_psql -c 'SELECT * FROM tweetkeeper.stream_differences')"
# (Deletes: the readers' logs say how many records counted were deleted and subtracted; the counts
# being the truth says they were subtracted right.)
undone=$(for f in "$dir"/reader-*.log; do sed -n 's/.* \([0-9]*\) subtracted in all$/\1/p' "$f" | tail -1; done |
  awk '{ s += $1 } END { print s + 0 }')
tk_ok "deletes were counted and subtracted ($undone unlikes, unreposts and deleted replies or quotes)" \
  "$([ "$undone" -gt 0 ]; echo $?)"
hist=$(tk_psql -c "SELECT count(*) FROM tweetkeeper.metric_history WHERE lease_id = 0")
tk_ok "the stream's observations are in the history ($hist)" "$([ "${hist:-0}" -gt $((POSTS * 10)) ]; echo $?)"

# A gap: the stored position older than Jetstream replays. Every post is read again and counted anew.
kill -TERM "$reader_pid"
tk_wait_exit "$reader_pid" 10
tk_psql -c "UPDATE tweetkeeper.stream_state SET position_us = position_us - 40 * 3600 * 1000000::bigint" >/dev/null
reader reader-3
tk_wait_until 15 tk_log_has "$dir/reader-3.log" "older than Jetstream replays" ||
  tk_fail "the reader says the gap" "$(tail -5 "$dir/reader-3.log")"
tk_wait_for 30 "SELECT count(*) = $POSTS FROM tweetkeeper.stream_posts p WHERE p.since > (SELECT gap_at FROM tweetkeeper.stream_state)" ||
  tk_fail "after the gap every post is read again and joins the stream anew" "$(tk_psql -c 'TABLE tweetkeeper.stream_stats')"
# (12 s on: an unlike comes 10 s after its like, so the likes made while no reader ran, known
# only from the new reader's warm replay, have had their unlikes by then.)
past "$(($(now_us) + 12000000))"
exact "after a gap"
tk_summary stream
