// Sealed stores (a sums.zr checksum sidecar) in the viewer: it says whether
// a store is sealed, checks every record it shows, and marks one whose bytes
// changed after sealing in red, with the reason, while the others still show.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { cpSync, readFileSync, openSync, writeSync, closeSync } from 'node:fs';
import { join } from 'node:path';
import { env, withPage, openByHash, waitRecord, gotoRecord, noPageErrors, shot } from './helpers.mjs';

let page;
withPage((p) => (page = p));

/** A sealed copy of fixture `name` under /scratch/ (record `bad` damaged when given). */
function sealedCopy(name, to, bad) {
  const dir = join(env.scratch, to);
  cpSync(join(env.fixtures, name), dir, { recursive: true });
  execFileSync(env.zrecord, ['seal', dir, '--quiet']);
  if (bad != null) {
    // Flip one byte in the middle of record `bad`'s stored bytes.
    const meta = readFileSync(join(dir, 'meta.zr'));
    const at = 4096 + 16 * bad;
    const offset = Number(meta.readBigUInt64LE(at));
    const phys = meta.readUInt32LE(at + 8);
    const data = readFileSync(join(dir, 'data.zr'));
    const fd = openSync(join(dir, 'data.zr'), 'r+');
    const where = offset + Math.floor(phys / 2);
    writeSync(fd, Buffer.of(data[where] ^ 0x40), 0, 1, where);
    closeSync(fd);
  }
  return `${env.cors}/scratch/${to}/`;
}

test('a sealed store says so and shows its records checked', async () => {
  const url = sealedCopy('dense-u8-img-zstd', 'sealed-ok');
  await openByHash(page, url, 0);
  await waitRecord(page, 0);
  assert.match(await page.textContent('#sealed'), /yes/);
  noPageErrors(page);
});

test('an unsealed store says it is not sealed', async () => {
  await openByHash(page, `${env.cors}/fixtures/dense-u8-img-zstd/`, 0);
  await waitRecord(page, 0);
  assert.equal((await page.textContent('#sealed')).trim(), 'no');
  noPageErrors(page);
});

test('a record changed after sealing is marked in red; the others show', async () => {
  const url = sealedCopy('dense-u8-img-zstd', 'sealed-bad', 2);
  await openByHash(page, url, 2);
  await page.waitForSelector('#record-view[data-mode="error"] .inline-problem[data-kind="checksum"]');
  const text = await page.textContent('#record-view .inline-problem');
  assert.match(text, /Record 2 changed after the store was sealed/);
  const color = await page.$eval('#record-view .inline-problem b', (b) => getComputedStyle(b).color);
  assert.equal(color, 'rgb(179, 38, 30)', 'the reason is in red');
  // The batch of thumbnails: record 2 red, its neighbours drawn.
  await page.click('[data-tab="batch"]');
  await page.waitForSelector('#batch-grid .thumb.corrupt[data-index="2"]');
  const tiles = await page.$$eval('#batch-grid .thumb', (ts) => ts.map((t) => [Number(t.dataset.index), t.classList.contains('corrupt'), !!t.querySelector('canvas')]));
  assert.ok(tiles.length > 3, `${tiles.length} tiles`);
  for (const [i, corrupt, drawn] of tiles) assert.deepEqual([corrupt, drawn], [i === 2, i !== 2], `tile ${i}`);
  await shot(page, 'sealed-bad');
});

// The same, with the store opened from a local folder (Blobs read in the
// page, no server): sums.zr is among the files picked, so it is checked too.

test('a sealed store picked from disk says so and shows its records checked', async () => {
  sealedCopy('dense-u8-img-zstd', 'sealed-local-ok');
  await page.goto(env.viewer);
  await page.setInputFiles('#dir-input', join(env.scratch, 'sealed-local-ok'));
  await waitRecord(page, 0);
  assert.match(await page.textContent('.store-name'), /local folder/);
  assert.match(await page.textContent('#sealed'), /yes/);
  noPageErrors(page);
});

test('a record changed after sealing, in a store picked from disk, is marked in red', async () => {
  sealedCopy('dense-u8-img-zstd', 'sealed-local-bad', 2);
  await page.goto(env.viewer);
  await page.setInputFiles('#dir-input', join(env.scratch, 'sealed-local-bad'));
  await waitRecord(page, 0);
  await gotoRecord(page, 2);
  await page.waitForSelector('#record-view[data-mode="error"] .inline-problem[data-kind="checksum"]');
  assert.match(await page.textContent('#record-view .inline-problem'), /Record 2 changed after the store was sealed/);
  noPageErrors(page);
});
