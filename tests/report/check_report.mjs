// The report as a person sees it: opened in Debian's chromium (puppeteer-core, pinned by
// package-lock.json), on a desktop and on a phone's width. Fails on any console error, page error,
// failed load or request that leaves the file (the page must need no network), on a page wider
// than a phone's screen, and on any table number that differs from what the test expects
// (EXPECTED: {tableId: [[rowKey, value, ...], ...]}, computed by report.sh from the observations it
// wrote, and from SQL for the forecast; a value [lo, hi] is a range, null a cell not compared). Writes the screenshots. TAP lines on stdout.
//     node check_report.mjs NPM_PREFIX REPORT.html EXPECTED.json SCREENSHOT_PREFIX
import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';

const [prefix, html, expectedPath, shots] = process.argv.slice(2);
const require = createRequire(`${prefix}/`);
const puppeteer = require('puppeteer-core');
let failed = 0;
const report = (ok, what, detail) => {
  if (!ok) failed += 1;
  console.log(`${ok ? 'ok' : 'not ok'} - ${what}`);
  if (!ok && detail) for (const line of String(detail).split('\n').slice(0, 12)) console.log(`#   ${line}`);
};

const url = pathToFileURL(html).href;
const expected = JSON.parse(readFileSync(expectedPath, 'utf8'));
const browser = await puppeteer.launch({
  executablePath: process.env.TK_CHROMIUM || '/usr/bin/chromium',
  headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
});
try {
  const page = await browser.newPage();
  const problems = [];
  page.on('console', (m) => { if (m.type() === 'error' || m.type() === 'warn') problems.push(`console ${m.type()}: ${m.text()}`); });
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('requestfailed', (r) => problems.push(`failed: ${r.url()} ${r.failure()?.errorText}`));
  const outside = [];
  page.on('request', (r) => { if (!r.url().startsWith('file:') && !r.url().startsWith('data:')) outside.push(r.url()); });
  await page.setViewport({ width: 1280, height: 900 });
  const response = await page.goto(url, { waitUntil: 'load' });
  report(response === null || response.ok(), `chromium opens the report (${url})`);
  await page.screenshot({ path: `${shots}-desktop.png`, fullPage: true });
  report(problems.length === 0, `no console error, page error or failed load (${problems.length})`, problems.join('\n'));
  report(outside.length === 0, `the page asks nothing of the network: styles and charts inline (${outside.length} requests)`,
         outside.join('\n'));

  // What a person reads first, and what a screen reader needs.
  const facts = await page.evaluate(() => ({
    title: document.title,
    lang: document.documentElement.lang,
    h1: document.querySelectorAll('h1').length,
    svgs: [...document.querySelectorAll('svg')].map((s) => ({
      id: s.id, role: s.getAttribute('role'), title: !!s.querySelector('title'),
      width: s.getBoundingClientRect().width,
    })),
    tables: [...document.querySelectorAll('table')].map((t) => ({ id: t.id, caption: !!t.querySelector('caption') })),
    text: document.body.innerText,
  }));
  report(facts.title !== '' && facts.lang === 'en' && facts.h1 === 1, `a title, a language and one h1 ("${facts.title}")`);
  const unnamed = facts.svgs.filter((s) => s.role !== 'img' || !s.title || s.width < 100);
  report(facts.svgs.length >= 6 && unnamed.length === 0,
         `${facts.svgs.length} charts, each an image with a title, drawn at a visible size`, JSON.stringify(unnamed));
  const bare = facts.tables.filter((t) => !t.caption || !t.id);
  report(facts.tables.length >= facts.svgs.length && bare.length === 0,
         `a captioned table behind every chart (${facts.tables.length} tables)`, JSON.stringify(bare));

  // The numbers: each expected table, row by row, by data-value.
  const tables = await page.evaluate(() => {
    const out = {};
    for (const t of document.querySelectorAll('table[id]')) {
      out[t.id] = [...t.querySelectorAll('tbody tr')].map((tr) =>
        [...tr.querySelectorAll('th, td')].map((c) => c.getAttribute('data-value') ?? c.textContent.trim()));
    }
    return out;
  });
  for (const [id, rows] of Object.entries(expected)) {
    const got = tables[id];
    const bad = [];
    if (!got) bad.push(`no table ${id} (tables: ${Object.keys(tables).join(', ')})`);
    else if (got.length !== rows.length) bad.push(`${got.length} rows, expected ${rows.length}`);
    for (let i = 0; got && i < Math.min(got.length, rows.length); i++) {
      rows[i].forEach((want, k) => {
        if (want === null) return;  // not compared (a text column)
        const have = got[i][k];
        const near = (a, b) => Math.abs(a - b) <= 1e-6 * Math.max(1, Math.abs(b));
        const number = have !== undefined && have !== '' ? Number(have) : NaN;
        const ok = Array.isArray(want)  // [lo, hi]: a value read between two moments
          ? (number >= want[0] || near(number, want[0])) && (number <= want[1] || near(number, want[1]))
          : typeof want === 'number' ? near(number, want) : have === want;
        if (!ok) bad.push(`row ${i} cell ${k}: ${have} against ${want}`);
      });
    }
    report(bad.length === 0, `${id}: ${rows.length} rows, every number as expected`, bad.slice(0, 6).join('\n'));
  }

  // A phone: nothing wider than its screen but the scrolling table wrappers.
  await page.setViewport({ width: 390, height: 844, isMobile: true, hasTouch: true, deviceScaleFactor: 2 });
  await page.goto(url, { waitUntil: 'load' });
  const width = await page.evaluate(() => ({ page: document.documentElement.scrollWidth, screen: window.innerWidth }));
  report(width.page <= width.screen, `on a phone (390 px) the page is no wider than the screen (${width.page} px)`);
  await page.screenshot({ path: `${shots}-phone.png`, fullPage: false });
  // And in print.
  await page.emulateMediaType('print');
  const pdf = await page.pdf({ format: 'A4' });
  report(pdf.length > 1000, `it prints (${pdf.length} bytes of PDF)`);
} finally {
  await browser.close();
}
console.log(`# ${failed} failed`);
process.exit(failed ? 1 : 0);
