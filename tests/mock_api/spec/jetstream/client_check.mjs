// The mock's Jetstream as a client of the ecosystem reads it: @skyware/jetstream (with ws: Node 20
// has no WebSocket of its own) subscribes to two posting accounts from a cursor 30 s back and
// live. Checks: the events replayed are exactly the posts /mock/follow/posts says the two made
// since the cursor (no other account's, none twice), in time order; each delete names a post made
// 5 s before it, of the posts the mock says were deleted; each record is a valid
// app.bsky.feed.post by @atproto/lexicon (the lexicons of @atproto/api, spec.sh), its createdAt the post's. Then
// an options_update (the client's updateOptions) adds a third account, whose posts follow. A
// cursor older than the replay window is clamped silently, a bad DID is an HTTP 400.
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
exit();
