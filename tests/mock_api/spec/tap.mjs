import fs from 'node:fs';
import path from 'node:path';

// The checks' output, as spec.sh's tally() counts it: "ok - WHAT", or "not ok - WHAT" followed by
// the reason on "#   " lines. exit() ends the process: 1 if any check failed, else 0.
let failures = 0;

export function report(ok, what, why) {
  console.log(`${ok ? 'ok' : 'not ok'} - ${what}`);
  if (!ok) {
    failures++;
    if (why) console.log(`#   ${String(why).split('\n').join('\n#   ')}`);
  }
}

export const failed = () => failures;

export function exit() {
  process.exit(failures ? 1 : 0);
}

// Every lexicon document (.json) under dir, as @atproto/lexicon's Lexicons takes them.
export function lexiconDocuments(dir) {
  const docs = [];
  const walk = (d) => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.name.endsWith('.json')) docs.push(JSON.parse(fs.readFileSync(p, 'utf8')));
    }
  };
  walk(dir);
  return docs;
}
