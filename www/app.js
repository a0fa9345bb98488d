// The viewer's entry point: wires the top bar, the address (#url=…&i=…),
// local folders, the worker client and the views together.

import { h, setChildren, fmtBytes, fmtInt } from './dom.js';
import { StoreClient, isAbort } from './client.js';
import { explain, refine } from './explain.js';
import { parseDtype } from './dtype.js';
import { Overview } from './overview.js';
import { RecordTable } from './table.js';
import { renderRecord, sizesText } from './record.js';
import { BatchView } from './batch.js';
import { NetworkPanel } from './network.js';
import { tokenizerFor } from './tokenizer.js';
import { DatasetView, misaligned } from './dataset.js';
import { quickFirstRecord } from './first.js';

const $ = (sel) => document.querySelector(sel);

performance.mark('zr:app-start');
const client = new StoreClient();
const network = new NetworkPanel($('#network'));
const overview = new Overview($('#overview'), $('#sizes'), client);
client.onStats((stats, inflight) => network.update(stats, inflight));

const state = {
  source: null, // {url} or {files, name}
  summary: null,
  dt: null,
  table: null,
  batch: null,
  selected: -1,
  tab: 'record',
  prefs: {},
  openCtl: null,
  recordCtl: null,
  serverStores: [], // from /api/stores
  localStores: [], // [{name, files}] from a picked folder
  tokenizer: null, // the Tokenizer attached to the open store, if any
  dataset: null, // the open DatasetView
  datasetStreams: [], // its StreamClients
  manifestKey: null, // the worker's key of an open dataset with a manifest
  firstPainted: false,
  firstRecord: null, // {index, source, recs: Promise} asked for with the open
  quick: null, // {index, source} of a first record first.js drew
};
window.zrecordViewer = { state, client };

// ---------------------------------------------------------------- address

function readHash() {
  const p = new URLSearchParams(location.hash.slice(1));
  const urls = p.getAll('url');
  return { url: urls[0] ?? null, urls, index: p.has('i') ? Number(p.get('i')) : null, signed: p.get('signed') };
}

function writeHash(url, index) {
  const p = new URLSearchParams();
  if (url) p.set('url', url);
  // A presigned link (`zrecord presign`) keeps its file URLs.
  const signed = readHash().signed;
  if (url && signed) p.set('signed', signed);
  if (url && index != null && index >= 0) p.set('i', String(index));
  const next = p.toString() ? `#${p}` : '';
  if (location.hash !== next && !(next === '' && location.hash === '')) {
    history.replaceState(null, '', next || location.pathname + location.search);
  }
}

function onHash() {
  const { url, urls, index, signed } = readHash();
  if (urls.length > 1) {
    const key = urls.map(absolute).join(' ');
    if (state.source?.dataset !== key) openDataset(urls.map((u) => ({ name: shortName(absolute(u)), url: absolute(u) })), { key });
    return;
  }
  if (url && (!state.source || state.source.url !== absolute(url))) {
    $('#url').value = url;
    if (signed) openPresigned(absolute(url), signed, index);
    else openSource({ url: absolute(url) }, index);
  } else if (url && index != null && index !== state.selected && state.table) {
    state.table.select(index, true);
  } else if (url && index != null && state.dataset && index !== state.dataset.selected && index < state.dataset.n) {
    state.dataset.select(index, true);
  } else if (!url && !state.source?.files) {
    showWelcome();
  }
}

function absolute(url) {
  try {
    return new URL(url, location.href).href;
  } catch {
    return url;
  }
}

// ---------------------------------------------------------------- opening

