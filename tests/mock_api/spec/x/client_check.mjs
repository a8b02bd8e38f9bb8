// The mock's X answers as the most-used JavaScript client of X's API reads them: twitter-api-v2
// (its TwitterApi with an app-only bearer token, .v2 and .v1 subclients, TwitterV2IncludesHelper,
// ApiResponseError and its rateLimit), against a mock started by spec.sh as
//     tweetkeeper-mock-api --deleted-every 53 --protected-every 61 --omitted-every 97
//       --edited-every 43 --gzip-every 2 --rate-limit 4 --monthly-cap 150
//       --token tk-read --token tk-window --token tk-cap --token tk-revoked --token tk-bad
//       --token tk-comply --compliance-processing-ms 300
// (each token below has its own rate-limit windows and monthly count; the ids are chosen by the
// mock's documented rules, README "The deterministic model").
//     node client_check.mjs NPM_PREFIX MOCK_URL
// Prints "ok - ..." / "not ok - ..." lines; exits 1 on a failure, 2 on bad usage.
//
// Where the library's types (dist/esm/types/**/*.d.ts) call a member required, the check asks
// the answer for it, except where X's API itself leaves it out: TweetV2LookupResult's `data`
// (absent when no id resolves, FACTS.md) and TweetEntitiesV2's five lists (the API sends only
// the kinds a tweet has).
import http from 'node:http';
import { createRequire } from 'node:module';
import path from 'node:path';

import { exit, report } from '../tap.mjs';

const [prefix, mock] = process.argv.slice(2);
if (!prefix || !mock) {
  console.error('usage: node client_check.mjs NPM_PREFIX MOCK_URL');
  process.exit(2);
}
const require = createRequire(path.join(path.resolve(prefix), 'node_modules', '.'));
const {
  TwitterApi, TwitterV2IncludesHelper, ApiResponseError, EApiV1ErrorCode,
} = require('twitter-api-v2');
const version = require('twitter-api-v2/package.json').version;

// Pointing the client at the mock. The library builds every URL as its subclient's prefix +
// the endpoint (client.base.js: `get(url, query, { prefix = this._prefix })`), the prefixes
// being https://api.x.com/2/ and /1.1/ (globals.js). The per-call `prefix` request argument
// would mean calling .get() by hand; setPrefix() on the v2 and v1 subclients (cached by the
// client: readonly.js `get v2()`) sends the library's own methods (tweets, singleTweet, ...)
// there, and its rate-limit saver keys by that URL. (cloneWithPrefix() cannot be used: it
// calls a class constructor without `new`, client.base.js:26.) The library makes every request
// with https.request (request-handler.helper.js buildRequest); its `httpAgent` setting, meant
// for proxies, is what makes that plain HTTP: Node takes the agent's protocol.
const agent = new http.Agent({ keepAlive: true });
function client(token) {
  const c = new TwitterApi(token, { httpAgent: agent });
  c.v2.setPrefix(`${mock}/2/`);
  c.v1.setPrefix(`${mock}/1.1/`);
  return c;
}

// Snowflake ids of tweets `ageMs` old whose fate under the mock's options is `kind`.
const EPOCH = 1288834974657n;
function fate(id) {
  if (id % 97n === 13n) return 'omitted';
  if (id % 53n === 7n) return 'deleted';
  if (id % 61n === 11n) return 'protected';
  if (id % 43n === 5n) return 'edited';
  return 'found';
}
const now = Date.now();
const used = new Set();
function makeId(ageMs, kind) {
  const base = (BigInt(now - Math.round(ageMs)) - EPOCH) << 22n;
  for (let seq = 0n; ; seq++) {
    const id = base + seq;
    if (fate(id) === kind && !used.has(id)) {
      used.add(id);
      return id.toString();
    }
  }
}
const createdAt = (id) => BigInt(id) >> 22n < 86400000n ? null
  : new Date(Math.floor(Number((BigInt(id) >> 22n) + EPOCH) / 1000) * 1000).toISOString();
