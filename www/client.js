// The page's side of the worker protocol (see worker.js): promise-returning
// calls that can be cancelled with an AbortSignal, plus live network stats.

export class StoreClient {
  constructor() {
    this.worker = new Worker(new URL('./worker.js', import.meta.url), { type: 'module' });
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

  /** Call `op` in the worker; `signal` aborts it there too. */
  call(op, args = {}, signal) {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      if (signal?.aborted) {
        reject(abortError());
        return;
      }
      this.pending.set(id, { resolve, reject });
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
}

export function abortError() {
  const e = new Error('cancelled');
  e.name = 'AbortError';
  return e;
}

export const isAbort = (e) => e?.name === 'AbortError';
