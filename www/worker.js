// The decoding worker: owns the wasm reader and the open store, so fetching,
// zstd decoding and record statistics never run on the page's thread.
//
// Protocol (see client.js): the page posts {id, op, ...args}; the worker
// answers {id, ok: true, value} or {id, ok: false, error: {message}}, and
// posts {type: 'stats', stats, inflight} whenever the network counters may
// have changed. {op: 'cancel', target} aborts request `target`.

// Start-up is on the critical path of the first record on screen, so the
// worker overlaps everything it can: its JS glue and dtype.js load (dynamic
// imports, not static ones that would run one after the other) while the
// page compiles the wasm (or, without the boot script, while the wasm is
// fetched and compiled by streaming here), and the store named in the
// worker's name (set by the boot script in index.html) is opened at once with
// the bytes the page prefetched, and record `i` read. The page's later `open`
// and `records` calls for the same URL and record take those results (the
// page may also have drawn that record itself already: first.js).

import { Prefetched, requestOf } from './prefetch.js';

// The boot script names the worker after the store it should open at once
// ({preopen, index, pending}), and with `wasm: true` compiles the wasm itself
// while the worker starts, posting the WebAssembly.Module ({op: 'wasm'}).
let boot = null;
try {
  boot = self.name ? JSON.parse(self.name) : null;
} catch {
  // not a boot name
}
let wasmFromPage = null;
const pageWasm = boot?.wasm ? new Promise((resolve) => { wasmFromPage = resolve; }) : Promise.resolve(null);

const wasmReady = (async () => {
  let mod;
  try {
    mod = await import('./pkg/zrecord.js');
  } catch (e) {
    throw new Error(`unpublished viewer build: the wasm reader (pkg/zrecord.js) is missing or failed to load (${e.message}). Build it with scripts/build-pkg.sh (wasm-pack build --target web), then rebuild zrecord.`);
  }
  // The page's compiled module, else fetch and compile by streaming here
  // (also when the page's compile failed, so the error is this fetch's).
  const compiled = await pageWasm;
  await mod.default({ module_or_path: compiled || fetch(new URL('./pkg/zrecord_bg.wasm', import.meta.url)) });
  performance.mark('zr:wasm-ready');
  return mod;
})();
wasmReady.catch(() => {});
const dtypeReady = import('./dtype.js');
dtypeReady.catch(() => {});

/** Open stores by key: 'main' is the store view's, others a dataset's streams. */
const stores = new Map(); // key -> {store, dtype, url}
/** Open manifest datasets by key: their columns sit in `stores` as `${key}:${k}`. */
const datasets = new Map(); // key -> {dataset, keys}
let openGeneration = 0;
const inflight = new Map(); // request id -> AbortController
/** The store the boot script asked for early: {url, index, opened: Promise<Store>, first: Promise<batch> | null}. */
let early = null;

// Byte ranges the page fetched for the reader before this worker ran (see
// the boot script in index.html). They serve the reader's requests they
// cover until the page opens another store or record i was read.
const prefetched = new Prefetched();
const dropPrefetched = () => prefetched.drop();

/**
 * The fetch the reader uses: bypasses the browser's HTTP cache, and answers
 * from what the page prefetched when that holds the bytes asked for.
 * Revalidating a cached range would send If-Range, and a file changed on
 * the server then comes back whole (200) instead of as a range with a new
 * ETag, which the reader reports as "store changed"; the reader keeps its
 * own page cache.
 */
