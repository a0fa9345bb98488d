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
    throw new Error(`unpublished viewer build: the wasm reader (pkg/zrecord.js) is missing or failed to load (${e.message}). Build it with \`wasm-pack build --target web\`, then rebuild zrecord.`);
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
    const got = await need().locs(start, count, { signal });
    return normalizeLocs(got, count);
  },

  /** Shapes of records (Ragged stores fetch them; Dense know them). */
  async shapes({ indices }, signal) {
    const s = need();
    if (s.kind === 'dense') return indices.map(() => Array.from(s.itemShape, Number));
    const batch = await s.gather(Uint32Array.from(indices), { signal });
    return splitBatch(batch, indices.length).map((r) => r.shape);
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
  let info = {};
  try {
    info = plain(s.info());
  } catch {
    info = {};
  }
  return {
    len: Number(s.len),
    kind: s.kind,
    dtype: s.dtype,
    itemShape: s.itemShape == null ? null : Array.from(s.itemShape, Number),
    codec: s.codec,
    info,
  };
}

/** Per-record stored and decoded lengths, as two Float64Arrays. */
function normalizeLocs(got, count) {
  got = plain(got);
  const stored = new Float64Array(count);
  const decoded = new Float64Array(count);
  if (Array.isArray(got)) {
    got.forEach((l, i) => {
      stored[i] = Number(l.stored ?? l.phys ?? l.physLength ?? l[0]);
      decoded[i] = Number(l.decoded ?? l.logic ?? l.logicLength ?? l[1]);
    });
    return transfer({ stored, decoded }, [stored.buffer, decoded.buffer]);
  }
  const st = got.stored ?? got.phys ?? got.physLength;
  const de = got.decoded ?? got.logic ?? got.logicLength;
  for (let i = 0; i < count && i < st.length; i++) {
    stored[i] = Number(st[i]);
    decoded[i] = Number(de[i]);
  }
  return transfer({ stored, decoded }, [stored.buffer, decoded.buffer]);
}

/** A gather result as one {shape, bytes: ArrayBuffer} per record. */
function splitBatch(batch, n) {
  const b = plain(batch);
  if (b.data !== undefined) {
    const bytes = asBytes(b.data);
    const shape = Array.from(b.shape, Number);
    const row = n ? bytes.byteLength / n : 0;
    return Array.from({ length: n }, (_, k) => ({
      shape: shape.slice(1),
      bytes: bytes.slice(k * row, (k + 1) * row).buffer,
    }));
  }
  const values = asBytes(b.values);
  const offsets = Array.from(b.offsets, Number);
  const shapes = normalizeShapes(b.shapes, n);
  // Offsets may count bytes, elements of `values`, or dtype items.
  const last = offsets[n] ?? offsets[offsets.length - 1] ?? 0;
  const unit = last === values.byteLength ? 1
    : b.values.BYTES_PER_ELEMENT && last * b.values.BYTES_PER_ELEMENT === values.byteLength ? b.values.BYTES_PER_ELEMENT
    : dtype.itemsize;
  return Array.from({ length: n }, (_, k) => ({
    shape: shapes[k],
    bytes: values.slice(offsets[k] * unit, offsets[k + 1] * unit).buffer,
  }));
}

function normalizeShapes(shapes, n) {
  if (!shapes) return Array.from({ length: n }, () => null);
  const arr = Array.from(shapes);
  if (arr.length === n && arr.every((s) => s != null && typeof s === 'object')) {
    return arr.map((s) => Array.from(s, Number));
  }
  throw new Error('unexpected shapes layout from the wasm reader');
}

function asBytes(data) {
  if (data instanceof Uint8Array) return data;
  if (ArrayBuffer.isView(data)) return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  if (data instanceof ArrayBuffer) return new Uint8Array(data);
  throw new Error('unexpected record data from the wasm reader');
}

/** wasm-bindgen may hand back Maps or objects with getters; make them plain. */
function plain(v) {
  if (v instanceof Map) return Object.fromEntries([...v].map(([k, x]) => [k, plain(x)]));
  if (typeof v === 'bigint') return Number(v);
  if (Array.isArray(v)) return v.map(plain);
  if (v && typeof v === 'object' && !ArrayBuffer.isView(v) && !(v instanceof ArrayBuffer)) {
    if (typeof v.toJSON === 'function') return plain(v.toJSON());
    const o = {};
    for (const k of Object.keys(v)) o[k] = plain(v[k]);
    return o;
  }
  return v;
}

function readStats() {
  if (!store) return null;
  try {
    return plain(store.stats());
  } catch {
    return null;
  }
}

function postStats() {
  postMessage({ type: 'stats', stats: readStats(), inflight: inflight.size });
}

let statsTimer = null;
function scheduleStats() {
  if (statsTimer) return;
  statsTimer = setTimeout(() => {
    statsTimer = null;
    postStats();
  }, 50);
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
  try {
    const fn = ops[op];
    if (!fn) throw new Error(`unknown operation ${op}`);
    let value = await fn(args, ctl.signal);
    let list = [];
    if (value && value[TRANSFER]) {
      list = value[TRANSFER];
      value = value.value;
    }
    postMessage({ id, ok: true, value }, list);
  } catch (e) {
    const aborted = ctl.signal.aborted || e?.name === 'AbortError' || e?.code === 'Cancelled';
    postMessage({ id, ok: false, error: { message: String(e?.message ?? e), code: e?.code ?? null, aborted } });
  } finally {
    inflight.delete(id);
    scheduleStats();
  }
};
