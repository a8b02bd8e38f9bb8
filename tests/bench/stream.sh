#!/usr/bin/env bash
# make bench-stream (issue 52): stream counts under the network's load. The mock's Jetstream
# streams RATE events a second of the network's other traffic for MINUTES, and the engagement of
# POSTS tracked Bluesky posts, made over the first half of the run and each scheduled as it is
# made (tracked from birth: a like made before a post was tracked and deleted after names no post
# the reader knows, so only the next read can put that right); one reader
# (tweetkeeper-worker --stream-counts) pinned to one core counts them, beside a refresher of
# getPosts. A third of the way in the reader is SIGKILLed and another started; two thirds in
# PostgreSQL restarts under it (immediate: a crash). Prints:
#  - events read per second and the reader's CPU per event;
#  - how far behind live it ran (now minus each event's time_us as it counted it): p50, p99 and
#    max of each 10 s window, the worst of them;
#  - at every reconciliation (each getPosts read compared with the stream at the read's Date) the
#    difference (0 where no event was lost), and SAMPLE posts' counts against the mock's truth at
#    the stored position after the kill and after the restart;
#  - getPosts requests spent, against what the age table would have spent on the same posts in
#    the same minutes, and over a post's 30-day life (the policy replayed);
#  - the stream's history: observations per post, the longest gap between two points of a post
#    while it moved, and bytes per post compacted.
set -uo pipefail
source "$(dirname "$0")/../lib/common.sh"
tk_defaults POSTS=100000 RATE=5000 MINUTES=10 SAMPLE=1000 FLUSH=2
tk_workdir bench-stream
run_s=$((MINUTES * 60))

echo "== $POSTS tracked Bluesky posts made over the first $((MINUTES / 2)) min, $RATE events/s of other traffic, $MINUTES min"
# (Made from 20 s on, once everything runs: the posts' file, in the order they are made.)
python3 - "$dir/posts" "$POSTS" "$((MINUTES * 30))" <<'PY'
import sys, time, random
path, n, spread = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
alphabet = '234567abcdefghijklmnopqrstuvwxyz'
def tid(us, clock):
    v = (us << 10) | clock
    return ''.join(alphabet[(v >> (5 * (12 - i))) & 31] for i in range(13))
def did(k):
    s = ''
    for _ in range(24):
        s += alphabet[k % 32]
        k //= 32
    return 'did:plc:' + s
# Clock ids the mock neither deletes (% 53 == 7), hides (% 61 == 11) nor backdates (% 17 == 3).
clocks = [c for c in range(1024) if c % 53 != 7 and c % 61 != 11 and c % 17 != 3]
now = int(time.time() * 1e6) + 20 * 1000000
with open(path, 'w') as f:
    for i in range(n):
        made = now + i * spread * 1000000 // n
        f.write('at://%s/app.bsky.feed.post/%s\n' % (did(1000003 * (i % 2000) + 17), tid(made, clocks[i % len(clocks)])))
PY
tk_pg_start "$dir" -c shared_buffers=1GB -c max_wal_size=4GB || exit 1
tk_mock_start "$dir/mock.log" --threads 8 --xrpc-rate-limit 100000000 --jetstream-port 0 --jetstream-rate "$RATE" || exit 1
jetstream=$(sed -n 's/.*jetstream listening on \(ws[^ ]*\).*/\1/p' "$dir/mock.log.out")
curl -sf -H 'Content-Type: text/plain' --data-binary @"$dir/posts" "$TK_MOCK_URL/mock/jetstream/posts" >/dev/null ||
  { echo "the mock did not take the posts"; exit 1; }
tk_psql >/dev/null <<SQL || exit 1
ALTER DATABASE tweetkeeper SET tweetkeeper.bluesky_stream_counts = on;
ALTER DATABASE tweetkeeper SET tweetkeeper.history_partition = '1 min';
CREATE EXTENSION tweetkeeper;
CREATE ROLE tk_worker LOGIN IN ROLE tweetkeeper_worker;
-- A faster first hour than the default's (2 and 5 minutes), so that each post is reconciled in the
-- run: its reads, 12 times further apart, every 3 and 12 minutes.
DELETE FROM tweetkeeper.age_policy;
INSERT INTO tweetkeeper.age_policy (max_age, delay) VALUES ('18 minutes', '15 seconds'), ('60 minutes', '1 minute'),
  ('1 day', '30 minutes'), ('7 days', '6 hours'), ('30 days', '1 day');