async function readerFetch(input, init) {
  if (prefetched.size) {
    const { url, range } = requestOf(input, init);
    const hit = await prefetched.serve(url, range);
    if (hit) return hit;
  }
  const url = String(input?.url ?? input);
  const name = presigned && url.startsWith(presigned.base) ? url.slice(presigned.base.length) : null;
  if (name != null) {
    // `zrecord presign` signs every file the store has: one it did not
    // sign (no sums.zr, no dict.zr) is not there.
    if (!Object.hasOwn(presigned.queries, name)) return new Response(null, { status: 404 });
    return s3Answer(fetch(`${url}?${presigned.queries[name]}`, Object.assign(init || {}, { cache: 'no-store' })), url);
  }
  if (signer && url.startsWith(signer.scope)) {
    // SigV4 in the Authorization header (never in the URL), by aws4fetch.
    const signed = await signer.client.sign(url, { method: 'GET', headers: init?.headers });
    return s3Answer(fetch(signed, { cache: 'no-store', signal: init?.signal }), url);
  }
  return fetch(input, Object.assign(init || {}, { cache: 'no-store' }));
}

/**
 * A bucket's answer, with its refusals in words explain.js tells apart:
 * S3's error code from the XML body (wrong keys, an expired link, no such
 * bucket), and no readable answer at all (no CORS rule for this page). A
 * missing file (NoSuchKey) is left to the reader, which knows what it means.
 */
async function s3Answer(answer, url) {
  let resp;
  try {
    resp = await answer;
  } catch (e) {
    if (e?.name === 'AbortError') throw e;
    throw new Error(`no readable answer from the bucket at ${new URL(url).origin} [s3: NoCorsRule]: it sends no CORS headers for this page (or cannot be reached; ${e?.message ?? e})`);
  }
  if (resp.status < 400 || resp.status === 416) return resp;
  const body = await resp.clone().text().catch(() => '');
  const code = /<Code>([^<]*)<\/Code>/.exec(body)?.[1];
  if (!code || code === 'NoSuchKey') return resp;
  const said = /<Message>([^<]*)<\/Message>/.exec(body)?.[1] || '';
  throw new Error(`the bucket refused the request [s3: ${code}] ${said} (HTTP ${resp.status})`);
}

/**
 * The S3 keys of the bucket opened with "Open private bucket…": requests
 * below `scope` are signed with them. Held in this worker's memory only,
 * for the tab's life; never posted back, stored or logged.
 */
let signer = null;

/** The files of a `zrecord presign` link: {base, queries: {name: presigned query}}. */
let presigned = null;

/**
 * Records of a sealed store (one with a sums.zr checksum sidecar) are
 * checked against it as they are read; unsealed stores read as they are.
 */
const VERIFY = 'if-sealed';

/**
 * Gather `indices`; when a record fails its checksum, gather them one by one
 * so the others still show and each bad one comes back as {error, code}.
 */
async function gatherChecked(s, indices, signal) {
  try {
    return { batch: await s.gather(Uint32Array.from(indices), { signal }) };
  } catch (e) {
    if (e?.code !== 'ChecksumMismatch' || indices.length === 1) throw e;
    const each = [];
    for (const i of indices) {
      try {
        each.push({ batch: await s.gather(Uint32Array.of(i), { signal }) });
      } catch (err) {
        if (err?.code !== 'ChecksumMismatch') throw err;
        each.push({ error: String(err.message), code: err.code });
      }
    }
    return { each };
  }
}

function preopen({ url, index, pending }) {
  for (const p of pending || []) prefetched.slot(p);
  const opened = wasmReady.then((mod) => mod.Store.open(url, { fetch: readerFetch, verify: VERIFY }));
  early = { url, index: index ?? 0, opened, first: null };
  const mine = early;
  opened.then((s) => {
    performance.mark('zr:preopened');
    if (mine.dropped || !(mine.index >= 0 && mine.index < Number(s.len))) {
      dropPrefetched();
      return;
    }
    mine.first = s.gather(Uint32Array.of(mine.index));
    // Once record i is read, the prefetched bytes have served their purpose;
    // later reads go to the server, so a store changed there is noticed.
    mine.first.then(() => performance.mark('zr:first-gathered'), () => {}).finally(dropPrefetched);
  }, dropPrefetched);
}

