// The store at a glance (schema, counts, file sizes, compression) and the
// histogram of record sizes, from all locations of a small store or an even
// sample of a large one.

import { h, setChildren, fmtBytes, fmtInt, fmtShape, fmtRatio, drawHistogram, histogram } from './dom.js';
import { isAbort } from './client.js';

const ALL_LOCS = 32768; // read every location up to this many records
const SAMPLE_CHUNKS = 16; // else this many evenly spaced runs…
const SAMPLE_RUN = 256; // …of this many records

/**
 * Sizes of meta.zr / data.zr / dict.zr: what the page knows (local files,
 * /api/stores), else info().fileSizes (data is null until a record was read).
 */
export function fileSizes(info, known = {}) {
  const sizes = { ...known };
  for (const file of ['meta', 'data', 'dict']) {
    const v = info?.fileSizes?.[file];
    if (sizes[`${file}.zr`] == null && typeof v === 'number') sizes[`${file}.zr`] = v;
  }
  return sizes;
}

function flatten(o, prefix = '', out = {}) {
  for (const [k, v] of Object.entries(o || {})) {
    if (v && typeof v === 'object' && !Array.isArray(v)) flatten(v, `${prefix}${k}.`, out);
    else out[`${prefix}${k}`] = v;
  }
  return out;
}

export class Overview {
  constructor(glanceEl, sizesEl, client) {
    this.glanceEl = glanceEl;
    this.sizesEl = sizesEl;
    this.client = client;
    this.ctl = null;
    this.basis = 'stored';
  }

  destroy() {
    this.ctl?.abort();
  }

  /** Show `summary` (from open); `known` file sizes; `name` of the store. */
  show(summary, { name, known }) {
    this.summary = summary;
    this.name = name;
    this.files = fileSizes(summary.info, known);
    this.sample = null;
    this.renderGlance();
    this.sizesEl.hidden = summary.len === 0;
    setChildren(this.sizesEl, h('h2', 'Record sizes'), h('div.spinner', 'Reading record locations…'));
    this.loadSample();
  }

  /** New file sizes from info() (data.zr's is known after the first read). */
  refreshFiles(info) {
    const files = fileSizes(info, this.files);
    if (files['data.zr'] === this.files['data.zr']) return;
    this.files = files;
    this.summary.info = info;
    this.renderGlance();
  }

  async loadSample() {
    this.ctl?.abort();
    const ctl = new AbortController();
    this.ctl = ctl;
    const n = this.summary.len;
    if (!n) return;
    const runs = [];
    if (n <= ALL_LOCS) runs.push([0, n]);
    else {
      for (let k = 0; k < SAMPLE_CHUNKS; k++) {
        const start = Math.floor((k * (n - SAMPLE_RUN)) / (SAMPLE_CHUNKS - 1));
        runs.push([start, SAMPLE_RUN]);
      }
    }
    try {
      const parts = await Promise.all(runs.map(([s, c]) => this.client.locs(s, c, ctl.signal)));
      const stored = [];
      const decoded = [];
      for (const p of parts) {
        stored.push(...p.stored);
        decoded.push(...p.decoded);
      }
      this.sample = { stored, decoded, exact: n <= ALL_LOCS };
    } catch (e) {
      if (isAbort(e)) return;
      setChildren(this.sizesEl, h('h2', 'Record sizes'), h('p.note', `Could not read record locations: ${e.message}`));
      return;
    }
    this.renderGlance();
    this.renderSizes();
  }

