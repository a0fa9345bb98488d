// Start-up (what benches/viewer/first-record.mjs times): the page loads one
// script bundle, its boot script fetches meta.zr, dict.zr and data.zr's head
// while the worker starts, and the reader is served from those answers, so
// no byte range goes over the network twice. Not timed here.

import { test } from 'node:test';
import { assert, env, withPage, noPageErrors, fixture, expectedBytes, waitRecord, canvasPixels, assertImage } from './helpers.mjs';

let page;
withPage((p) => (page = p));

async function load(hash) {
  const requests = [];
  const onRequest = (r) => requests.push({ url: new URL(r.url()).pathname, range: r.headers().range || null });
  page.context().on('request', onRequest);
  await page.goto('about:blank');
  await page.goto(`${env.viewer}${hash}`);
  return { requests, done: () => page.context().off('request', onRequest) };
}

test('opening a zstd_dict store by its URL fetches each range once and paints the record', async () => {
  const name = 'dense-u8-img-zstd_dict';
  const { requests, done } = await load(`#url=${encodeURIComponent(`/${name}/`)}&i=5`);
  await waitRecord(page, 5);
  await page.waitForFunction(() => typeof window.zrFirstRecordPainted === 'number');
  assertImage(await canvasPixels(page), expectedBytes(name, 5), fixture(name).records[5].shape, 'CHW');
  done();
  const store = (f) => requests.filter((r) => r.url === `/${name}/${f}`);
  assert.deepEqual(store('meta.zr').map((r) => r.range), ['bytes=0-65535']);
  assert.equal(store('dict.zr').length, 1);
  // data.zr's head holds record 5: one request, the head.
  assert.deepEqual(store('data.zr').map((r) => r.range), ['bytes=0-65535']);
  // One bundle for the page, plus the wasm reader's JS (first.js opens the
  // store on the page too); the worker's own modules.
  const scripts = requests.filter((r) => r.url.endsWith('.js')).map((r) => r.url).sort();
  assert.deepEqual(scripts, ['/app.bundle.js', '/dtype.js', '/pkg/zrecord.js', '/pkg/zrecord.js', '/prefetch.js', '/worker.js']);
  const s = await page.evaluate(() => window.zrecordViewer.client.stats);
  assert.equal(s.dictRequests, 1, JSON.stringify(s));
  noPageErrors(page);
});

test('a record past data.zr\'s head is fetched by its exact range as soon as meta.zr tells it, once', async () => {
  // tokens-200k: record 3,000's location is in meta.zr's first page, its
  // bytes far past data.zr's first 64 KiB.
  const i = 3000;
  const { requests, done } = await load(`#url=${encodeURIComponent(`${env.cors}/big/tokens-200k/`)}&i=${i}`);
  await waitRecord(page, i);
  const want = Array.from({ length: 8 + (i % 64) }, (_, j) => (i * 31 + j * 7) % 50000);
  assert.deepEqual(await page.$$eval('#tokens span', (sp) => sp.map((x) => Number(x.textContent))), want);
  await page.waitForFunction(() => typeof window.zrFirstRecordPainted === 'number');
  done();
  const data = requests.filter((r) => r.url.endsWith('/tokens-200k/data.zr')).map((r) => r.range);
  // (Later ranges are the table's: the shapes of the rows around it.)
  assert.equal(new Set(data).size, data.length, `no range twice: ${data.join(', ')}`);
  assert.equal(data[0], 'bytes=0-65535');
  const [a, b] = /^bytes=(\d+)-(\d+)$/.exec(data[1]).slice(1).map(Number);
  assert.ok(a > 65535 && b >= a, data[1]);
  assert.equal(requests.filter((r) => r.url.endsWith('/tokens-200k/meta.zr') && r.range === 'bytes=0-65535').length, 1);
  noPageErrors(page);
});

test('the big store: a record past the head comes from its exact range, fetched once', async () => {
  // 200,000 records; record 150,000 lies far beyond data.zr's first 64 KiB
  // and beyond meta.zr's first page, so the reader fetches it itself.
  const url = `${env.cors}/big/tokens-200k/`;
  const { requests, done } = await load(`#url=${encodeURIComponent(url)}&i=150000`);
  await waitRecord(page, 150000);
  const i = 150000;
  const want = Array.from({ length: 8 + (i % 64) }, (_, j) => (i * 31 + j * 7) % 50000);
  assert.deepEqual(await page.$$eval('#tokens span', (sp) => sp.map((x) => Number(x.textContent))), want);
  done();
  const data = requests.filter((r) => r.url.endsWith('/tokens-200k/data.zr')).map((r) => r.range);
  assert.equal(new Set(data).size, data.length, `no range twice: ${data.join(', ')}`);
  noPageErrors(page);
});

test('the page reads the first record itself from the boot script\'s bytes alone (first.js)', async () => {
  const name = 'dense-u8-img-zstd_dict';
  const { requests, done } = await load(`#url=${encodeURIComponent(`/${name}/`)}&i=7`);
  await waitRecord(page, 7);
  const before = requests.length;
  const got = await page.evaluate(async (u) => {
    const { quickFirstRecord } = await import('./first.js');
    const q = await quickFirstRecord(new URL(u, location.href).href, 7);
    return q && { len: q.summary.len, codec: q.summary.codec, shape: q.rec.shape, bytes: Array.from(new Uint8Array(q.rec.bytes)) };
  }, `/${name}/`);
  done();
  assert.ok(got, 'first.js read the record');
  assert.equal(got.len, 40);
  assert.equal(got.codec, 'zstd_dict');
  assert.deepEqual(got.shape, fixture(name).records[7].shape);
  assert.deepEqual(got.bytes, Array.from(expectedBytes(name, 7)));
  // From the boot script's bytes only: no request went out for it.
  assert.deepEqual(requests.slice(before).filter((r) => r.url.endsWith('.zr')), []);
  // Another record than the one the address named: not prefetched, so no answer.
  assert.equal(await page.evaluate(async (u) => (await import('./first.js')).quickFirstRecord(new URL(u, location.href).href, 8), `/${name}/`), null);
  noPageErrors(page);
});
