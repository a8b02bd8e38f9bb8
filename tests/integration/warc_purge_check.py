#!/usr/bin/env python3
"""Checks a WARC directory purged by tweetkeeper-warc purge against the files before the purge
(tests/integration/warc_purge.sh): every file there still (old or new: never neither), each record
whole (gzip member, Content-Length, block and payload digests, libarchive's 64 KiB header rule),
each request paired with its response, each WARC-Refers-To naming a record of the file, and the
captures as expected: a capture whose posts are all gone is absent (response and request), any
other holds exactly its posts less the gone ones (a rewritten one with a metadata record that says
so), a response with no posts is as it was; no gone post in any response; purge.log names every
post removed from each file in a run that replaced that file; no token anywhere.

Usage: warc_purge_check.py BEFORE_DIR AFTER_DIR GONE_IDS_FILE TOKEN [--names-only]
Prints one line "CAPTURES DROPPED REWRITTEN PROBLEMS", then the first problems.
warc_purge_check.py --keys DIR: every post the responses of DIR hold, one a line, sorted, once
each: x:ID, a Bluesky post's at:// URI, mastodon:HOST/ID (HOST: that of the status's own page,
https://HOST/@user/ID, or a boost's https://HOST/users/user/statuses/ID/activity).
warc_purge_check.py --pick DIR: the posts the test makes gone, one a line: every post of the first
answer of the first file, and one in five (id % 5 == 0) of the others'.
--names-only: a run killed half way: each file may also be the one before, whole, and purge.log is
not checked."""
import base64, collections, glob, gzip, hashlib, json, os, re, sys, zlib

pick, keys = sys.argv[1] == '--pick', sys.argv[1] == '--keys'
before, after, gone_file, token = (sys.argv[2], '', '', '\0') if pick or keys else sys.argv[1:5]
names_only = '--names-only' in sys.argv
gone = set(open(gone_file).read().split()) if gone_file else set()
problems = []
BLOCK = 64 * 1024


def b32(x):
    return 'sha1:' + base64.b32encode(hashlib.sha1(x).digest()).decode()


def dechunk(head, body):
    if not re.search(rb'(?im)^transfer-encoding:.*chunked', head):
        return body
    out = b''
    while True:
        line, _, body = body.partition(b'\r\n')
        n = int(line.split(b';')[0], 16)
        if n == 0:
            return out
        out, body = out + body[:n], body[n + 2:]


def decoded(block):
    head, _, body = block.partition(b'\r\n\r\n')
    body = dechunk(head, body)
    if re.search(rb'(?im)^content-encoding: *gzip', head):
        body = gzip.decompress(body)
    return body


def post_ids(block):
    try:
        doc = json.loads(decoded(block))
    except Exception:
        return None
    if not isinstance(doc, dict) or not isinstance(doc.get('data'), list):
        return None
    ids = [p['id'] for p in doc['data']]
    ids += [p['id'] for p in (doc.get('includes') or {}).get('tweets', [])]
    return sorted(ids)


def read(path):
    """The records of a file: (fields, block, offset decompressed, header length)."""
    raw = open(path, 'rb').read()
    if token.encode() in raw:
        problems.append(f'{path}: the token')
    out, at, plain = [], 0, 0
    while at < len(raw):
        z = zlib.decompressobj(31)
        m = z.decompress(raw[at:])
        if not z.eof:
            problems.append(f'{path}: an incomplete gzip member at {at}')
            break
        at = len(raw) - len(z.unused_data)
        if token.encode() in m:
            problems.append(f'{path}: the token in a record')
        head, sep, rest = m.partition(b'\r\n\r\n')
        lines = head.split(b'\r\n')
        if lines[0] != b'WARC/1.0' or not sep:
            problems.append(f'{path}: a bad head at {plain}')
            break
        f = collections.defaultdict(list)
        for l in lines[1:]:
            k, v = l.decode().split(': ', 1)
            f[k].append(v)
        n = int(f['Content-Length'][0])
        block = rest[:n]
        if rest[n:] != b'\r\n\r\n':
            problems.append(f'{path}: Content-Length does not end the block')
        if f['WARC-Block-Digest'][0] != b32(block):
            problems.append(f'{path}: a block digest')
        if plain % BLOCK + len(head) + 4 > BLOCK:
            problems.append(f'{path}: a header across a 64 KiB block at {plain}')
        out.append((f, block))
        plain += len(m)
    return out