// ages from a minute to about three years
const age = (k) => 60000 * 1.15 ** k;

const kinds = { deleted: 4, protected: 4, omitted: 3, edited: 5 };
const batch = ['20', '12345'];  // tweet 20 keeps its real created_at; 12345 has none
const expect = { '20': 'found', '12345': 'found' };
let k = 0;
for (const [kind, n] of Object.entries(kinds)) {
  for (let i = 0; i < n; i++) { const id = makeId(age(k++ * 5), kind); batch.push(id); expect[id] = kind; }
}
while (batch.length < 100) { const id = makeId(age((k++ * 5) % 95), 'found'); batch.push(id); expect[id] = 'found'; }
const idsOf = (kind) => batch.filter((id) => expect[id] === kind);
const visible = new Set(batch.filter((id) => ['found', 'edited'].includes(expect[id])));

const tweetFields = ['article', 'attachments', 'author_id', 'card_uri', 'community_id', 'context_annotations',
  'conversation_id', 'created_at', 'display_text_range', 'edit_controls', 'edit_history_tweet_ids', 'entities', 'geo',
  'id', 'in_reply_to_user_id', 'lang', 'media_metadata', 'non_public_metrics', 'note_tweet', 'organic_metrics',
  'possibly_sensitive', 'promoted_metrics', 'public_metrics', 'referenced_tweets', 'reply_settings', 'scopes',
  'source', 'suggested_source_links', 'suggested_source_links_with_counts', 'text', 'withheld'];
const userFields = ['created_at', 'description', 'entities', 'id', 'location', 'name', 'pinned_tweet_id',
  'profile_image_url', 'protected', 'public_metrics', 'url', 'username', 'verified', 'verified_type', 'withheld'];
const fields = { 'tweet.fields': tweetFields, expansions: ['author_id'], 'user.fields': userFields };