async function openSource(source, index = null) {
  if (source.url && MANIFEST_URL.test(source.url)) {
    openManifestDataset(source.url.replace(MANIFEST_URL, ''));
    return;
  }
  state.openCtl?.abort();
  closeStore();
  const ctl = new AbortController();
  state.openCtl = ctl;
  state.source = source;
  const name = source.url || `${source.name} (local folder)`;
  network.reset();
  showOnly('loading');
  state.prefs = {};
  state.quick = null;
  let summary;
  try {
    const opening = client.open(source.url ? { url: source.url } : { files: source.files }, ctl.signal);
    // Ask for the record to show right behind the open (the worker holds it
    // until the store is open), instead of a round trip later.
    const first = index != null && index >= 0 ? index : 0;
    state.firstRecord = { index: first, source, recs: client.records([first], { summary: true, signal: ctl.signal }).catch(() => null) };
    // The page's first store: draw the record from the boot script's bytes
    // if that comes first (first.js); the worker's answers follow.
    if (!state.firstPainted && source.url) {
      quickFirstRecord(source.url, first).then((q) => {
        if (!q || state.openCtl !== ctl || state.summary || state.firstPainted) return;
        performance.mark('zr:quick-record');
        state.quick = { index: first, source };
        state.selected = first;
        state.dt = parseDtype(q.summary.dtype);
        showOnly('workspace');
        drawRecord(q.rec, { n: q.summary.len, source });
      });
    }
    summary = await opening;
  } catch (e) {
    if (isAbort(e)) return;
    const missing = source.url && /not found|404/i.test(e.message);
    // Not a store: a dataset's root (its zrecord.json), or a folder whose
    // sub-folders are stores.
    if (missing && await openManifestDataset(source.url, { quiet: true })) return;
    const kids = missing ? await childStores(source.url) : [];
    if (state.openCtl !== ctl) return;
    if (kids.length) {
      openDataset(kids, { key: source.url, url: source.url });
      return;
    }
    network.error(e.message);
    showProblem(e, source);
    return;
  }
  if (state.openCtl !== ctl) return;
  performance.mark('zr:opened');
  state.summary = summary;
  state.tokenizer = null;
  if (source.url) {
    tokenizerFor(source.url).then((tok) => {
      if (!tok || state.source !== source) return;
      state.tokenizer = tok;
      if (state.selected >= 0) selectRecord(state.selected);
    }, () => {});
  }
  state.dt = parseDtype(summary.dtype);
  document.title = `${source.url ? shortName(source.url) : source.name} · zrecord viewer`;
  // On the page's first store, the sidebar waits until the record is on screen.
  const showOverview = () => {
    if (state.source !== source || state.summary !== summary) return;
    overview.show(summary, { name, known: knownSizes(source) });
    // data.zr's size is known once a record was read from it.
    if (overview.files['data.zr'] == null) client.info().then((s) => overview.refreshFiles(s.info), () => {});
  };
  if (state.firstPainted) showOverview();
  else firstRecordShown.then(showOverview);
  showOnly('workspace');
  state.batch = new BatchView($('#batch-view'), client, summary, state.dt, (i) => {
    setTab('record');
    state.table?.select(i, true);
  }, (e, el) => showInlineProblem(el, e));
  const table = () => new RecordTable($('#records'), client, summary, (i) => selectRecord(i), (e) => network.error(e.message));
  if (summary.len === 0) {
    state.table = table();
    emptyStore(summary);
    return;
  }
  const start = index != null && index >= 0 && index < summary.len ? index : 0;
  if (state.firstPainted) {
    state.table = table();
    state.table.select(start, true);
  } else {
    // The page's first record goes on screen before the table is built
    // (it may be there already, from first.js).
    if (state.quick?.source === source && state.quick.index === start) {
      writeHash(readHash().url || source.url, start);
      client.locs(start, 1).then((l) => {
        const el = state.selected === start && document.querySelector('#record-sizes');
        if (el) el.textContent = sizesText({ stored: l.stored[0], decoded: l.decoded[0] });
      }, () => {});
    } else {
      selectRecord(start);
    }
    firstRecordShown.then(() => {
      if (state.summary !== summary || state.table) return;
      state.table = table();
      state.table.select(state.selected >= 0 ? state.selected : start, true, false);
    });
  }
  setTab(state.tab);
}

function closeStore() {
  closeDataset();
  state.table?.destroy();
  state.batch?.destroy();
  state.recordCtl?.abort();
  overview.destroy();
  state.table = null;
  state.batch = null;
  state.summary = null;
  state.selected = -1;
}

