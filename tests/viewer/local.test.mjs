// Opening store directories from disk through the folder input: the files
// are read as Blobs in the browser, no server involved.

import { test } from 'node:test';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  assert, env, withPage, noPageErrors, fixture, expectedBytes, waitRecord, gotoRecord,
  canvasPixels, assertImage, stats, shot,
} from './helpers.mjs';

let page;
withPage((p) => (page = p));

test('one store directory picked from disk opens without a server', async () => {
  const name = 'dense-u8-img-zstd_dict';
  await page.goto(env.viewer);
  const served = [];
  page.on('request', (r) => served.push(r.url()));
  await page.setInputFiles('#dir-input', join(env.fixtures, name));
  await page.waitForSelector('#record-count');
  assert.equal(await page.textContent('#record-count'), '40');
  assert.equal(await page.textContent('#codec'), 'zstd_dict');
  assert.match(await page.textContent('.store-name'), /local folder/);
  await waitRecord(page, 0);
  await gotoRecord(page, 21);
  assertImage(await canvasPixels(page), expectedBytes(name, 21), fixture(name).records[21].shape, 'CHW');
  // Every byte came from the files: no request for the store went out.
  assert.deepEqual(served.filter((u) => u.includes('.zr')), []);
  const s = await stats(page);
  assert.ok(s.requests >= 1, 'reads are counted like requests');
  noPageErrors(page);
});

test('a folder of many stores lists them to choose from', async () => {
  await page.goto(env.viewer);
  await page.setInputFiles('#dir-input', env.fixtures);
  await page.waitForSelector('#local-stores .store-link');
  const names = await page.$$eval('#local-stores .store-link b', (b) => b.map((x) => x.textContent));
  assert.ok(names.includes('ragged-i32-tokens-raw'), names.join(', '));
  assert.equal(names.length, 22);
  await shot(page, 'local-folder');
  await page.click('#local-stores .store-link:has(b:text-is("ragged-i32-tokens-raw"))');
  await page.waitForSelector('#record-count');
  assert.equal(await page.textContent('#record-count'), '200');
  await waitRecord(page, 0);
  const bytes = expectedBytes('ragged-i32-tokens-raw', 0);
  const want = Array.from(new Int32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length)));
  assert.deepEqual(await page.$$eval('#tokens span', (s) => s.map((x) => Number(x.textContent))), want);
  noPageErrors(page);
});

test("dropping a store's files on the page opens them", async () => {
  const name = 'ragged-i32-tokens-zstd';
  const files = ['meta.zr', 'data.zr'].map((f) => [f, [...readFileSync(join(env.fixtures, name, f))]]);
  await page.goto(env.viewer);
  await page.evaluate((fs) => {
    const dt = new DataTransfer();
    for (const [n, bytes] of fs) dt.items.add(new File([new Uint8Array(bytes)], n));
    window.dispatchEvent(new DragEvent('dragenter', { dataTransfer: dt }));
    window.dispatchEvent(new DragEvent('drop', { dataTransfer: dt, cancelable: true }));
  }, files);
  await page.waitForSelector('#record-count');
  assert.equal(await page.textContent('#record-count'), '200');
  await waitRecord(page, 0);
  assert.equal(await page.isHidden('#drop-overlay'), true);
  noPageErrors(page);
});
