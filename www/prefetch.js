// Byte ranges fetched before the reader asked for them (by the boot script
// in index.html), answering the reader's requests they cover. Shared by the
// worker and the page, which both open the store named in the address with
// them: the page to draw the first record at once, the worker to serve
// everything after.

/**
 * Ranges by file URL: [{start, end, got: Promise}], `got` resolving to
 * {body: ArrayBuffer, total, etag, type}, {missing: true} for a 404, or null
 * when there is no usable answer (anything else but a 206 of the range asked for).
 */
export class Prefetched {
  constructor() {
    this.files = new Map();
  }

  get size() {
    return this.files.size;
  }

  /** The slot of `[url, start, end)`, made (pending) if new. */
  slot([url, start, end]) {
    let list = this.files.get(url);
    if (!list) this.files.set(url, (list = []));
    let s = list.find((x) => x.start === start && x.end === end);
    if (!s) {
      s = { start, end };
      s.got = new Promise((resolve) => { s.resolve = resolve; });
      list.push(s);
    }
    return s;
  }

  /** An answer arrived for `slot`; `pending` slots are announced first. */
  arrived({ slot, pending, got }) {
    for (const p of pending || []) this.slot(p);
    this.slot(slot).resolve(got);
  }

  /** Forget everything (pending slots answer null). */
  drop() {
    for (const list of this.files.values()) for (const s of list) s.resolve(null);
    this.files.clear();
  }

  /** A 206 answer to `Range: bytes=a-b` of `url` from a range holding it, or null. */
  async serve(url, range) {
    const list = this.files.get(url);
    const m = list && /^bytes=(\d+)-(\d+)$/.exec(range || '');
    if (!m) return null;
    const a = Number(m[1]);
    const b = Number(m[2]);
    for (const s of list) {
      if (a < s.start || b >= s.end) continue;
      // The boot script always answers; the timer guards against one that broke.
      const got = await Promise.race([s.got, new Promise((r) => setTimeout(() => r(null), 10_000))]);
      if (!got) continue;
      // The file is not there (a store without dict.zr or sums.zr): say so.
      if (got.missing) return new Response(null, { status: 404 });
      // Short only where the file ends, as a server would answer.
      const last = Math.min(b, got.total - 1);
      if (a > last || last >= s.start + got.body.byteLength) continue;
      const body = got.body.slice(a - s.start, last + 1 - s.start);
      const headers = { 'content-range': `bytes ${a}-${last}/${got.total}`, 'content-length': String(body.byteLength) };
      if (got.etag) headers.etag = got.etag;
      if (got.type) headers['content-type'] = got.type;
      return new Response(body, { status: 206, headers });
    }
    return null;
  }
}

/** The URL and Range header of a fetch call. */
export function requestOf(input, init) {
  const url = typeof input === 'string' ? input : input.url;
  const range = new Headers(init?.headers || (typeof input === 'string' ? undefined : input.headers)).get('range');
  return { url, range };
}