// Open the store the boot script named at once, rather than when a message
// gets through.
if (boot?.preopen) preopen({ url: boot.preopen, index: boot.index, pending: boot.pending });

/** Open a store under `key` (see ops.open). */
async function openStore({ url, headers, files, key = 'main' }, signal) {
  const mod = await wasmReady;
  const { parseDtype } = await dtypeReady;
  const generation = key === 'main' ? ++openGeneration : 0;
  const old = stores.get(key);
  if (old) {
    stores.delete(key);
    old.store.free?.();
  }
  const options = { signal, verify: VERIFY };
  if (headers && Object.keys(headers).length) options.headers = headers;
  if (!files) options.fetch = readerFetch;
  let opened;
  const e = early;
  if (e && key === 'main' && (files || e.url !== url)) {
    // The page opened something else: let the early store go.
    early = null;
    e.dropped = true;
    dropPrefetched();
    e.opened.then((st) => st.free?.(), () => {});
  } else if (e && !files && key === 'main' && e.url === url && !options.headers) {
    early = null;
    opened = await e.opened;
    stores.set(key, { store: opened, dtype: parseDtype(opened.dtype), url, first: e });
    return summary(key);
  }
  opened = files ? await openFiles(mod, files, options) : await mod.Store.open(url, options);
  if (key === 'main' && generation !== openGeneration) {
    opened.free?.();
    throw abortError();
  }
  stores.set(key, { store: opened, dtype: parseDtype(opened.dtype), url });
  return summary(key);
}

/** Opens in progress by key: calls for that key wait for them (the page may send `records` right behind `open`). */
const openings = new Map();

/** The open store `key`, once an open in progress for it has settled. */
async function ready(key = 'main') {
  await openings.get(key);
  return need(key);
}