SQL
start_us=${EPOCHREALTIME/[.,]/}
# Each post scheduled as it is made (once a second, those made since).
python3 - "$dir/posts" >"$dir/schedule.log" 2>&1 <<'PY' &
import subprocess, sys, time
alphabet = '234567abcdefghijklmnopqrstuvwxyz'
posts = open(sys.argv[1]).read().split()
def made(uri):
    v = 0
    for ch in uri.rsplit('/', 1)[1]: v = v * 32 + alphabet.index(ch)
    return (v >> 10) / 1e6
i = 0
while i < len(posts):
    now = time.time()
    j = i
    while j < len(posts) and made(posts[j]) <= now: j += 1
    if j > i:
        sql = "SELECT tweetkeeper.schedule_posts(ARRAY[%s])" % ",".join("'%s'" % u for u in posts[i:j])
        # (PostgreSQL restarting: tried again a second later.)
        if subprocess.run(["psql", "-X", "-q", "-At", "-c", sql], stdout=subprocess.DEVNULL).returncode == 0:
            i = j
    time.sleep(max(0, 1 - (time.time() - now)))  # sleep-ok: the bench's scheduler, once a second as posts are made
PY
TK_PIDS+=($!)

reader() { # reader N: the stream's reader, on core 0, its CPU into $dir/reader-N.cpu; $! is time's pid
  taskset -c 0 /usr/bin/time -o "$dir/reader-$1.cpu" -f "%U %S" "$TK_WORKER" --dsn "$TK_DSN user=tk_worker" \
    --name "reader-$1" --provider bluesky --stream-counts --jetstream-url "$jetstream" --stream-flush "$FLUSH" \
    >"$dir/reader-$1.log" 2>&1 &
  TK_PIDS+=($!)
}
reader 1
reader_pid=$!
"$TK_WORKER" --dsn "$TK_DSN user=tk_worker" --name refresher --provider bluesky --api-url "$TK_MOCK_URL" --concurrency 8 \
  --log-level warn >"$dir/refresher.log" 2>&1 &
TK_PIDS+=($!)

# exact NAME: SAMPLE posts' counts as stored with the stream's position against the mock's truth then.
exact() {
  tk_psql -F ' ' -c "SELECT s.position_us, r.author, r.post_key, t.like_count, t.retweet_count, t.reply_count, t.quote_count
                       FROM tweetkeeper.stream_state s, tweetkeeper.stream_posts p
                       JOIN tweetkeeper.tweets t USING (tweet_id) JOIN tweetkeeper.post_refs r USING (tweet_id)
                      ORDER BY hashint8(p.tweet_id) LIMIT $SAMPLE" >"$dir/sample"
  python3 - "$dir/sample" "$TK_MOCK_URL" "$1" <<'PY'
import http.client, json, sys, urllib.parse
rows, url, name = open(sys.argv[1]).read().split('\n'), urllib.parse.urlparse(sys.argv[2]), sys.argv[3]
c = http.client.HTTPConnection(url.hostname, url.port)
n = off = units = 0
for row in rows:
    if not row: continue
    pos, did, rkey, *counts = row.split(' ')
    key = 'at://%s/app.bsky.feed.post/%s' % (did, rkey)
    c.request('GET', '/mock/truth?network=bluesky&key=%s&at_us=%d' % (urllib.parse.quote(key), int(pos) + 1))
    t = json.loads(c.getresponse().read())
    truth = [t['likes'], t['reposts'], t['replies'], t['quotes']]
    d = sum(abs(int(a) - b) for a, b in zip(counts, truth))
    n += 1; off += d > 0; units += d
print('%s: %d posts compared with the truth at the stored position, %d differ (by %d in all)' % (name, n, off, units))
PY
}
# at SECONDS: wait until the run's clock reaches SECONDS (the bench's faults come at set moments).
passed() { [ "${EPOCHREALTIME/[.,]/}" -ge "$1" ]; }
at() { TK_POLL_S=0.5 tk_wait_until $((run_s + 60)) passed $((start_us + $1 * 1000000)); }

