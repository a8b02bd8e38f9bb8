// The mock's Jetstream as a client of the ecosystem reads it: @skyware/jetstream (with ws: Node 20
// has no WebSocket of its own) subscribes to two posting accounts from a cursor 30 s back and
// live. Checks: the events replayed are exactly the posts /mock/follow/posts says the two made
// since the cursor (no other account's, none twice), in time order; each delete names a post made
// 5 s before it, of the posts the mock says were deleted; each record is a valid
// app.bsky.feed.post by @atproto/lexicon (the lexicons of @atproto/api, spec.sh), its createdAt the post's. Then
// an options_update (the client's updateOptions) adds a third account, whose posts follow. A
// cursor older than the replay window is clamped silently, a bad DID is an HTTP 400.
// Engagement (issue 52): posts made ten minutes ago are registered (POST /mock/jetstream/posts);
// the whole network's likes, reposts and posts are read from a cursor before the first was made;
// each record is a valid app.bsky.feed.like, .repost or .post (replies, quotes with both embeds)
// by @atproto/lexicon, each delete carries no record or cid, and for every registered post the
// net counts of its events before the Date second of a getPosts answer are that answer's counts.
// A subscription to reposts alone gets reposts alone. Posts and accounts made gone (POST /mock/gone):
// a post's delete and an account's events, as a live subscription and a replay get them.
//     node client_check.mjs NPM_PREFIX ATPROTO_NPM_PREFIX LEXICONS_DIR MOCK_URL JETSTREAM_URL
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

import { exit, lexiconDocuments, report } from '../tap.mjs';

const [prefix, atprotoPrefix, lexDir, mock, jetstream] = process.argv.slice(2);
if (!jetstream) {
  console.error('usage: node client_check.mjs NPM_PREFIX ATPROTO_NPM_PREFIX LEXICONS_DIR MOCK_URL JETSTREAM_URL');
  process.exit(2);
}
const from = (p, dir = prefix) => import(pathToFileURL(path.join(dir, 'node_modules', p)).href);
const { Jetstream } = await from('@skyware/jetstream/dist/index.js');
const WebSocket = (await from('ws/wrapper.mjs')).default;
const { Lexicons, jsonToLex } = await from('@atproto/lexicon/dist/index.js', atprotoPrefix);
const version = JSON.parse(fs.readFileSync(path.join(prefix, 'node_modules/@skyware/jetstream/package.json'))).version;

const docs = lexiconDocuments(lexDir);
const lex = new Lexicons(docs);

const get = async (p) => (await fetch(mock + p)).json();
const accounts = (await get('/mock/follow/accounts?network=bluesky')).accounts;
const dids = [];
for (const a of accounts.slice(0, 3)) {
  dids.push((await get(`/xrpc/app.bsky.actor.getProfile?actor=${a.url.split('/').pop()}`)).did);
}
const start = Date.now() - 30000;
const events = [];
const js = new Jetstream({ ws: WebSocket, endpoint: `${jetstream}/subscribe`, wantedCollections: ['app.bsky.feed.post'],
                           wantedDids: dids.slice(0, 2), cursor: start * 1000 });
js.on('commit', (e) => events.push(e));
let failure = null;
js.on('error', (e) => { failure = e; });
js.start();
await new Promise((r) => setTimeout(r, 1500));
const replayedUntil = Date.now() - 1000;
js.updateOptions({ wantedCollections: ['app.bsky.feed.post'], wantedDids: dids });
await new Promise((r) => setTimeout(r, 2500));
js.close();
report(failure === null, `@skyware/jetstream ${version} reads the mock's Jetstream without an error`, failure?.message);

const made = (await get(`/mock/follow/posts?network=bluesky&from_ms=${start}&to_ms=${replayedUntil}`)).posts;
const uri = (e) => `at://${e.did}/app.bsky.feed.post/${e.commit.rkey}`;
const creates = events.filter((e) => e.commit.operation === 'create' && Math.floor(e.time_us / 1000) <= replayedUntil &&
                                     dids.slice(0, 2).includes(e.did));
const want = made.filter((p) => dids.slice(0, 2).some((d) => p.url.startsWith(`at://${d}/`))).map((p) => p.url).sort();
const got = creates.map(uri).sort();
report(got.length > 10 && JSON.stringify(got) === JSON.stringify(want),
       `the replay from a cursor 30 s back: exactly the two accounts' posts the mock made since (${got.length} of ${want.length})`,
       `${got.filter((u) => !want.includes(u)).slice(0, 3)} | missing ${want.filter((u) => !got.includes(u)).slice(0, 3)}`);