const ops = {
  async credentials({ scope, region, accessKeyId, secretAccessKey, sessionToken }) {
    const { AwsClient } = await import('./aws4fetch.js');
    signer = {
      scope,
      client: new AwsClient({ accessKeyId, secretAccessKey, sessionToken: sessionToken || undefined, service: 's3', region }),
    };
    return null;
  },

  presigned({ base, queries }) {
    presigned = { base, queries };
    return null;
  },

  open(args, signal) {
    const key = args.key || 'main';
    const p = openStore(args, signal);
    const settled = p.then(() => {}, () => {});
    openings.set(key, settled);
    settled.then(() => {
      if (openings.get(key) === settled) openings.delete(key);
    });
    return p;
  },

  /**
   * Open the dataset whose manifest (zrecord.json) is at `url` under `key`:
   * one request for the manifest, one for a newer version; its shards open
   * when a row needs them. Each column is then a stream `${key}:${k}`.
   */
  async openDataset({ url, headers, key }, signal) {
    const mod = await wasmReady;
    const { parseDtype } = await dtypeReady;
    dropDataset(key);
    const options = { signal, verify: VERIFY, fetch: readerFetch };
    if (headers && Object.keys(headers).length) options.headers = headers;
    const dataset = await mod.Dataset.open(url, options);
    const columns = dataset.columns.map((c, k) => {
      const column = dataset.column(k);
      const ck = `${key}:${k}`;
      stores.set(ck, { store: column, dtype: parseDtype(column.dtype), url });
      return { name: c.name, key: ck, summary: summary(ck) };
    });
    datasets.set(key, { dataset, keys: columns.map((c) => c.key) });
    return { url: dataset.url, version: dataset.version, length: dataset.length, columns, shards: dataset.shards };
  },

  /** Forget a dataset stream, a manifest dataset (or the main store). */
  async close({ key }) {
    if (datasets.has(key)) return dropDataset(key);
    const s = stores.get(key);
    stores.delete(key);
    s?.store.free?.();
    return null;
  },

  async locs({ start, count, key }, signal) {
    return normalizeLocs(await (await ready(key)).locs(start, count, { signal }), count);
  },

  /** Shapes of records (Ragged stores fetch them; Dense know them). */
  async shapes({ indices, key }, signal) {
    const s = await ready(key);
    if (s.kind === 'dense') return indices.map(() => Array.from(s.itemShape, Number));
    const batch = await s.gather(Uint32Array.from(indices), { signal });
    return Array.from(batch.shapes, (shape) => Array.from(shape, Number));
  },

  /** Whole records, with a summary when numeric (and `summary` asked). */
  async records({ indices, summary: wantSummary, key }, signal) {
    const s = await ready(key);
    const { dtype, first } = stores.get(key || 'main');
    const { summarize, isNumeric, splitBatch } = await dtypeReady;
    let got;
    if (first?.first && indices.length === 1 && indices[0] === first.index) {
      got = { batch: await first.first };
      first.first = null;
    } else {
      got = await gatherChecked(s, indices, signal);
    }
    const make = (index, r) => {
      const rec = { index, shape: r.shape, bytes: r.bytes };
      if (wantSummary && isNumeric(dtype)) rec.summary = summarize(new Uint8Array(r.bytes), dtype);
      return rec;
    };
    const out = got.batch
      ? splitBatch(got.batch, indices.length).map((r, k) => make(indices[k], r))
      : got.each.map((g, k) => (g.batch ? make(indices[k], splitBatch(g.batch, 1)[0]) : { index: indices[k], error: g.error, code: g.code }));
    return transfer(out, out.filter((r) => r.bytes).map((r) => r.bytes));
  },

  /**
   * Value counts of a scalar integer Dense store, read in chunks of `chunk`
   * records (one coalesced range each: the records are contiguous), posting
   * {type: 'progress', id, done, total} as it goes. Values are counted
   * exactly while there are at most 4096 distinct ones; after that the rest
   * is summarised by min / max only (`overflow`).
   */
  async valueCounts({ key, chunk = 16384 }, signal, id) {
    const s = await ready(key);
    const { dtype } = stores.get(key);
    const { typedView, isInteger, asBytes } = await dtypeReady;
    if (s.kind !== 'dense' || !isInteger(dtype) || Array.from(s.itemShape).reduce((a, b) => a * Number(b), 1) !== 1) {
      throw new Error('value counts need a Dense store of one integer per record');
    }
    const n = Number(s.len);
    const counts = new Map();
    let overflow = 0;
    let min = null;
    let max = null;
    let last = 0;
    for (let start = 0; start < n; start += chunk) {
      if (signal.aborted) throw abortError();
      const count = Math.min(chunk, n - start);
      const idx = new Uint32Array(count);
      for (let k = 0; k < count; k++) idx[k] = start + k;
      const batch = await s.gather(idx, { signal });
      const values = typedView(asBytes(batch.data), dtype);
      for (let k = 0; k < values.length; k++) {
        const v = typeof values[k] === 'bigint' ? values[k].toString() : values[k];
        const num = Number(v);
        if (min === null || num < min) min = num;
        if (max === null || num > max) max = num;
        const c = counts.get(v);
        if (c !== undefined) counts.set(v, c + 1);
        else if (counts.size < 4096) counts.set(v, 1);
        else overflow++;
      }
      const now = Date.now();
      if (now - last > 100 || start + count >= n) {
        last = now;
        postMessage({ type: 'progress', id, done: start + count, total: n });
      }
    }
    const entries = [...counts.entries()].map(([v, c]) => [String(v), c]).sort((a, b) => Number(a[0]) - Number(b[0]));
    return { entries, overflow, min, max, total: n };
  },

  async stats() {
    return readStats();
  },

  async info({ key }) {
    return summary(key);
  },
};

