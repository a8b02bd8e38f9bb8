// The mock's Mastodon servers as a Mastodon client library reads them: masto's REST client
// (createRestAPIClient), pointed at the root of a server's own port (--mastodon-host), fetches
// statuses by id, in lists (GET /api/v1/statuses?id[]=..., statuses.fetch) and one at a time
// (statuses.$select(id).fetch), and every entity it gets is checked against the attributes the
// documentation lists (ENTITIES_JSON, extract_entities.py's reading of mastodon/documentation's
// entity pages): each attribute not optional and added by the server's version is there, with
// its documented type (null only where nullable), and no attribute is there that the
// documentation does not list for that version. Then what the statuses mean: a reblog counts
// nothing and holds the original, answered alike when asked for; created_at carries the id's
// milliseconds; mentions and tags are in the content; a 4.2 server has no list route and a
// server in authorized-fetch mode wants a token.
//     node client_check.mjs NPM_PREFIX ENTITIES_JSON URL_4_5 URL_4_2 URL_LOCKED
// Prints "ok - ..." / "not ok - ..." lines; exits 1 on a failure, 2 on bad usage.
import { readFileSync } from 'node:fs';
import { isDeepStrictEqual } from 'node:util';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const [prefix, entitiesFile, current, old, locked] = process.argv.slice(2);
if (!locked) {
  console.error('usage: node client_check.mjs NPM_PREFIX ENTITIES_JSON URL_4_5 URL_4_2 URL_LOCKED');
  process.exit(2);
}
const masto = await import(pathToFileURL(path.join(prefix, 'node_modules', 'masto', 'dist', 'index.js')).href);
const mastoVersion = JSON.parse(readFileSync(path.join(prefix, 'node_modules', 'masto', 'package.json'))).version;
const { entities, source } = JSON.parse(readFileSync(entitiesFile, 'utf8'));

let failed = 0;
const report = (ok, what, why) => {
  console.log(`${ok ? 'ok' : 'not ok'} - ${what}`);
  if (!ok) {
    failed++;
    if (why) console.log(`#   ${String(why).split('\n').join('\n#   ')}`);
  }
};

// Attributes the documentation lists without {{%optional%}} that a server sends only in some
// answers: a Status's `text` comes instead of `content` when one is deleted (Status.md).
const notInLookups = new Set(['Status.text']);
// Hashes whose members the documentation leaves open: a MediaAttachment's meta "may contain
// subtrees small and original, as well as various other top-level properties" (MediaAttachment.md).
const open = new Set(['MediaAttachment::meta']);

const camel = (name) => name.replace(/_([a-z0-9])/g, (_, c) => c.toUpperCase());  // masto's keys
const parts = (v) => v.split('.').map(Number);
const atMost = (a, b) => {
  const [x, y] = [parts(a), parts(b)];
  for (let i = 0; i < 3; i++) if (x[i] !== y[i]) return x[i] < y[i];
  return true;
};
const typeOk = (value, spec) => {
  if (value === null) return spec.nullable;
  switch (spec.type) {
    case 'string': return typeof value === 'string';
    case 'integer': return Number.isInteger(value);
    case 'number': return typeof value === 'number';
    case 'boolean': return typeof value === 'boolean';
    case 'array': return Array.isArray(value);
    case 'object': return typeof value === 'object' && !Array.isArray(value);
    default: return false;
  }
};

// Checks `value` as entity `name` of a server of `version`; counts each entity met in `seen` and
// collects what is wrong in `problems[name]`.
function check(value, name, version, where, seen, problems) {
  const attrs = entities[name];
  seen[name] = (seen[name] ?? 0) + 1;
  const wrong = (why) => (problems[name] ??= []).push(`${where}: ${why}`);
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return wrong('not an object');
  const known = new Map();
  for (const [attr, spec] of Object.entries(attrs)) {
    if (spec.removed || (spec.added !== null && !atMost(spec.added, version))) continue;
    const key = camel(attr);
    known.set(key, spec);
    const required = !spec.optional && spec.added !== null && !notInLookups.has(`${name}.${attr}`);
    if (!(key in value)) {
      if (required) wrong(`lacks ${attr} (${spec.type}${spec.nullable ? ' or null' : ''}, since ${spec.added})`);
      continue;
    }
    const v = value[key];
    if (!typeOk(v, spec)) {
      wrong(`${attr} is ${JSON.stringify(v)?.slice(0, 80)}, not ${spec.type}${spec.nullable ? ' or null' : ''}`);
      continue;
    }
    if (v === null) continue;
    const inner = spec.entity ?? spec.items;
    if (inner && entities[inner]) {
      for (const [i, item] of (Array.isArray(v) ? v : [v]).entries()) {
        check(item, inner, version, Array.isArray(v) ? `${where}.${attr}[${i}]` : `${where}.${attr}`, seen, problems);
      }
    } else if (Array.isArray(v) && (spec.items === 'string' || spec.items === 'integer')) {
      if (!v.every((x) => typeOk(x, { type: spec.items }))) wrong(`${attr} holds other than ${spec.items}s`);
    } else if (entities[`${name}::${attr}`]) {
      check(v, `${name}::${attr}`, version, `${where}.${attr}`, seen, problems);
    }
  }
  if (!open.has(name)) {
    for (const key of Object.keys(value)) {
      if (!known.has(key)) wrong(`has ${key}, which the documentation does not list for ${version}`);
    }
  }
}