report(events.every((e, i) => i === 0 || events[i - 1].time_us <= e.time_us), 'events come in time order (time_us)');
const deletes = events.filter((e) => e.commit.operation === 'delete');
const madeByUri = new Map(made.map((p) => [p.url, p]));
report(deletes.length > 0 && deletes.every((e) => !e.commit.record && !e.commit.cid &&
                                                 (!madeByUri.has(uri(e)) || madeByUri.get(uri(e)).deleted_ms === Math.floor(e.time_us / 1000))),
       `deletes (${deletes.length}) carry no record, each at the moment the mock says its post went`);
const invalid = [];
for (const e of events.filter((x) => x.commit.operation === 'create')) {
  try {
    lex.assertValidRecord('app.bsky.feed.post', jsonToLex(e.commit.record));
    const p = madeByUri.get(uri(e));
    if (p && Date.parse(e.commit.record.createdAt) !== p.created_ms) invalid.push(`${uri(e)}: createdAt ${e.commit.record.createdAt}`);
    if (e.time_us < Date.parse(e.commit.record.createdAt) * 1000) invalid.push(`${uri(e)}: seen before it was made`);
  } catch (err) {
    invalid.push(`${uri(e)}: ${err.message}`);
  }
}
report(invalid.length === 0, 'each record is a valid app.bsky.feed.post (@atproto/lexicon), made when the mock says, seen after', invalid.slice(0, 3).join('\n'));
const third = events.filter((e) => e.did === dids[2]);
report(third.length > 0 && third.every((e) => e.time_us / 1000 >= replayedUntil - 1000),
       `after updateOptions (options_update) the third account's posts follow, from then on (${third.length})`);

// A cursor a week back: clamped to the replay window, silently.
const old = await new Promise((resolve) => {
  const got2 = [];
  const j = new Jetstream({ ws: WebSocket, endpoint: `${jetstream}/subscribe`, wantedCollections: ['app.bsky.feed.post'],
                            wantedDids: [dids[2]], cursor: (Date.now() - 7 * 86400000) * 1000 });
  j.on('commit', (e) => got2.push(e));
  j.start();
  setTimeout(() => { j.close(); resolve(got2); }, 1500);
});
report(old.length > 0 && old[0].time_us >= (Date.now() - 36 * 3600000 - 5000) * 1000,
       `a cursor a week back is clamped to the 36 hours Jetstream replays (first event ${((Date.now() * 1000 - (old[0]?.time_us ?? 0)) / 3.6e9).toFixed(1)} h back)`);
const bad = await fetch(`${jetstream.replace(/^ws/, 'http')}/subscribe?wantedDids=not-a-did`);
report(bad.status === 400 && /invalid DID/.test(await bad.text()), 'a bad DID: HTTP 400 before the upgrade');

// Engagement. Posts made ten minutes ago by accounts of nobody's (record keys: TIDs of then).
const sortable = '234567abcdefghijklmnopqrstuvwxyz';
const tid = (ms, clock) => {
  let v = (BigInt(ms) * 1000n << 10n) | BigInt(clock);
  let out = '';
  for (let i = 0; i < 13; i++, v >>= 5n) out = sortable[Number(v & 31n)] + out;
  return out;
};
const madeMs = Date.now() - 600000;
const postsOf = async (uris) => {
  const res = await fetch(`${mock}/xrpc/app.bsky.feed.getPosts?${uris.map((u) => `uris=${encodeURIComponent(u)}`).join('&')}`);
  return { date: Date.parse(res.headers.get('date')) / 1000, posts: (await res.json()).posts };
};
// Candidates 25 at a time until those shown have 30 quotes between them (counts are heavy-tailed:
// a few posts hold most), so that both quote embeds come up.
const shown = [];
for (let i = 0; i < 4000 && shown.reduce((q, p) => q + p.quoteCount, 0) < 30; i += 25) {
  const batch = [];
  for (let j = i; j < i + 25; j++) {
    const did = 'did:plc:' + Array.from({ length: 24 }, (_, k) => sortable[(j * 7 + k * 13 + (k * k * j) % 31) % 32]).join('');
    batch.push(`at://${did}/app.bsky.feed.post/${tid(madeMs + j, 1)}`);
  }
  shown.push(...(await postsOf(batch)).posts);
}
const tracked = shown.filter((p) => p.likeCount + p.repostCount + p.replyCount + p.quoteCount > 0);
const refused = await fetch(`${mock}/mock/jetstream/posts`, { method: 'POST', body: `${tracked[0]?.uri}\nat://not a uri\n` });
report(refused.status === 400 && /line 2/.test((await refused.json()).error ?? ''),
       'POST /mock/jetstream/posts: a malformed URI is a 400 naming its line');
