// The mock's getPosts answers as Bluesky's official client reads them: @atproto/api validates
// every answer against the lexicons (an answer that does not validate is an
// XRPCInvalidResponseError), and each post's cid must name its record: a CID v1 (multiformats'
// CID.parse) of codec dag-cbor whose sha2-256 digest is that of the record's DAG-CBOR bytes as
// @ipld/dag-cbor encodes them (blobs' refs as links). Authors carry the members the AppView sends,
// and posts embed link cards, images and quotes.
//     node client_check.mjs NPM_PREFIX MOCK_URL
// Prints "ok - ..." / "not ok - ..." lines; exits 1 on a failure, 2 on bad usage.
import { createHash } from 'node:crypto';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

import { exit, failed, report } from '../tap.mjs';

const [prefix, mock] = process.argv.slice(2);
if (!prefix || !mock) {
  console.error('usage: node client_check.mjs NPM_PREFIX MOCK_URL');
  process.exit(2);
}
const from = (p) => import(pathToFileURL(path.join(prefix, 'node_modules', p)).href);
const { AtpAgent } = await from('@atproto/api/dist/index.js');
const { CID } = await from('multiformats/dist/src/cid.js');
const dagCbor = await from('@ipld/dag-cbor/src/index.js');
const { lexToIpld } = await from('@atproto/lexicon/dist/index.js');


const agent = new AtpAgent({ service: mock });
const did = 'did:plc:z72i7hdynmk6r22z27h6tvur';
const chars = '234567abcdefghijklmnopqrstuvwxyz';
// Record keys with clock ids 0..24 (the mock's fates: some deleted, taken down, left out), and
// 25 more of other posting times and authors.
const uris = [];
for (let k = 0; k < 25; k++) uris.push(`at://${did}/app.bsky.feed.post/3l6oveex3ia${chars[k >> 5]}${chars[k % 32]}`);
const later = [];
for (let k = 0; k < 25; k++) {  // (of 25 authors)
  later.push(`at://did:plc:z72i7hdynmk6r22z27h6tvu${chars[k]}/app.bsky.feed.post/3l7${chars[k % 32]}bcdefgh${chars[(k * 7) % 32]}2`);
}

const posts = [];
for (const batch of [uris, later]) {
  try {
    const res = await agent.app.bsky.feed.getPosts({ uris: batch });
    posts.push(...res.data.posts);
  } catch (e) {
    report(false, '@atproto/api reads a getPosts answer of 25 URIs', `${e.name}: ${e.message}`);
  }
}
report(failed() === 0 && posts.length > 20,
       `@atproto/api ${agent.constructor.name} reads every getPosts answer, validated against the lexicons (${posts.length} posts)`);

let badCid = null;
for (const p of posts) {
  try {
    const cid = CID.parse(p.cid);
    // (the client gives the record in its own form, blobs as BlobRef: lexToIpld makes it the data
    // model's, links as CIDs, as a repository encodes it)
    const digest = createHash('sha256').update(dagCbor.encode(lexToIpld(p.record))).digest();
    if (cid.version !== 1 || cid.code !== dagCbor.code || cid.multihash.code !== 0x12 ||
        Buffer.compare(Buffer.from(cid.multihash.digest), digest) !== 0) {
      badCid = `${p.uri}: ${p.cid} is not the CID of its record`;
      break;
    }
  } catch (e) {
    badCid = `${p.uri}: ${p.cid}: ${e.message}`;
    break;
  }
}
report(posts.length > 0 && badCid === null,
       "each post's cid is a CID v1 of its record's DAG-CBOR bytes (dag-cbor, sha2-256)", badCid);
// At-uris of no post (another collection, a collection without a key, a repository): the lexicon
// takes them, and the AppView leaves them out of its answer rather than refusing the request.
try {
  const res = await agent.app.bsky.feed.getPosts({
    uris: [uris[0], `at://${did}/app.bsky.feed.like/3l6oveex3ia22`, `at://${did}/app.bsky.feed.post`, `at://${did}`],
  });
  report(res.data.posts.length === 1 && res.data.posts[0].uri === uris[0],
         'at-uris of no post (a like, a collection, a repository) are left out, the post beside them answered',
         JSON.stringify(res.data.posts.map((p) => p.uri)));
} catch (e) {
  report(false, 'at-uris of no post (a like, a collection, a repository) are left out, the post beside them answered',
         `${e.name}: ${e.message}`);
}

// What the AppView sends beyond the required members: the author as profileViewBasic, and embeds.
const authors = posts.map((p) => p.author);
report(authors.length > 0 && authors.every((a) => a.displayName && Array.isArray(a.labels) && a.createdAt) &&
         authors.some((a) => a.avatar) && authors.some((a) => !a.avatar),
       'authors come with displayName, labels and createdAt, most with an avatar',
       JSON.stringify(authors.slice(0, 2)));
const linked = posts.filter((p) => p.embed?.$type === 'app.bsky.embed.external#view');
report(linked.length > 0 && linked.length < posts.length &&
         linked.every((p) => p.record.embed?.$type === 'app.bsky.embed.external' &&
                             p.embed.external.uri === p.record.embed.external.uri),
       `some posts link to a page: the record's app.bsky.embed.external and its view (${linked.length} of ${posts.length})`,
       JSON.stringify(linked[0] ?? posts[0]));
const pictured = posts.filter((p) => p.embed?.$type === 'app.bsky.embed.images#view');
report(pictured.length > 0 && pictured.every((p) => p.record.embed?.images?.length === p.embed.images.length &&
         p.embed.images.every((v, i) => v.fullsize.includes(p.record.embed.images[i].image.ref.toString()))),
       `some posts hold images: each view's URLs name its blob's CID (${pictured.length} of ${posts.length})`,
       JSON.stringify(pictured[0]?.embed));
// A follower's reads through the client (issue 38): getProfile(s) and getAuthorFeed, which it
// validates against the lexicons as it reads them, and the feed's cursor.
try {
  const profile = await agent.getProfile({ actor: 'user1.bsky.social' });
  report(profile.data.handle === 'user1.bsky.social' && profile.data.did.startsWith('did:plc:'),
         `@atproto/api getProfile reads a posting account: ${profile.data.did}`);
  const many = await agent.getProfiles({ actors: ['user1.bsky.social', 'gone.bsky.social', 'user2.bsky.social'] });
  report(JSON.stringify(many.data.profiles.map((p) => p.handle)) === JSON.stringify(['user1.bsky.social', 'user2.bsky.social']) &&
         many.data.profiles[0].did === profile.data.did,
         `@atproto/api getProfiles reads two profiles of three actors asked (${many.data.profiles.length})`);
  const first = await agent.getAuthorFeed({ actor: profile.data.did, limit: 5 });
  const second = await agent.getAuthorFeed({ actor: profile.data.did, limit: 5, cursor: first.data.cursor });
  const feed = [...first.data.feed, ...second.data.feed].map((item) => item.post);
  report(feed.length === 10 && new Set(feed.map((p) => p.uri)).size === 10 &&
         feed.every((p, i) => i === 0 || Date.parse(feed[i - 1].record.createdAt) > Date.parse(p.record.createdAt)),
         'getAuthorFeed reads two pages of 5 by cursor, newest first, no post twice');
} catch (e) {
  report(false, '@atproto/api reads getProfile and getAuthorFeed', `${e.constructor?.name}: ${e.message}`);
}
exit();
