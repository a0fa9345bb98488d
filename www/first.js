// The page's first record, drawn without waiting for the worker: when the
// address names a store, the boot script in index.html has compiled the wasm
// reader, imported its JS and fetched the bytes that opening the store and
// reading record i take. Starting a worker can take longer than all of that
// on a busy machine, so the page opens the store itself from those bytes
// alone, reads record i, and lets it go; the worker, opened from the same
// bytes, serves everything after.

import { Prefetched, requestOf } from './prefetch.js';
import { parseDtype, summarize, isNumeric, splitBatch } from './dtype.js';

/**
 * {summary, rec} of record `index` of the store at `url` — what the worker's
 * `open` and `records` would answer — or null when the boot script did not
 * prefetch this store or the reader needs any byte it did not fetch.
 */
export async function quickFirstRecord(url, index) {
  const boot = globalThis.zrecordBoot;
  if (!boot?.url || boot.url !== url || boot.index !== index || !boot.glue) return null;
  const pf = new Prefetched();
  for (const s of boot.plan) pf.slot(s);
  for (const m of boot.sent) pf.arrived(m);
  boot.onSent = (m) => pf.arrived(m);
  let store = null;
  try {
    const [glue, module] = await Promise.all([boot.glue, boot.wasm]);
    await glue.default({ module_or_path: module });
    performance.mark('zr:quick-wasm');
    const onlyPrefetched = async (input, init) => {
      const { url: u, range } = requestOf(input, init);
      const hit = await pf.serve(u, range);
      if (!hit) throw new Error('not prefetched');
      return hit;
    };
    // Checked as the worker reads it: a sealed store's record is compared with its checksum.
    store = await glue.Store.open(url, { fetch: onlyPrefetched, retries: 0, verify: 'if-sealed' });
    performance.mark('zr:quick-opened');
    if (!(index < Number(store.len))) return null;
    const dt = parseDtype(store.dtype);
    const [r] = splitBatch(await store.gather(Uint32Array.of(index)), 1);
    const rec = { index, shape: r.shape, bytes: r.bytes };
    if (isNumeric(dt)) rec.summary = summarize(new Uint8Array(r.bytes), dt);
    const summary = {
      len: Number(store.len),
      kind: store.kind,
      dtype: store.dtype,
      itemShape: store.itemShape == null ? null : Array.from(store.itemShape, Number),
      codec: store.codec,
      checked: store.checked,
      info: store.info(),
    };
    return { summary, rec };
  } catch {
    return null;
  } finally {
    store?.free();
    boot.onSent = null;
    pf.drop();
  }
}
