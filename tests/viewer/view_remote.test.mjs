// `zrecord view s3://…`: the viewer's server reads a private bucket (moto,
// signatures checked) with the process's credentials and answers the
// viewer's range requests; the browser never holds a key. A store and a
// dataset show the same records as from a local folder; a file replaced
// upstream while open is an error, never mixed records.

import { test, after } from 'node:test';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  assert, env, withPage, noPageErrors, fixture, expectedBytes, waitRecord, gotoRecord, canvasPixels, assertImage, shot,
} from './helpers.mjs';
import { withMoto, startZrecord, assertDatasetRows } from './moto.mjs';

let page;
withPage((p) => (page = p));

let moto;
const running = [];
const big = join(env.scratch, '../big/tokens-200k');

withMoto(env.fixtures, (m) => {
  moto = m;
  m.putDir('stores/tokens', join(env.fixtures, 'ragged-i32-tokens-zstd'));
  m.putDir('stores/big', big);
});

after(async () => {
  for (const z of running) await z.stop();
});

async function view(path, extra = []) {
  const z = await startZrecord(env.zrecord, ['view', moto.url(path), '--port', '0', ...extra], moto.env());
  running.push(z);
  return z;
}

test('a store in a private bucket shows the same records as from a local folder', async () => {
  const z = await view('stores/img');
  assert.match(z.output(), /serving the store s3:\/\/zrecord-test\/stores\/img\//);
  // The link carries no credential.
  assert.ok(!z.link.includes(moto.secret) && !z.link.includes(moto.key), z.link);
  const requests = [];
  page.on('request', (r) => requests.push(r.url()));
  await page.goto('about:blank');
  await page.goto(`${z.link}&i=5`);
  await waitRecord(page, 5);
  const name = 'dense-u8-img-raw';
  assert.equal(await page.textContent('#record-count'), '40');
  assertImage(await canvasPixels(page), expectedBytes(name, 5), fixture(name).records[5].shape, 'CHW');
  await gotoRecord(page, 33);
  assertImage(await canvasPixels(page), expectedBytes(name, 33), fixture(name).records[33].shape, 'CHW');
  await shot(page, 'view-s3-store');
  // Every request of the page went to the local server, none to the bucket.
  const origin = new URL(z.link).origin;
  assert.ok(requests.length > 0);
  for (const u of requests) assert.ok(u.startsWith(origin), u);
  page.removeAllListeners('request');
  noPageErrors(page);
});

test('a ragged store through the proxy: token ids exactly as stored', async () => {
  const z = await view('stores/tokens');
  await page.goto('about:blank');
  await page.goto(`${z.link}&i=3`);
  await waitRecord(page, 3);
  const shown = await page.$$eval('#tokens span', (s) => s.map((x) => Number(x.textContent)));
  const bytes = expectedBytes('ragged-i32-tokens-zstd', 3);
  assert.deepEqual(shown, Array.from(new Int32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length))));
  noPageErrors(page);
});

test('a dataset in a private bucket shows its columns and shards as from a local folder', async () => {
  const z = await view('datasets/v1');
  assert.match(z.output(), /serving the dataset/);
  await page.goto('about:blank');
  await page.goto(z.link);
  await assertDatasetRows(page, [0, 3, 4, 9], assert);
  await shot(page, 'view-s3-dataset');
  noPageErrors(page);
});

test('a file replaced upstream while the viewer is open is an error, not other records', async () => {
  const z = await view('stores/big');
  await page.goto('about:blank');
  await page.goto(`${z.link}&i=0`);
  await waitRecord(page, 0);
  // Replace data.zr: the same size, other bytes (so another ETag).
  const data = Buffer.from(readFileSync(join(big, 'data.zr')));
  for (let k = 0; k < data.length; k++) data[k] ^= 0x5a;
  moto.put('stores/big/data.zr', data);
  await page.fill('.table-bar input', '199000');
  await page.press('.table-bar input', 'Enter');
  await page.waitForSelector('#record-view[data-index="199000"][data-mode="error"]');
  assert.match(await page.textContent('#record-view'), /changed on the server/i);
  assert.match(z.errors(), /replaced upstream/);
});

test('a missing store, a missing bucket and wrong credentials fail before a link is printed', async () => {
  await assert.rejects(startZrecord(env.zrecord, ['view', 's3://no-such-bucket/stores/img', '--port', '0'], moto.env()),
    /no such bucket \(check the bucket's name/);
  await assert.rejects(startZrecord(env.zrecord, ['view', moto.url('stores/none'), '--port', '0'], moto.env()),
    /neither a store .* nor a dataset/);
  await assert.rejects(startZrecord(env.zrecord, ['view', moto.url('stores/img'), '--port', '0'], moto.env('not-the-secret')),
    /refused the credentials/);
});

test('zrecord serve DIR --proxy URL serves the local folder and the remote prefix below /remote/', async () => {
  const z = await startZrecord(env.zrecord, ['serve', env.fixtures, '--port', '0', '--proxy', moto.url('stores')], moto.env());
  running.push(z);
  assert.match(z.output(), /proxying s3:\/\/zrecord-test\/stores at/);
  await page.goto('about:blank');
  await page.goto(`${z.link}#url=${encodeURIComponent('/remote/img/')}&i=7`);
  await waitRecord(page, 7);
  const name = 'dense-u8-img-raw';
  assertImage(await canvasPixels(page), expectedBytes(name, 7), fixture(name).records[7].shape, 'CHW');
  // The local folder is still served beside it.
  await page.goto('about:blank');
  await page.goto(`${z.link}#url=${encodeURIComponent(`/${name}/`)}&i=7`);
  await waitRecord(page, 7);
  assertImage(await canvasPixels(page), expectedBytes(name, 7), fixture(name).records[7].shape, 'CHW');
  noPageErrors(page);
});
