#!/usr/bin/env bash
# WARC recording (tweetkeeper-worker --warc-dir): two workers write into one directory while they
# refresh 600 tweets every 6 s against the mock (every other answer gzip-compressed and chunked,
# the others plain), rolling their files over every 2 s; one is SIGKILLed on
# the way and started again, which finishes the file it left open. The files are then read back
# by bsdtar (Debian's libarchive: strict, WARC/1.0), by warcio.js (npm, installed by the test)
# and record by record here (python's zlib and hashlib): every member a whole record, block and payload digests recomputed, each request linked
# to its response, a warcinfo record first in each file (and metadata records only as fillers
# that keep headers within libarchive's 64 KiB blocks), each response an answer the mock logged
# (--answer-log: its target, and its body's SHA-1 as sent), as many responses as the mock answered
# (less at most the killed worker's requests in flight), and no token anywhere.
# Prints "warc: N passed, M failed".
set -uo pipefail
source "$(dirname "$0")/../lib/common.sh"
TOKEN=warc-test-token-0123456789abcdef
tk_workdir warc
tk_pg_start "$dir" -c tweetkeeper.buffer_ttl=1s -c tweetkeeper.lease_ttl=30s || exit 1
# Every other answer gzip-compressed and chunked, as real APIs' front ends send them: recorded
# as they came over the wire, the payload digest taken over the de-chunked (still compressed) body.
# It logs each answer's body as sent (--answer-log: its SHA-1, status and request target), which
# each response record's de-chunked body must match.
tk_mock_start "$dir/mock.log" --token "$TOKEN" --latency-ms 100 --gzip-every 2 --answer-log "$dir/answers.log" || exit 1
tk_psql >/dev/null <<SQL || exit 1
CREATE EXTENSION tweetkeeper;
$(tk_fast_policy_sql)
SELECT tweetkeeper.schedule_tweets($(tk_snowflake_sql '1 minute' 600));
SQL
warc=$dir/warc
mkdir -p "$warc"
export TWEETKEEPER_BEARER_TOKEN=$TOKEN
start() { # start I: worker I, recording into $warc
  "$TK_WORKER" --dsn "$TK_DSN" --api-url "$TK_MOCK_URL" --batch-size 20 --concurrency 2 --name "warc-$1" \
    --poll-interval 200 --warc-dir "$warc" --warc-rollover 2 >>"$dir/worker-$1.log" 2>&1 &
  eval "w$1=$!"
  TK_PIDS+=($!)
}
"$TK_WORKER" --dsn "$TK_DSN" --warc-dir "$dir/nowhere" >"$dir/bad.log" 2>&1
rc=$?
[ "$rc" = 2 ] && grep -q "is not a directory this worker can write into" "$dir/bad.log"
tk_ok "--warc-dir that is no directory: exit 2 and says so" $? "rc $rc: $(cat "$dir/bad.log")"
start 1
start 2
# Until worker 1 has a file open (its name ends in -PID~HOST.warc.gz.open) and has completed batches.
open_and_recording() {
  ls "$warc" | grep -q -- "-$w1~.*\.open\$" &&
    tk_sql_true "SELECT count(*) >= 3 FROM tweetkeeper.batches WHERE worker = 'warc-1' AND outcome = 'completed'"
}
TK_POLL_S=0.2 tk_wait_until 20 open_and_recording
ls "$warc" | grep -q -- "-$w1~.*\.open\$"
tk_ok "worker 1 records into a file of its own (.open) while it refreshes" $? "$(ls "$warc")"
kill -KILL "$w1"
wait "$w1" 2>/dev/null
tk_forget "$w1"
left_open=$(ls "$warc" | grep -c '\.open$')
start 1
# Until the new worker 1 has finished the file left open and both have recorded for a while:
# files rolled over (at least 4 closed) and 60 batches completed.
restarted_at=$(tk_psql -c "SELECT now()")
recorded="SELECT count(*) >= 60 AND count(*) FILTER (WHERE worker = 'warc-1' AND claimed_at > timestamptz '$restarted_at') > 0
            FROM tweetkeeper.batches WHERE outcome = 'completed'"
finished_and_recorded() {
  grep -q "WARC: finished [1-9]" "$dir/worker-1.log" && [ "$(ls "$warc" | grep -c '\.warc\.gz$')" -ge 4 ] &&
    tk_sql_true "$recorded"
}
TK_POLL_S=0.2 tk_wait_until 30 finished_and_recorded
kill -TERM "$w1" "$w2"
tk_wait_exit "$w1" 30; rc1=$TK_RC
tk_wait_exit "$w2" 30; rc2=$TK_RC
[ "$rc1$rc2" = 00 ]
tk_ok "workers recording WARC exit 0 on SIGTERM" $? "exit $rc1 $rc2"
[ "$left_open" -ge 1 ] && grep -q "WARC: finished [1-9]" "$dir/worker-1.log" && [ "$(ls "$warc" | grep -c '\.open$')" = 0 ]
tk_ok "a SIGKILLed worker's open file ($left_open .open) is finished by the next start; SIGTERM closes the rest" $? \
  "$(ls "$warc"; grep WARC "$dir"/worker-*.log)"
