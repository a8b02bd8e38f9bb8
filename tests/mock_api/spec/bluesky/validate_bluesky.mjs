// The mock's AppView answers against Bluesky's lexicons, with Bluesky's own validator: every
// getPosts and resolveHandle answer through @atproto/lexicon's assertValidXrpcOutput, every
// post's record (and every quoted post's) through assertValidRecord('app.bsky.feed.post'), the
// lexicon documents being those the pinned @atproto/api carries, written out by spec.sh into its
// run's directory (lexicons_from_npm.cjs, needed_lexicons.py). Then what the AppView does that no schema says: URIs left out silently,
// posts not in the request's order, its errors' words, its RateLimit-* headers; and that the
// answers hold every kind of post the lexicon lets a post be (replies, facets, link cards, images,
// quotes, quotes with images), so each kind is validated.
//     node validate_bluesky.mjs NPM_PREFIX LEXICONS_DIR MOCK_URL
// Prints "ok - ..." / "not ok - ..." lines; exits 1 on a failure, 2 on bad usage.
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

import { exit, lexiconDocuments, report } from '../tap.mjs';

const [prefix, lexDir, mock] = process.argv.slice(2);
if (!prefix || !lexDir || !mock) {
  console.error('usage: node validate_bluesky.mjs NPM_PREFIX LEXICONS_DIR MOCK_URL');
  process.exit(2);
}
const { Lexicons, jsonToLex } = await import(
  pathToFileURL(path.join(prefix, 'node_modules/@atproto/lexicon/dist/index.js')).href);


const docs = lexiconDocuments(lexDir);
const lex = new Lexicons(docs);
report(docs.length > 0 && lex.getDef('app.bsky.feed.getPosts') !== undefined,
       `@atproto/lexicon loads the ${docs.length} lexicon documents of @atproto/api`);

const get = async (nsid, params) => {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) for (const x of [].concat(v)) q.append(k, x);
  const res = await fetch(`${mock}/xrpc/${nsid}?${q}`);
  const text = await res.text();
  let body;
  try { body = JSON.parse(text); } catch { body = text; }
  return { status: res.status, headers: res.headers, body, text };
};
const valid = (fn) => { try { fn(); return null; } catch (e) { return e.message; } };
const headersOk = (h, what) => report(
  ['ratelimit-limit', 'ratelimit-remaining', 'ratelimit-reset'].every((k) => /^\d+$/.test(h.get(k) ?? '')) &&
    /^\d+;w=\d+$/.test(h.get('ratelimit-policy') ?? ''),
  `${what}: RateLimit-Limit, -Remaining, -Reset and -Policy`, JSON.stringify(Object.fromEntries(h)));

const did = 'did:plc:z72i7hdynmk6r22z27h6tvur';
const chars = '234567abcdefghijklmnopqrstuvwxyz';
// Record keys with clock ids 0..24 (the mock deletes 7 (% 53), takes down 11 (% 61), leaves out
// 13 (% 97)), then 100 posts of 100 other authors and times, for every kind of post.
const uris = [];
for (let k = 0; k < 25; k++) uris.push(`at://${did}/app.bsky.feed.post/3l6oveex3ia${chars[k >> 5]}${chars[k % 32]}`);
const more = [];
for (let k = 0; k < 100; k++) {
  const a = `did:plc:ewvi7nxzyoun6zhxrhs64o${chars[k % 32]}${chars[k >> 5]}`;
  more.push(`at://${a}/app.bsky.feed.post/3l${chars[(k * 5) % 32]}${chars[(k * 11) % 32]}a7bcdef${chars[(k * 3) % 32]}2`);
}

// 1. Every answer valid against the lexicons.
const posts = [];
const problems = [];
let first = null;
for (let i = 0; i < 125; i += 25) {
  const batch = [...uris, ...more].slice(i, i + 25);
  const r = await get('app.bsky.feed.getPosts', { uris: batch });
  if (i === 0) first = r;
  if (r.status !== 200) { problems.push(`batch ${i / 25}: HTTP ${r.status} ${r.text}`); continue; }
  const lexBody = jsonToLex(r.body);
  const bad = valid(() => lex.assertValidXrpcOutput('app.bsky.feed.getPosts', lexBody));
  if (bad) problems.push(`batch ${i / 25}: ${bad}`);
  posts.push(...r.body.posts);
}
report(problems.length === 0 && posts.length > 100,
       `getPosts: ${posts.length} postViews in 5 answers, each valid against the lexicons (assertValidXrpcOutput)`,
       problems.slice(0, 3).join('\n'));

const records = [];
for (const p of posts) {
  records.push([p.uri, p.record]);
  const quoted = p.embed?.record?.record ?? p.embed?.record;  // recordWithMedia#view, record#view
  if (quoted?.$type === 'app.bsky.embed.record#viewRecord') records.push([quoted.uri, quoted.value]);
}
const badRecords = records.map(([uri, r]) => [uri, valid(() => lex.assertValidRecord('app.bsky.feed.post', jsonToLex(r)))])
  .filter(([, why]) => why);
