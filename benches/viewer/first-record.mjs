// First record on screen, cold: how long from navigation until the viewer has
// painted record 0 of a zstd_dict image store, with an empty browser cache.
//
//   node benches/viewer/first-record.mjs [--loads N] [--bin PATH] [--store NAME] [--json FILE]
//       [--latency MS [--via-view]]
//
// Writes the demo stores (`zrecord demo --no-serve --dir D`), starts
// `zrecord serve D` on loopback, launches headless Chromium (playwright-core,
// /usr/bin/chromium) once, and opens `/#url=/<store>/` N times (default 7),
// each in a NEW browser context, so nothing is cached between loads. Each load
// is timed twice:
//   - `paint`: in the page, from navigation start (performance.timeOrigin) to
//     the frame after record 0's canvas was drawn (the viewer's
//     `zr:first-record` mark, then one animation frame and a task);
//   - `wall`: in this script, from page.goto() to seeing that mark.
// Prints every load and the medians; the median `paint` is the number the
// README reports. `--latency MS` puts a proxy that answers every request MS
// ms late (an object store's latency) between the page and the store, which
// is then opened by its absolute URL on that proxy; `--via-view` opens it
// instead through `zrecord view PROXY_URL` (the viewer's server reading the
// store for the page: docs/PRIVATE_BUCKETS.md). `--bin` picks the zrecord binary (default: target/release,
// else target/debug, under $CARGO_TARGET_DIR or ./target).

import { spawn, execFileSync } from 'node:child_process';
import { createServer, request as httpRequest } from 'node:http';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { launch } from '../../scripts/chromium.mjs';

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const args = process.argv.slice(2);
const opt = (name, dflt) => {
  const k = args.indexOf(`--${name}`);
  return k >= 0 ? args[k + 1] : dflt;
};
const loads = Number(opt('loads', 7));
const storeName = opt('store', 'images-zstd_dict');
const jsonOut = opt('json', null);
const target = process.env.CARGO_TARGET_DIR || join(repo, 'target');
const bin = opt('bin', ['release', 'debug'].map((p) => join(target, p, 'zrecord')).find(existsSync));
if (!bin || !existsSync(bin)) {
  console.error('no zrecord binary: cargo build --release --bin zrecord (or pass --bin PATH)');
  process.exit(2);
}

const dir = mkdtempSync(join(tmpdir(), 'zr-first-record-'));
execFileSync(bin, ['demo', '--no-serve', '--dir', dir], { stdio: ['ignore', 'ignore', 'inherit'] });

// `--live` serves www/ and pkg/ from this checkout instead of the copies
// embedded in the binary (for measuring while editing the viewer);
// `--viewer-dir D` from another checkout D (to compare two versions).
const viewerDir = opt('viewer-dir', args.includes('--live') ? repo : null);
const serveArgs = ['serve', dir, '--port', '0', ...(viewerDir ? ['--viewer-dir', viewerDir] : [])];
/** `zrecord ARGS` started, and the URL on its `viewer: URL` line. */
function started(args) {
  const child = spawn(bin, args, { stdio: ['ignore', 'pipe', 'inherit'] });
  const link = new Promise((res, rej) => {
    let out = '';
    child.stdout.on('data', (d) => {
      out += d;
      const m = /^viewer: (\S+)/m.exec(out);
      if (m) res(m[1]);
    });
    child.on('exit', (code) => rej(new Error(`zrecord ${args[0]} exited (${code})`)));
  });
  return { child, link };
}

const served = started(serveArgs);
const server = served.child;
const viewer = await served.link;

