// The page's side of the worker protocol (see worker.js): promise-returning
// calls that can be cancelled with an AbortSignal, plus live network stats.

export class StoreClient {
  constructor() {
    // The boot script in index.html started the worker (and the store's first reads) before the
    // page's modules loaded; take it over, or start one now.
    const boot = globalThis.zrecordBoot;
    this.worker = boot?.worker || new Worker(new URL('./worker.js', import.meta.url), { type: 'module' });
    if (boot) boot.worker = null;
    this.nextId = 1;
    this.pending = new Map();
    this.listeners = new Set();
    this.stats = null;
    this.inflight = 0;
    this.worker.onmessage = (ev) => this.onMessage(ev.data);
    this.worker.onerror = (ev) => {
      const err = new Error(`the decoding worker failed to start: ${ev.message || 'script error'}`);
      for (const p of this.pending.values()) p.reject(err);
      this.pending.clear();
    };
  }

  /** Call `op` in the worker; `signal` aborts it there too; `onProgress(msg)` gets its progress posts. */
  call(op, args = {}, signal, onProgress) {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      if (signal?.aborted) {
        reject(abortError());
        return;
      }
      this.pending.set(id, { resolve, reject, onProgress });
      signal?.addEventListener('abort', () => {
        if (!this.pending.has(id)) return;
        this.worker.postMessage({ id: 0, op: 'cancel', target: id });
        this.pending.delete(id);
        reject(abortError());
      }, { once: true });
      this.worker.postMessage({ id, op, ...args });
    });
  }

  onMessage(msg) {
    if (msg.type === 'progress') {
      this.pending.get(msg.id)?.onProgress?.(msg);
      return;
    }
    if (msg.type === 'stats') {
      this.stats = msg.stats;
      this.inflight = msg.inflight;
      for (const fn of this.listeners) fn(msg.stats, msg.inflight);
      return;
    }
    const p = this.pending.get(msg.id);
    if (!p) return;
    this.pending.delete(msg.id);
    if (msg.ok) p.resolve(msg.value);
    else {
      const e = new Error(msg.error.message);
      e.code = msg.error.code;
      if (msg.error.aborted) e.name = 'AbortError';
      p.reject(e);
    }
  }

  onStats(fn) {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  open(source, signal) { return this.call('open', source, signal); }
  locs(start, count, signal) { return this.call('locs', { start, count }, signal); }
  shapes(indices, signal) { return this.call('shapes', { indices }, signal); }
  info() { return this.call('info'); }
  records(indices, { summary = false, signal } = {}) { return this.call('records', { indices, summary }, signal); }
  /** Open the dataset whose zrecord.json is at `url` (see worker.js); its columns are streams. */
  /**
   * Sign every request below `scope` (`endpoint/bucket/`) with these S3 keys
   * (SigV4, in the worker; they are kept in its memory only).
   */
  credentials(scope, keys) { return this.call('credentials', { scope, ...keys }); }
  /** Fetch each file of the store at `base` through its presigned URL (`base` + name + `?` + queries[name]). */
  presigned(base, queries) { return this.call('presigned', { base, queries }); }
  openDataset(url, key, signal) { return this.call('openDataset', { url, key }, signal); }

  /** The same calls, on the dataset stream opened under `key`. */
  stream(key) {
    return new StreamClient(this, key);
  }
}

/** A StoreClient's calls bound to one of the worker's open stores. */
export class StreamClient {
  constructor(client, key) {
    this.client = client;
    this.key = key;
  }

  open(source, signal) { return this.client.call('open', { ...source, key: this.key }, signal); }
  close() { return this.client.call('close', { key: this.key }); }
  locs(start, count, signal) { return this.client.call('locs', { start, count, key: this.key }, signal); }
  shapes(indices, signal) { return this.client.call('shapes', { indices, key: this.key }, signal); }
  info() { return this.client.call('info', { key: this.key }); }
  records(indices, { summary = false, signal } = {}) { return this.client.call('records', { indices, summary, key: this.key }, signal); }
  /** Value counts of a scalar integer Dense stream (see worker.js), with progress. */
  valueCounts({ signal, onProgress, chunk } = {}) { return this.client.call('valueCounts', { key: this.key, chunk }, signal, onProgress); }
}

export function abortError() {
  const e = new Error('cancelled');
  e.name = 'AbortError';
  return e;
}

export const isAbort = (e) => e?.name === 'AbortError';