/** Open a store from a local directory's File objects (no server). */
async function openFiles(mod, files, options) {
  const names = new Set(files.map((f) => f.name));
  if (!names.has('meta.zr') || !names.has('data.zr')) {
    throw new Error('not found: the chosen folder holds no meta.zr and data.zr (pick the store directory itself)');
  }
  return mod.Store.openFiles(files, options);
}

/** Forget the manifest dataset `key` and its columns. */
function dropDataset(key) {
  const d = datasets.get(key);
  if (!d) return null;
  datasets.delete(key);
  for (const k of d.keys) {
    stores.get(k)?.store.free?.();
    stores.delete(k);
  }
  d.dataset.free?.();
  return null;
}

function need(key = 'main') {
  const s = stores.get(key);
  if (!s) throw new Error(key === 'main' ? 'no store is open' : `no stream ${key} is open`);
  return s.store;
}

function summary(key = 'main') {
  const s = need(key);
  return {
    len: Number(s.len),
    kind: s.kind,
    dtype: s.dtype,
    itemShape: s.itemShape == null ? null : Array.from(s.itemShape, Number),
    codec: s.codec,
    arrow: s.arrow ?? null, // a dataset column's Arrow type (string: show text)
    checked: s.checked,
    info: s.info(),
  };
}

/** Per-record stored and decoded lengths (`locs` gives {offset, phys, logic}). */
function normalizeLocs(got, count) {
  const stored = Float64Array.from(got.phys.subarray(0, count));
  const decoded = Float64Array.from(got.logic.subarray(0, count));
  return transfer({ stored, decoded }, [stored.buffer, decoded.buffer]);
}

/** The reader's counters, summed over every open store (and datasets' manifest reads). */
function readStats() {
  if (!stores.size) return null;
  const sum = {};
  for (const { store } of [...stores.values(), ...[...datasets.values()].map((d) => ({ store: d.dataset }))]) {
    try {
      for (const [k, v] of Object.entries(store.stats())) sum[k] = (sum[k] || 0) + v;
    } catch {
      // a store freed under us
    }
  }
  return sum;
}

function postStats() {
  postMessage({ type: 'stats', stats: readStats(), inflight: inflight.size });
}

// Counters go to the page every 250 ms while requests are in flight, so a
// long read shows its progress, and at once when the last one ends (before
// its answer, so the page never sees an answer with older counters).
let statsTimer = null;
function scheduleStats() {
  if (!inflight.size) {
    clearTimeout(statsTimer);
    statsTimer = null;
    postStats();
  } else if (!statsTimer) {
    statsTimer = setTimeout(() => {
      statsTimer = null;
      postStats();
      if (inflight.size) scheduleStats();
    }, 250);
  }
}

const TRANSFER = Symbol('transfer');
function transfer(value, list) {
  return { [TRANSFER]: list, value };
}

function abortError() {
  const e = new Error('cancelled');
  e.name = 'AbortError';
  return e;
}

self.onmessage = async (ev) => {
  const { id, op, ...args } = ev.data;
  if (op === 'prefetched') {
    prefetched.arrived(args);
    return;
  }
  if (op === 'wasm') {
    wasmFromPage?.(args.module);
    return;
  }
  if (op === 'cancel') {
    inflight.get(args.target)?.abort();
    return;
  }
  const ctl = new AbortController();
  inflight.set(id, ctl);
  scheduleStats();
  let answer;
  let list = [];
  try {
    const fn = ops[op];
    if (!fn) throw new Error(`unknown operation ${op}`);
    let value = await fn(args, ctl.signal, id);
    if (value && value[TRANSFER]) {
      list = value[TRANSFER];
      value = value.value;
    }
    answer = { id, ok: true, value };
  } catch (e) {
    const aborted = ctl.signal.aborted || e?.name === 'AbortError' || e?.code === 'Cancelled';
    answer = { id, ok: false, error: { message: String(e?.message ?? e), code: e?.code ?? null, aborted } };
  }
  inflight.delete(id);
  scheduleStats();
  postMessage(answer, list);
};