// One check per entity kind met, or (whole) one check for all of them: where what is met depends on
// the clock (the last minutes' statuses), so that the number of checks does not.
const checkAll = (statuses, version, label, whole = false) => {
  const seen = {};
  const problems = {};
  statuses.forEach((s) => check(s, 'Status', version, `status ${s?.id}`, seen, problems));
  if (whole) {
    const all = Object.values(problems).flat();
    const met = Object.keys(seen).sort().map((name) => `${name} ${seen[name]}`).join(', ');
    report(statuses.length > 0 && all.length === 0,
           `${label}: every entity (${met}) has the attributes the documentation lists for ${version}, with their types`,
           all.slice(0, 5).join('\n'));
    return seen;
  }
  for (const name of Object.keys(seen).sort()) {
    const p = problems[name] ?? [];
    report(p.length === 0,
           `${label}: every ${name} (${seen[name]}) has the attributes the documentation lists for ${version}, with their types`,
           p.slice(0, 5).join('\n'));
  }
  return seen;
};

// Ids of statuses posted every 7 min 13 s back from 2025-06-01 (ms << 16, and some sequence
// bits): the same statuses on every run, so that the shares checked below are those of one
// sample, not of the clock's.
const since = Date.parse('2025-06-01T00:00:00Z');
const ids = Array.from({ length: 100 }, (_, i) =>
  ((BigInt(since - (i + 1) * 433017) << 16n) | BigInt(((i + 1) * 2654435761) % 65536)).toString());
const batches = Array.from({ length: 5 }, (_, i) => ids.slice(i * 20, i * 20 + 20));

const version = async (client) => (await client.v2.instance.fetch()).version;
const attempt = async (what, f) => {
  try {
    return await f();
  } catch (e) {
    report(false, what, `${e.constructor?.name}: ${e.message}`);
    return undefined;
  }
};

// A 4.6 server (the newest release the documentation snapshot lists; what 4.7 added is not in it):
// lists of 20, then some one at a time.
const client = masto.createRestAPIClient({ url: current });
const v46 = await attempt('masto reads the 4.6 server\'s /api/v2/instance', () => version(client));
report(v46 === '4.6.0', `masto ${mastoVersion} reads the server's version at its root: ${v46}`);
const statuses = [];
for (const batch of batches) {
  const got = await attempt('masto statuses.fetch({id}) reads a list of 20 ids', () => client.v1.statuses.fetch({ id: batch }));
  if (got) statuses.push(...got);
}
report(statuses.length > 80 && statuses.length <= 100 && statuses.every((s) => ids.includes(s.id)),
       `masto statuses.fetch({id: [20 ids]}) (GET /api/v1/statuses?id[]=...) reads ${statuses.length} of 100 statuses, each one asked for`);
const seen = checkAll(statuses, v46 ?? '4.6.0', 'GET /api/v1/statuses');
for (const name of ['Status', 'Account', 'MediaAttachment', 'Poll', 'Poll::Option', 'PreviewCard', 'Status::Mention',
                    'Status::Tag', 'CustomEmoji', 'QuoteApproval', 'Status::application']) {
  report((seen[name] ?? 0) > 0, `the statuses hold some ${name} (${seen[name] ?? 0})`);
}

// The same status read twice: alike, but for counts that may have grown in between (the mock's
// counts grow with a status's age, as real ones do).
const countKeys = ['repliesCount', 'reblogsCount', 'favouritesCount', 'quotesCount'];
const withoutCounts = (s) => s && JSON.parse(JSON.stringify(s, (k, v) => (countKeys.includes(k) ? undefined : v)));
const sameLater = (before, after) => before && after && isDeepStrictEqual(withoutCounts(before), withoutCounts(after)) &&
  [before, ...(before.reblog ? [before.reblog] : [])].every((b, i) =>
    countKeys.every((k) => (i ? after.reblog : after)[k] >= b[k]));
