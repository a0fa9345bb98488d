// NumPy dtype strings (`|u1`, `<f4`, `>i4`, `|S5`, `<U3`, `<M8[ns]`, …) and
// the record bytes they describe, and gather results split into records.
// Pure functions: the worker uses them to
// summarise records off the main thread, the page to show a page of values.

const KIND_NAMES = {
  b: 'bool', i: 'int', u: 'uint', f: 'float', c: 'complex',
  S: 'bytes', U: 'str', V: 'void', M: 'datetime64', m: 'timedelta64',
};

/** Parse a dtype string; throws on anything a store cannot hold. */
export function parseDtype(str) {
  const m = /^([<>|=])([biufcSUVMm])(\d+)(?:\[(\w+)\])?$/.exec(str);
  if (!m) throw new Error(`unknown dtype ${str}`);
  const [, order, kind, n, unit] = m;
  const size = Number(n);
  const itemsize = kind === 'U' ? size * 4 : size;
  return {
    str,
    order,
    kind,
    size,
    itemsize,
    unit: unit || null,
    bigEndian: order === '>',
    name: describe(kind, size, unit),
  };
}

function describe(kind, size, unit) {
  switch (kind) {
    case 'b': return 'bool';
    case 'i': case 'u': case 'f': return `${KIND_NAMES[kind]}${size * 8}`;
    case 'c': return `complex${size * 8}`;
    case 'S': return `bytes, ${size} each`;
    case 'U': return `str, ${size} characters each`;
    case 'V': return `opaque, ${size} bytes each`;
    default: return `${KIND_NAMES[kind]}${unit ? `[${unit}]` : ''}`;
  }
}

/** True for dtypes shown as numbers (stats, histogram). */
export function isNumeric(dt) {
  return 'biufcMm'.includes(dt.kind);
}

export function isInteger(dt) {
  return dt.kind === 'i' || dt.kind === 'u';
}

/**
 * The record's items as a typed array in native (little-endian) order, or
 * null for strings and opaque bytes. Complex values come as interleaved
 * (re, im) floats; datetimes and timedeltas as BigInt64Array.
 */
export function typedView(bytes, dt) {
  let b = bytes;
  const width = dt.kind === 'c' ? dt.size / 2 : dt.size;
  if (dt.bigEndian && width > 1) b = swapBytes(bytes, width);
  else if (b.byteOffset % 8 !== 0) b = b.slice();
  const buf = b.buffer;
  const off = b.byteOffset;
  const len = Math.floor(b.byteLength / width);
  switch (dt.kind) {
    case 'b': return new Uint8Array(buf, off, len);
    case 'u':
      return width === 1 ? new Uint8Array(buf, off, len)
        : width === 2 ? new Uint16Array(buf, off, len)
        : width === 4 ? new Uint32Array(buf, off, len)
        : new BigUint64Array(buf, off, len);
    case 'i':
      return width === 1 ? new Int8Array(buf, off, len)
        : width === 2 ? new Int16Array(buf, off, len)
        : width === 4 ? new Int32Array(buf, off, len)
        : new BigInt64Array(buf, off, len);
    case 'f': case 'c':
      return width === 2 ? float16(new Uint16Array(buf, off, len))
        : width === 4 ? new Float32Array(buf, off, len)
        : new Float64Array(buf, off, len);
    case 'M': case 'm':
      return new BigInt64Array(buf, off, len);
    default:
      return null;
  }
}

function swapBytes(bytes, width) {
  const out = new Uint8Array(bytes.length);
  for (let i = 0; i + width <= bytes.length; i += width) {
    for (let k = 0; k < width; k++) out[i + k] = bytes[i + width - 1 - k];
  }
  return out;
}

function float16(u16) {
  if (typeof Float16Array === 'function') return new Float16Array(u16.buffer, u16.byteOffset, u16.length);
  const out = new Float32Array(u16.length);
  for (let i = 0; i < u16.length; i++) {
    const h = u16[i];
    const s = h & 0x8000 ? -1 : 1;
    const e = (h >> 10) & 0x1f;
    const f = h & 0x3ff;
    out[i] = e === 0 ? s * 2 ** -14 * (f / 1024)
      : e === 31 ? (f ? NaN : s * Infinity)
      : s * 2 ** (e - 15) * (1 + f / 1024);
  }
  return out;
}

/** Number of items in a record of `bytes.length` bytes. */
export function itemCount(byteLength, dt) {
  return Math.floor(byteLength / dt.itemsize);
}

const NAT = -(2n ** 63n);
const UNIT_MS = { D: 864e5, h: 36e5, m: 6e4, s: 1e3, ms: 1, us: 1e-3, ns: 1e-6 };