const registered = await (await fetch(`${mock}/mock/jetstream/posts`, { method: 'POST',
                                                                        body: tracked.map((p) => p.uri).join('\n') })).json();
report(registered.registered === tracked.length && tracked.length >= 20,
       `POST /mock/jetstream/posts registers ${tracked.length} posts with engagement of ${shown.length} shown`, JSON.stringify(registered));
const byUri = new Map(tracked.map((p) => [p.uri, p]));
const hits = [];  // [subject, kind, +1 or -1, time_us] of the registered posts' events
const records = new Map();  // did/collection/rkey -> [subject, kind]: what a delete undoes
const embedKinds = new Set();
const seen3 = [];
let newest = 0;
const js3 = new Jetstream({ ws: WebSocket, endpoint: `${jetstream}/subscribe`,
                            wantedCollections: ['app.bsky.feed.like', 'app.bsky.feed.repost', 'app.bsky.feed.post'],
                            cursor: (madeMs - 2000) * 1000 });
let failure3 = null;
js3.on('error', (e) => { failure3 = e; });
js3.on('commit', (e) => {
  newest = Math.max(newest, e.time_us);
  seen3.push(e);
  const key = `${e.did}/${e.commit.collection}/${e.commit.rkey}`;
  let hit = null;
  if (e.commit.operation === 'create') {
    const r = e.commit.record;
    if (e.commit.collection === 'app.bsky.feed.like') hit = [r.subject?.uri, 'likes'];
    else if (e.commit.collection === 'app.bsky.feed.repost') hit = [r.subject?.uri, 'reposts'];
    else if (r.reply) hit = [r.reply.parent?.uri, 'replies'];
    else if (r.embed?.$type === 'app.bsky.embed.record') hit = [r.embed.record?.uri, 'quotes'];
    else if (r.embed?.$type === 'app.bsky.embed.recordWithMedia') hit = [r.embed.record?.record?.uri, 'quotes'];
    if (hit && byUri.has(hit[0])) {
      records.set(key, hit);
      if (hit[1] === 'quotes') embedKinds.add(r.embed.$type);
      if ((hit[1] === 'likes' || hit[1] === 'reposts') && r.subject.cid !== byUri.get(hit[0]).cid) failure3 = new Error(`${key}: subject cid ${r.subject.cid}, getPosts says ${byUri.get(hit[0]).cid}`);
    }
  } else if (records.has(key)) {
    hit = records.get(key);
  }
  if (hit && byUri.has(hit[0])) hits.push([hit[0], hit[1], e.commit.operation === 'delete' ? -1 : 1, e.time_us]);
});
// The net counts of a post's events before Unix second D.
const netAt = (uri, D) => {
  const n = { likes: 0, reposts: 0, replies: 0, quotes: 0 };
  for (const [u, kind, sign, t] of hits) if (u === uri && t < D * 1e6) n[kind] += sign;
  return n;
};
// The answers the events are held against: getPosts as the stream starts.
js3.start();
const answered = [];
for (let i = 0; i < tracked.length; i += 25) answered.push(await postsOf(tracked.slice(i, i + 25).map((p) => p.uri)));
const asOf = Math.max(...answered.map((a) => a.date));
// Until the stream has passed the Date second (every event before it in), with a bound.
for (let t = 0; t < 300 && newest < asOf * 1e6; t++) await new Promise((r) => setTimeout(r, 100));
js3.close();
report(failure3 === null && newest >= asOf * 1e6, `@skyware/jetstream ${version} reads the whole network's likes, reposts and posts (${seen3.length} events)`,
       failure3?.message ?? `the stream reached ${newest}, not ${asOf * 1e6}`);