const singles = [];
for (const s of statuses.slice(0, 10)) {
  const one = await attempt(`masto statuses.$select(${s.id}).fetch() reads it`, () => client.v1.statuses.$select(s.id).fetch());
  if (one) singles.push([s, one]);
}
report(singles.length === 10 && singles.every(([a, b]) => sameLater(a, b)),
       'masto statuses.$select(id).fetch() (GET /api/v1/statuses/:id) reads each as the list gave it (counts no lower)',
       singles.filter(([a, b]) => !sameLater(a, b)).map(([a]) => a.id).join(' '));

// What the statuses mean.
const badTime = statuses.filter((s) => Date.parse(s.createdAt) !== Number(BigInt(s.id) >> 16n) ||
                                       !/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/.test(s.createdAt));
report(statuses.length > 0 && badTime.length === 0, "each createdAt is the id's time to the millisecond (id >> 16)",
       badTime.slice(0, 3).map((s) => `${s.id}: ${s.createdAt}`).join('\n'));
const reblogs = statuses.filter((s) => s.reblog);
const counts = (s) => [s.repliesCount, s.reblogsCount, s.favouritesCount, s.quotesCount];
const badReblogs = [];
for (const r of reblogs) {
  const original = await attempt(`the original of reblog ${r.id} is answered`, () =>
    client.v1.statuses.$select(r.reblog.id).fetch());
  if (counts(r).some((c) => c !== 0) || r.content !== '' || r.reblog.reblog !== null || BigInt(r.reblog.id) >= BigInt(r.id) ||
      !sameLater(r.reblog, original)) {
    badReblogs.push(`${r.id}: counts ${counts(r)}, original ${r.reblog.id} counts ${counts(r.reblog)} / asked ${original && counts(original)}`);
  }
}
report(reblogs.length > 0 && reblogs.length < statuses.length / 3 && badReblogs.length === 0,
       `reblogs (${reblogs.length}) count nothing and hold an older original, no reblog, answered alike with its counts when asked for`,
       badReblogs.slice(0, 3).join('\n'));
const own = statuses.filter((s) => !s.reblog);
const badText = own.filter((s) => !s.content.startsWith('<p>') ||
  !s.mentions.every((m) => s.content.includes(`href="${m.url}" class="u-url mention">@<span>${m.acct}</span>`)) ||
  !s.tags.every((t) => s.content.includes(`href="${t.url}" class="mention hashtag" rel="tag">#<span>${t.name}</span>`)) ||
  (s.content.match(/class="u-url mention"/g) ?? []).length !== s.mentions.length);
report(own.length > 0 && badText.length === 0, 'each mention and tag is linked in the content as Mastodon renders it',
       badText.slice(0, 2).map((s) => `${s.id}: ${s.content} ${JSON.stringify(s.mentions)}`).join('\n'));
const shares = {
  replies: own.filter((s) => s.inReplyToId !== null && s.inReplyToAccountId !== null).length,
  edited: own.filter((s) => s.editedAt !== null).length,
  'content warnings': own.filter((s) => s.spoilerText !== '' && s.sensitive).length,
  'other languages': own.filter((s) => s.language !== 'en').length,
  'non-ASCII text': own.filter((s) => /[^\x00-\x7f]/.test(s.content)).length,
};
report(Object.values(shares).every((n) => n > 0 && n < own.length),
       `some statuses, not all, are ${Object.entries(shares).map(([k, n]) => `${k} ${n}`).join(', ')} (of ${own.length})`);
const profiles = new Map();
const differing = [];
for (const s of statuses.flatMap((x) => (x.reblog ? [x, x.reblog] : [x]))) {
  const { lastStatusAt, ...profile } = s.account;
  if (profiles.has(profile.id) && !isDeepStrictEqual(profiles.get(profile.id), profile)) differing.push(profile.id);
  profiles.set(profile.id, profile);
}
report(differing.length === 0, 'an account (by id) is the same in every status', differing.join(' '));

