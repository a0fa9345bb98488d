// Shared setup for the viewer's end-to-end tests (run by scripts/test-viewer.sh,
// which starts the servers and sets the environment read here).

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import assert from 'node:assert/strict';
import { before, after } from 'node:test';
import { launch } from '../../scripts/chromium.mjs';

function need(name) {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set: run the tests with scripts/test-viewer.sh`);
  return v;
}

export const env = {
  viewer: need('VIEWER_URL'),
  cors: need('STORE_CORS'),
  nocors: need('STORE_NOCORS'),
  norange: need('STORE_NORANGE'),
  gzip: need('STORE_GZIP'),
  corsLog: need('CORS_ACCESS_LOG'),
  fixtures: need('FIXTURES'),
  scratch: need('SCRATCH'),
  shots: need('SCREENSHOTS'),
  demoViewer: need('DEMO_VIEWER_URL'),
  demoDir: need('DEMO_DIR'),
  zrecord: need('ZRECORD'),
};

/**
 * One browser and page for a test file: launched before its tests (and
 * handed to `set`), closed after them.
 */
export function withPage(set) {
  let browser;
  before(async () => {
    browser = await launch();
    set(await newPage(browser));
  });
  after(async () => {
    await browser?.close();
  });
}

/** A laptop-sized page that fails the test on any uncaught page error. */
export async function newPage(browser) {
  const context = await browser.newContext({ viewport: { width: 1440, height: 900 }, deviceScaleFactor: 1 });
  const page = await context.newPage();
  page.setDefaultTimeout(20_000);
  page.errors = [];
  page.on('pageerror', (e) => page.errors.push(e.message));
  page.on('console', (m) => {
    if (m.type() === 'error' && !/Failed to load resource|CORS policy|net::ERR_/.test(m.text())) page.errors.push(m.text());
  });
  return page;
}

export function noPageErrors(page) {
  assert.deepEqual(page.errors, [], `errors in the page: ${page.errors.join('\n')}`);
}

const manifest = JSON.parse(readFileSync(join(env.fixtures, 'manifest.json'), 'utf8'));

/** The fixture manifest's entry for store `name`. */
export function fixture(name) {
  const s = manifest.stores.find((x) => x.name === name);
  if (!s) throw new Error(`no fixture ${name}`);
  return s;
}

/** Expected decoded payload bytes of record `i` of fixture `name`. */
export function expectedBytes(name, i) {
  const s = fixture(name);
  const all = readFileSync(join(env.fixtures, s.expected));
  const r = s.records[i];
  return all.subarray(r.offset, r.offset + r.nbytes);
}

/** Load the viewer with `#url=storeUrl` (and record `i`), wait until open. */
export async function openByHash(page, storeUrl, i) {
  const hash = `#url=${encodeURIComponent(storeUrl)}${i != null ? `&i=${i}` : ''}`;
  // A fresh load: a hash change alone would keep the last store on screen for a moment.
  await page.goto('about:blank');
  await page.goto(`${env.viewer}${hash}`);
  await page.waitForSelector('#record-count, #problem:not([hidden])');
}

/** Type a URL in the top bar and press Open. */
export async function openByTyping(page, storeUrl) {
  await page.fill('#url', storeUrl);
  await page.click('#open-form button[type=submit]');
  await page.waitForFunction((u) => document.querySelector('.store-name')?.textContent === new URL(u, location.href).href, storeUrl);
}

export async function waitRecord(page, i) {
  await page.waitForSelector(`#record-view[data-index="${i}"]:not([data-loading])`);
}

/** Select record `i` through the "go to" box. */
export async function gotoRecord(page, i) {
  await page.fill('.table-bar input', String(i));
  await page.press('.table-bar input', 'Enter');
  await waitRecord(page, i);
}

/** The record canvas's pixels as RGBA bytes, with its size. */
export async function canvasPixels(page, selector = '#record-canvas') {
  return page.$eval(selector, (c) => {
    const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    return { w: c.width, h: c.height, rgba: Array.from(d) };
  });
}

/** Compare RGBA pixels with a uint8 image of layout CHW or HWC (C = 1 or 3). */
export function assertImage(px, bytes, shape, layout) {
  const [H, W, C] = layout === 'CHW' ? [shape[1], shape[2], shape[0]] : layout === 'HW' ? [shape[0], shape[1], 1] : [shape[0], shape[1], shape[2]];
  assert.equal(px.w, W, 'canvas width');
  assert.equal(px.h, H, 'canvas height');
  const plane = H * W;
  for (let p = 0; p < plane; p++) {
    for (let ch = 0; ch < 3; ch++) {
      const src = C === 1 ? 0 : ch;
      const want = layout === 'HWC' ? bytes[p * C + src] : bytes[src * plane + p];
      if (px.rgba[p * 4 + ch] !== want) {
        assert.fail(`pixel ${p} (y=${Math.floor(p / W)}, x=${p % W}) channel ${ch}: canvas ${px.rgba[p * 4 + ch]}, store ${want}`);
      }
    }
    assert.equal(px.rgba[p * 4 + 3], 255, 'opaque');
  }
}

/** The reader's live counters as the page has them. */
export async function stats(page) {
  return page.evaluate(() => window.zrecordViewer.client.stats);
}

export async function shot(page, name) {
  await page.screenshot({ path: join(env.shots, `${name}.png`) });
}

export { assert };