mock_requests=$(curl -s "$TK_MOCK_URL/mock/stats" | jq '.requests')

n_files=$(ls "$warc"/*.warc.gz 2>/dev/null | wc -l)
bsd_entries=0
bsd_ok=0
for f in "$warc"/*.warc.gz; do
  out=$(bsdtar -tf "$f" 2>&1) || { bsd_ok=1; echo "# bsdtar $f: $out"; }
  bsd_entries=$((bsd_entries + $(printf '%s' "$out" | grep -c '^2/tweets')))
done
[ "$n_files" -ge 4 ] && [ "$bsd_ok" = 0 ]
tk_ok "bsdtar (libarchive) reads each of the $n_files files" $?

report=$(python3 - "$warc" "$TOKEN" "$dir/answers.log" <<'PY'
import base64, glob, gzip, hashlib, os, re, sys, zlib
from urllib.parse import urlsplit
d, token = sys.argv[1], sys.argv[2].encode()
answered = {}  # (request target, SHA-1 of the body) -> how many times the mock sent that body there
for line in open(sys.argv[3]):
    digest, status, target = line.rstrip('\n').split(' ', 2)
    if target.startswith('/mock/'): continue  # this test's own look at the mock's stats
    answered[(target, digest)] = answered.get((target, digest), 0) + 1
n_answered, matched = sum(answered.values()), 0
def b32(x): return 'sha1:' + base64.b32encode(hashlib.sha1(x).digest()).decode()
def payload(block):
    head, _, body = block.partition(b'\r\n\r\n')
    if re.search(rb'(?im)^transfer-encoding:.*chunked', head):
        out = b''
        while True:
            line, _, body = body.partition(b'\r\n')
            n = int(line.split(b';')[0], 16)
            if n == 0: return out
            out, body = out + body[:n], body[n + 2:]
    return body
problems, responses, requests, tokens_found, names, gzipped = [], 0, 0, 0, set(), 0
for path in sorted(glob.glob(os.path.join(d, '*.warc.gz'))):
    raw = open(path, 'rb').read()
    if token in raw: tokens_found += 1
    members, at = [], 0
    while at < len(raw):
        z = zlib.decompressobj(31)
        members.append(z.decompress(raw[at:]))
        if not z.eof: problems.append(f'{path}: incomplete member'); break
        at = len(raw) - len(z.unused_data)
    ids = {}
    for i, m in enumerate(members):
        if token in m: tokens_found += 1
        head, sep, rest = m.partition(b'\r\n\r\n')
        lines = head.split(b'\r\n')
        if lines[0] != b'WARC/1.0' or not sep: problems.append(f'{path}#{i}: bad head'); continue
        f = dict(l.decode().split(': ', 1) for l in lines[1:])
        n = int(f['Content-Length'])
        block = rest[:n]
        if rest[n:] != b'\r\n\r\n': problems.append(f'{path}#{i}: Content-Length {n} does not end the block')
        if f.get('WARC-Block-Digest') != b32(block): problems.append(f'{path}#{i}: block digest')
        t = f['WARC-Type']
        if i == 0 and (t != 'warcinfo' or f.get('WARC-Filename') != os.path.basename(path)):
            problems.append(f'{path}: no warcinfo first naming the file')
        if t in ('request', 'response'):
            if f.get('WARC-Payload-Digest') != b32(payload(block)): problems.append(f'{path}#{i}: payload digest')
            if f.get('WARC-Warcinfo-ID') != ids.get('info'): problems.append(f'{path}#{i}: warcinfo id')
            ids[f['WARC-Record-ID']] = (t, f['WARC-Concurrent-To'], f['WARC-Target-URI'])
        elif t == 'warcinfo':
            ids['info'] = f['WARC-Record-ID']
        elif t != 'metadata' or f.get('WARC-Warcinfo-ID') != ids.get('info'):
            problems.append(f'{path}#{i}: a {t} record')  # metadata: the filler before a 64 KiB block
        if t == 'request':
            requests += 1
            if b'Authorization: [redacted' not in block: problems.append(f'{path}#{i}: Authorization not redacted')
        if t == 'response':
            responses += 1
            if not block.startswith(b'HTTP/1.1 200'): problems.append(f'{path}#{i}: not the answer: {block[:40]!r}')
            head = block.partition(b'\r\n\r\n')[0]
            cl = re.search(rb'(?im)^content-length: *(\d+)', head)
            if cl and int(cl.group(1)) != len(payload(block)): problems.append(f'{path}#{i}: body is not as its Content-Length says')
            body = payload(block)
            if re.search(rb'(?im)^content-encoding: *gzip', head):
                gzipped += 1
                if not re.search(rb'(?im)^transfer-encoding: *chunked', head): problems.append(f'{path}#{i}: gzip, not chunked')
                try: body = gzip.decompress(body)
                except Exception as e: problems.append(f'{path}#{i}: gzip body unreadable: {e}')
            if not body.startswith(b'{"data":'): problems.append(f'{path}#{i}: the body is no answer: {body[:30]!r}')
            u = urlsplit(f['WARC-Target-URI'])
            key = (u.path + ('?' + u.query if u.query else ''), hashlib.sha1(payload(block)).hexdigest())
            if answered.get(key, 0) > 0: answered[key] -= 1; matched += 1
            else: problems.append(f'{path}#{i}: no answer the mock logged has this target and body')
    for rid, v in ids.items():
        if rid == 'info': continue
        other = ids.get(v[1])
        if not other or other[1] != rid or other[0] == v[0] or other[2] != v[2]:
            problems.append(f'{path}: {v[0]} {rid} not linked to its pair')
    names.add(os.path.basename(path))
print(responses, requests, tokens_found, len(problems), gzipped, matched, n_answered)
for p in problems[:10]: print('#', p)
PY
)
echo "# $(echo "$report" | head -1) (responses, requests, files or records holding the token, problems, gzip-compressed and chunked, matched in the answer log, logged); mock answered $mock_requests; bsdtar listed $bsd_entries"
read -r responses requests tokens problems gzipped matched answered <<<"$(echo "$report" | head -1)"
[ "${problems:-1}" = 0 ] && [ "${gzipped:-0}" -ge 10 ] && [ $((responses - gzipped)) -ge 10 ]
tk_ok "every record whole: Content-Length, block and payload digests (${gzipped:-no} bodies gzip-compressed and chunked as they came, of ${responses:-no}), warcinfo first, each request and response linked" $? "$report"
[ "${problems:-1}" = 0 ] && [ "$matched" = "$responses" ] && [ "$answered" -ge "$responses" ] && [ "$answered" -le $((responses + 2)) ]
tk_ok "each response is an answer the mock logged, byte for byte (its target and its body's SHA-1: ${matched:-no} of ${answered:-no} logged; the killed worker's 2 in flight at most unrecorded)" $? "$report"
[ "${tokens:-1}" = 0 ] && ! grep -rqF "$TOKEN" "$warc"
tk_ok "the token is in no file, compressed or not (the Authorization header reads [redacted---...])" $?
[ "$responses" = "$requests" ] && [ "$bsd_entries" = "$responses" ] && [ "$responses" -ge $((mock_requests - 2)) ] &&
  [ "$responses" -le "$mock_requests" ] && [ "$responses" -ge 30 ]
tk_ok "a response per request the mock answered ($responses of $mock_requests; the killed worker's 2 in flight at most lost), all listed by bsdtar" $? \
  "responses $responses requests $requests bsdtar $bsd_entries mock $mock_requests"
# The second reader: warcio.js (webrecorder's, npm `warcio`), installed once per build directory
# (as make deps installs Debian packages); warcio_check.cjs recomputes what it does not check.
npm_prefix=${TK_NPM_PREFIX:-$TK_BUILD/npm}
if [ ! -f "$npm_prefix/node_modules/warcio/package.json" ]; then
  mkdir -p "$npm_prefix"
  npm install --prefix "$npm_prefix" --no-audit --no-fund --loglevel=error warcio@2.4.11 >"$dir/npm.log" 2>&1
fi
js=$(node "$TK_ROOT/tests/integration/warcio_check.cjs" "$npm_prefix" "$warc"/*.warc.gz 2>&1)
read -r js_files js_records js_responses js_problems js_dropped <<<"$(echo "$js" | head -1)"
[ "$js_files" = "$n_files" ] && [ "$js_responses" = "$responses" ] && [ "$js_problems" = 0 ] &&
  [ "$js_records" -ge $((2 * responses + n_files)) ]
tk_ok "warcio.js reads every file too: ${js_records:-no} records, ${js_responses:-no} responses, block digests recomputed, each request paired" $? \
  "$js $(tail -5 "$dir/npm.log" 2>/dev/null)"

# A gateway that echoes the Authorization header in its error page, gzip-compressed and chunked,
# or chunked with the token cut across two chunks: the recorder cannot replace it in the bytes
# as they came, so the response goes unrecorded and a metadata record says so. No file may hold
# the token in any form: raw, in a decompressed member, or in a body de-chunked and decoded.
tk_mock_start "$dir/echo.log" --token "$TOKEN" --echo-authorization || exit 1
echo_warc=$dir/warc-echo
mkdir -p "$echo_warc"
tk_psql -c "UPDATE tweetkeeper.tweets SET due_at = now() WHERE state = 'scheduled'" >/dev/null
"$TK_WORKER" --dsn "$TK_DSN" --api-url "$TK_MOCK_URL" --batch-size 20 --concurrency 2 --name warc-echo \
  --poll-interval 200 --warc-dir "$echo_warc" >"$dir/worker-echo.log" 2>&1 &
we=$!
TK_PIDS+=($we)
tk_wait_for 40 "SELECT count(*) >= 4 FROM tweetkeeper.batches WHERE worker = 'warc-echo' AND outcome = 'released'"
kill -TERM "$we"
tk_wait_exit "$we" 30
tk_forget "$we"
echoed=$(curl -s "$TK_MOCK_URL/mock/stats" | jq '.requests')
raw=$(grep -laF -- "$TOKEN" "$echo_warc"/* 2>/dev/null | wc -l)
unzipped=$(for f in "$echo_warc"/*.warc.gz; do zcat "$f"; done | grep -caF -- "$TOKEN")
decoded=$(python3 - "$TOKEN" "$echo_warc"/*.warc.gz <<'PY'
import gzip, sys, zlib
token = sys.argv[1].encode()
found = responses = dropped = kinds = 0
seen = set()
for path in sys.argv[2:]:
    data = gzip.open(path).read()
    at = 0
    while at < len(data):
        head_end = data.index(b"\r\n\r\n", at)
        head = data[at:head_end].decode("latin1")
        fields = dict(l.split(": ", 1) for l in head.split("\r\n")[1:])
        block = data[head_end + 4:head_end + 4 + int(fields["Content-Length"])]
        at = head_end + 4 + int(fields["Content-Length"]) + 4
        if block.startswith(b"tweetkeeper-response-dropped: "):
            dropped += 1
        if fields["WARC-Type"] != "response":
            found += token in block
            continue
        responses += 1
        h_end = block.index(b"\r\n\r\n")
        h = block[:h_end].decode("latin1").lower()
        body = block[h_end + 4:]
        if "transfer-encoding: chunked" in h:
            out, i = b"", 0
            while True:
                j = body.index(b"\r\n", i)
                n = int(body[i:j].split(b";")[0], 16)
                if n == 0: break
                out += body[j + 2:j + 2 + n]
                i = j + 2 + n + 2
            body = out
        if "content-encoding: gzip" in h:
            body = zlib.decompress(body, 47)
        found += token in body
print(found, responses, dropped)
PY
)
read -r in_bodies echo_responses echo_dropped <<<"$decoded"
[ "${echoed:-0}" -ge 4 ] && [ "$raw" = 0 ] && [ "$unzipped" = 0 ] && [ "$in_bodies" = 0 ] && [ "$echo_dropped" -ge 4 ]
tk_ok "a gateway echoing the token (gzip and chunked, or cut across chunks): in no file, raw, unzipped or decoded; $echo_dropped responses dropped, each said in a metadata record ($echoed echoed)" $? \
  "raw $raw, unzipped $unzipped, in decoded bodies $in_bodies; responses $echo_responses, dropped $echo_dropped; $(tail -3 "$dir/worker-echo.log")"
bsd=0
for f in "$echo_warc"/*.warc.gz; do bsdtar -tf "$f" >/dev/null 2>&1 || bsd=1; done
js=$(node "$TK_ROOT/tests/integration/warcio_check.cjs" "$npm_prefix" "$echo_warc"/*.warc.gz 2>&1)
read -r js_files js_records js_responses js_problems js_dropped <<<"$(echo "$js" | head -1)"
[ "$bsd" = 0 ] && [ "$js_problems" = 0 ] && [ "$js_dropped" = "$echo_dropped" ]
tk_ok "bsdtar and warcio.js read those files: each request paired with the metadata record in its response's place ($js_dropped)" $? "$js"
files_mode=$(stat -c %a "$echo_warc"/*.warc.gz "$warc"/*.warc.gz | sort -u | paste -sd ' ')
[ "$files_mode" = 600 ]
tk_ok "WARC files are the worker's user's alone (mode $files_mode)" $?
tk_summary warc