// A 4.2 server: no GET /api/v1/statuses, one at a time, without 4.3's, 4.5's and 4.6's attributes.
const oldClient = masto.createRestAPIClient({ url: old });
const v42 = await attempt('masto reads the 4.2 server\'s /api/v2/instance', () => version(oldClient));
report(v42 === '4.2.10', `the old server says it runs ${v42}`);
try {
  await oldClient.v1.statuses.fetch({ id: ids.slice(0, 2) });
  report(false, 'on 4.2 masto statuses.fetch({id}) fails with 404: the route came with 4.3');
} catch (e) {
  report(e instanceof masto.MastoHttpError && e.statusCode === 404,
         'on 4.2 masto statuses.fetch({id}) fails with 404: the route came with 4.3', `${e.constructor?.name}: ${e.message}`);
}
const oldStatuses = [];
for (const id of ids.slice(0, 15)) {
  try {
    oldStatuses.push(await oldClient.v1.statuses.$select(id).fetch());
  } catch (e) {
    if (!(e instanceof masto.MastoHttpError && e.statusCode === 404)) report(false, `4.2 status ${id}`, e.message);
  }
}
report(oldStatuses.length > 10, `on 4.2 masto statuses.$select(id).fetch() reads ${oldStatuses.length} of 15`);
checkAll(oldStatuses, v42 ?? '4.2.10', 'GET /api/v1/statuses/:id on 4.2');

// Authorized fetch: 401 without a token, answers with one.
try {
  await masto.createRestAPIClient({ url: locked }).v1.statuses.fetch({ id: ids.slice(0, 2) });
  report(false, 'in authorized-fetch mode masto without a token gets 401');
} catch (e) {
  report(e instanceof masto.MastoHttpError && e.statusCode === 401 && e.message === 'This API requires an authenticated user',
         'in authorized-fetch mode masto without a token gets 401 "This API requires an authenticated user"',
         `${e.constructor?.name}: ${e.statusCode} ${e.message}`);
}
const withToken = await attempt('masto with a token reads the locked server', () =>
  masto.createRestAPIClient({ url: locked, accessToken: 'spec-token' }).v1.statuses.fetch({ id: ids.slice(0, 20) }));
report(withToken?.length > 0, `with a token (accessToken) it reads ${withToken?.length} statuses`);
// A follower's reads (issue 38): the account by its name (GET /api/v1/accounts/lookup), then its
// statuses after a status id (GET /api/v1/accounts/:id/statuses?min_id=...), and the pages the
// Link header names, as masto's paginator follows them.
const account = await attempt('masto accounts.lookup({acct}) reads a posting account', () =>
  client.v1.accounts.lookup({ acct: 'nora_o_briain0' }));
if (account) {
  const problems = {};
  const seenA = {};
  check(account, 'Account', v46 ?? '4.6.0', 'lookup', seenA, problems);
  report(!problems.Account, 'the account looked up has the attributes the documentation lists, with their types',
         (problems.Account ?? []).slice(0, 5).join('\n'));
  report(account.username === 'nora_o_briain0' && account.acct === 'nora_o_briain0',
         `lookup finds the account by its name: ${account.username} (${account.id})`);
  const minId = ((BigInt(Date.now() - 120000)) << 16n).toString();
  const after = await attempt('masto accounts.$select(id).statuses.list({minId}) reads its new statuses', () =>
    client.v1.accounts.$select(account.id).statuses.list({ minId, limit: 40, excludeReblogs: true }));
  const sorted = after && after.every((s, i) => i === 0 || BigInt(after[i - 1].id) > BigInt(s.id));
  report(after?.length > 0 && sorted && after.every((s) => s.account.id === account.id && BigInt(s.id) > BigInt(minId) &&
                                                      s.reblog === null),
         `its statuses after min_id (${after?.length}): newest first, all its own, none a reblog, all after min_id`);
  if (after) checkAll(after, v46 ?? '4.6.0', 'GET /api/v1/accounts/:id/statuses', true);
  const pages = [];
  for await (const page of client.v1.accounts.$select(account.id).statuses.list({ limit: 5 })) {
    pages.push(page);
    if (pages.length === 3) break;
  }
  const flat = pages.flat();
  report(pages.length === 3 && flat.length === 15 && flat.every((s, i) => i === 0 || BigInt(flat[i - 1].id) > BigInt(s.id)),
         `masto's paginator follows the Link header back through 3 pages of 5, each older than the last (${flat.length})`);
  try {
    await client.v1.accounts.lookup({ acct: 'nobody' });
    report(false, 'an unknown name: 404 Record not found');
  } catch (e) {
    report(e instanceof masto.MastoHttpError && e.statusCode === 404 && e.message === 'Record not found',
           'an unknown name: 404 Record not found', `${e.constructor?.name}: ${e.message}`);
  }
}
console.log(`# entities from ${source}`);
process.exit(failed ? 1 : 0);