  renderGlance() {
    const s = this.summary;
    const f = this.files;
    const kv = [];
    const row = (k, ...v) => kv.push(h('dt', k), h('dd', { dataset: { field: k } }, ...v));
    row('kind', h('span.pill', { title: s.kind === 'dense' ? 'every record has the same shape' : 'each record carries its own shape' }, s.kind === 'dense' ? 'Dense' : 'Ragged'));
    row('dtype', h('code#dtype', s.dtype), h('span.muted', ` ${describeDtype(s.dtype)}`));
    row('item shape', s.kind === 'dense' ? h('code#item-shape', fmtShape(s.itemShape)) : h('span.muted#item-shape', 'per record'));
    row('codec', h('code#codec', s.codec));
    const hasDict = f['dict.zr'] != null || s.codec === 'zstd_dict';
    row('dictionary', hasDict ? `yes${f['dict.zr'] != null ? `, ${fmtBytes(f['dict.zr'])}` : ''}` : h('span.muted', 'none'));
    row('records', h('b#record-count', fmtInt(s.len)));
    row('sealed', s.checked
      ? h('span#sealed.sealed', { title: 'sums.zr holds a checksum of every record: each record shown is checked against it' }, 'yes, records shown are checked')
      : h('span#sealed.muted', { title: 'no sums.zr: changed bytes that still decode cannot be detected (zrecord seal STORE adds one)' }, 'no'));
    const fileBits = ['meta.zr', 'data.zr', 'dict.zr'].filter((k) => f[k] != null).map((k) => `${k} ${fmtBytes(f[k])}`);
    if (fileBits.length) row('files', fileBits.join(' · '));
    const total = ['meta.zr', 'data.zr', 'dict.zr'].reduce((a, k) => a + (f[k] || 0), 0);
    if (total) row('on disk', fmtBytes(total));
    if (this.sample) {
      const { stored, decoded, exact } = this.sample;
      const sumS = stored.reduce((a, b) => a + b, 0);
      const sumD = decoded.reduce((a, b) => a + b, 0);
      const logical = exact ? sumD : (sumD / decoded.length) * s.len;
      row('logical size', `${exact ? '' : '≈ '}${fmtBytes(logical)}`);
      row('compression', h('span#ratio', fmtRatio(sumD, sumS)), h('span.muted', exact ? ' decoded ÷ stored' : ' from a sample'));
    } else if (s.len) {
      row('logical size', h('span.muted', '…'));
    }
    this.glanceEl.hidden = false;
    setChildren(this.glanceEl,
      h('h2', 'Store'),
      h('div.store-name', { title: this.name }, this.name),
      h('dl.kv', kv),
      extraInfo(s.info),
    );
  }

  renderSizes() {
    const { stored, decoded, exact } = this.sample;
    const xs = this.basis === 'stored' ? stored : decoded;
    const hist = histogram(xs, 32);
    const canvas = h('canvas#size-hist');
    const seg = h('div.seg', ['stored', 'decoded'].map((b) => h('button', {
      class: b === this.basis ? 'active' : '',
      onclick: () => {
        this.basis = b;
        this.renderSizes();
      },
    }, b)));
    const min = Math.min(...xs);
    const max = Math.max(...xs);
    setChildren(this.sizesEl,
      h('div.card-head', h('h2', 'Record sizes'), seg),
      canvas,
      h('p.note', exact ? `all ${fmtInt(xs.length)} records` : `sample of ${fmtInt(xs.length)} of ${fmtInt(this.summary.len)} records (${SAMPLE_CHUNKS} evenly spaced runs)`,
        ` · ${fmtBytes(min)} to ${fmtBytes(max)}`),
    );
    drawHistogram(canvas, hist.counts, { lo: hist.lo, hi: hist.hi, width: 260, height: 90, fmt: fmtBytes });
  }
}

function describeDtype(str) {
  const m = /^([<>|=])([a-zA-Z])(\d+)/.exec(str);
  if (!m) return '';
  const [, order, kind, size] = m;
  const names = { b: 'bool', i: `int${size * 8}`, u: `uint${size * 8}`, f: `float${size * 8}`, c: `complex${size * 8}`, S: `${size}-byte strings`, U: `${size}-char strings`, V: `${size} opaque bytes`, M: 'datetime64', m: 'timedelta64' };
  const endian = order === '>' ? ', big-endian' : '';
  return `(${names[kind] || kind}${endian})`;
}

/** Anything else info() reports, tucked away. */
function extraInfo(info) {
  const shown = new Set(['url', 'len', 'kind', 'dtype', 'itemShape', 'codec']);
  const flat = flatten(Object.fromEntries(Object.entries(info || {}).filter(([k]) => !shown.has(k))));
  const keys = Object.keys(flat);
  if (!keys.length) return null;
  return h('details', { style: { marginTop: '8px' } },
    h('summary.muted', 'more'),
    h('dl.kv', keys.map((k) => [h('dt', k), h('dd', formatInfo(k, flat[k]))])));
}

function formatInfo(k, v) {
  if (v == null) return '–';
  if (ArrayBuffer.isView(v)) return h('code', Array.from(new Uint8Array(v.buffer, v.byteOffset, v.byteLength), (b) => b.toString(16).padStart(2, '0')).join(' '));
  if (typeof v === 'number' && /bytes|size|offset|len/i.test(k) && !/count|records/i.test(k)) return `${fmtInt(v)} (${fmtBytes(v)})`;
  if (Array.isArray(v)) return JSON.stringify(v);
  return String(v);
}
