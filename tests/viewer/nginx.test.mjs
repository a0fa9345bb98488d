// The viewer (served by zrecord serve) reading stores from nginx on another
// origin: with CORS and Range as a store host should be, and misconfigured
// in each way the page must explain.

import { test } from 'node:test';
import { copyFileSync, mkdirSync, readFileSync, writeFileSync, utimesSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import {
  assert, env, withPage, noPageErrors, fixture, expectedBytes, openByHash,
  waitRecord, gotoRecord, canvasPixels, assertImage, shot,
} from './helpers.mjs';

let page;
withPage((p) => (page = p));

const fx = (base, name) => `${base}/fixtures/${name}/`;

test('cross-origin with CORS: count, dtype, codec and exact pixels', async () => {
  const name = 'dense-u8-img-zstd';
  await openByHash(page, fx(env.cors, name), 9);
  await waitRecord(page, 9);
  assert.equal(await page.textContent('#record-count'), '40');
  assert.equal(await page.textContent('#dtype'), '|u1');
  assert.equal(await page.textContent('#codec'), 'zstd');
  assertImage(await canvasPixels(page), expectedBytes(name, 9), fixture(name).records[9].shape, 'CHW');
  noPageErrors(page);
});

test('cross-origin Ragged images of different sizes', async () => {
  const name = 'ragged-u8-chw-images-zstd';
  await openByHash(page, fx(env.cors, name), 0);
  for (const i of [0, 4, 11]) {
    await gotoRecord(page, i);
    assertImage(await canvasPixels(page), expectedBytes(name, i), fixture(name).records[i].shape, 'CHW');
  }
  await shot(page, 'ragged-image-cross-origin');
  noPageErrors(page);
});

test('cross-origin token ids with a dictionary', async () => {
  const name = 'ragged-i32-tokens-zstd_dict';
  await openByHash(page, fx(env.cors, name), 150);
  await waitRecord(page, 150);
  assert.equal(await page.textContent('#record-count'), '200');
  assert.equal(await page.textContent('#codec'), 'zstd_dict');
  const bytes = expectedBytes(name, 150);
  const want = Array.from(new Int32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length)));
  const shown = await page.$$eval('#tokens span', (s) => s.map((x) => Number(x.textContent)));
  assert.deepEqual(shown, want);
  noPageErrors(page);
});

test('no CORS headers: the page explains CORS and how to fix it', async () => {
  await openByHash(page, fx(env.nocors, 'dense-u8-img-raw'));
  await page.waitForSelector('#problem[data-kind="cors"]');
  const text = await page.textContent('#problem');
  assert.match(text, /CORS/);
  assert.match(text, /Access-Control-Allow-Origin/);
  assert.match(text, /zrecord serve/);
  await shot(page, 'problem-cors');
});

test('no Range support: the page says the server ignores Range requests', async () => {
  await openByHash(page, fx(env.norange, 'dense-u8-img-raw'));
  await page.waitForSelector('#problem[data-kind="norange"]');
  assert.match(await page.textContent('#problem-title'), /ignores Range/);
  assert.match(await page.textContent('#problem'), /206/);
  await shot(page, 'problem-range');
});

test('gzip on the host: Chromium asks for identity on Range requests, so reads still work', async () => {
  const name = 'ragged-i32-tokens-raw';
  await openByHash(page, fx(env.gzip, name), 7);
  await waitRecord(page, 7);
  const bytes = expectedBytes(name, 7);
  const want = Array.from(new Int32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length)));
  assert.deepEqual(await page.$$eval('#tokens span', (s) => s.map((x) => Number(x.textContent))), want);
  noPageErrors(page);
});

