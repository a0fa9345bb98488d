// The in-browser half of `cargo bench --bench remote`: the wasm reader in
// pkg/ (ruzstd) measured inside Chromium. run.mjs loads this page from nginx
// and calls `zrBench.decode` / `gather` / `fetchRate` with a plan the Rust
// side wrote.
//
// Every gather returns the FNV-1a hash of its first batch's bytes, which
// the Rust side compares with the same batch gathered natively: a number is
// reported only for reads that returned the right records.

import init, { Store } from '../../pkg/zrecord.js';

/** FNV-1a (32 bit) of a batch's bytes, as 8 hex digits. */
function fnv1a(bytes) {
  let h = 0x811c9dc5;
  for (let i = 0; i < bytes.length; i++) h = Math.imul(h ^ bytes[i], 0x01000193);
  return (h >>> 0).toString(16).padStart(8, '0');
}

function batchBytes(b) {
  const d = b.data ?? b.values;
  return new Uint8Array(d.buffer, d.byteOffset, d.byteLength);
}

/** Run `step(k)` (k = 0, 1, ...) for at least `budgetMs`, at least once; returns totals. */
async function timed(budgetMs, step) {
  let records = 0;
  let bytes = 0;
  let k = 0;
  const t0 = performance.now();
  do {
    const r = await step(k++);
    records += r.records;
    bytes += r.bytes;
  } while (performance.now() - t0 < budgetMs);
  const seconds = (performance.now() - t0) / 1000;
  return { iterations: k, seconds, recordsPerSec: records / seconds, bytesPerSec: bytes / seconds };
}

async function wholeFile(url) {
  const r = await fetch(url, { cache: 'no-store' });
  if (!r.ok) throw new Error(`${url}: HTTP ${r.status}`);
  return new Uint8Array(await r.arrayBuffer());
}

/**
 * A fetch answering Range requests from files held in memory, as a
 * well-behaved server would: what is left to measure is the wasm reader
 * itself (ruzstd decoding, the driver, copying into typed arrays).
 */
function memoryFetch(files) {
  return async (url, init) => {
    const body = files[url.slice(url.lastIndexOf('/') + 1)];
    if (!body) return new Response(null, { status: 404 });
    const m = /^bytes=(\d+)-(\d+)$/.exec(new Headers(init.headers).get('Range') ?? '');
    if (!m) throw new Error(`memoryFetch: unexpected Range header in a request for ${url}`);
    const start = Number(m[1]);
    const end = Math.min(Number(m[2]), body.length - 1);
    if (start >= body.length) {
      return new Response(null, { status: 416, headers: { 'Content-Range': `bytes */${body.length}` } });
    }
    return new Response(body.subarray(start, end + 1), {
      status: 206,
      headers: { 'Content-Range': `bytes ${start}-${end}/${body.length}`, ETag: '"memory"' },
    });
  };
}

/** Consecutive batches of `size` covering records 0..len. */
function consecutive(len, size) {
  const out = [];
  for (let s = 0; s < len; s += size) {
    out.push(Uint32Array.from({ length: Math.min(size, len - s) }, (_, j) => s + j));
  }
  return out;
}

async function gatherLoop(store, batches, budgetMs) {
  const first = await store.gather(batches[0]);
  const hash = fnv1a(batchBytes(first));
  const t = await timed(budgetMs, async (k) => {
    const idx = batches[k % batches.length];
    const b = await store.gather(idx);
    return { records: idx.length, bytes: batchBytes(b).length };
  });
  return { ...t, hash };
}

/**
 * Decode throughput: the whole store fetched into memory first, then read
 * in consecutive batches through `memoryFetch`.
 */
async function decode({ url, batch, dict, budgetMs }) {
  const files = { 'meta.zr': await wholeFile(`${url}meta.zr`), 'data.zr': await wholeFile(`${url}data.zr`) };
  if (dict) files['dict.zr'] = await wholeFile(`${url}dict.zr`);
  const store = await Store.open(url, { fetch: memoryFetch(files), cachePages: 1 << 16 });
  return gatherLoop(store, consecutive(store.len, batch), budgetMs);
}

/** fetch past the browser's HTTP cache: every batch goes to the server. */
const uncached = (url, init) => fetch(url, { ...init, cache: 'no-store' });

/**
 * Random batches over HTTP: the first `cold` batches with no location page
 * cached, then the rest warm for `budgetMs`; requests per warm batch.
 */
async function gather({ url, batches, cold, budgetMs }) {
  const store = await Store.open(url, { cachePages: 1 << 16, fetch: uncached });
  const t0 = performance.now();
  for (const b of batches.slice(0, cold)) await store.gather(b);
  const coldPerSec = (cold * batches[0].length) / ((performance.now() - t0) / 1000);
  const before = store.stats();
  const warm = await gatherLoop(store, batches.slice(cold), budgetMs);
  const after = store.stats();
  return {
    ...warm,
    coldRecordsPerSec: coldPerSec,
    requestsPerBatch: (after.dataRequests - before.dataRequests) / (warm.iterations + 1),
  };
}

/**
 * The browser's own ceiling for the gathers above: bare `fetch` calls of
 * `size`-byte ranges at random offsets of `file`, `concurrency` in flight.
 */
async function fetchRate({ file, size, concurrency, budgetMs }) {
  const probe = await uncached(file, { headers: { Range: 'bytes=0-0' } });
  const total = Number((probe.headers.get('Content-Range') ?? '').split('/')[1]);
  await probe.arrayBuffer();
  if (!(total > size)) throw new Error(`${file}: no usable Content-Range in ${probe.status} answer`);
  let requests = 0;
  const t0 = performance.now();
  const worker = async () => {
    while (performance.now() - t0 < budgetMs) {
      const a = Math.floor(Math.random() * (total - size));
      const r = await uncached(file, { headers: { Range: `bytes=${a}-${a + size - 1}` } });
      if (r.status !== 206 || (await r.arrayBuffer()).byteLength !== size) throw new Error(`${file}: bad answer`);
      requests++;
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return { requestsPerSec: requests / ((performance.now() - t0) / 1000) };
}

await init();
window.zrBench = { decode, gather, fetchRate };
window.zrBenchReady = true;