function knownSizes(source) {
  if (source.files) return Object.fromEntries(source.files.map((f) => [f.name, f.size]));
  const hit = state.serverStores.find((s) => absolute(s.url) === source.url);
  return hit ? { ...hit.files } : {};
}

function shortName(url) {
  const parts = new URL(url).pathname.split('/').filter(Boolean);
  return parts[parts.length - 1] || new URL(url).host;
}

function emptyStore(summary) {
  setChildren($('#record-view'), h('div.inline-problem#empty-store',
    h('b', 'This store has no records.'),
    h('p', `Its header publishes 0 records${summary.info && Object.keys(summary.info).length ? '' : ''}. If you expected data, the writer may have stopped before closing the store (an unpublished build), or the store is still being written.`)));
  setChildren($('#batch-view'));
}

// ---------------------------------------------------------------- records

async function selectRecord(i) {
  state.selected = i;
  if (state.source?.url) writeHash(readHash().url || state.source.url, i);
  if (state.tab === 'batch') state.batch.show(i);
  state.recordCtl?.abort();
  const ctl = new AbortController();
  state.recordCtl = ctl;
  const view = $('#record-view');
  // Keep the old record on screen while the next one arrives (no flicker
  // when stepping), but say that it is loading.
  view.dataset.loading = String(i);
  let recs;
  let loc = state.table?.loc(i);
  try {
    const locs = loc ? null : client.locs(i, 1, ctl.signal).catch(() => null);
    const early = state.firstRecord;
    state.firstRecord = null;
    if (early?.index === i && early.source === state.source) recs = await early.recs;
    recs ??= await client.records([i], { summary: true, signal: ctl.signal });
    // Sizes show when they come; the record does not wait for them.
    locs?.then((l) => {
      if (!l || state.recordCtl !== ctl) return;
      const el = document.querySelector('#record-sizes');
      if (el) el.textContent = sizesText({ stored: l.stored[0], decoded: l.decoded[0] });
    });
  } catch (e) {
    if (isAbort(e)) return;
    network.error(e.message);
    setChildren(view, h('div.rec-head', h('h3', `Record ${fmtInt(i)}`)));
    view.dataset.index = i;
    view.dataset.mode = 'error';
    showInlineProblem(view, e);
    delete view.dataset.loading;
    return;
  }
  if (state.recordCtl !== ctl) return;
  delete view.dataset.loading;
  // data.zr's size is known once a record was read from it.
  if (overview.files && overview.files['data.zr'] == null) client.info().then((s) => overview.refreshFiles(s.info), () => {});
  drawRecord(recs[0], { loc, n: state.summary.len, source: state.source });
}

/** Draw record `rec` of the open store (`n` records, opened from `source`). */
function drawRecord(rec, { loc = null, n, source }) {
  renderRecord($('#record-view'), rec, {
    dt: state.dt,
    arrow: state.summary?.arrow,
    loc,
    n,
    prefs: state.prefs,
    onNav: (j) => state.table?.select(j, 'nearest'),
    tokens: {
      storeUrl: source?.url || null,
      current: state.tokenizer,
      onChange: (tok) => {
        if (state.source !== source) return;
        state.tokenizer = tok;
        selectRecord(state.selected);
      },
    },
  });
  markFirstRecord();
}

/**
 * For the first-record benchmark (benches/viewer/first-record.mjs): the time
 * from navigation start to the frame after the first record was drawn.
 */
function markFirstRecord() {
  if (state.firstPainted) return;
  state.firstPainted = true;
  performance.mark('zr:first-record');
  requestAnimationFrame(() => setTimeout(() => {
    window.zrFirstRecordPainted = performance.now();
    firstRecordDone();
  }, 0));
}
let firstRecordDone;
const firstRecordShown = new Promise((resolve) => {
  firstRecordDone = resolve;
  // A store that fails to open never shows a record.
  setTimeout(resolve, 3000);
});

// ---------------------------------------------------------------- datasets