report(records.length > posts.length && badRecords.length === 0,
       `every post's record and every quoted post's (${records.length}) is a valid app.bsky.feed.post (assertValidRecord)`,
       badRecords.slice(0, 3).map(([u, w]) => `${u}: ${w}`).join('\n'));

// 2. Every kind of post is in them, so every kind was validated.
const kinds = {
  'a reply (record.reply)': posts.filter((p) => p.record.reply).length,
  'facets (mention, tag)': posts.filter((p) => p.record.facets?.length).length,
  'a link card (app.bsky.embed.external#view)': posts.filter((p) => p.embed?.$type === 'app.bsky.embed.external#view').length,
  'images (app.bsky.embed.images#view)': posts.filter((p) => p.embed?.$type === 'app.bsky.embed.images#view').length,
  'a quote (app.bsky.embed.record#view)': posts.filter((p) => p.embed?.$type === 'app.bsky.embed.record#view').length,
  'a quote with images (app.bsky.embed.recordWithMedia#view)':
    posts.filter((p) => p.embed?.$type === 'app.bsky.embed.recordWithMedia#view').length,
  'no embed': posts.filter((p) => !p.embed).length,
  'text not in English (langs)': posts.filter((p) => p.record.langs?.[0] && p.record.langs[0] !== 'en').length,
};
report(Object.values(kinds).every((n) => n > 0) && kinds['no embed'] > posts.length / 3,
       `every kind of post is there: ${Object.entries(kinds).map(([k, n]) => `${n} ${k}`).join(', ')}`);
// A quote's view is the quoted post as its own answer gives it.
const quotes = posts.map((p) => p.embed?.record?.record ?? p.embed?.record)
  .filter((q) => q?.$type === 'app.bsky.embed.record#viewRecord');
const own = quotes.length ? await get('app.bsky.feed.getPosts', { uris: [...new Set(quotes.map((q) => q.uri))].slice(0, 25) }) : null;
const mismatch = quotes.filter((q) => {
  const p = own?.body?.posts?.find((x) => x.uri === q.uri);
  return p && (p.cid !== q.cid || JSON.stringify(p.record) !== JSON.stringify(q.value) || p.likeCount !== q.likeCount ||
               JSON.stringify(p.author) !== JSON.stringify(q.author));
});
const answered = quotes.filter((q) => own?.body?.posts?.some((x) => x.uri === q.uri)).length;
report(quotes.length > 0 && answered > 0 && mismatch.length === 0,
       `a quoted post's view (${quotes.length}, ${answered} asked for) is its own answer: cid, record, author, counts`,
       JSON.stringify(mismatch[0]));

// 3. What the AppView does beyond the schema.
const firstPosts = first?.body?.posts ?? [];
report(firstPosts.every((p) => ['likeCount', 'repostCount', 'replyCount', 'quoteCount', 'bookmarkCount'].every((c) => c in p)),
       'every postView has all five counts (the reference AppView fills them)');
report(firstPosts.every((p) => uris.includes(p.uri)) && new Set(firstPosts.map((p) => p.uri)).size === firstPosts.length,
       'only requested posts, each once');
const got = new Set(firstPosts.map((p) => p.uri));
report(JSON.stringify(firstPosts.map((p) => p.uri)) !== JSON.stringify(uris.filter((u) => got.has(u))),
       "not in the request's order (clients match by uri)");
report(firstPosts.length === 22 && JSON.stringify(Object.keys(first.body)) === '["posts"]',
       `3 of 25 left out silently (${25 - firstPosts.length}), no error entries`, JSON.stringify(Object.keys(first?.body ?? {})));
headersOk(first.headers, 'getPosts');

const xrpcError = (r, error, message) => r.status === 400 && r.body?.error === error && r.body?.message === message &&
  Object.keys(r.body).length === 2;
let r = await get('app.bsky.feed.getPosts', { uris: [...uris, `at://${did}/app.bsky.feed.post/3l6oveex3iff2`] });
report(xrpcError(r, 'InvalidRequest', 'Error: uris must not have more than 25 elements'),
       '26 URIs: 400 InvalidRequest, uris must not have more than 25 elements', r.text);
headersOk(r.headers, 'a 400');
r = await get('app.bsky.feed.getPosts', { uris: [uris[0], 'https://bsky.app/x'] });
report(xrpcError(r, 'InvalidRequest', 'Error: uris/1 must be a valid at-uri'), 'a malformed URI: 400 naming its index', r.text);
r = await get('app.bsky.feed.getPosts', { uris: ['at://alice.bsky.social/app.bsky.feed.post/3l6oveex3ii2l'] });
report(r.status === 200 && r.text === '{"posts":[]}', 'a URI with a handle finds nothing', r.text);

