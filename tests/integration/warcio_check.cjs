// Reads WARC files with warcio.js (webrecorder's parser, npm `warcio`), the second reader of
// tests/integration/warc.sh, and checks what it does not check itself: each record's block
// digest, recomputed from the raw block it hands back (readFully(false)), and each request
// linked to a response of the same target, or to the metadata record that stands for a response
// the recorder dropped (it held a token). Prints one line: "FILES RECORDS RESPONSES PROBLEMS
// DROPPED", then the first problems.
// Usage: node warcio_check.cjs NPM_PREFIX FILE.warc.gz...
const path = require('path');
const fs = require('fs');
const crypto = require('crypto');
const { createRequire } = require('module');
const { WARCParser } = createRequire(path.join(process.argv[2], 'index.js'))('warcio');

function sha1Base32(bytes) {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';
  const digest = crypto.createHash('sha1').update(bytes).digest();
  let bits = 0, value = 0, out = '';
  for (const b of digest) {
    value = (value << 8) | b;
    bits += 8;
    while (bits >= 5) {
      out += alphabet[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  return 'sha1:' + out;
}

(async () => {
  const problems = [];
  let records = 0, responses = 0, dropped = 0;
  const files = process.argv.slice(3);
  for (const file of files) {
    const byId = new Map();
    const parser = new WARCParser(fs.createReadStream(file), { parseHttp: false });
    for await (const record of parser) {
      records++;
      const block = await record.readFully(false);
      const type = record.warcType;
      if (record.warcHeader('WARC-Block-Digest') !== sha1Base32(block)) problems.push(`${file}: ${type} block digest`);
      if (Number(record.warcHeader('Content-Length')) !== block.length) problems.push(`${file}: ${type} length`);
      if (type === 'response') responses++;
      const stands_in = type === 'metadata' && Buffer.from(block).toString('latin1').startsWith('tweetkeeper-response-dropped: ');
      if (stands_in) dropped++;
      if (type === 'request' || type === 'response' || stands_in)
        byId.set(record.warcHeader('WARC-Record-ID'),
                 [type, record.warcHeader('WARC-Concurrent-To'), record.warcTargetURI]);
    }
    for (const [id, [type, other, uri]] of byId) {
      const pair = byId.get(other);
      if (!pair || pair[1] !== id || pair[0] === type || pair[2] !== uri) problems.push(`${file}: ${type} ${id} unpaired`);
    }
  }
  console.log(`${files.length} ${records} ${responses} ${problems.length} ${dropped}`);
  for (const p of problems.slice(0, 10)) console.log('# ' + p);
})().catch((e) => {
  console.log(`0 0 0 1 0\n# warcio.js failed: ${e && e.stack || e}`);
});