// The store behind a proxy that answers each request `latency` ms late.
const latency = Number(opt('latency', 0));
let proxy = null;
let viewProcess = null;
let pageUrl = `${viewer}#url=${encodeURIComponent(`/${storeName}/`)}`;
if (latency) {
  const upstream = new URL(viewer);
  proxy = createServer((req, res) => setTimeout(() => {
    const up = httpRequest({ host: upstream.hostname, port: upstream.port, path: req.url, method: req.method, headers: req.headers }, (r) => {
      res.writeHead(r.statusCode, r.headers);
      r.pipe(res);
    });
    up.on('error', () => res.destroy());
    req.pipe(up);
  }, latency));
  await new Promise((r) => proxy.listen(0, '127.0.0.1', r));
  const storeUrl = `http://127.0.0.1:${proxy.address().port}/${storeName}/`;
  if (args.includes('--via-view')) {
    const v = started(['view', storeUrl, '--port', '0']);
    viewProcess = v.child;
    pageUrl = await v.link;
  } else {
    pageUrl = `${viewer}#url=${encodeURIComponent(storeUrl)}`;
  }
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

const browser = await launch();
const chromiumVersion = browser.version();
const results = [];
try {
  const url = pageUrl;
  // One throw-away load warms the server's page cache and Chromium's process
  // pool; it is not counted.
  for (let k = -1; k < loads; k++) {
    const context = await browser.newContext({ viewport: { width: 1440, height: 900 } });
    const page = await context.newPage();
    const errors = [];
    page.on('pageerror', (e) => errors.push(e.message));
    const t0 = performance.now();
    await page.goto(url, { waitUntil: 'commit' });
    // The viewer's own mark when it has one; otherwise (older viewers) the
    // first animation frame at which record 0's canvas is in the page.
    const paint = await page.waitForFunction(() => window.zrFirstRecordPainted
      ?? (document.querySelector('#record-view[data-index="0"]:not([data-loading]) #record-canvas') ? performance.now() : null), null, { timeout: 30_000, polling: 'raf' })
      .then((h) => h.jsonValue())
      .catch(() => {
        throw new Error(`record 0 was not painted: ${errors.join('; ') || 'no page error'}`);
      });
    const wall = performance.now() - t0;
    const entries = () => ({
      origin: performance.timeOrigin,
      list: performance.getEntriesByType('navigation').concat(performance.getEntriesByType('resource'))
        .map((e) => ({ name: new URL(e.name).pathname, start: e.startTime, first: e.responseStart, end: e.responseEnd }))
        .concat(performance.getEntriesByType('mark').map((e) => ({ name: e.name, start: e.startTime, first: e.startTime, end: e.startTime })))
        .concat(performance.getEntriesByType('paint').map((e) => ({ name: e.name, start: e.startTime, first: e.startTime, end: e.startTime })))
        .concat(performance.getEntriesByType('navigation').flatMap((e) => ['domInteractive', 'domContentLoadedEventStart', 'domContentLoadedEventEnd']
          .map((k) => ({ name: k, start: e[k], first: e[k], end: e[k] })))),
    });
    const timelines = [await page.evaluate(entries)];
    for (const w of page.workers()) timelines.push({ ...(await w.evaluate(entries)), worker: true });
    const requests = timelines.flatMap((t) => t.list.map((e) => ({
      ...e, worker: !!t.worker, start: e.start + t.origin - timelines[0].origin, first: e.first + t.origin - timelines[0].origin, end: e.end + t.origin - timelines[0].origin,
    }))).sort((a, b) => a.start - b.start);
    await context.close();
    if (k < 0) continue;
    results.push({ paint, wall, requests });
    console.log(`load ${k + 1}: painted at ${paint.toFixed(1)} ms after navigation start (${wall.toFixed(1)} ms wall, ${requests.length} resources)`);
  }
} finally {
  await browser.close();
  server.kill();
  viewProcess?.kill();
  proxy?.close();
  rmSync(dir, { recursive: true, force: true });
}

const summary = {
  store: storeName,
  latencyMs: latency,
  viaView: latency > 0 && args.includes('--via-view'),
  loads,
  chromium: chromiumVersion,
  medianPaintMs: Number(median(results.map((r) => r.paint)).toFixed(1)),
  medianWallMs: Number(median(results.map((r) => r.wall)).toFixed(1)),
  minPaintMs: Number(Math.min(...results.map((r) => r.paint)).toFixed(1)),
  maxPaintMs: Number(Math.max(...results.map((r) => r.paint)).toFixed(1)),
};
console.log(`first record of /${storeName}/${latency ? ` behind ${latency} ms${summary.viaView ? ', through zrecord view' : ', direct'}` : ''}, cold, median of ${loads}: ${summary.medianPaintMs} ms (range ${summary.minPaintMs}–${summary.maxPaintMs} ms; wall ${summary.medianWallMs} ms)`);
if (args.includes('--verbose')) {
  const last = results[results.length - 1];
  const ms = (x) => x.toFixed(0).padStart(5);
  for (const r of last.requests) console.log(`  ${ms(r.start)} → ${ms(r.first)} → ${ms(r.end)} ms  ${r.worker ? 'worker ' : ''}${r.name}`);
  console.log(`  painted at ${ms(last.paint)} ms`);
}
if (jsonOut) writeFileSync(jsonOut, JSON.stringify({ ...summary, results }, null, 2));
