// Scrolling the record table through a 200,000-record Ragged store on nginx:
// only the rows on screen are fetched (the reader's counters and nginx's
// access log agree), and rows that scroll away are not fetched at all.

import { test } from 'node:test';
import { readFileSync } from 'node:fs';
import { assert, env, withPage, noPageErrors, openByHash, waitRecord, gotoRecord, stats, shot } from './helpers.mjs';

const N = 200_000;
// examples/big_store.rs: record i holds 8 + i % 64 tokens, token j = (i*31 + j*7) % 50000.
const tokens = (i) => Array.from({ length: 8 + (i % 64) }, (_, j) => (i * 31 + j * 7) % 50_000);
/** nginx's access log lines for the big store: [file, status, bytes]. */
const logged = () => readFileSync(env.corsLog, 'utf8').split('\n').filter((l) => l.includes('/big/tokens-200k/'))
  .map((l) => { const f = l.split(' '); return [f[6].split('/').pop(), Number(f[8]), Number(f[9])]; });

let page;
withPage((p) => (page = p));

async function idle() {
  await page.waitForFunction(() => window.zrecordViewer.client.inflight === 0 && window.zrecordViewer.client.pending.size === 0);
}

/** Scroll the table to `fraction` of its height; wait until every visible row is complete. */
async function scrollTo(fraction) {
  // Set the position, then let the scroll event and a frame pass before checking.
  await page.$eval('.vt-scroll', async (el, f) => {
    el.scrollTop = f * (el.scrollHeight - el.clientHeight);
    await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
  }, fraction);
  await page.waitForFunction(() => {
    const rows = [...document.querySelectorAll('.vt-row:not([hidden])')];
    return rows.length > 10 && rows.every((r) => !r.querySelector('.pending'));
  });
  await idle();
  return page.$$eval('.vt-row:not([hidden])', (rows) => rows.map((r) => [Number(r.dataset.index), r.children[1].textContent]));
}

test('scrolling 200,000 records fetches only the visible rows', async () => {
  await openByHash(page, `${env.cors}/big/tokens-200k/`, 0);
  await waitRecord(page, 0);
  assert.equal(await page.textContent('#record-count'), '200,000');
  await page.waitForSelector('#size-hist');
  await idle();
  const s0 = await stats(page);
  const log0 = logged().length;

  const positions = [0.1, 0.37, 0.5, 0.81, 1];
  for (const f of positions) {
    const rows = await scrollTo(f);
    assert.ok(rows.length < 60, `${rows.length} rows in the DOM`);
    for (const [i, shape] of rows) assert.equal(shape, `(${8 + (i % 64)},)`, `row ${i}`);
  }
  const last = await page.$$eval('.vt-row:not([hidden])', (rows) => Math.max(...rows.map((r) => Number(r.dataset.index))));
  assert.equal(last, N - 1, 'the end of the table is reachable');

  // A fast sweep through the whole store: rows passing by are not fetched.
  for (let k = 0; k <= 40; k++) {
    await page.$eval('.vt-scroll', (el, f) => { el.scrollTop = f * (el.scrollHeight - el.clientHeight); }, k / 40 * 0.6);
    await page.waitForTimeout(15);
  }
  const rows = await scrollTo(0.6);
  for (const [i, shape] of rows) assert.equal(shape, `(${8 + (i % 64)},)`, `row ${i}`);

  const s1 = await stats(page);
  const requests = s1.requests - s0.requests;
  const bytes = s1.bytes - s0.bytes;
  const log = logged().slice(log0);
  const dataBytes = log.filter(([f]) => f === 'data.zr').reduce((a, [, , b]) => a + b, 0);
  console.log(`scrolling: ${requests} requests, ${bytes} bytes (nginx logged ${log.length}, ${dataBytes} bytes of data.zr)`);
  // Per stop: one page of locations (64 KiB of meta.zr) and one coalesced
  // read of the visible records; the 26 MB store is never read wholesale.
  assert.ok(requests <= 3 * (positions.length + 1), `${requests} requests`);
  assert.ok(bytes < 1 << 20, `${bytes} bytes fetched`);
  assert.ok(dataBytes < 64 * 1024, `${dataBytes} bytes of records fetched`);
  assert.ok(log.every(([, status]) => status === 206), 'only range requests');
  assert.ok(log.length <= requests + 2, `nginx saw ${log.length} requests, the reader counted ${requests}`);
  await shot(page, 'scroll-200k');
  noPageErrors(page);
});

test('jumping to a record deep in the store shows it', async () => {
  await gotoRecord(page, 123_457);
  const shown = await page.$$eval('#tokens span', (s) => s.map((x) => Number(x.textContent)));
  assert.deepEqual(shown, tokens(123_457));
  const sel = await page.$eval('.vt-row.selected', (r) => Number(r.dataset.index));
  assert.equal(sel, 123_457);
  // The address remembers it.
  assert.match(await page.evaluate(() => location.hash), /i=123457/);
  noPageErrors(page);
});

test('five million rows: the scrollbar reaches every row, only visible blocks are asked for', async () => {
  await page.goto(env.viewer);
  const r = await page.evaluate(async () => {
    const { RecordTable } = await import('./table.js');
    const calls = [];
    const client = {
      locs(start, count) {
        calls.push([start, count]);
        return Promise.resolve({ stored: new Float64Array(count).fill(10), decoded: new Float64Array(count).fill(40) });
      },
    };
    document.querySelector('#welcome').hidden = true;
    const el = document.querySelector('#records');
    el.hidden = false;
    new RecordTable(el, client, { len: 5_000_000, kind: 'dense', itemShape: [10] }, () => {}, (e) => { throw e; });
    const sc = el.querySelector('.vt-scroll');
    const seen = [];
    for (const f of [0, 0.5, 1]) {
      sc.scrollTop = f * (sc.scrollHeight - sc.clientHeight);
      await new Promise((res) => setTimeout(res, 250));
      const rows = [...el.querySelectorAll('.vt-row:not([hidden])')];
      seen.push({ first: Number(rows[0].dataset.index), last: Number(rows[rows.length - 1].dataset.index), ratio: rows[0].children[4].textContent });
    }
    return { calls, seen, height: sc.scrollHeight };
  });
  assert.ok(r.height <= 15_000_000, `spacer ${r.height}px`);
  assert.equal(r.seen[0].first, 0);
  assert.ok(Math.abs(r.seen[1].first - 2_500_000) < 100, `middle starts at ${r.seen[1].first}`);
  assert.equal(r.seen[2].last, 4_999_999);
  assert.ok(r.seen.every((s) => s.ratio === '4.00×'));
  assert.ok(r.calls.length <= 6, `${r.calls.length} location fetches: ${JSON.stringify(r.calls)}`);
  noPageErrors(page);
});