/** The stores one folder level below `url` on this server (from /api/stores). */
async function childStores(url) {
  const list = await serverStoresReady;
  const dir = new URL(url).pathname.replace(/\/?$/, '/');
  return list
    .filter((s) => {
      const p = new URL(absolute(s.url)).pathname;
      return new URL(absolute(s.url)).origin === new URL(url).origin && p !== dir && p.startsWith(dir) && !p.slice(dir.length, -1).includes('/');
    })
    .map((s) => ({ name: decodeURIComponent(new URL(absolute(s.url)).pathname.slice(dir.length, -1)), url: absolute(s.url) }))
    .sort((a, b) => a.name.localeCompare(b.name));
}

/** Leave what is open and show the dataset view loading; returns its AbortController. */
function beginDataset(source) {
  state.openCtl?.abort();
  closeStore();
  const ctl = new AbortController();
  state.openCtl = ctl;
  state.source = source;
  network.reset();
  $('#layout').classList.add('dataset-mode');
  showOnly('loading');
  return ctl;
}

/** Show opened streams ([{name, client, summary, url?}]) side by side; `shards` for a dataset with a manifest. */
function showDataset(opened, { url = null, shards = null, version = null } = {}) {
  const name = url ? shortName(url) : 'dataset';
  document.title = `${name} (dataset) · zrecord viewer`;
  showOnly('dataset');
  state.dataset = new DatasetView({ table: $('#records'), side: $('#dataset-side') }, opened, {
    onSelect: (i) => {
      if (url) writeHash(readHash().url || url, i);
    },
    onError: (e, s) => network.error(`${s.name}: ${e.message}`),
    onFirstRows: () => markFirstRecord(),
  }, { shards, version });
  const { index } = readHash();
  if (index != null && index >= 0 && index < state.dataset.n) state.dataset.select(index, true);
}

/**
 * Open `streams` ([{name, url} | {name, files}]) as one dataset: every one
 * must hold the same number of records, or the dataset is refused.
 */
async function openDataset(streams, { key, url = null } = {}) {
  const ctl = beginDataset({ dataset: key || streams.map((s) => s.url || s.name).join(' '), url, streams });
  // Stream names label columns and cards: make them unique.
  const seen = new Map();
  streams = streams.map((st) => {
    const n = (seen.get(st.name) || 0) + 1;
    seen.set(st.name, n);
    return n > 1 ? { ...st, name: `${st.name} (${n})` } : st;
  });
  const clients = streams.map((s, k) => client.stream(`ds:${k}`));
  state.datasetStreams = clients;
  let summaries;
  try {
    summaries = await Promise.all(streams.map((s, k) => clients[k].open(s.url ? { url: s.url } : { files: s.files }, ctl.signal)
      .catch((e) => {
        e.message = `${s.name}: ${e.message}`;
        throw e;
      })));
  } catch (e) {
    if (isAbort(e) || state.openCtl !== ctl) return;
    network.error(e.message);
    showProblem(e, streams[0].url ? { url: streams[0].url } : { files: [], name: streams[0].name });
    return;
  }
  if (state.openCtl !== ctl) return;
  const opened = streams.map((s, k) => ({ ...s, client: clients[k], summary: summaries[k] }));
  const why = misaligned(opened);
  if (why) {
    refuseDataset(opened, why);
    return;
  }
  showDataset(opened, { url });
}

/** A dataset URL naming its manifest rather than its root. */
const MANIFEST_URL = /zrecord\.json$/;
let manifestKeys = 0;

/**
 * Open the dataset whose manifest is `root`'s zrecord.json: its columns
 * side by side, its shards end to end (one request for the manifest, one
 * for a newer version; shards open as rows need them). With `quiet` (the
 * caller found no store at `root`), a root without a manifest resolves
 * false and leaves the page to the caller. Resolves true otherwise.
 */
