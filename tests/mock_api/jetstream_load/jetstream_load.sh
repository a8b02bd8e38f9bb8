#!/usr/bin/env bash
# What the mock's Jetstream costs at a bench's load (issue 52): --jetstream-rate 5000 with 100,000
# registered posts made in the last hour, one reader of the whole network's likes, reposts and
# posts. Prints the reader's line (read.mjs: events/s, first event, lag) and the mock's CPU seconds
# per minute of stream (from /proc: the mock alone, whatever else the machine runs); then a replay
# from a cursor an hour back beside a live reader: the live reader's lag while the replay runs.
# Needs the ws package spec.sh installs into build/npm-jetstream (run the spec suite once first).
#     jetstream_load.sh [SECONDS]      (default 60)
set -uo pipefail
source "$(dirname "$0")/../../lib/common.sh"
secs=${1:-60}
npm=$TK_BUILD/npm-jetstream
[ -d "$npm/node_modules/ws" ] || { echo "no $npm/node_modules/ws: run tests/mock_api/spec/spec.sh once" >&2; exit 2; }
tk_workdir jetstream-load
here=$(dirname "$0")
/usr/bin/python3 - "$dir/posts.txt" <<'PY'
import random, sys, time
S = "234567abcdefghijklmnopqrstuvwxyz"
def tid(ms, clock):
    v = (ms * 1000 << 10) | clock
    return "".join(S[(v >> (5 * i)) & 31] for i in range(12, -1, -1))
now, rnd = int(time.time() * 1000), random.Random(5)
with open(sys.argv[1], "w") as f:
    for _ in range(100000):
        did = "did:plc:" + "".join(rnd.choice(S) for _ in range(24))
        # clock ids none of the mock's fates take (shown, not backdated)
        f.write(f"at://{did}/app.bsky.feed.post/{tid(now - rnd.randint(0, 3600 * 1000), rnd.choice([0, 1, 2, 4, 5, 6]))}\n")
PY
tk_mock_start "$dir/mock.log" --jetstream-port 0 --jetstream-rate 5000 || exit 1
ws=$(sed -n 's/^tweetkeeper-mock-api jetstream listening on \(ws[^ ]*\).*/\1/p' "$dir/mock.log.out")
start=$EPOCHREALTIME
curl -sS -H 'Content-Type: text/plain' --data-binary @"$dir/posts.txt" "$TK_MOCK_URL/mock/jetstream/posts"
echo " in $(echo "$EPOCHREALTIME - $start" | bc) s"
cpu() { awk '{ print $14 + $15 }' "/proc/$TK_MOCK_PID/stat"; }
url="$ws/subscribe?wantedCollections=app.bsky.feed.like&wantedCollections=app.bsky.feed.repost&wantedCollections=app.bsky.feed.post"
c0=$(cpu)
node "$here/read.mjs" "$npm" "$url" "$secs"
c1=$(cpu)
echo "mock CPU: $(echo "scale=2; ($c1 - $c0) / $(getconf CLK_TCK) * 60 / $secs" | bc) s per minute of stream"
node "$here/read.mjs" "$npm" "$url" 20 >"$dir/live" &
live=$!
node "$here/read.mjs" "$npm" "$url&cursor=$(( ($(date +%s) - 3600) * 1000000 ))" 15 >"$dir/replay"
wait "$live"
echo "live beside a replay: $(cat "$dir/live")"
echo "the replay from an hour back: $(cat "$dir/replay")"
