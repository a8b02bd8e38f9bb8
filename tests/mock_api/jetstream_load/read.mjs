// A bare reader of the mock's Jetstream for jetstream_load.sh (ws, no client library: the reader
// must cost less than the mock it measures). Reads URL for SECONDS and prints one JSON line: events
// and events/s, how long the first took, how far behind their time_us events came (every tenth:
// p50, p99, max, ms), events out of time order, and the count per collection and operation.
//     node read.mjs NPM_PREFIX URL SECONDS      (NPM_PREFIX holds node_modules/ws)
import path from 'node:path';
import { pathToFileURL } from 'node:url';
const [prefix, url, seconds] = process.argv.slice(2);
const WebSocket = (await import(pathToFileURL(path.join(prefix, 'node_modules/ws/wrapper.mjs')).href)).default;
const t0 = Date.now();
const ws = new WebSocket(url);
let n = 0, first = null, lags = [], last = 0, order = 0, kinds = {};
ws.on('message', (m) => {
  const e = JSON.parse(m);
  if (first === null) first = Date.now() - t0;
  if (e.time_us < last) order++;
  last = e.time_us;
  n++;
  const k = e.commit.collection + ' ' + e.commit.operation;
  kinds[k] = (kinds[k] ?? 0) + 1;
  if (n % 10 === 0) lags.push(Date.now() * 1000 - e.time_us);
});
setTimeout(() => {
  ws.close();
  lags.sort((a, b) => a - b);
  const q = (p) => (lags[Math.floor(p * (lags.length - 1))] / 1000).toFixed(1);
  console.log(JSON.stringify({ events: n, per_s: (n / seconds).toFixed(0), first_ms: first, lag_ms_p50: q(0.5), lag_ms_p99: q(0.99), lag_ms_max: q(1), out_of_order: order, kinds }));
  process.exit(0);
}, seconds * 1000);