r = await get('com.atproto.identity.resolveHandle', { handle: 'alice.bsky.social' });
const rhBad = r.status === 200 ? valid(() => lex.assertValidXrpcOutput('com.atproto.identity.resolveHandle', r.body)) : r.text;
report(rhBad === null, 'resolveHandle: a DID, valid against its output schema', rhBad);
headersOk(r.headers, 'resolveHandle');
r = await get('com.atproto.identity.resolveHandle', { handle: 'gone.example.com' });
report(xrpcError(r, 'InvalidRequest', 'Unable to resolve handle'),
       'an unresolvable handle: 400 InvalidRequest, Unable to resolve handle (the AppView\'s words)', r.text);
// 3. A follower's reads (issue 38): a posting account's profile (one, or 25 at a time) and its
// feed, valid against their output schemas, the feed newest first and paged by its cursor; an unknown actor's error.
r = await get('app.bsky.actor.getProfile', { actor: 'user0.bsky.social' });
const profileBad = r.status === 200 ? valid(() => lex.assertValidXrpcOutput('app.bsky.actor.getProfile', jsonToLex(r.body))) : r.text;
report(profileBad === null && r.body.handle === 'user0.bsky.social' && r.body.did.startsWith('did:plc:'),
       `getProfile: a profileViewDetailed, valid against its output schema (${r.body?.did})`, profileBad);
headersOk(r.headers, 'getProfile');
const feedDid = r.body?.did;
const feedPosts = [];
const feedBad = [];
let cursor;
for (let page = 0; page < 3; page++) {
  const f = await get('app.bsky.feed.getAuthorFeed', { actor: feedDid, limit: 10, ...(cursor ? { cursor } : {}) });
  if (f.status !== 200) { feedBad.push(`page ${page}: HTTP ${f.status} ${f.text}`); break; }
  const bad = valid(() => lex.assertValidXrpcOutput('app.bsky.feed.getAuthorFeed', jsonToLex(f.body)));
  if (bad) feedBad.push(`page ${page}: ${bad}`);
  feedPosts.push(...f.body.feed.map((item) => item.post));
  cursor = f.body.cursor;
}
const times = feedPosts.map((p) => Date.parse(p.record.createdAt));
report(feedBad.length === 0 && feedPosts.length === 30 && new Set(feedPosts.map((p) => p.uri)).size === 30 &&
       times.every((t, i) => i === 0 || times[i - 1] > t) && feedPosts.every((p) => p.author.did === feedDid),
       `getAuthorFeed: 3 pages of 10 by cursor, valid against the output schema, newest first, all the account's own (${feedPosts.length})`,
       feedBad.slice(0, 3).join('\n'));
r = await get('app.bsky.actor.getProfile', { actor: 'gone.bsky.social' });
report(xrpcError(r, 'InvalidRequest', 'Profile not found'), 'an unknown actor: 400 InvalidRequest, Profile not found', r.text);
// getProfiles (25 at a time, as a follower resolves): the found ones once each, in the order
// asked; an actor with no profile left out, not an error; 26 actors, or one that is no
// identifier, refused as the lexicon's parameters say.
r = await get('app.bsky.actor.getProfiles', { actors: ['user2.bsky.social', 'gone.bsky.social', feedDid, 'USER2.bsky.social', 'user3.bsky.social'] });
const profilesBad = r.status === 200 ? valid(() => lex.assertValidXrpcOutput('app.bsky.actor.getProfiles', jsonToLex(r.body))) : r.text;
const gotProfiles = (r.body?.profiles ?? []).map((p) => p.handle);
report(profilesBad === null && JSON.stringify(gotProfiles) === JSON.stringify(['user2.bsky.social', 'user0.bsky.social', 'user3.bsky.social']) &&
       r.body.profiles[1].did === feedDid,
       `getProfiles: valid against its output schema; the unknown actor left out, the repeated one once (${gotProfiles.join(', ')})`, profilesBad ?? r.text);
headersOk(r.headers, 'getProfiles');
r = await get('app.bsky.actor.getProfiles', { actors: Array.from({ length: 26 }, (_, k) => `user${k}.bsky.social`) });
report(xrpcError(r, 'InvalidRequest', 'Error: actors must not have more than 25 elements'), 'getProfiles with 26 actors: 400 InvalidRequest', r.text);
r = await get('app.bsky.actor.getProfiles', { actors: ['user1.bsky.social', 'not an identifier'] });
report(xrpcError(r, 'InvalidRequest', 'Error: actors/1 must be a valid did or a handle'), 'getProfiles with no identifier: 400 InvalidRequest naming it', r.text);
r = await get('app.bsky.feed.getAuthorFeed', { actor: feedDid, limit: 101 });
report(r.status === 400 && r.body?.error === 'InvalidRequest', 'getAuthorFeed limit 101: 400 InvalidRequest', r.text);
exit();
