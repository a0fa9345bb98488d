// The viewer served by `zrecord serve`, reading
// the loaderx 2.0.1 fixtures from the same server.

import { test } from 'node:test';
import {
  assert, env, withPage, noPageErrors, fixture, expectedBytes, openByHash, openByTyping,
  waitRecord, gotoRecord, canvasPixels, assertImage, stats, shot,
} from './helpers.mjs';

let page;
withPage((p) => (page = p));

test('lists the stores of the server and opens one by its URL', async () => {
  await page.goto(env.viewer);
  await page.waitForSelector('#server-stores .store-link');
  const names = await page.$$eval('#server-stores .store-link b', (els) => els.map((e) => e.textContent));
  assert.ok(names.includes('dense-u8-img-raw'), names.join(', '));
  assert.ok(names.length >= 20, `${names.length} stores listed`);
  await shot(page, 'welcome');

  await openByTyping(page, '/dense-u8-img-raw/');
  assert.equal(await page.textContent('#record-count'), '40');
  assert.equal(await page.textContent('#dtype'), '|u1');
  assert.equal(await page.textContent('#codec'), 'raw');
  assert.equal(await page.textContent('#item-shape'), '(3, 16, 16)');
  // The address keeps the store, so the link reopens it.
  assert.match(decodeURIComponent(await page.evaluate(() => location.hash)), /url=\/dense-u8-img-raw\//);
  noPageErrors(page);
});

test('a (3, H, W) uint8 record is drawn as an image with exactly the stored pixels', async () => {
  const name = 'dense-u8-img-raw';
  await openByHash(page, `/${name}/`, 7);
  await waitRecord(page, 7);
  assert.equal(await page.getAttribute('#record-view', 'data-mode'), 'image');
  assertImage(await canvasPixels(page), expectedBytes(name, 7), fixture(name).records[7].shape, 'CHW');
  // The layout was chosen automatically and can be switched: one channel alone, in gray.
  assert.equal(await page.inputValue('#layout-select'), 'CHW');
  const layouts = await page.$$eval('#layout-select option', (os) => os.map((o) => o.value));
  assert.deepEqual(layouts, ['CHW', 'CHW:0', 'CHW:1', 'CHW:2']);
  await page.selectOption('#layout-select', 'CHW:1');
  const plane = expectedBytes(name, 7).subarray(256, 512);
  assertImage(await canvasPixels(page), plane, [16, 16], 'HW');
  await page.selectOption('#layout-select', 'CHW');
  await gotoRecord(page, 31);
  assertImage(await canvasPixels(page), expectedBytes(name, 31), fixture(name).records[31].shape, 'CHW');
  await shot(page, 'image-record');
  noPageErrors(page);
});

test('zstd_dict images decode in the worker to the same pixels', async () => {
  const name = 'dense-u8-img-zstd_dict';
  await openByHash(page, `/${name}/`, 12);
  await waitRecord(page, 12);
  assert.equal(await page.textContent('#codec'), 'zstd_dict');
  assert.match(await page.textContent('[data-field="dictionary"]'), /yes/);
  assertImage(await canvasPixels(page), expectedBytes(name, 12), fixture(name).records[12].shape, 'CHW');
  noPageErrors(page);
});

test('token ids of a Ragged int32 record are listed exactly', async () => {
  const name = 'ragged-i32-tokens-zstd';
  await openByHash(page, `/${name}/`, 3);
  await waitRecord(page, 3);
  assert.equal(await page.getAttribute('#record-view', 'data-mode'), 'tokens');
  const shown = await page.$$eval('#tokens span', (s) => s.map((x) => Number(x.textContent)));
  const bytes = expectedBytes(name, 3);
  const want = Array.from(new Int32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length)));
  assert.equal(shown.length, fixture(name).records[3].shape[0]);
  assert.deepEqual(shown, want);
  // Shapes of Ragged records are shown in the table once fetched.
  await page.waitForFunction(() => document.querySelector('.vt-row[data-index="3"] span:nth-child(2)')?.textContent.includes(','));
  assert.equal(await page.textContent('.vt-row[data-index="3"] span:nth-child(2)'), `(${want.length},)`);
  await shot(page, 'tokens-record');
  noPageErrors(page);
});