at $((run_s / 3))
pkill -KILL -P "$reader_pid"  # the reader itself, not time
tk_wait_exit "$reader_pid" 10
reader 2
reader_pid=$!
at $((run_s / 3 + 30))
exact "after SIGKILL of the reader"
at $((2 * run_s / 3))
tk_pg_stop "$dir" immediate >/dev/null
tk_pg_start "$dir" -c shared_buffers=1GB -c max_wal_size=4GB >/dev/null || { echo "PostgreSQL did not restart"; exit 1; }
at $((2 * run_s / 3 + 30))
exact "after PostgreSQL restarted"
at "$run_s"
echo "   $(tk_psql -c 'SELECT count(*) FROM tweetkeeper.stream_posts') posts counted by the stream at the end"
pkill -TERM -P "$reader_pid"
tk_wait_exit "$reader_pid" 30
exact "at the end"
requests=$(curl -sf "$TK_MOCK_URL/mock/stats" | python3 -c 'import json,sys; print(json.load(sys.stdin)["requests"])')

echo "== the reader"
for f in "$dir"/reader-*.log; do grep 'events per ms bucket' "$f" | tail -1; done | python3 -c '
import re, sys
total, names = None, None
for line in sys.stdin:
    pairs = re.findall(r"(<\d+|more):(\d+)", line.split("events per ms bucket:")[1])
    names = [p[0] for p in pairs]
    counts = [int(p[1]) for p in pairs]
    total = counts if total is None else [a + b for a, b in zip(total, counts)]
if total:
    n = sum(total)
    def q(x):
        c = 0
        for name, k in zip(names, total):
            c += k
            if c >= x * n: return name
    print("   behind live over the run (%d events, each reader to its last 10 s report): p50 %s ms, p99 %s ms, p99.9 %s ms" % (n, q(0.5), q(0.99), q(0.999)))
    print("   per bucket (ms): " + ", ".join("%s: %d" % (a, b) for a, b in zip(names, total)))'
grep -h 'behind live p50' "$dir"/reader-*.log | sed -n 's/.*behind live p50 \([0-9]*\) ms p99 \([0-9]*\) ms max \([0-9]*\) ms.*/\1 \2 \3/p' |
  awk '{ if ($3 > m) m = $3; if ($2 > w) w = $2 } END { printf "   worst 10 s window: p99 %d ms; max %d ms\n", w, m }'
cpu=$(cat "$dir"/reader-*.cpu | awk '/^[0-9.]+ [0-9.]+$/ { s += $1 + $2 } END { print s + 0 }')
tk_psql -F ' ' -c "SELECT events, counted, reconciled, differed, difference, gaps FROM tweetkeeper.stream_stats" |
  while read -r events counted reconciled differed difference gaps; do
    awk -v e="$events" -v c="$cpu" -v s="$run_s" 'BEGIN { printf "   %d events read, %.0f a second; reader CPU %.1f s, %.1f us an event\n", e, e / s, c, c * 1e6 / e }'
    echo "   $counted counted for tracked posts; $reconciled reads reconciled, $differed differed (by $difference in all); $gaps gaps"
  done

echo "== requests"
python3 - "$dir/posts" "$requests" "$start_us" "$run_s" <<'PY'
import sys
posts, requests, start_us, run_s = open(sys.argv[1]).read().split(), int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
alphabet = '234567abcdefghijklmnopqrstuvwxyz'
bench_policy = [(18 * 60, 15), (3600, 60), (86400, 1800), (7 * 86400, 6 * 3600), (30 * 86400, 86400)]
default_policy = [(18 * 60, 120), (3600, 300), (86400, 1800), (7 * 86400, 6 * 3600), (30 * 86400, 86400)]
policy = bench_policy
def delay(age):
    for max_age, d in policy:
        if age < max_age: return d
    return None
