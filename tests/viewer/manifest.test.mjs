// A dataset with a manifest (tests/fixtures/dataset-v1: columns x, Dense
// <f4 [2], and tokens, Ragged <u2; 10 records in shards of 4, 2 and 4),
// served by nginx on another origin: its columns side by side, its shards
// end to end with each row's shard shown, a jump to any global row, and
// opening it costs the manifest and the look for a newer version only.

import { test } from 'node:test';
import { spawn } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { assert, env, withPage, noPageErrors, shot } from './helpers.mjs';

let page;
withPage((p) => (page = p));

const root = `${env.cors}/dataset-v1/`;
// (+ 0: a cell shows -0 as 0)
const x = (i) => [i, -i * 0.5].map((v) => v + 0);
const tokens = (i) => Array.from({ length: (i % 7) + 1 }, (_, k) => i * 31 + k);
const shardOf = (i) => (i < 4 ? 0 : i < 6 ? 1 : 2);

/** The nginx requests for the dataset so far, as paths below its root. */
const requests = () => readFileSync(env.corsLog, 'utf8').split('\n')
  .map((l) => /"GET \/dataset-v1\/(\S*) /.exec(l)?.[1]).filter((p) => p != null);

async function open(hash) {
  await page.goto('about:blank');
  await page.goto(`${env.viewer}${hash}`);
  await page.waitForSelector('.ds-row[data-index="0"] .cell[data-stream="tokens"] .ids');
}

/** Row i as shown: its shard cell and both columns' numbers. */
async function row(i) {
  await page.waitForSelector(`.ds-row[data-index="${i}"] .cell[data-stream="x"] .ids`);
  await page.waitForSelector(`.ds-row[data-index="${i}"] .cell[data-stream="tokens"] .ids`);
  return page.$eval(`.ds-row[data-index="${i}"]`, (r) => ({
    shard: Number(r.querySelector('.shard').dataset.shard),
    shardText: r.querySelector('.shard').textContent,
    x: r.querySelector('.cell[data-stream="x"]').textContent.trim().split(/\s+/).map((v) => Number(v) + 0),
    tokens: r.querySelector('.cell[data-stream="tokens"]').textContent.trim().split(/\s+/).map(Number),
  }));
}

test('a dataset root opens as its columns side by side, every row with its shard', async () => {
  await open(`#url=${encodeURIComponent(root)}`);
  assert.deepEqual(await page.$$eval('.ds-cols span', (s) => s.map((e) => e.textContent)), ['index', 'shard', 'x', 'tokens']);
  assert.match(await page.textContent('#records .table-bar h2'), /2 streams · 10 rows · 3 shards · version 1/);
  const manifest = JSON.parse(readFileSync(`${env.fixtures}/../dataset-v1/zrecord.json`, 'utf8'));
  for (let i = 0; i < 10; i++) {
    const r = await row(i);
    assert.equal(r.shard, shardOf(i), `shard of row ${i}`);
    assert.ok(r.shardText.startsWith(`${shardOf(i)} · ${manifest.shards[shardOf(i)].path.split('/').pop()}`), r.shardText);
    assert.deepEqual(r.x, x(i), `x of row ${i}`);
    assert.deepEqual(r.tokens, tokens(i), `tokens of row ${i}`);
  }
  noPageErrors(page);
});

test('the jump box goes to a global row: 7 shows record 7 of both columns, in shard 2', async () => {
  await open(`#url=${encodeURIComponent(root)}`);
  await page.fill('.table-bar input.ds-goto', '7');
  await page.press('.table-bar input.ds-goto', 'Enter');
  await page.waitForSelector('.ds-row.selected[data-index="7"]');
  const r = await row(7);
  assert.deepEqual(r.x, x(7));
  assert.deepEqual(r.tokens, tokens(7));
  assert.equal(r.shard, 2);
  assert.match(await page.textContent('.vt-foot'), /selected #7 \(shard 2\)/);
  assert.match(decodeURIComponent(await page.evaluate(() => location.hash)), /i=7/);
  await shot(page, 'dataset-manifest');
  noPageErrors(page);
});

test('opening by the manifest URL costs the manifest and the version probe before the rows', async () => {
  const before = requests().length;
  await open(`#url=${encodeURIComponent(`${root}zrecord.json`)}&i=7`);
  await page.waitForSelector('.ds-row.selected[data-index="7"]');
  const mine = requests().slice(before);
  const first = mine.findIndex((p) => p.startsWith('shards/'));
  assert.deepEqual(mine.slice(0, first), ['zrecord.json', 'versions/00000000000000000002.json'], mine.join('\n'));
  const r = await row(7);
  assert.deepEqual(r.x, x(7));
  assert.deepEqual(r.tokens, tokens(7));
  noPageErrors(page);
});

test('zrecord serve lists a dataset once, by its manifest, and opens it without probing for a store', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'zr-serve-ds-'));
  cpSync(`${env.fixtures}/../dataset-v1`, join(dir, 'dataset-v1'), { recursive: true });
  cpSync(`${env.fixtures}/dense-u8-img-raw`, join(dir, 'images'), { recursive: true });
  const server = spawn(env.zrecord, ['serve', dir, '--port', '0'], { stdio: ['ignore', 'pipe', 'inherit'] });
  try {
    const first = await new Promise((resolve, reject) => {
      server.once('exit', (code) => reject(new Error(`zrecord serve exited with ${code}`)));
      createInterface({ input: server.stdout }).once('line', resolve);
    });
    const viewer = first.replace(/^viewer: /, '');
    await page.goto('about:blank');
    await page.goto(viewer);
    await page.waitForSelector('#server-datasets .store-link');
    const links = (sel) => page.$$eval(`${sel} .store-link`, (as) => as.map((a) => a.textContent));
    assert.deepEqual(await links('#server-datasets'), ['dataset-v1dataset v1 · 10 records · 3 shards · x, tokens']);
    // Its shards' stores are the dataset's, not entries of their own.
    assert.deepEqual((await links('#server-stores')).map((t) => t.split(/\d/)[0]), ['images']);
    const asked = [];
    page.on('request', (r) => asked.push(new URL(r.url()).pathname));
    await page.click('#server-datasets .store-link');
    await page.waitForSelector('.ds-row[data-index="0"] .cell[data-stream="tokens"] .ids');
    const mine = asked.filter((p) => p.startsWith('/dataset-v1/'));
    assert.equal(mine[0], '/dataset-v1/zrecord.json', mine.join('\n'));
    assert.ok(!mine.some((p) => p.endsWith('/meta.zr') && !p.includes('/shards/')), mine.join('\n'));
    assert.deepEqual(await row(3).then((r) => r.tokens), tokens(3));
    noPageErrors(page);
  } finally {
    server.kill();
    rmSync(dir, { recursive: true, force: true });
  }
});
