// The decoding worker: owns the wasm reader and the open store, so fetching,
// zstd decoding and record statistics never run on the page's thread.
//
// Protocol (see client.js): the page posts {id, op, ...args}; the worker
// answers {id, ok: true, value} or {id, ok: false, error: {message}}, and
// posts {type: 'stats', stats, inflight} whenever the network counters may
// have changed. {op: 'cancel', target} aborts request `target`.

import { parseDtype, summarize, isNumeric } from './dtype.js';

let wasm = null; // the wasm-bindgen module, once loaded
let store = null; // the open Store
let dtype = null;
let openGeneration = 0;
const inflight = new Map(); // request id -> AbortController

async function loadWasm() {
  if (wasm) return wasm;
  let mod;
  try {
    mod = await import('./pkg/zrecord.js');
  } catch (e) {
    throw new Error(`unpublished viewer build: the wasm reader (pkg/zrecord.js) is missing or failed to load (${e.message}). Build it with scripts/build-pkg.sh (wasm-pack build --target web), then rebuild zrecord.`);
  }
  await mod.default();
  wasm = mod;
  return wasm;
}

const ops = {
  async open({ url, headers, files }, signal) {
    const mod = await loadWasm();
    const generation = ++openGeneration;
    if (store) {
      store.free?.();
      store = null;
    }
    const options = { signal };
    if (headers && Object.keys(headers).length) options.headers = headers;
    // Bypass the browser's HTTP cache: revalidating a cached range sends
    // If-Range, and a file changed on the server then comes back whole (200)
    // instead of as a range with a new ETag, which the reader reports as
    // "store changed". The reader keeps its own page cache.
    if (!files) options.fetch = (input, init) => fetch(input, Object.assign(init || {}, { cache: 'no-store' }));
    const opened = files ? await openFiles(mod, files, options) : await mod.Store.open(url, options);
    if (generation !== openGeneration) {
      opened.free?.();
      throw abortError();
    }
    store = opened;
    dtype = parseDtype(store.dtype);
    return summary();
  },

  async locs({ start, count }, signal) {
    return normalizeLocs(await need().locs(start, count, { signal }), count);
  },

  /** Shapes of records (Ragged stores fetch them; Dense know them). */
  async shapes({ indices }, signal) {
    const s = need();
    if (s.kind === 'dense') return indices.map(() => Array.from(s.itemShape, Number));
    const batch = await s.gather(Uint32Array.from(indices), { signal });
    return Array.from(batch.shapes, (shape) => Array.from(shape, Number));
  },

  /** Whole records, with a summary when numeric (and `summary` asked). */
  async records({ indices, summary: wantSummary }, signal) {
    const s = need();
    const batch = await s.gather(Uint32Array.from(indices), { signal });
    const out = splitBatch(batch, indices.length).map((r, k) => {
      const rec = { index: indices[k], shape: r.shape, bytes: r.bytes };
      if (wantSummary && isNumeric(dtype)) rec.summary = summarize(new Uint8Array(r.bytes), dtype);
      return rec;
    });
    return transfer(out, out.map((r) => r.bytes));
  },

  async stats() {
    return readStats();
  },

  async info() {
    return summary();
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

function need() {
  if (!store) throw new Error('no store is open');
  return store;
}

function summary() {
  const s = store;
  return {
    len: Number(s.len),
    kind: s.kind,
    dtype: s.dtype,
    itemShape: s.itemShape == null ? null : Array.from(s.itemShape, Number),
    codec: s.codec,
    info: s.info(),
  };
}

/** Per-record stored and decoded lengths (`locs` gives {offset, phys, logic}). */
function normalizeLocs(got, count) {
  const stored = Float64Array.from(got.phys.subarray(0, count));
  const decoded = Float64Array.from(got.logic.subarray(0, count));
  return transfer({ stored, decoded }, [stored.buffer, decoded.buffer]);
}

/**
 * A gather result as one {shape, bytes: ArrayBuffer} per record. Dense:
 * {data, shape} with data a TypedArray of `shape` = [n, ...itemShape];
 * Ragged: {values, offsets, shapes}, record k being
 * values.subarray(offsets[k], offsets[k + 1]) of shape shapes[k].
 */
function splitBatch(b, n) {
  if (b.data !== undefined) {
    const bytes = asBytes(b.data);
    const row = n ? bytes.byteLength / n : 0;
    const shape = Array.from(b.shape, Number).slice(1);
    return Array.from({ length: n }, (_, k) => ({ shape, bytes: bytes.slice(k * row, (k + 1) * row).buffer }));
  }
  const values = asBytes(b.values);
  const unit = b.values.BYTES_PER_ELEMENT;
  return Array.from({ length: n }, (_, k) => ({
    shape: Array.from(b.shapes[k], Number),
    bytes: values.slice(b.offsets[k] * unit, b.offsets[k + 1] * unit).buffer,
  }));
}

function asBytes(view) {
  return new Uint8Array(view.buffer, view.byteOffset, view.byteLength);
}

function readStats() {
  if (!store) return null;
  try {
    return store.stats();
  } catch {
    return null;
  }
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
    let value = await fn(args, ctl.signal);
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
