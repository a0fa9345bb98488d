// A dataset: several stores whose record i belong together, in one view.
// The demo dataset (`zrecord demo`: image, label, caption, caption-tokens)
// served by `zrecord serve`, opened as a folder, from disk, and as several
// URLs in the address; streams of different lengths are refused; the value
// balance of a scalar integer stream is counted over the whole store, with
// progress, and can be cancelled.

import { test } from 'node:test';
import { execFileSync } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { assert, env, withPage, noPageErrors, canvasPixels, assertImage, shot } from './helpers.mjs';

let page;
withPage((p) => (page = p));

const ds = join(env.demoDir, 'dataset');

/** Records of a store through the CLI: [{i, shape, values}]. */
function get(store, indices) {
  const out = execFileSync(env.zrecord, ['get', store, ...indices.map(String), '--json'], { encoding: 'utf8' });
  return out.trim().split('\n').map((l) => JSON.parse(l));
}

const flat = (v) => (Array.isArray(v) ? v.flat(Infinity) : [v]);

async function openDataset(hash) {
  await page.goto('about:blank');
  await page.goto(`${env.demoViewer}${hash}`);
  await page.waitForSelector('.ds-row[data-index="0"] .cell.k-image canvas');
  await page.waitForSelector('.ds-row[data-index="0"] .cell.k-utf8 .text');
}

async function row(i) {
  return page.$eval(`.ds-row[data-index="${i}"]`, (r) => Object.fromEntries([...r.querySelectorAll('.cell')].map((c) => [c.dataset.stream, c.textContent])));
}

test('a served folder of aligned stores opens as one dataset: image, label and caption of each row', async () => {
  await page.goto(env.demoViewer);
  await page.waitForSelector('#server-datasets .store-link');
  assert.match(await page.textContent('#server-datasets'), /dataset.*4 streams: caption, caption-tokens, image, label/);
  await page.click('#server-datasets .store-link');
  await page.waitForSelector('.ds-row[data-index="0"] .cell.k-utf8 .text');
  assert.deepEqual(await page.$$eval('.ds-cols span', (s) => s.map((x) => x.textContent)), ['index', 'image', 'label', 'caption', 'caption-tokens']);
  assert.match(await page.textContent('#records .table-bar'), /4 streams · 256 rows/);
  const labels = get(join(ds, 'label'), [0, 1, 2, 3, 4, 5]);
  const captions = get(join(ds, 'caption'), [0, 1, 2, 3, 4, 5]);
  for (let i = 0; i < 6; i++) {
    await page.waitForSelector(`.ds-row[data-index="${i}"] .cell.k-scalar .value`);
    const r = await row(i);
    assert.equal(r.label, String(labels[i].values), `label of row ${i}`);
    assert.equal(r.caption, Buffer.from(captions[i].values).toString('utf8'), `caption of row ${i}`);
  }
  // Row 0's thumbnail holds exactly image 0's pixels.
  const img = get(join(ds, 'image'), [0])[0];
  assertImage(await canvasPixels(page, '.ds-row[data-index="0"] .cell.k-image canvas'), Uint8Array.from(flat(img.values)), img.shape, 'CHW');
  noPageErrors(page);
});

test('the dataset view is virtual: scrolling to the end shows the last rows with few rows in the page', async () => {
  await openDataset(`#url=${encodeURIComponent('/dataset/')}`);
  await page.$eval('.ds-scroll', (el) => { el.scrollTop = el.scrollHeight; });
  await page.waitForSelector('.ds-row[data-index="255"] .cell.k-utf8 .text');
  const last = get(join(ds, 'caption'), [255])[0];
  assert.equal((await row(255)).caption, Buffer.from(last.values).toString('utf8'));
  const rows = await page.$$eval('.ds-row', (r) => r.length);
  assert.ok(rows < 40, `${rows} rows in the page`);
  // A row can be selected; the address keeps it.
  await page.click('.ds-row[data-index="254"]');
  assert.match(decodeURIComponent(await page.evaluate(() => location.hash)), /url=\/dataset\/.*i=254/);
  noPageErrors(page);
});

test('the label balance counts every value of the whole store', async () => {
  await openDataset(`#url=${encodeURIComponent('/dataset/')}`);
  await page.waitForSelector('.stream-card[data-stream="label"] .balance[data-state="done"]');
  const all = get(join(ds, 'label'), Array.from({ length: 256 }, (_, i) => i)).map((r) => r.values);
  const want = new Map();
  for (const v of all) want.set(v, (want.get(v) || 0) + 1);
  const shown = await page.$$eval('.stream-card[data-stream="label"] .balance-table tr', (trs) => trs.map((tr) => [Number(tr.dataset.value), Number(tr.querySelector('.count').textContent.replace(/,/g, ''))]));
  assert.deepEqual(shown, [...want].sort((a, b) => a[0] - b[0]));
  assert.match(await page.textContent('.stream-card[data-stream="label"] .balance'), /all 256 records · 10 distinct values · 0 to 9/);
  noPageErrors(page);
});

