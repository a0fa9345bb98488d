// `zrecord serve DIR` where DIR is hostile: it holds its own index.html,
// app.js, worker.js, style.css, pkg/zrecord.js, evil.html and evil.svg, each
// of which would set a global and send a beacon if it ever ran on the
// viewer's origin. The viewer must still run its own code, and none of the
// planted code may run.

import { test, before, after } from 'node:test';
import { spawn } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { launch } from '../../scripts/chromium.mjs';
import { assert, env, newPage, noPageErrors, waitRecord, expectedBytes, fixture, canvasPixels, assertImage } from './helpers.mjs';

const repo = new URL('../../', import.meta.url).pathname;
const zrecord = process.env.ZRECORD;
const STORE = 'dense-u8-img-zstd_dict';

/** A script that leaves a trace if it runs: a global and a request. */
const payload = (name) => `self.__planted = (self.__planted || []).concat(${JSON.stringify(name)}); fetch('/beacon/${name}');`;

const planted = {
  'index.html': `<!doctype html><title>planted</title><script>${payload('index-html')}</script>`,
  'app.js': payload('app-js'),
  'worker.js': payload('worker-js'),
  'style.css': `body { background: url(/beacon/style-css); }`,
  'pkg/zrecord.js': `${payload('pkg-js')} export default function () {}`,
  'evil.html': `<!doctype html><script>${payload('evil-html')}</script><img src=x onerror="${payload('evil-html-img').replaceAll("'", '&#39;')}">`,
  'evil.svg': `<svg xmlns="http://www.w3.org/2000/svg"><script>${payload('evil-svg')}</script></svg>`,
  'evil.js': payload('evil-js'),
  'evil.xml': `<?xml version="1.0"?><html xmlns="http://www.w3.org/1999/xhtml"><script>${payload('evil-xml')}</script></html>`,
};

let dir, server, viewer, browser, page;
const beacons = [];

before(async () => {
  assert.ok(zrecord, 'ZRECORD is not set: run the tests with scripts/test-viewer.sh');
  dir = mkdtempSync(join(tmpdir(), 'zrecord-hostile-'));
  for (const [name, body] of Object.entries(planted)) {
    mkdirSync(join(dir, name, '..'), { recursive: true });
    writeFileSync(join(dir, name), body);
  }
  cpSync(join(env.fixtures, STORE), join(dir, STORE), { recursive: true });
  server = spawn(zrecord, ['serve', dir, '--port', '0'], { stdio: ['ignore', 'pipe', 'inherit'] });
  const first = await new Promise((resolve, reject) => {
    server.once('exit', (code) => reject(new Error(`zrecord serve exited with ${code}`)));
    createInterface({ input: server.stdout }).once('line', resolve);
  });
  viewer = first.replace(/^viewer: /, '');
  assert.match(viewer, /^http:\/\/127\.0\.0\.1:\d+\/$/);
  browser = await launch();
  page = await newPage(browser);
  // Every request of the context, workers' included.
  page.context().on('request', (r) => {
    if (r.url().includes('/beacon/')) beacons.push(r.url());
  });
});

after(async () => {
  await browser?.close();
  server?.kill();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** What the server answers for `path`, fetched outside the browser. */
async function get(path) {
  const r = await fetch(new URL(path, viewer));
  return { status: r.status, headers: r.headers, body: Buffer.from(await r.arrayBuffer()) };
}

test("the viewer's own files win over the folder's", async () => {
  const own = {
    '/': join(repo, 'www/index.html'),
    '/index.html': join(repo, 'www/index.html'),
    '/app.js': join(repo, 'www/app.js'),
    '/worker.js': join(repo, 'www/worker.js'),
    '/style.css': join(repo, 'www/style.css'),
    '/pkg/zrecord.js': join(repo, 'pkg/zrecord.js'),
  };
  for (const [path, file] of Object.entries(own)) {
    const r = await get(path);
    assert.equal(r.status, 200, path);
    assert.ok(r.body.equals(readFileSync(file)), `${path} is not the viewer's own ${file}`);
  }
});

test('files from the folder are never served as something a browser runs', async () => {
  for (const name of ['evil.html', 'evil.svg', 'evil.js', 'evil.xml']) {
    const r = await get(`/${name}`);
    assert.equal(r.status, 200, name);
    assert.equal(r.headers.get('content-type'), 'application/octet-stream', name);
    assert.equal(r.headers.get('x-content-type-options'), 'nosniff', name);
    assert.equal(r.headers.get('content-security-policy'), 'sandbox', name);
  }
  const data = await get(`/${STORE}/meta.zr`);
  assert.equal(data.headers.get('x-content-type-options'), 'nosniff');
  assert.equal(data.headers.get('content-security-policy'), 'sandbox');
});

test('the viewer runs its own code and opens a store of the folder', async () => {
  await page.goto(viewer);
  await page.waitForSelector('#server-stores .store-link');
  const names = await page.$$eval('#server-stores .store-link b', (els) => els.map((e) => e.textContent));
  assert.deepEqual(names, [STORE]);
  await page.goto('about:blank');
  await page.goto(`${viewer}#url=${encodeURIComponent(`/${STORE}/`)}&i=5`);
  await page.waitForSelector('#record-count');
  assert.equal(await page.textContent('#record-count'), String(fixture(STORE).len));
  // Drawn from bytes the viewer's worker decoded with the viewer's wasm reader.
  await waitRecord(page, 5);
  assertImage(await canvasPixels(page), expectedBytes(STORE, 5), fixture(STORE).records[5].shape, 'CHW');
  assert.equal(await page.evaluate(() => window.__planted), undefined);
  noPageErrors(page);
});

test('navigating to the planted documents runs none of their code', async () => {
  for (const name of ['evil.html', 'evil.svg', 'evil.xml', 'evil.js']) {
    // Sent as opaque bytes, so the browser downloads instead of rendering.
    await page.goto(`${viewer}${name}`).catch(() => {});
    await page.waitForTimeout(200);
    const planted = await page.evaluate(() => window.__planted).catch(() => undefined);
    assert.equal(planted, undefined, name);
  }
  // Framed by the viewer's page: nothing runs there either.
  await page.goto(viewer);
  await page.evaluate(async () => {
    for (const src of ['/evil.html', '/evil.svg', '/evil.xml']) {
      const f = document.createElement('iframe');
      f.src = src;
      document.body.append(f);
    }
    const o = document.createElement('object');
    o.data = '/evil.svg';
    document.body.append(o);
    await new Promise((r) => setTimeout(r, 500));
  });
  assert.equal(await page.evaluate(() => window.__planted), undefined);
  assert.deepEqual(beacons, [], `planted code ran: ${beacons.join(', ')}`);
});
