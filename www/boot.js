// Runs first (a classic script in <head>), before the page's modules load:
// starts the decoding worker and, when the address names one store, tells it
// to open that store and read the record on screen at once. The worker then
// fetches its wasm, meta.zr and dict.zr while the page's modules arrive;
// client.js takes the worker over.
(function boot() {
  try {
    const p = new URLSearchParams(location.hash.slice(1));
    const urls = p.getAll('url');
    const i = p.has('i') ? Number(p.get('i')) : 0;
    // The worker reads its name as soon as it starts: which store to open.
    const name = urls.length === 1
      ? JSON.stringify({ preopen: new URL(urls[0], location.href).href, index: Number.isInteger(i) && i >= 0 ? i : 0 })
      : '';
    const worker = new Worker(new URL('worker.js', document.baseURI), { type: 'module', name });
    globalThis.zrecordBoot = { worker };
  } catch {
    // client.js starts the worker itself.
  }
})();