def captures(records):
    """(target, ids or None) per response, each request's pairing checked; ids of metadata records."""
    by_id = {f['WARC-Record-ID'][0]: (f, b) for f, b in records}
    caps, rewritten = [], 0
    for f, b in records:
        t = f['WARC-Type'][0]
        if t in ('request', 'response'):
            other = by_id.get(f['WARC-Concurrent-To'][0])
            if not other or other[0]['WARC-Concurrent-To'][0] != f['WARC-Record-ID'][0]:
                problems.append(f'{t} {f["WARC-Record-ID"][0]} not paired')
            if f.get('WARC-Payload-Digest') and f['WARC-Payload-Digest'][0] != b32(dechunk(*b.split(b'\r\n\r\n', 1))):
                problems.append(f'{t} {f["WARC-Record-ID"][0]}: payload digest')
        if t == 'response':
            caps.append((f['WARC-Target-URI'][0], post_ids(b)))
        if 'WARC-Refers-To' in f:
            target = by_id.get(f['WARC-Refers-To'][0])
            if not target:
                problems.append(f'a dangling WARC-Refers-To {f["WARC-Refers-To"][0]}')
            elif b.startswith(b'tweetkeeper-purge: '):
                rewritten += 1
                removed = re.findall(rb'tweetkeeper-removed-post: x:(\d+) ', b)
                if not removed or any(r.decode() not in gone for r in removed):
                    problems.append(f'a purge metadata record naming {removed}')
    return caps, rewritten


def post_keys(block):
    """The keys of the posts a response holds, any network's."""
    try:
        doc = json.loads(decoded(block))
    except Exception:
        return []
    out = []
    def mastodon(st):
        url = st.get('url') or ''
        m = (re.match(r'https://([^/]+)/@[^/]+/(\d+)$', url)
             or re.match(r'https://([^/]+)/users/[^/]+/statuses/(\d+)/activity$', url))  # a boost's
        if m and m.group(2) == st.get('id'):
            out.append(f'mastodon:{m.group(1)}/{st["id"]}')
    if isinstance(doc, list):
        for st in doc:
            if isinstance(st, dict): mastodon(st)
    elif isinstance(doc, dict):
        if isinstance(doc.get('data'), list):
            out += ['x:' + p['id'] for p in doc['data']]
        for p in doc.get('posts', []):
            out.append(p['uri'])
        for item in doc.get('feed', []):
            out.append(item['post']['uri'])
        if isinstance(doc.get('id'), str) and 'url' in doc:
            mastodon(doc)
    return out


if keys:
    found = set()
    for path in sorted(glob.glob(os.path.join(before, '*.warc.gz'))):
        for f, b in read(path):
            if f['WARC-Type'][0] == 'response':
                found.update(post_keys(b))
    print('\n'.join(sorted(found)))
    sys.exit(0)

if pick:
    picked, first = set(), True
    for path in sorted(glob.glob(os.path.join(before, '*.warc.gz'))):
        for f, b in read(path):
            ids = post_ids(b) if f['WARC-Type'][0] == 'response' else None
            if ids and first:
                picked.update(ids)
                first = False
            elif ids:
                picked.update(i for i in ids if int(i) % 5 == 0)
    print('\n'.join(sorted(picked)))
    sys.exit(0)

names = sorted(os.path.basename(p) for p in glob.glob(os.path.join(before, '*.warc.gz')))
now = sorted(os.path.basename(p) for p in glob.glob(os.path.join(after, '*.warc.gz')))
if now != names:
    problems.append(f'files before {names}, after {now}')
left = [n for n in os.listdir(after) if n.endswith('.purging')] if names_only else \
    [n for n in os.listdir(after) if n.endswith('.purging') or n.endswith('.open')]
if left and not names_only:
    problems.append(f'left over: {left}')
n_caps = n_dropped = n_rewritten = 0
log = []
if os.path.exists(os.path.join(after, 'purge.log')):
    for line in open(os.path.join(after, 'purge.log')):
        try:
            log.append(json.loads(line))
        except ValueError:
            pass  # a line a kill cut
replaced = {(l['run'], l['file']) for l in log if l.get('action') == 'replaced'}
logged = {(l['file'], l['post']) for l in log if l.get('action') in ('dropped', 'rewritten') and (l['run'], l['file']) in replaced}
if True:
    for name in names:
        was, _ = captures(read(os.path.join(before, name)))
        is_, rewritten = captures(read(os.path.join(after, name)))
        expected = []
        for target, ids in was:
            if ids is None or not ids:
                expected.append((target, ids))
                continue
            kept = [i for i in ids if i not in gone]
            if kept:
                expected.append((target, kept))
            else:
                n_dropped += 1
            for i in ids:
                if i in gone and not names_only and (name, 'x:' + i) not in logged:
                    problems.append(f'{name}: x:{i} removed without a replaced run in purge.log')
        if names_only and sorted(map(repr, is_)) == sorted(map(repr, was)):
            n_caps += len(is_)
            continue  # the old file, still whole
        if sorted(map(repr, is_)) != sorted(map(repr, expected)):
            problems.append(f'{name}: captures {len(is_)}, expected {len(expected)}; first differing: '
                            f'{[c for c in is_ if c not in expected][:1]} / {[c for c in expected if c not in is_][:1]}')
        for target, ids in is_:
            if ids and gone.intersection(ids):
                problems.append(f'{name}: a gone post kept in {target}')
        n_caps += len(is_)
        n_rewritten += rewritten
print(n_caps, n_dropped, n_rewritten, len(problems))
for p in problems[:10]:
    print('#', p)