test('the tokenizer attached to the token stream turns its column into text', async () => {
  await openDataset(`#url=${encodeURIComponent('/dataset/')}`);
  const card = '.stream-card[data-stream="caption-tokens"]';
  await page.fill(`${card} #tokenizer-url`, '/dataset/tokenizer.json');
  await page.click(`${card} #tokenizer-attach`);
  await page.waitForSelector('.ds-row[data-index="0"] .cell.k-tokens .decoded');
  const r = await row(0);
  // The ids decode to the caption, then the special end-of-text token.
  assert.equal(r['caption-tokens'], `${r.caption}<|endoftext|>`);
  await page.waitForSelector('.stream-card[data-stream="label"] .balance[data-state="done"]');
  await shot(page, 'dataset');
  noPageErrors(page);
});

test('several store URLs in the address open as a dataset', async () => {
  const urls = ['/dataset/image/', '/dataset/caption/', '/dataset/label/'];
  await openDataset(`#${urls.map((u) => `url=${encodeURIComponent(u)}`).join('&')}`);
  assert.deepEqual(await page.$$eval('.ds-cols span', (s) => s.map((x) => x.textContent)), ['index', 'image', 'label', 'caption']);
  noPageErrors(page);
});

test('streams of different lengths are refused, with the reason', async () => {
  await page.goto('about:blank');
  await page.goto(`${env.demoViewer}#url=${encodeURIComponent('/images-zstd/')}&url=${encodeURIComponent('/ragged-images-zstd/')}`);
  await page.waitForSelector('#problem:not([hidden])');
  assert.equal(await page.getAttribute('#problem', 'data-kind'), 'dataset-misaligned');
  assert.match(await page.textContent('#problem-text'), /different numbers of records \(images-zstd: 256, ragged-images-zstd: 96\)/);
  // Each store can still be opened alone.
  assert.equal(await page.$$eval('#problem .store-link', (l) => l.length), 2);
  noPageErrors(page);
});

test('a folder of stores picked from disk opens as a dataset', async () => {
  await page.goto(env.viewer);
  await page.setInputFiles('#dir-input', ds);
  await page.waitForSelector('#open-local-dataset');
  await page.click('#open-local-dataset');
  await page.waitForSelector('.ds-row[data-index="0"] .cell.k-utf8 .text');
  const caption = get(join(ds, 'caption'), [0])[0];
  assert.equal((await row(0)).caption, Buffer.from(caption.values).toString('utf8'));
  noPageErrors(page);
});

test('counting the values of a large stream shows progress and can be cancelled', async () => {
  // Two aligned scalar stores of 4M records each, written by the CLI from .npy files.
  const n = 1 << 22;
  const dir = join(env.scratch, 'big-labels');
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const npy = (file, descr, bytes) => {
    let header = `{'descr': '${descr}', 'fortran_order': False, 'shape': (${n},), }`;
    header += ' '.repeat(63 - ((10 + header.length) % 64)) + '\n';
    const pre = Buffer.alloc(10);
    Buffer.from('\x93NUMPY', 'latin1').copy(pre);
    pre[6] = 1;
    pre.writeUInt16LE(header.length, 8);
    writeFileSync(file, Buffer.concat([pre, Buffer.from(header, 'latin1'), bytes]));
  };
  const labels = new BigInt64Array(n);
  const flags = new Uint8Array(n);
  for (let i = 0; i < n; i++) {
    labels[i] = BigInt((i * 7) % 5);
    flags[i] = i % 3 === 0 ? 1 : 0;
  }
  npy(join(dir, 'labels.npy'), '<i8', Buffer.from(labels.buffer));
  npy(join(dir, 'flags.npy'), '|u1', Buffer.from(flags.buffer));
  for (const name of ['labels', 'flags']) {
    execFileSync(env.zrecord, ['import', 'npy', join(dir, `${name}.npy`), join(dir, name), '--codec', 'raw', '--quiet']);
  }
  const base = `${env.cors}/scratch/big-labels`;
  await page.goto('about:blank');
  await page.goto(`${env.demoViewer}#url=${encodeURIComponent(`${base}/labels/`)}&url=${encodeURIComponent(`${base}/flags/`)}`);
  const card = '.stream-card[data-stream="labels"]';
  await page.waitForSelector(`${card} .balance[data-state="counting"]`);
  // Progress moves, then Cancel stops it part way.
  await page.waitForFunction((c) => Number(document.querySelector(`${c} progress`)?.value) > 0, card);
  await page.click(`${card} .count-cancel`);
  await page.waitForSelector(`${card} .balance[data-state="cancelled"]`);
  const text = await page.textContent(`${card} .balance`);
  const m = /cancelled after ([\d,]+) of ([\d,]+) records/.exec(text);
  assert.ok(m, text);
  assert.equal(Number(m[2].replace(/,/g, '')), n);
  assert.ok(Number(m[1].replace(/,/g, '')) < n, text);
  // Counting again runs to the end, with the exact counts.
  await page.click(`${card} .count-again`);
  await page.waitForSelector(`${card} .balance[data-state="done"]`, { timeout: 60_000 });
  const shown = await page.$$eval(`${card} .balance-table tr`, (trs) => trs.map((tr) => [tr.dataset.value, Number(tr.querySelector('.count').textContent.replace(/,/g, ''))]));
  const counts = new Map();
  for (let i = 0; i < n; i++) counts.set((i * 7) % 5, (counts.get((i * 7) % 5) || 0) + 1);
  assert.deepEqual(shown, [...counts].sort((a, b) => a[0] - b[0]).map(([v, c]) => [String(v), c]));
  await page.waitForSelector('.stream-card[data-stream="flags"] .balance[data-state="done"]', { timeout: 60_000 });
  noPageErrors(page);
});