test('float records show statistics, a histogram and their values', async () => {
  const name = 'dense-f32-zstd';
  await openByHash(page, `/${name}/`, 2);
  await waitRecord(page, 2);
  assert.equal(await page.getAttribute('#record-view', 'data-mode'), 'values');
  const bytes = expectedBytes(name, 2);
  const want = new Float32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length));
  const cells = await page.$$eval('#values td', (tds) => tds.map((t) => Number(t.textContent)));
  assert.equal(cells.length, want.length);
  cells.forEach((v, k) => assert.ok(Math.abs(v - want[k]) <= 1e-6 * Math.max(1, Math.abs(want[k])), `value ${k}: ${v} vs ${want[k]}`));
  const min = Math.min(...want);
  const statsText = await page.textContent('#stats');
  assert.match(statsText, /min/);
  assert.ok(statsText.includes(String(Number(min.toPrecision(6)))), `${statsText} lacks min ${min}`);
  assert.ok(await page.$('canvas.hist'));
  await shot(page, 'values-record');
  noPageErrors(page);
});

test('big-endian int32 values are read in their byte order', async () => {
  const name = 'dense-i32-bigendian-zstd';
  await openByHash(page, `/${name}/`, 5);
  await waitRecord(page, 5);
  const bytes = expectedBytes(name, 5);
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.length);
  const want = Array.from({ length: bytes.length / 4 }, (_, k) => dv.getInt32(k * 4, false));
  // A 1-D integer record: listed as token ids.
  assert.equal(await page.getAttribute('#record-view', 'data-mode'), 'tokens');
  const cells = await page.$$eval('#tokens span', (s) => s.map((t) => Number(t.textContent)));
  assert.deepEqual(cells, want);
  await page.click('#record-view .seg button[data-mode="values"]');
  const values = await page.$$eval('#values td', (tds) => tds.map((t) => Number(t.textContent)));
  assert.deepEqual(values, want);
  noPageErrors(page);
});

test('bytes and strings: 1-D uint8 as a hex dump, |S5 as text', async () => {
  await openByHash(page, '/dense-big-record-zstd/', 1);
  await waitRecord(page, 1);
  assert.equal(await page.getAttribute('#record-view', 'data-mode'), 'hex');
  const bytes = expectedBytes('dense-big-record-zstd', 1);
  const first = (await page.textContent('#hexdump')).split('\n')[0];
  const hex = Array.from(bytes.subarray(0, 16), (b) => b.toString(16).padStart(2, '0')).join(' ');
  assert.ok(first.includes(hex), `${first} vs ${hex}`);

  await openByHash(page, '/dense-S5-raw/', 2);
  await waitRecord(page, 2);
  assert.equal(await page.getAttribute('#record-view', 'data-mode'), 'strings');
  const s = expectedBytes('dense-S5-raw', 2);
  const text = Buffer.from(s).toString('latin1').replace(/\0+$/, '');
  assert.match(await page.textContent('#values td'), new RegExp(text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')));
  noPageErrors(page);
});

test('the batch view shows a page of image thumbnails', async () => {
  await openByHash(page, '/ragged-u8-chw-images-zstd/', 0);
  await waitRecord(page, 0);
  await page.click('.tabs button[data-tab="batch"]');
  await page.waitForSelector('#batch-grid .thumb canvas');
  const n = await page.$$eval('#batch-grid .thumb', (t) => t.length);
  assert.equal(n, fixture('ragged-u8-chw-images-zstd').len);
  // Thumbnail 5 has the record's own size and pixels.
  const rec = fixture('ragged-u8-chw-images-zstd').records[5];
  const px = await canvasPixels(page, '#batch-grid .thumb[data-index="5"] canvas');
  assertImage(px, expectedBytes('ragged-u8-chw-images-zstd', 5), rec.shape, 'CHW');
  await shot(page, 'batch');
  await page.click('#batch-grid .thumb[data-index="5"]');
  await waitRecord(page, 5);
  noPageErrors(page);
});

test('the network panel counts requests live', async () => {
  await openByHash(page, '/ragged-i32-tokens-raw/', 0);
  await waitRecord(page, 0);
  const s = await stats(page);
  assert.ok(s.requests >= 1 && s.bytes > 0, JSON.stringify(s));
  await page.waitForFunction(() => Number(document.querySelector('[data-stat="requests"] b').textContent) >= 1);
  noPageErrors(page);
});

test('an unpublished build and an empty store are told apart', async () => {
  await openByHash(page, '/dense-unpublished-zstd/');
  await page.waitForSelector('#problem[data-kind="unpublished"]');
  assert.match(await page.textContent('#problem-title'), /never published/);
  await shot(page, 'problem-unpublished');

  await openByHash(page, '/dense-empty-zstd/');
  assert.equal(await page.textContent('#record-count'), '0');
  await page.waitForSelector('#empty-store');
  noPageErrors(page);
});

test('a missing store says so', async () => {
  await openByHash(page, '/no-such-store/');
  await page.waitForSelector('#problem[data-kind="notfound"]');
  assert.match(await page.textContent('#problem-title'), /No store/);
});
