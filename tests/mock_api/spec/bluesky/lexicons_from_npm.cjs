// Writes Bluesky's lexicons as a lexicons/ folder (app/bsky/feed/getPosts.json, ...) from the
// npm package @atproto/api, whose dist/client/lexicons.js carries every lexicon document of its
// release (schemaDict), at test time: spec.sh writes them into its run's directory, and
// needed_lexicons.py takes from them the ones the mock's answers are validated against (no
// lexicon document is kept in this repository).
//     node lexicons_from_npm.cjs NPM_PREFIX OUT_DIR      (prints how many documents it wrote)
// The package's code generator writes every ref in full ("lex:app.bsky.actor.defs#viewerState");
// the lexicon files write a ref within their own document as "#viewerState" and others without
// "lex:", as they are written back here.
'use strict';
const fs = require('fs');
const path = require('path');

const [prefix, out] = process.argv.slice(2);
if (!prefix || !out) {
  console.error('usage: node lexicons_from_npm.cjs NPM_PREFIX OUT_DIR');
  process.exit(2);
}
const { schemaDict } = require(path.join(prefix, 'node_modules/@atproto/api/dist/client/lexicons.js'));

function asWritten(id, ref) {
  const full = ref.replace(/^lex:/, '');
  return full.startsWith(id + '#') ? full.slice(id.length) : full;
}
function unresolve(id, value) {
  if (Array.isArray(value)) return value.map((v) => unresolve(id, v));
  if (value === null || typeof value !== 'object') return value;
  const o = {};
  for (const [k, v] of Object.entries(value)) {
    if (k === 'ref' && typeof v === 'string') o[k] = asWritten(id, v);
    else if (k === 'refs' && Array.isArray(v)) o[k] = v.map((r) => asWritten(id, r));
    else o[k] = unresolve(id, v);
  }
  return o;
}

let n = 0;
for (const doc of Object.values(schemaDict)) {
  const file = path.join(out, ...doc.id.split('.')) + '.json';
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, JSON.stringify(unresolve(doc.id, doc), null, 1) + '\n');
  n++;
}
console.log(n);