test("each of the reader's failure messages gets its explanation", async () => {
  // The reader's own wording (src/wasm/ and src/remote/), as it reaches the page.
  const cases = [
    ['gzip', 'Remote', 'http://h/s/meta.zr: the server sent Content-Encoding: gzip; store files must be served as stored (byte ranges of compressed transfers do not line up with the file): turn gzip compression off for .zr files on the host (e.g. nginx `gzip off`)'],
    ['norange', 'Remote', 'http://h/s/meta.zr: the server answered 200 OK with the whole file to a Range request: this server does not support HTTP Range requests (or a proxy drops the Range header); serve the store from one that does'],
    ['cors', 'Remote', 'http://h/s/meta.zr: network error (TypeError: Failed to fetch); if the store is on another origin than the page, CORS may be the cause: a server in another origin must send Access-Control-Allow-Origin'],
    ['forbidden', 'Remote', 'http://h/s/meta.zr: forbidden (HTTP 403): the server refuses to serve this file'],
    ['notfound', 'NotFound', 'http://h/s/meta.zr: not found (HTTP 404)'],
    ['changed', 'StoreChanged', 'http://h/s/data.zr: store changed on the server since it was opened (data.zr had ETag "a", now "b"); reopen it'],
    ['unpublished', 'Unpublished', 'http://h/s/: unpublished build (the writer did not close): the header holds 0 records but meta.zr holds 160 bytes of locations; rebuild the store'],
    ['corrupt', 'CorruptRecord', 'http://h/s/: corrupt record 17: zstd frame: unexpected end of input (out of range)'],
    ['badformat', 'BadFormat', 'http://h/s/: bad format: reserved header bytes are not zero'],
  ];
  await page.goto(env.viewer);
  const got = await page.evaluate(async (cs) => {
    const { explain } = await import('./explain.js');
    return cs.map(([, code, message]) => {
      const x = explain(Object.assign(new Error(message), { code }), { url: 'http://h/s/' });
      return [x.kind, x.title];
    });
  }, cases);
  cases.forEach(([kind], k) => assert.equal(got[k][0], kind, `${cases[k][2]} -> ${got[k][1]}`));
  assert.equal(got[7][1], 'Record 17 is corrupt');
});

test('a server that is not there: could not connect', async () => {
  await openByHash(page, 'http://127.0.0.1:9/stores/x/');
  await page.waitForSelector('#problem[data-kind="unreachable"]');
  assert.match(await page.textContent('#problem-title'), /Could not connect/);
});

test('404 from nginx: no store at this address', async () => {
  await openByHash(page, `${env.cors}/fixtures/missing-store/`);
  await page.waitForSelector('#problem[data-kind="notfound"]');
});

/** A scratch copy of a fixture store, served by nginx under /scratch/. */
function scratchStore(from, to) {
  const dir = join(env.scratch, to);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  for (const f of ['meta.zr', 'data.zr', 'dict.zr']) {
    try {
      copyFileSync(join(env.fixtures, from, f), join(dir, f));
    } catch (e) {
      if (e.code !== 'ENOENT') throw e;
    }
  }
  return dir;
}

test('a corrupt record is named, with the check that failed', async () => {
  const dir = scratchStore('ragged-i32-tokens-zstd', 'corrupt-tokens');
  // Overwrite the middle of record 5's zstd frame.
  const meta = readFileSync(join(dir, 'meta.zr'));
  const off = Number(meta.readBigUInt64LE(4096 + 16 * 5));
  const phys = meta.readUInt32LE(4096 + 16 * 5 + 8);
  const data = readFileSync(join(dir, 'data.zr'));
  data.fill(0xff, off + 6, off + phys - 2);
  writeFileSync(join(dir, 'data.zr'), data);

  await openByHash(page, `${env.cors}/scratch/corrupt-tokens/`, 4);
  await waitRecord(page, 4);
  await gotoRecord(page, 5).catch(() => {});
  await page.waitForSelector('#record-view .inline-problem[data-kind="corrupt"]');
  const text = await page.textContent('#record-view .inline-problem');
  assert.match(text, /Record 5 is corrupt/);
  await page.waitForSelector('#net-errors li');
  await shot(page, 'problem-corrupt');
});

test('a store rewritten on the server while open: the page says it changed', async () => {
  const dir = scratchStore('ragged-i32-tokens-raw', 'changing-tokens');
  await openByHash(page, `${env.cors}/scratch/changing-tokens/`, 0);
  await waitRecord(page, 0);
  // Same bytes, new modification time: nginx gives it a new ETag.
  const later = new Date(Date.now() + 60_000);
  utimesSync(join(dir, 'data.zr'), later, later);
  utimesSync(join(dir, 'meta.zr'), later, later);
  await page.fill('.table-bar input', '199');
  await page.press('.table-bar input', 'Enter');
  await page.waitForSelector('.inline-problem[data-kind="changed"]');
  assert.match(await page.textContent('.inline-problem[data-kind="changed"]'), /changed on the server/);
});