const wrong = [];
const nets = [];
for (const a of answered) {
  for (const p of a.posts) {
    const n = netAt(p.uri, a.date);
    nets.push(n);
    if (n.likes !== p.likeCount || n.reposts !== p.repostCount || n.replies !== p.replyCount || n.quotes !== p.quoteCount)
      wrong.push(`${p.uri}: events ${JSON.stringify(n)}, getPosts ${p.likeCount}/${p.repostCount}/${p.replyCount}/${p.quoteCount}`);
  }
}
const sums = nets.reduce((s, n) => ({ likes: s.likes + n.likes, reposts: s.reposts + n.reposts,
                                                     replies: s.replies + n.replies, quotes: s.quotes + n.quotes }),
                                      { likes: 0, reposts: 0, replies: 0, quotes: 0 });
report(wrong.length === 0 && nets.length === tracked.length && sums.likes > 0 && sums.replies > 0 && sums.quotes > 0,
       `for every registered post, the net counts of its events before the Date second of getPosts' answer are its counts (${JSON.stringify(sums)})`,
       wrong.slice(0, 3).join('\n'));
report(embedKinds.has('app.bsky.embed.record') && embedKinds.has('app.bsky.embed.recordWithMedia'),
       'quotes of registered posts come with both embeds, app.bsky.embed.record and .recordWithMedia, both counted', [...embedKinds].join(', '));
const undone = seen3.filter((e) => e.commit.operation === 'delete');
report(undone.length > 0 && undone.every((e) => !('record' in e.commit) && !('cid' in e.commit)) &&
       undone.some((e) => e.commit.collection === 'app.bsky.feed.like' && records.has(`${e.did}/${e.commit.collection}/${e.commit.rkey}`)),
       `deletes (${undone.length}, unlikes of registered posts among them) name only collection and rkey: no record, no cid`);
const invalid3 = [];
const kinds3 = new Set();
for (const e of seen3.filter((x) => x.commit.operation === 'create')) {
  try {
    lex.assertValidRecord(e.commit.collection, jsonToLex(e.commit.record));
    kinds3.add(e.commit.collection + (e.commit.record.reply ? ' reply' : '') + (e.commit.record.embed ? ` ${e.commit.record.embed.$type}` : ''));
    if (e.time_us < Date.parse(e.commit.record.createdAt) * 1000) invalid3.push(`${e.did}/${e.commit.rkey}: made after it was seen`);
  } catch (err) {
    invalid3.push(`${e.did}/${e.commit.collection}/${e.commit.rkey}: ${err.message}`);
  }
}
report(invalid3.length === 0 && kinds3.has('app.bsky.feed.like') && kinds3.has('app.bsky.feed.repost') &&
       kinds3.has('app.bsky.feed.post reply') && kinds3.has('app.bsky.feed.post app.bsky.embed.recordWithMedia'),
       `each like, repost and post record is valid by @atproto/lexicon, made before it was seen (${[...kinds3].sort().join('; ')})`,
       invalid3.slice(0, 3).join('\n'));
// wantedCollections picks among the new collections as among posts.
const reposts = await new Promise((resolve) => {
  const got4 = [];
  const j = new Jetstream({ ws: WebSocket, endpoint: `${jetstream}/subscribe`, wantedCollections: ['app.bsky.feed.repost'] });
  j.on('commit', (e) => got4.push(e));
  j.start();
  const wait = () => (got4.length >= 10 || Date.now() > stop ? (j.close(), resolve(got4)) : setTimeout(wait, 50));
  const stop = Date.now() + 10000;
  wait();
});
report(reposts.length >= 10 && reposts.every((e) => e.commit.collection === 'app.bsky.feed.repost'),
       `wantedCollections=app.bsky.feed.repost: reposts and their deletes only (${reposts.length})`);
const truth = await (await fetch(`${mock}/mock/truth?network=bluesky&key=${encodeURIComponent(tracked[0].uri)}&at_us=${asOf * 1e6}`)).json();
const first = netAt(tracked[0].uri, asOf);
report(truth.likes === first.likes && truth.reposts === first.reposts && truth.replies === first.replies && truth.quotes === first.quotes,
       'GET /mock/truth?at_us= gives the same net counts', JSON.stringify(truth));