/** Item `i` of the record as text. `view` is typedView(bytes, dt) (or null). */
export function formatItem(bytes, dt, view, i) {
  switch (dt.kind) {
    case 'b': return view[i] ? 'True' : 'False';
    case 'i': case 'u': return view[i].toString();
    case 'f': return fmtFloat(view[i]);
    case 'c': {
      const re = view[2 * i];
      const im = view[2 * i + 1];
      return `${fmtFloat(re)}${im < 0 || Object.is(im, -0) ? '-' : '+'}${fmtFloat(Math.abs(im))}j`;
    }
    case 'M': {
      const v = view[i];
      if (v === NAT) return 'NaT';
      const ms = UNIT_MS[dt.unit];
      if (ms === undefined) return `${v} ${dt.unit || ''}`.trim();
      const d = new Date(Number(v) * ms);
      return Number.isNaN(d.getTime()) ? `${v} ${dt.unit}` : d.toISOString().replace('.000Z', 'Z');
    }
    case 'm': return view[i] === NAT ? 'NaT' : `${view[i]} ${dt.unit || ''}`.trim();
    case 'S': return bytesLiteral(bytes.subarray(i * dt.size, (i + 1) * dt.size));
    case 'U': return stringLiteral(bytes.subarray(i * dt.itemsize, (i + 1) * dt.itemsize), dt.bigEndian);
    default: return hex(bytes.subarray(i * dt.itemsize, (i + 1) * dt.itemsize));
  }
}

function fmtFloat(x) {
  if (Number.isNaN(x)) return 'nan';
  if (!Number.isFinite(x)) return x > 0 ? 'inf' : '-inf';
  return String(Number(x.toPrecision(7)));
}

/** b'abc' with trailing NULs dropped, as NumPy shows `S` items. */
function bytesLiteral(b) {
  let end = b.length;
  while (end > 0 && b[end - 1] === 0) end--;
  let s = '';
  for (const c of b.subarray(0, end)) {
    s += c === 0x27 ? "\\'" : c === 0x5c ? '\\\\' : c >= 0x20 && c < 0x7f ? String.fromCharCode(c) : `\\x${c.toString(16).padStart(2, '0')}`;
  }
  return `b'${s}'`;
}

/** 'text' from UCS-4 code points, trailing NULs dropped. */
function stringLiteral(b, bigEndian) {
  const dv = new DataView(b.buffer, b.byteOffset, b.byteLength);
  let s = '';
  for (let k = 0; k + 4 <= b.length; k += 4) {
    const cp = dv.getUint32(k, !bigEndian);
    if (cp === 0) continue;
    s += cp <= 0x10ffff ? String.fromCodePoint(cp) : '\ufffd';
  }
  return `'${s}'`;
}

export function hex(b) {
  return Array.from(b, (x) => x.toString(16).padStart(2, '0')).join(' ');
}

/**
 * Summary statistics of a numeric record: count, min, max, mean, std and a
 * 32-bin histogram of finite values (complex: of magnitudes). Runs in the
 * worker so a million-element record never blocks the page.
 */
export function summarize(bytes, dt, bins = 32) {
  const view = typedView(bytes, dt);
  if (!view) return null;
  const big = view instanceof BigInt64Array || view instanceof BigUint64Array;
  const n = dt.kind === 'c' ? view.length / 2 : view.length;
  const at = dt.kind === 'c'
    ? (i) => Math.hypot(view[2 * i], view[2 * i + 1])
    : big ? (i) => Number(view[i]) : (i) => view[i];
  let lo = Infinity;
  let hi = -Infinity;
  let sum = 0;
  let finite = 0;
  let nan = 0;
  for (let i = 0; i < n; i++) {
    const x = at(i);
    if (Number.isNaN(x)) nan++;
    if (!Number.isFinite(x)) continue;
    finite++;
    sum += x;
    if (x < lo) lo = x;
    if (x > hi) hi = x;
  }
  const mean = finite ? sum / finite : NaN;
  let ss = 0;
  const counts = new Array(bins).fill(0);
  const span = hi - lo || 1;
  for (let i = 0; i < n; i++) {
    const x = at(i);
    if (!Number.isFinite(x)) continue;
    ss += (x - mean) * (x - mean);
    counts[Math.min(bins - 1, Math.floor(((x - lo) / span) * bins))]++;
  }
  return {
    count: n,
    finite,
    nan,
    min: finite ? lo : NaN,
    max: finite ? hi : NaN,
    mean,
    std: finite ? Math.sqrt(ss / finite) : NaN,
    hist: { counts, lo: finite ? lo : 0, hi: finite ? hi : 0 },
    of: dt.kind === 'c' ? 'magnitude' : big ? 'approximate for 64-bit integers' : null,
  };
}

/** The multi-index of flat item `i` in an array of `shape` (C order). */
export function unravel(i, shape) {
  const idx = new Array(shape.length);
  for (let d = shape.length - 1; d >= 0; d--) {
    const s = Number(shape[d]) || 1;
    idx[d] = i % s;
    i = Math.floor(i / s);
  }
  return idx;
}

/**
 * A gather result as one {shape, bytes: ArrayBuffer} per record. Dense:
 * {data, shape} with data a TypedArray of `shape` = [n, ...itemShape];
 * Ragged: {values, offsets, shapes}, record k being
 * values.subarray(offsets[k], offsets[k + 1]) of shape shapes[k].
 */
export function splitBatch(b, n) {
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

export function asBytes(view) {
  return new Uint8Array(view.buffer, view.byteOffset, view.byteLength);
}