async function openManifestDataset(root, { quiet = false } = {}) {
  const key = `manifest:${++manifestKeys}`;
  const source = { dataset: `manifest ${root}`, url: root };
  let ctl = quiet ? state.openCtl : beginDataset(source);
  let got;
  try {
    got = await client.openDataset(root, key, ctl.signal);
  } catch (e) {
    if (isAbort(e) || state.openCtl !== ctl) return true;
    if (quiet && e.code === 'NotFound') return false;
    network.error(e.message);
    showProblem(e, state.source);
    return true;
  }
  if (state.openCtl !== ctl) {
    client.call('close', { key }).catch(() => {});
    return true;
  }
  if (quiet) ctl = beginDataset(source);
  state.manifestKey = key;
  const opened = got.columns.map((c) => ({ name: c.name, client: client.stream(c.key), summary: c.summary, tokenizerKey: `${got.url}#${c.name}` }));
  showDataset(opened, { url: root, shards: got.shards, version: got.version });
  return true;
}

function refuseDataset(opened, why) {
  showOnly('problem');
  setChildren($('#problem'), h('div.problem', { dataset: { kind: 'dataset-misaligned' } },
    h('h1#problem-title', 'These stores do not line up as one dataset'),
    h('p#problem-text', `Refused: ${why}.`),
    h('h3', 'How to fix it'),
    h('ul', h('li', 'A dataset is stores written side by side, one record per sample in each: rebuild the shorter streams, or leave the odd one out of the folder.'),
      h('li', 'Each store can still be opened on its own:')),
    h('div.store-list', opened.filter((s) => s.url).map((s) => storeLink(s.name, `${fmtInt(s.summary.len)} records`, null, `#url=${encodeURIComponent(s.url)}`))),
    h('p', h('button', { onclick: () => { writeHash(null); showWelcome(); } }, 'Back'))));
  $('#problem').dataset.kind = 'dataset-misaligned';
}

function closeDataset() {
  state.dataset?.destroy();
  state.dataset = null;
  for (const c of state.datasetStreams) c.close().catch(() => {});
  state.datasetStreams = [];
  if (state.manifestKey) client.call('close', { key: state.manifestKey }).catch(() => {});
  state.manifestKey = null;
  $('#layout').classList.remove('dataset-mode');
  $('#records').classList.remove('dataset');
  setChildren($('#dataset-side'));
}

function setTab(tab) {
  state.tab = tab;
  for (const b of document.querySelectorAll('.tabs button')) b.classList.toggle('active', b.dataset.tab === tab);
  $('#record-view').hidden = tab !== 'record';
  $('#batch-view').hidden = tab !== 'batch';
  if (tab === 'batch' && state.batch && state.summary?.len) state.batch.show(Math.max(0, state.selected));
}

for (const b of document.querySelectorAll('.tabs button')) b.addEventListener('click', () => setTab(b.dataset.tab));

// ---------------------------------------------------------------- panels

function showOnly(what) {
  // Set by the boot script while a store named in the address opens.
  document.documentElement.classList.remove('opening');
  const workspace = what === 'workspace' || what === 'loading';
  $('#welcome').hidden = what !== 'welcome';
  $('#problem').hidden = what !== 'problem';
  $('#records').hidden = !workspace && what !== 'dataset';
  $('#detail').hidden = !workspace || $('#layout').classList.contains('dataset-mode');
  $('#dataset-side').hidden = what !== 'dataset';
  if (what !== 'workspace') {
    $('#overview').hidden = true;
    $('#sizes').hidden = true;
  }
  if (what === 'loading') {
    setChildren($('#records'), h('div.spinner', { style: { padding: '20px' } }, 'Opening store…'));
    setChildren($('#record-view'));
    setChildren($('#batch-view'));
  }
}

function showWelcome() {
  state.openCtl?.abort();
  closeStore();
  state.source = null;
  document.title = 'zrecord viewer';
  showOnly('welcome');
}

function explanation(e, source) {
  return explain(e, { url: source?.url, local: !!source?.files });
}

function fixList(x) {
  return [
    h('ul', x.fix.map((f) => h('li', inlineCode(f)))),
    (x.code || []).map(([label, code]) => [h('div.note', label), h('pre', code)]),
  ];
}