// Posts and accounts made gone (issue 53): POST /mock/gone deletes a post of the first posting
// account and takes the second down, then reactivates it. A live subscription to both gets, in
// time order among their posts, the post's delete commit at the change's time_us and two account
// events (takendown, then active with no status), each account object valid by @atproto/lexicon
// as com.atproto.sync.subscribeRepos#account; getPosts leaves out the deleted post and, while it
// is down, the second account's posts; a replay from before the change gets the account events again.
const gone = async (body) => (await fetch(`${mock}/mock/gone`, { method: 'POST', headers: { 'Content-Type': 'application/json' },
                                                                  body: JSON.stringify(body) })).json();
const visibleOf = async (uris) => (await get(`/xrpc/app.bsky.feed.getPosts?${uris.map((u) => `uris=${encodeURIComponent(u)}`).join('&')}`))
  .posts.map((p) => p.uri).sort();
const recent = (await get(`/mock/follow/posts?network=bluesky&from_ms=${Date.now() - 20000}`)).posts.filter((p) => !p.deleted_ms);
const postOf = (did) => recent.find((p) => p.url.startsWith(`at://${did}/`))?.url;
const [doomed, downs] = [postOf(dids[0]), postOf(dids[1])];
const live5 = [];
const js5 = new Jetstream({ ws: WebSocket, endpoint: `${jetstream}/subscribe`, wantedCollections: ['app.bsky.feed.post'],
                            wantedDids: dids.slice(0, 2) });
js5.on('commit', (e) => live5.push(e));
js5.on('account', (e) => live5.push(e));
js5.start();
const until = async (ok, ms) => { const end = Date.now() + ms; while (!ok() && Date.now() < end) await new Promise((r) => setTimeout(r, 50)); };
await until(() => live5.length > 0, 10000);
const before5 = await visibleOf([doomed, downs]);
const made5 = await gone({ bluesky: [{ uri: doomed, reason: 'deleted' }, { did: dids[1], status: 'takendown' }] });
const during5 = await visibleOf([doomed, downs]);
const back5 = await gone({ bluesky: [{ did: dids[1], status: 'active' }] });
const after5 = await visibleOf([doomed, downs]);
await until(() => live5.filter((e) => e.kind === 'account').length >= 2, 10000);
js5.close();
report(before5.length === 2 && during5.length === 0 && JSON.stringify(after5) === JSON.stringify([downs]),
       'getPosts leaves out the deleted post, and the taken-down account\'s posts until it is active again',
       `${before5} | ${during5} | ${after5}`);
const accounts5 = live5.filter((e) => e.kind === 'account');
const delete5 = live5.filter((e) => e.kind === 'commit' && e.commit.operation === 'delete' &&
                                     `at://${e.did}/app.bsky.feed.post/${e.commit.rkey}` === doomed);
report(delete5.length === 1 && delete5[0].time_us === made5.time_us && !('record' in delete5[0].commit),
       'the deleted post: one delete commit, at the time_us the change was made', JSON.stringify(delete5));
report(accounts5.length === 2 && accounts5[0].did === dids[1] && accounts5[0].time_us === made5.time_us &&
       accounts5[0].account.active === false && accounts5[0].account.status === 'takendown' &&
       accounts5[1].time_us === back5.time_us && accounts5[1].account.active === true && !('status' in accounts5[1].account) &&
       accounts5[0].account.seq < accounts5[1].account.seq && accounts5.every((e) => e.account.did === e.did),
       'the account: active false with status takendown, then active true with no status, seq rising', JSON.stringify(accounts5));
report(live5.every((e, i) => i === 0 || live5[i - 1].time_us <= e.time_us), `the changes come in time order with the posts (${live5.length} events)`);
const badAccounts = accounts5.map((e) => lex.validate('com.atproto.sync.subscribeRepos#account', e.account))
  .filter((r) => !r.success).map((r) => r.error?.message);
report(accounts5.length === 2 && badAccounts.length === 0, 'each account object is a valid com.atproto.sync.subscribeRepos#account by @atproto/lexicon',
       badAccounts.join('\n'));
const replay5 = [];
const js6 = new Jetstream({ ws: WebSocket, endpoint: `${jetstream}/subscribe`, wantedDids: [dids[1]], cursor: made5.time_us - 1000000 });
js6.on('account', (e) => replay5.push(e));
js6.start();
await until(() => replay5.length >= 2, 10000);
js6.close();
report(JSON.stringify(replay5.map((e) => [e.time_us, e.account.active])) === JSON.stringify(accounts5.map((e) => [e.time_us, e.account.active])),
       'a replay from before the change gets the same account events', JSON.stringify(replay5));
exit();