def reads(made, start, end, factor=1):  # reads from its first at `start` while before `end`
    t, n = start, 0
    while t < end:
        n += 1
        d = delay(t - made)
        if d is None: break
        t += d * (factor if n > 0 and factor > 1 else 1)
    return n
age_table = 0
for uri in posts:
    rkey = uri.rsplit('/', 1)[1]
    v = 0
    for ch in rkey: v = v * 32 + alphabet.index(ch)
    made = (v >> 10) / 1e6
    age_table += reads(made, start_us / 1e6, start_us / 1e6 + run_s)
print('   getPosts requests: %d; the bench\'s age table would have read these posts %d times in the same minutes: %d requests of 25 (%.2f of them;\n   the first read of each, which adopts it, is in both)'
      % (requests, age_table, -(-age_table // 25), requests / max(1, -(-age_table // 25))))
policy = default_policy
life_age = reads(0, 0, 30 * 86400)
life_stream = reads(0, 0, 30 * 86400, 12)
print('   over a 30-day life from birth, default age table: %d reads on the age table, %d with stream counts (the first, then every delay x 12): %.3f'
      % (life_age, life_stream, life_stream / life_age))
PY

echo "== history"
# Each post's whole history (its reads' observations and the stream's) packed as compaction packs
# a week (pack_history), and an upper bound for a 30-day life: at most one observation per unit
# of its final counts (the mock's truth 30 days after it was made), at the bytes one took here.
tk_psql -F ' ' -c "
  WITH p AS (SELECT tweet_id, count(*) FILTER (WHERE lease_id = 0) AS stream, count(*) AS n,
                    pg_column_size(tweetkeeper.pack_history(array_agg(observed_at ORDER BY observed_at),
                      array_agg(lease_id ORDER BY observed_at), array_agg(retweet_count ORDER BY observed_at),
                      array_agg(reply_count ORDER BY observed_at), array_agg(like_count ORDER BY observed_at),
                      array_agg(quote_count ORDER BY observed_at), array_agg(bookmark_count ORDER BY observed_at),
                      array_agg(impression_count ORDER BY observed_at))) AS bytes
               FROM tweetkeeper.metric_history GROUP BY tweet_id)
  SELECT sum(stream)::numeric / $POSTS, sum(bytes)::numeric / $POSTS, sum(bytes)::numeric / nullif(sum(n), 0),
         percentile_disc(0.99) WITHIN GROUP (ORDER BY bytes) FROM p" >"$dir/history"
read -r per bytes per_obs p99 <"$dir/history"
printf "   %.1f stream observations per post in the run (at most one every %s s while it moves: the flush); packed, %.0f bytes per post (p99 %d), %.1f bytes an observation\n" \
  "$per" "$FLUSH" "$bytes" "$p99" "$per_obs"
python3 - "$dir/posts" "$TK_MOCK_URL" "$per_obs" <<'PY'
import http.client, json, sys, urllib.parse
posts, url, per_obs = open(sys.argv[1]).read().split(), urllib.parse.urlparse(sys.argv[2]), float(sys.argv[3])
alphabet = '234567abcdefghijklmnopqrstuvwxyz'
c = http.client.HTTPConnection(url.hostname, url.port)
units = []
for uri in posts[::max(1, len(posts) // 1000)]:
    v = 0
    for ch in uri.rsplit('/', 1)[1]: v = v * 32 + alphabet.index(ch)
    c.request('GET', '/mock/truth?network=bluesky&key=%s&at_us=%d' % (urllib.parse.quote(uri), (v >> 10) + 30 * 86400 * 1000000))
    t = json.loads(c.getresponse().read())
    units.append(t['likes'] + t['reposts'] + t['replies'] + t['quotes'])
units.sort()
mean = sum(units) / len(units)
print('   a 30-day life, at most: %.0f bytes per post on average (%.1f count units x %.1f bytes), p99 %.0f bytes (%d posts of the model)'
      % (mean * per_obs + 16, mean, per_obs, units[len(units) * 99 // 100] * per_obs + 16, len(units)))
PY