/** `backticks` in fix text become <code>. */
function inlineCode(text) {
  return text.split(/(`[^`]+`)/).map((part) => (part.startsWith('`') ? h('code', part.slice(1, -1)) : part));
}

async function showProblem(e, source) {
  const x = await refine(explanation(e, source), { url: source?.url });
  if (source?.url && state.source !== source) return;
  showOnly('problem');
  setChildren($('#problem'), h('div.problem', { dataset: { kind: x.kind } },
    h('h1#problem-title', x.title),
    h('p#problem-text', x.text),
    h('h3', 'How to fix it'),
    fixList(x),
    source?.url ? h('p', 'Store: ', h('code', source.url)) : null,
    h('p.raw', `Reader said: ${x.message}`),
    h('p', h('button', { onclick: () => openSource(source) }, 'Try again'), ' ', h('button', { onclick: () => { writeHash(null); showWelcome(); } }, 'Back'))));
  $('#problem').dataset.kind = x.kind;
}

function showInlineProblem(el, e) {
  const x = explanation(e, state.source);
  el.append(h('div.inline-problem', { dataset: { kind: x.kind } },
    h('b', x.title), h('p', { style: { margin: '4px 0 0' } }, x.text), h('ul', x.fix.map((f) => h('li', inlineCode(f)))),
    x.kind === 'changed' && state.source ? h('button', { onclick: () => openSource(state.source, state.selected) }, 'Reopen the store') : null,
    h('p.raw.note', `Reader said: ${x.message}`)));
}

// ---------------------------------------------------------------- store lists

function storeLink(label, detail, onclick, href) {
  return h('a.store-link', { href: href || '#', onclick: (e) => { if (!href) e.preventDefault(); onclick?.(e); } }, h('b', label), h('span', detail));
}

/** /api/stores of the server this page came from ([] when there is none). */
async function fetchServerStores() {
  try {
    const r = await fetch('api/stores', { headers: { Accept: 'application/json' } });
    if (!r.ok || !(r.headers.get('content-type') || '').includes('json')) return [];
    const list = await r.json();
    return Array.isArray(list) ? list : [];
  } catch {
    return [];
  }
}
const serverStoresReady = fetchServerStores();

/** Folders on this server holding two or more stores: [{path, url, names}]. */
function datasetFolders(list) {
  const byParent = new Map();
  for (const s of list) {
    const segs = (s.path || '').split('/').filter(Boolean);
    if (segs.length < 2) continue; // stores right under the root are not grouped
    const parent = segs.slice(0, -1).join('/');
    if (!byParent.has(parent)) byParent.set(parent, []);
    byParent.get(parent).push(segs[segs.length - 1]);
  }
  return [...byParent].filter(([, names]) => names.length >= 2)
    .map(([path, names]) => ({ path, url: `/${path.split('/').map(encodeURIComponent).join('/')}/`, names: names.sort() }));
}

/**
 * Split /api/stores' list into datasets with a manifest and the stores not
 * inside one (a dataset's shards are its own business, not separate entries).
 */
function splitServerList(list) {
  const manifests = list.filter((s) => s.kind === 'dataset');
  const inside = (s) => manifests.some((d) => d.path ? (s.path || '').startsWith(`${d.path}/`) : s !== d);
  return { manifests, stores: list.filter((s) => s.kind !== 'dataset' && !inside(s)) };
}

/** A line saying what a dataset with a manifest holds. */
function datasetDetail(d) {
  const m = d.dataset;
  if (!m) return 'dataset';
  return `dataset v${m.version} · ${m.length.toLocaleString()} records · ${m.shards} shard${m.shards === 1 ? '' : 's'} · ${m.columns.join(', ')}`;
}

async function loadServerStores() {
  const list = await serverStoresReady;
  if (!list.length) return;
  state.serverStores = list;
  const { manifests, stores } = splitServerList(list);
  // A dataset opens by its manifest's URL: no store probe before it.
  const manifestUrl = (d) => absolute(`${d.url}zrecord.json`);
  const entries = [...manifests.map((d) => ({ path: d.path, url: manifestUrl(d) })), ...stores.map((s) => ({ path: s.path, url: absolute(s.url) }))];
  const sel = $('#store-select');
  setChildren(sel, h('option', { value: '' }, `Stores on this server (${entries.length})`),
    ...entries.map((e) => h('option', { value: e.url }, e.path || '(root)')));
  sel.hidden = false;
  sel.onchange = () => {
    if (sel.value) location.hash = `url=${encodeURIComponent(sel.value)}`;
    sel.value = '';
  };
  const folders = datasetFolders(stores);
  const sets = [
    ...manifests.map((d) => storeLink(d.path || '(root)', datasetDetail(d), null, `#url=${encodeURIComponent(manifestUrl(d))}`)),
    ...folders.map((d) => storeLink(d.path, `${d.names.length} streams: ${d.names.join(', ')}`, null, `#url=${encodeURIComponent(d.url)}`)),
  ];
  setChildren($('#server-datasets'), sets.length ? [h('h2', `Datasets on this server (${sets.length})`), h('div.store-list', sets)] : null);
  setChildren($('#server-stores'), stores.length ? [h('h2', `On this server (${stores.length})`),
    h('div.store-list', stores.map((s) => {
      const total = Object.values(s.files || {}).reduce((a, b) => a + b, 0);
      return storeLink(s.path || '(root)', `${fmtBytes(total)}${s.files?.['dict.zr'] != null ? ' · with dictionary' : ''}`, null, `#url=${encodeURIComponent(absolute(s.url))}`);
    }))] : null);
}

/**
 * Group picked/dropped files into store directories (those holding meta.zr),
 * each with its store files: sums.zr among them, so a sealed store's records
 * are checked as when it is opened by URL.
 */
function groupStores(entries) {
  const dirs = new Map();
  for (const { file, path } of entries) {
    const cut = path.lastIndexOf('/');
    const dir = cut < 0 ? '' : path.slice(0, cut);
    if (!dirs.has(dir)) dirs.set(dir, []);
    dirs.get(dir).push(file);
  }
  const stores = [];
  for (const [dir, files] of dirs) {
    const names = new Set(files.map((f) => f.name));
    if (names.has('meta.zr')) {
      stores.push({ name: dir || files[0].name, files: files.filter((f) => /^(meta|data|dict|sums)\.zr$/.test(f.name)) });
    }
  }
  return stores.sort((a, b) => a.name.localeCompare(b.name));
}

function openLocal(entries) {
  const stores = groupStores(entries);
  if (!stores.length) {
    showProblem(new Error('not found: no meta.zr in the chosen folder'), { files: [], name: 'folder' });
    return;
  }
  writeHash(null);
  $('#url').value = '';
  if (stores.length === 1) {
    openSource(stores[0]);
    return;
  }
  state.localStores = stores;
  showWelcome();
  // Names relative to the chosen folder, which titles the list.
  const top = stores[0].name.split('/')[0];
  const shared = stores.every((s) => s.name.startsWith(`${top}/`));
  const label = (s) => (shared ? s.name.slice(top.length + 1) : s.name);
  setChildren($('#local-stores'), h('h2', `In ${shared ? top : 'the chosen folder'} (${stores.length}, on this computer)`),
    h('p', h('button#open-local-dataset', { onclick: () => openDataset(stores.map((s) => ({ name: label(s), files: s.files }))) }, `Open all ${stores.length} as one dataset`),
      h('span.muted', ' (their record i side by side; they must hold the same number of records)')),
    h('div.store-list', stores.map((s) => storeLink(label(s), fmtBytes(s.files.reduce((a, f) => a + f.size, 0)), () => openSource(s)))));
  $('#local-stores').scrollIntoView({ block: 'nearest' });
}

// ---------------------------------------------------------------- inputs

$('#open-form').addEventListener('submit', (e) => {
  e.preventDefault();
  const url = $('#url').value.trim();
  if (!url) return;
  const abs = absolute(url);
  if (state.source?.url === abs) openSource({ url: abs });
  else location.hash = `url=${encodeURIComponent(url)}`;
});

$('#open-bucket').addEventListener('click', () => $('#bucket-dialog').showModal());
$('#bucket-cancel').addEventListener('click', () => {
  $('#bucket-form').reset();
  $('#bucket-dialog').close();
});
$('#bucket-form').addEventListener('submit', async (e) => {
  e.preventDefault();
  const form = e.target;
  const f = Object.fromEntries(new FormData(form));
  // The fields are cleared at once: from here on the keys live only in the
  // worker that signs the requests (docs/PRIVATE_BUCKETS.md).
  form.reset();
  $('#bucket-dialog').close();
  const { url, scope } = bucketUrl(f);
  await client.credentials(scope, {
    region: f.region.trim(), accessKeyId: f.accessKeyId.trim(), secretAccessKey: f.secretAccessKey.trim(), sessionToken: f.sessionToken.trim(),
  });
  if (state.source?.url === url) openSource({ url });
  else location.hash = `url=${encodeURIComponent(url)}`;
});

/**
 * Open a store from a `zrecord presign` link: `signed` is JSON of each
 * file's presigned query ({"meta.zr": "X-Amz-…"}); the worker fetches each
 * file of `url` through its presigned URL.
 */
async function openPresigned(url, signed, index) {
  let queries;
  try {
    queries = JSON.parse(signed);
  } catch {
    showProblem(new Error('bad link: its signed= part is not the JSON zrecord presign writes; copy the whole link'), { url });
    return;
  }
  await client.presigned(url, queries);
  openSource({ url }, index);
}

/** The path-style URL of a bucket's prefix, and the scope its keys sign: `endpoint/bucket/`. */
function bucketUrl({ endpoint, region, bucket, prefix }) {
  const base = (endpoint.trim() || `https://s3.${region.trim()}.amazonaws.com`).replace(/\/+$/, '');
  const scope = `${base}/${bucket.trim()}/`;
  const path = prefix.trim().replace(/^\/+|\/+$/g, '');
  return { url: path ? `${scope}${path}/` : scope, scope };
}

$('#dir-input').addEventListener('change', (e) => {
  const files = [...e.target.files];
  if (files.length) openLocal(files.map((file) => ({ file, path: file.webkitRelativePath || file.name })));
  e.target.value = '';
});

$('.brand').addEventListener('click', (e) => {
  e.preventDefault();
  writeHash(null);
  $('#url').value = '';
  showWelcome();
});

// Drag and drop a folder (or the files of one store).
let dragDepth = 0;
window.addEventListener('dragenter', (e) => {
  if (![...(e.dataTransfer?.types || [])].includes('Files')) return;
  dragDepth++;
  $('#drop-overlay').hidden = false;
});
window.addEventListener('dragleave', () => {
  dragDepth = Math.max(0, dragDepth - 1);
  if (!dragDepth) $('#drop-overlay').hidden = true;
});
window.addEventListener('dragover', (e) => e.preventDefault());
window.addEventListener('drop', async (e) => {
  e.preventDefault();
  dragDepth = 0;
  $('#drop-overlay').hidden = true;
  const items = [...(e.dataTransfer?.items || [])].map((it) => it.webkitGetAsEntry?.()).filter(Boolean);
  const entries = [];
  for (const entry of items) await walkEntry(entry, '', entries);
  if (!entries.length) for (const file of e.dataTransfer.files) entries.push({ file, path: file.name });
  if (entries.length) openLocal(entries);
});

async function walkEntry(entry, prefix, out, depth = 0) {
  const path = prefix ? `${prefix}/${entry.name}` : entry.name;
  if (entry.isFile) {
    const file = await new Promise((res, rej) => entry.file(res, rej));
    out.push({ file, path });
  } else if (entry.isDirectory && depth < 8) {
    const reader = entry.createReader();
    for (;;) {
      const batch = await new Promise((res, rej) => reader.readEntries(res, rej));
      if (!batch.length) break;
      for (const child of batch) await walkEntry(child, path, out, depth + 1);
    }
  }
}

window.addEventListener('hashchange', onHash);
if (readHash().url) {
  onHash();
  // The store list is for the start page: build it once the record is on screen.
  firstRecordShown.then(loadServerStores);
} else {
  loadServerStores();
  showWelcome();
}