const isInt = (v) => Number.isInteger(v) && v >= 0;
const isStr = (v) => typeof v === 'string' && v.length > 0;
const problemPath = (t) => (typeof t === 'string' ? t.replace(/^https:\/\/api\.(twitter|x)\.com\/2\/problems\//, '') : t);
// What is wrong with a TweetV2 (tweet.definition.v2.d.ts TweetV2), as asked with `fields`.
function tweetProblems(t) {
  const p = [];
  if (!isStr(t.id) || !/^[0-9]{1,19}$/.test(t.id)) p.push(`id ${t.id}`);
  if (!isStr(t.text)) p.push('text');
  const edited = expect[t.id] === 'edited';
  const history = edited ? [t.id, (BigInt(t.id) + (1000n << 22n)).toString()] : [t.id];
  if (JSON.stringify(t.edit_history_tweet_ids) !== JSON.stringify(history)) {
    p.push(`edit_history_tweet_ids ${JSON.stringify(t.edit_history_tweet_ids)}, not ${JSON.stringify(history)}`);
  }
  const made = t.id === '20' ? '2006-03-21T20:50:14.000Z' : createdAt(t.id);
  if (t.created_at !== (made ?? undefined)) p.push(`created_at ${t.created_at}, not ${made}`);
  const m = t.public_metrics;
  for (const c of ['retweet_count', 'reply_count', 'like_count', 'quote_count', 'impression_count', 'bookmark_count']) {
    if (!m || !isInt(m[c])) p.push(`public_metrics.${c} ${m?.[c]}`);
  }
  if (!/^[0-9]{1,19}$/.test(t.author_id ?? '')) p.push(`author_id ${t.author_id}`);
  if (t.conversation_id !== t.id) p.push(`conversation_id ${t.conversation_id}`);
  if (!/^[a-z]{2,3}$/.test(t.lang ?? '')) p.push(`lang ${t.lang}`);
  if (typeof t.possibly_sensitive !== 'boolean') p.push('possibly_sensitive');
  if (!['everyone', 'mentionedUsers', 'following'].includes(t.reply_settings)) p.push(`reply_settings ${t.reply_settings}`);
  if (createdAt(t.id)) {  // (optional in the spec and the type: the mock gives it with a Snowflake time)
    const e = t.edit_controls;
    const until = new Date(Date.parse(made) + 3600000).toISOString();
    if (!e || e.editable_until !== until || !isInt(e.edits_remaining) || typeof e.is_edit_eligible !== 'boolean') {
      p.push(`edit_controls ${JSON.stringify(e)} (editable_until ${until})`);
    }
  }
  const chars = Array.from(t.text ?? '');  // offsets count code points, the end exclusive
  const slice = (x) => chars.slice(x.start, x.end).join('');
  for (const h of t.entities?.hashtags ?? []) {
    if (!isInt(h.start) || !isInt(h.end) || slice(h) !== `#${h.tag}`) p.push(`hashtag ${JSON.stringify(h)}`);
  }
  for (const u of t.entities?.mentions ?? []) {
    if (!isInt(u.start) || !isInt(u.end) || slice(u) !== `@${u.username}`) p.push(`mention ${JSON.stringify(u)}`);
  }
  return p;
}
// TweetEntityMentionV2 (tweet.definition.v2.d.ts) types `id: string` as required; X's API sends
// the mentioned user's id.
const mentionsWithoutId = (tweets) => tweets.flatMap((t) => (t.entities?.mentions ?? []).filter((u) => !isStr(u.id)));
// UserV2 (user.v2.types.d.ts) as asked with `fields`.
function userProblems(u) {
  const p = [];
  if (!/^[0-9]+$/.test(u.id ?? '') || !isStr(u.name) || !isStr(u.username)) p.push(`id/name/username ${JSON.stringify(u)}`);
  if (Number.isNaN(Date.parse(u.created_at))) p.push(`created_at ${u.created_at}`);
  if (typeof u.protected !== 'boolean' || typeof u.verified !== 'boolean') p.push('protected/verified');
  if (typeof u.description !== 'string') p.push('description');
  for (const c of ['followers_count', 'following_count', 'tweet_count', 'listed_count']) {
    if (!isInt(u.public_metrics?.[c])) p.push(`public_metrics.${c}`);
  }
  return p;
}
// One InlineErrorV2 (errors.types.d.ts) for a deleted or protected id.
const inline = {
  deleted: ['resource-not-found', 'Not Found Error', 'Could not find tweet with ids: [ID].'],
  protected: ['not-authorized-for-resource', 'Authorization Error', 'Sorry, you are not authorized to see the Tweet with ids: [ID].'],
};
function errorProblems(e) {
  const want = inline[expect[e.resource_id]];
  if (!want) return [`an error for ${e.resource_id} (${expect[e.resource_id]})`];
  const [type, title, detail] = want;
  return problemPath(e.type) === type && e.title === title && e.detail === detail.replace('ID', e.resource_id) &&
    e.value === e.resource_id && e.parameter === 'ids' && e.resource_type === 'tweet' ? [] : [JSON.stringify(e)];
}
const describe = (e) => (e instanceof ApiResponseError ? `ApiResponseError ${e.code} ${JSON.stringify(e.data)}` : `${e?.name}: ${e?.message}`);
// check(WHAT, async () => [ok, why]): a check whose request may throw.
async function check(what, fn) {
  try {
    const [ok, why] = await fn();
    report(ok, what, why);
  } catch (e) {
    report(false, what, describe(e));
  }
}
// expectError(WHAT, promise, (ApiResponseError) => [ok, why]): the request must fail so.
async function expectError(what, promise, judge) {
  try {
    const res = await promise;
    report(false, what, `answered ${JSON.stringify(res).slice(0, 300)}`);
  } catch (e) {
    if (!(e instanceof ApiResponseError)) { report(false, what, describe(e)); return; }
    const [ok, why] = judge(e);
    report(ok, what, why ?? describe(e));
  }
}
// ApiResponseError.rateLimit must be the x-rate-limit-* headers, as numbers.
const rateLimitFromHeaders = (e) => ['limit', 'remaining', 'reset'].every(
  (f) => e.rateLimit && Number.isInteger(e.rateLimit[f]) && e.rateLimit[f] === Number(e.headers[`x-rate-limit-${f}`]));

const read = client('tk-read');
let found = [];
await check(`twitter-api-v2 ${version} v2.tweets() reads 100 ids with every tweet.field, expansions=author_id and user.fields: exactly the ids asked less the deleted, protected and left-out ones`, async () => {
  const res = await read.v2.tweets(batch, fields);
  found = res.data ?? [];
  const got = found.map((t) => t.id).sort();
  const want = [...visible].sort();
  const problems = found.flatMap((t) => tweetProblems(t).map((p) => `${t.id}: ${p}`));
  const inc = new TwitterV2IncludesHelper(res);
  for (const t of found) {
    const u = inc.author(t);
    if (!u || u.id !== t.author_id) problems.push(`${t.id}: includes has no author ${t.author_id}`);
  }
  const authors = new Set(found.map((t) => t.author_id));
  const users = inc.users.map((u) => u.id);
  if (users.length !== authors.size || !users.every((id) => authors.has(id))) problems.push(`includes.users ${users} for authors ${[...authors]}`);
  problems.push(...inc.users.flatMap((u) => userProblems(u).map((p) => `user ${u.id}: ${p}`)));
  const errs = res.errors ?? [];
  problems.push(...errs.flatMap(errorProblems));
  const errIds = errs.map((e) => e.resource_id).sort();
  const missing = [...idsOf('deleted'), ...idsOf('protected')].sort();
  if (JSON.stringify(errIds) !== JSON.stringify(missing)) problems.push(`errors for ${errIds}, not ${missing}`);
  if (JSON.stringify(got) !== JSON.stringify(want)) problems.push(`ids ${got.length}: ${got.filter((id) => !visible.has(id))} unasked, ${want.filter((id) => !got.includes(id))} missing`);
  return [problems.length === 0 && found.length === visible.size, problems.slice(0, 10).join('\n')];
});
report(found.some((t) => t.entities?.hashtags?.length) && found.some((t) => t.entities?.mentions?.length) &&
       found.filter((t) => expect[t.id] === 'edited').length === kinds.edited && found.some((t) => !t.created_at),
       'among them tweets with hashtags, with mentions, edited tweets and a tweet without created_at (pre-Snowflake)');
{
  const bad = mentionsWithoutId(found);
  report(found.length > 0 && bad.length === 0, "every mention entity has the mentioned user's id (TweetEntityMentionV2.id: string)",
         `${bad.length} mentions without id, e.g. ${JSON.stringify(bad[0])}`);
}
await check('a batch of only deleted and protected ids: no data, one InlineErrorV2 per id, the library resolving (not throwing)', async () => {
  const ids = [...idsOf('deleted'), ...idsOf('protected')];
  const res = await read.v2.tweets(ids, { 'tweet.fields': ['public_metrics', 'created_at'] });
  const errs = res.errors ?? [];
  const problems = errs.flatMap(errorProblems);
  return ['data' in res === false && errs.length === ids.length && problems.length === 0,
          `keys ${Object.keys(res)}, ${errs.length} errors for ${ids.length} ids ${problems.join('; ')}`];
});
await check('an id asked twice is answered once', async () => {
  const id = idsOf('found')[3];
  const res = await read.v2.tweets([id, id, '20']);
  const ids = (res.data ?? []).map((t) => t.id).sort();
  return [JSON.stringify(ids) === JSON.stringify([id, '20'].sort()) && !res.errors, JSON.stringify(res)];
});
// GET /2/tweets/:id, its own window
const one = idsOf('found').find((id) => found.some((t) => t.id === id && t.entities));
await check('v2.singleTweet() of a found tweet: data is the tweet (same fields), includes.users its author', async () => {
  const res = await read.v2.singleTweet(one, fields);
  const u = new TwitterV2IncludesHelper(res).author(res.data);
  const problems = [...tweetProblems(res.data ?? {}), ...(u ? userProblems(u) : ['no author in includes'])];
  return [res.data?.id === one && !res.errors && problems.length === 0, problems.join('; ')];
});
for (const kind of ['deleted', 'protected']) {
  await check(`v2.singleTweet() of a ${kind} tweet resolves with no data and its InlineErrorV2 (${inline[kind][0]})`, async () => {
    const id = idsOf(kind)[0];
    const res = await read.v2.singleTweet(id, fields);
    const errs = res.errors ?? [];
    return [!('data' in res) && errs.length === 1 && errs[0].resource_id === id && errorProblems(errs[0]).length === 0, JSON.stringify(res)];
  });
}
await check('v2.singleTweet() of a left-out tweet resolves with {}', async () => {
  const res = await read.v2.singleTweet(idsOf('omitted')[0]);
  return [res && typeof res === 'object' && Object.keys(res).length === 0, JSON.stringify(res)];
});

// v1.1 statuses/lookup: the library POSTs it, form-encoded, with tweet_mode=extended.
const v1Created = (id) => {
  const d = createdAt(id) ?? (id === '20' ? '2006-03-21T20:50:14.000Z' : null);
  if (!d) return null;
  const [wd, day, mo, yr, time] = new Date(d).toUTCString().split(/,? /);  // 'Tue, 21 Mar 2006 20:50:14 GMT'
  return `${wd} ${mo} ${day} ${time} +0000 ${yr}`;
};
const byId = new Map(found.map((t) => [t.id, t]));
// TweetV1 (tweet.v1.types.d.ts) for what tweetkeeper reads: ids, created_at, the two counts,
// never below what v2 answered a moment before (counts only grow).
function tweetV1Problems(t, id) {
  const p = [];
  if (t.id_str !== id || typeof t.id !== 'number' || t.id !== Number(id)) p.push(`id ${t.id} id_str ${t.id_str}`);
  // (a pre-Snowflake id other than 20 has no time in the mock, in v1.1 too, although TweetV1
  // types created_at as required: such ids are not in X's API)
  if (t.created_at !== (v1Created(id) ?? undefined)) p.push(`created_at ${t.created_at}, not ${v1Created(id)}`);
  if (!isStr(t.text ?? t.full_text)) p.push('text');
  if (!isInt(t.retweet_count) || !isInt(t.favorite_count)) p.push('counts');
  const v2 = byId.get(id)?.public_metrics;
  if (v2 && (t.retweet_count < v2.retweet_count || t.favorite_count < v2.like_count)) {
    p.push(`counts ${t.retweet_count}/${t.favorite_count} below v2's ${v2.retweet_count}/${v2.like_count}`);
  }
  return p;
}
const v1ids = batch.slice(0, 40);
let v1map = {};
await check('v1.tweets(ids, { map: true }) (POST statuses/lookup.json): every id asked, in order, a TweetV1 for the found ones, null for the deleted and protected ones', async () => {
  const res = await read.v1.tweets(v1ids, { map: true });
  v1map = res.id ?? {};
  const keys = Object.keys(v1map);
  const want = v1ids.filter((id) => expect[id] !== 'omitted');
  const problems = want.flatMap((id) => (visible.has(id)
    ? (v1map[id] ? tweetV1Problems(v1map[id], id).map((p) => `${id}: ${p}`) : [`${id}: null`])
    : (v1map[id] === null ? [] : [`${id}: not null`])));
  if (JSON.stringify([...keys].sort()) !== JSON.stringify([...want].sort())) problems.push(`keys ${keys.length}, not ${want.length}`);
  return [problems.length === 0 && v1ids.some((id) => v1map[id] === null), problems.slice(0, 10).join('\n')];
});
await check('v1.tweets(ids) without map: an array of the found tweets only', async () => {
  const res = await read.v1.tweets(v1ids);
  const got = Array.isArray(res) ? res.map((t) => t.id_str).sort() : [];
  const want = v1ids.filter((id) => visible.has(id)).sort();
  const problems = Array.isArray(res) ? res.flatMap((t) => tweetV1Problems(t, t.id_str)) : [`not an array: ${typeof res}`];
  return [JSON.stringify(got) === JSON.stringify(want) && problems.length === 0, problems.slice(0, 5).join('\n') || `${got}`];
});
{
  // TweetV1's required members beyond those: X's API sends them all (user, entities, source, ...).
  // And the library always sends tweet_mode=extended (client.v1.read.js tweets()), to which the
  // API answers the text as `full_text` (with display_text_range), not `text`.
  const required = ['created_at', 'id', 'id_str', 'source', 'truncated', 'in_reply_to_status_id',
    'in_reply_to_user_id', 'in_reply_to_screen_name', 'user', 'coordinates', 'place', 'is_quote_status',
    'retweet_count', 'favorite_count', 'entities', 'favorited', 'retweeted', 'lang'];
  const t = Object.values(v1map).find(Boolean) ?? {};
  const absent = required.filter((f) => !(f in t));
  report(Object.keys(t).length > 0 && absent.length === 0, "v1.1 tweets carry the members TweetV1 requires",
         `absent: ${absent.join(', ')}`);
  report(isStr(t.full_text) && !('text' in t), 'v1.1 tweets asked with tweet_mode=extended give their text as full_text',
         `members: ${Object.keys(t).join(', ')}`);
}

// Refusals, each as an ApiResponseError.
const v2err = (e, code, title) => [e.code === code && e.data?.title === title && e.data?.status === code && rateLimitFromHeaders(e)];
await expectError('a bearer token the API does not accept: ApiResponseError 401, isAuthError, the Unauthorized problem, rateLimit from the headers',
  client('tk-unknown').v2.tweets(['20']), (e) => [e.isAuthError && v2err(e, 401, 'Unauthorized')[0]]);
await expectError('v1.1 with that token: ApiResponseError 401 with Twitter code 89 (hasErrorCode InvalidOrExpiredToken), isAuthError',
  client('tk-unknown').v1.tweets(['20']), (e) => [e.code === 401 && e.isAuthError && e.hasErrorCode(EApiV1ErrorCode.InvalidOrExpiredToken) && e.errors?.length === 1]);
await check('a revoked token: ApiResponseError 403 with the Forbidden problem', async () => {
  const r = await fetch(`${mock}/mock/revoke?token=tk-revoked`, { method: 'POST' });  // the mock's control, not X's API
  if (!r.ok) return [false, `POST /mock/revoke: ${r.status}`];
  try {
    await client('tk-revoked').v2.tweets(['20']);
    return [false, 'answered'];
  } catch (e) {
    return [e instanceof ApiResponseError && v2err(e, 403, 'Forbidden')[0] && !e.isAuthError, describe(e)];
  }
});
const bad = client('tk-bad');
await expectError('101 ids: ApiResponseError 400, the invalid-request problem with its errors[] message, in the error\'s message',
  bad.v2.tweets([...batch, makeId(age(3), 'found')]),
  (e) => [e.code === 400 && problemPath(e.data?.type) === 'invalid-request' && e.errors?.length === 1 &&
          e.errors[0].message === 'The number of values in the `ids` query parameter list [101] is not between 1 and 100' &&
          e.message.includes('Invalid Request') && rateLimitFromHeaders(e)]);
await expectError('a tweet.fields value outside the enum: ApiResponseError 400 naming it',
  bad.v2.tweets(['20'], { 'tweet.fields': ['public_metrics', 'favourites'] }),
  (e) => [e.code === 400 && problemPath(e.data?.type) === 'invalid-request' && e.errors?.some((x) => x.message.includes('favourites'))]);
await expectError('an unknown route: ApiResponseError 404 with Twitter code 34 (hasErrorCode ResourceNotFound)',
  bad.v2.get('tweets/search/nowhere'), (e) => [e.code === 404 && e.hasErrorCode(EApiV1ErrorCode.ResourceNotFound)]);

// The window: 4 requests per window and token, then 429 until x-rate-limit-reset.
const win = client('tk-window');
const seen = [];
const encodings = [];
await check('the rate-limit headers as the library reads them (fullResponse rateLimit): limit 4, remaining 3 to 0, one reset in the future', async () => {
  for (let i = 0; i < 4; i++) {
    const res = await win.v2.get('tweets', { ids: idsOf('found')[i], 'tweet.fields': 'public_metrics' }, { fullResponse: true });
    seen.push(res.rateLimit);
    encodings.push(`${res.headers['content-encoding'] ?? 'identity'}:${res.data?.data?.[0]?.id === idsOf('found')[i]}`);
  }
  const ok = seen.every((r, i) => r.limit === 4 && r.remaining === 3 - i && r.reset === seen[0].reset) &&
    seen[0].reset * 1000 > Date.now();
  return [ok, JSON.stringify(seen)];
});
report(encodings.includes('gzip:true') && encodings.includes('identity:true'),
       'gzip-compressed, chunked answers are read as well as plain ones (compression on, as by default)', encodings.join(' '));
await expectError('the 5th request of the window: ApiResponseError 429, rateLimitError, rateLimit from the headers (remaining 0, the window\'s reset), the Too Many Requests problem',
  win.v2.tweets([idsOf('found')[5]]),
  (e) => [e.rateLimitError && v2err(e, 429, 'Too Many Requests')[0] && e.rateLimit.remaining === 0 &&
          e.rateLimit.limit === 4 && e.rateLimit.reset === seen[0]?.reset]);
await check('v1.1 statuses/lookup has its own window: 4 lookups answered after the v2 window is spent', async () => {
  const got = [];
  for (let i = 0; i < 4; i++) got.push((await win.v1.tweets([idsOf('found')[i]])).length);
  return [got.every((n) => n === 1), `${got}`];
});
await expectError('its 5th: ApiResponseError 429 with Twitter code 88 (hasErrorCode RateLimitExceeded), rateLimitError, rateLimit remaining 0',
  win.v1.tweets([idsOf('found')[0]]),
  (e) => [e.code === 429 && e.rateLimitError && e.hasErrorCode(EApiV1ErrorCode.RateLimitExceeded) &&
          rateLimitFromHeaders(e) && e.rateLimit.remaining === 0]);

// The monthly cap (150 billed posts per token): 200 posts read, then every request is capped.
const cap = client('tk-cap');
await check('under the monthly cap: two batches of 100 found tweets answered in full', async () => {
  const counts = [];
  for (let b = 0; b < 2; b++) {
    const ids = [];
    for (let i = 0; i < 100; i++) ids.push(makeId(age(i % 90), 'found'));
    counts.push((await cap.v2.tweets(ids)).data?.length);
  }
  return [counts.every((n) => n === 100), `${counts}`];
});
await expectError('past it: ApiResponseError 429, rateLimitError, the UsageCapExceeded problem (period Monthly), while rateLimit from the headers still shows requests left',
  cap.v2.tweets(['20']),
  (e) => [e.rateLimitError && e.code === 429 && e.data?.title === 'UsageCapExceeded' && e.data?.period === 'Monthly' &&
          problemPath(e.data?.type) === 'usage-capped' && rateLimitFromHeaders(e) && e.rateLimit.remaining === 2]);
await expectError('v1.1 past the cap: the same 429 (the cap is per product)',
  cap.v1.tweets(['20'], { map: true }),
  (e) => [e.code === 429 && e.rateLimitError && e.data?.title === 'UsageCapExceeded' && rateLimitFromHeaders(e)]);

// A follower's reads (issue 38): a posting user by name, and its timeline paged by next_token
// (users/:id/tweets has a window of its own: 4 more requests for this token).
await check('v2.userByUsername() reads a posting user of the mock; v2.userTimeline() reads its posts newest first, and fetchNext() the next page by next_token', async () => {
  const user = await read.v2.userByUsername('mock_100000', { 'user.fields': ['protected'] });
  const timeline = await read.v2.userTimeline(user.data.id, { max_results: 20, 'tweet.fields': ['created_at'], exclude: ['retweets'] });
  const first = timeline.tweets.map((t) => t.id);
  const counted = timeline.meta.result_count;
  await timeline.fetchNext();
  const all = timeline.tweets.map((t) => t.id);
  const newestFirst = all.every((id, i) => i === 0 || BigInt(all[i - 1]) > BigInt(id));
  return [user.data.protected === false && first.length === 20 && all.length === 40 && newestFirst &&
          counted === 20 && timeline.tweets.every((t) => Date.parse(t.created_at) > 0),
          `user ${JSON.stringify(user.data)}, ${first.length} then ${all.length} posts, newest first: ${newestFirst}, result_count ${counted}`];
});
await check('v2.userByUsername() of no such user: the errors array, no data', async () => {
  const res = await read.v2.userByUsername('gone_for_good');
  return [!res.data && problemPath(res.errors?.[0]?.type) === 'resource-not-found', JSON.stringify(res)];
});

// X's batch compliance jobs (issue 53) through the library's own helpers: sendComplianceJob
// creates a job and PUTs the ids to its upload_url (text/plain, without the token), and
// complianceJobResult polls the job (every 3.5 s) until complete, then GETs download_url and parses
// its JSON lines. The mock runs with --compliance-processing-ms 300; the lines it must give are
// its fates' (deleted, protected), and none for the ids it shows.
const comply = client('tk-comply');
const entries = (o) => JSON.stringify(Object.entries(o).sort());
await check('v2.sendComplianceJob() makes a job and uploads the ids to its signed URL; v2.complianceJobs() lists it; v2.complianceJobResult() waits until it is complete and reads one line per id out of compliance, with its reason, none for the others', async () => {
  const deleted = idsOf('deleted').slice(0, 2), protectedIds = idsOf('protected').slice(0, 2);
  const job = await comply.v2.sendComplianceJob({ type: 'tweets', name: 'client-check',
                                                  ids: [...idsOf('found').slice(0, 3), ...deleted, ...protectedIds] });
  const listed = await comply.v2.complianceJobs({ type: 'tweets' });
  const lines = await comply.v2.complianceJobResult(job.data);
  const done = await comply.v2.complianceJob(job.data.id);
  const got = Object.fromEntries(lines.map((l) => [l.id, l.reason]));
  const want = Object.fromEntries([...deleted.map((id) => [id, 'deleted']), ...protectedIds.map((id) => [id, 'protected'])]);
  return [job.data.status === 'created' && job.data.name === 'client-check' &&
          listed.data?.some((j) => j.id === job.data.id) && done.data.status === 'complete' &&
          entries(got) === entries(want) && lines.every((l) => l.action === 'delete' && isStr(l.created_at)),
          `job ${JSON.stringify(job.data).slice(0, 200)}, then ${done.data.status}; lines ${JSON.stringify(lines)}`];
});
await comply.v2.post('compliance/jobs', { type: 'users' });
await expectError('a second job of a type while one is active: ApiResponseError 409, the conflict problem, rateLimit from the headers',
  comply.v2.post('compliance/jobs', { type: 'users' }),
  (e) => [e.code === 409 && problemPath(e.data?.type) === 'conflict' && rateLimitFromHeaders(e)]);

agent.destroy();
exit();
