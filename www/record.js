// One record, shown the way a person wants it: uint8 images as pictures,
// numbers as statistics, a histogram and a value table, 1-D integers (token
// ids) as a wrapped list, strings as text, anything else as a hex dump.

import { h, setChildren, fmtBytes, fmtInt, fmtNum, fmtShape, fmtRatio, drawHistogram } from './dom.js';
import { typedView, formatItem, isNumeric, isInteger, unravel, hex } from './dtype.js';
import { tokenizerBar, decodedText } from './tokenizer.js';

const PAGE_VALUES = 200;
const PAGE_TOKENS = 4000;
const PAGE_HEX = 4096;

/** Image layouts of a uint8 array of `shape`: [{id, label, h, w, c, planar}]. */
export function imageLayouts(shape, dt) {
  if (!(dt.kind === 'u' && dt.size === 1) || !shape) return [];
  const s = shape.map(Number);
  const out = [];
  if (s.length === 2 && s[0] > 0 && s[1] > 0) out.push({ id: 'HW', label: '(H, W) gray', h: s[0], w: s[1], c: 1, planar: true });
  if (s.length === 3) {
    const color = (c) => (c === 3 ? 'RGB' : 'RGBA');
    if ([1, 3, 4].includes(s[0])) out.push({ id: 'CHW', label: s[0] === 1 ? '(1, H, W) gray' : `(${s[0]}, H, W) ${color(s[0])}`, h: s[1], w: s[2], c: s[0], planar: true });
    if ([1, 3, 4].includes(s[2])) out.push({ id: 'HWC', label: s[2] === 1 ? '(H, W, 1) gray' : `(H, W, ${s[2]}) ${color(s[2])}`, h: s[0], w: s[1], c: s[2], planar: false });
    // Each channel alone, in gray.
    for (const base of out.slice()) {
      for (let ch = 0; base.c > 1 && ch < base.c; ch++) {
        out.push({ ...base, id: `${base.id}:${ch}`, label: `channel ${ch} of ${base.id} (gray)`, channel: ch });
      }
    }
  }
  return out.filter((l) => l.h > 0 && l.w > 0 && l.h * l.w <= 64 << 20);
}

/** Paint `bytes` laid out as `layout` into a canvas at one pixel per pixel. */
export function paintImage(canvas, bytes, layout) {
  const { h: H, w: W, c: C, planar } = layout;
  canvas.width = W;
  canvas.height = H;
  const ctx = canvas.getContext('2d');
  const img = ctx.createImageData(W, H);
  const px = img.data;
  const plane = H * W;
  const one = layout.channel ?? (C === 1 ? 0 : null);
  for (let p = 0; p < plane; p++) {
    const at = (ch) => (planar ? bytes[ch * plane + p] : bytes[p * C + ch]);
    const o = p * 4;
    if (one !== null) {
      const r = at(one);
      px[o] = px[o + 1] = px[o + 2] = r;
      px[o + 3] = 255;
    } else {
      px[o] = at(0);
      px[o + 1] = at(1);
      px[o + 2] = at(2);
      px[o + 3] = C === 4 ? at(3) : 255;
    }
  }
  ctx.putImageData(img, 0, 0);
  return canvas;
}

/** "3.00 KiB decoded, 1.20 KiB stored (2.50×)" for a record's location. */
export function sizesText(loc) {
  return `${fmtBytes(loc.decoded)} decoded, ${fmtBytes(loc.stored)} stored (${fmtRatio(loc.decoded, loc.stored)})`;
}

/** The ways this record can be shown, best first (`arrow`: a dataset column's Arrow type). */
export function modesFor(shape, dt, arrow = null) {
  const modes = [];
  const rank = shape ? shape.length : 0;
  // Written from an Arrow string column: UTF-8 text first.
  if (/string/.test(arrow || '') && dt.kind === 'u' && dt.size === 1) modes.push('text');
  // A 1-D uint8 record is bytes (text, an encoded file): hex first.
  if (dt.kind === 'u' && dt.size === 1 && rank === 1) modes.push('hex');
  if (imageLayouts(shape, dt).length) modes.push('image');
  if (isInteger(dt) && rank === 1) modes.push('tokens');
  if (isNumeric(dt)) modes.push('values');
  if (dt.kind === 'S' || dt.kind === 'U') modes.push('strings');
  if (!modes.includes('hex')) modes.push('hex');
  return modes;
}

const MODE_LABELS = { text: 'Text', image: 'Image', tokens: 'Token ids', values: 'Values', strings: 'Strings', hex: 'Hex' };

/**
 * Render record `rec` ({index, shape, bytes, summary}) into `el`.
 * `prefs` remembers the chosen mode and image layout between records.
 */
export function renderRecord(el, rec, { dt, loc, n, prefs, onNav, tokens, arrow }) {
  const bytes = new Uint8Array(rec.bytes);
  const shape = rec.shape ? rec.shape.map(Number) : [];
  const modes = modesFor(shape, dt, arrow);
  const mode = modes.includes(prefs.mode) ? prefs.mode : modes[0];
  const body = h('div.rec-body');

  const modeButtons = h('div.seg', modes.map((m) => h('button', {
    class: m === mode ? 'active' : '',
    dataset: { mode: m },
    onclick: () => {
      prefs.mode = m;
      renderRecord(el, rec, { dt, loc, n, prefs, onNav, tokens, arrow });
    },
  }, MODE_LABELS[m])));

  setChildren(el,
    h('div.rec-head',
      h('div.rec-title',
        h('h3', `Record ${fmtInt(rec.index)}`),
        h('span.meta#record-shape', `${fmtShape(shape)} · ${dt.str} (${dt.name})`),
        h('span.meta#record-sizes', loc ? sizesText(loc) : `${fmtBytes(bytes.length)}`)),
      h('span.nav',
        h('button', { disabled: rec.index <= 0, onclick: () => onNav(rec.index - 1), title: 'Previous record' }, '‹ Prev'),
        h('button', { disabled: rec.index >= n - 1, onclick: () => onNav(rec.index + 1), title: 'Next record' }, 'Next ›'))),
    h('div.modes', modes.length > 1 ? modeButtons : null),
    body,
  );
  el.dataset.mode = mode;
  el.dataset.index = rec.index;

  if (mode === 'image') renderImage(body, el, bytes, shape, dt, rec, prefs);
  else if (mode === 'tokens') renderTokens(body, bytes, dt, rec.summary, tokens);
  else if (mode === 'values') renderValues(body, bytes, shape, dt, rec.summary);
  else if (mode === 'strings') renderStrings(body, bytes, shape, dt);
  else if (mode === 'text') setChildren(body, h('pre.text#record-text', new TextDecoder().decode(bytes)));
  else renderHex(body, bytes);
}

function renderImage(body, el, bytes, shape, dt, rec, prefs) {
  const layouts = imageLayouts(shape, dt);
  const layout = layouts.find((l) => l.id === prefs.layout) || layouts[0];
  const canvas = paintImage(h('canvas.pixels#record-canvas'), bytes, layout);
  // Scale up small images by whole pixels to roughly 320 px.
  const scale = Math.max(1, Math.min(16, Math.floor(320 / Math.max(layout.w, layout.h))));
  const fit = Math.min(1, 560 / (layout.w * scale));
  canvas.style.width = `${layout.w * scale * fit}px`;
  canvas.style.height = `${layout.h * scale * fit}px`;
  const select = layouts.length > 1
    ? h('select#layout-select', {
      onchange: (e) => {
        prefs.layout = e.target.value;
        renderImage(body, el, bytes, shape, dt, rec, prefs);
      },
    }, layouts.map((l) => h('option', { value: l.id, selected: l.id === layout.id }, l.label)))
    : h('span.muted', layout.label);
  const s = rec.summary;
  setChildren(body,
    h('div.image-wrap',
      h('div.image-box', canvas),
      h('div',
        h('dl.kv',
          h('dt', 'layout'), h('dd', select),
          h('dt', 'size'), h('dd', `${layout.w} × ${layout.h} px, ${layout.c} channel${layout.c > 1 ? 's' : ''}${layout.channel != null ? `, showing ${layout.channel}` : ''}`),
          h('dt', 'zoom'), h('dd', `${(scale * fit).toFixed(scale * fit >= 1 ? 0 : 2)}×`),
          s && [h('dt', 'min / max'), h('dd', `${fmtNum(s.min)} / ${fmtNum(s.max)}`),
            h('dt', 'mean ± std'), h('dd', `${fmtNum(s.mean)} ± ${fmtNum(s.std)}`)]),
        s && histogramBox(s))));
  body.dataset.layout = layout.id;
}

function histogramBox(s) {
  const c = h('canvas.hist');
  drawHistogram(c, s.hist.counts, { lo: s.hist.lo, hi: s.hist.hi, width: 260, height: 90 });
  return h('div', { style: { marginTop: '10px' } }, h('div.note', `histogram of ${s.of ? s.of : 'values'}`), c);
}

function statGrid(s) {
  const cell = (k, v) => h('div', h('span', k), h('b', v));
  return h('div.stat-grid#stats',
    cell('count', fmtInt(s.count)), cell('min', fmtNum(s.min)), cell('max', fmtNum(s.max)),
    cell('mean', fmtNum(s.mean)), cell('std', fmtNum(s.std)), cell(s.nan ? 'NaN' : 'finite', fmtInt(s.nan || s.finite)));
}

/**
 * Token ids, and beside them their decoded text when a tokenizer is attached
 * (`tokens`: {storeUrl, current, onChange}). Hovering a piece of text shows
 * its id and bytes and lights up its id; ids outside the vocabulary are
 * marked in both columns.
 */
function renderTokens(body, bytes, dt, summary, tokens) {
  const view = typedView(bytes, dt);
  const n = view.length;
  const tok = tokens?.current || null;
  let page = 0;
  const list = h('div.tokens#tokens');
  const text = h('div.tok-text');
  const info = h('div.piece-info#piece-info', tok ? 'Hover over the text to see each piece’s id and bytes.' : '');
  const pager = h('div.pager');
  const draw = () => {
    const from = page * PAGE_TOKENS;
    const to = Math.min(n, from + PAGE_TOKENS);
    const frag = document.createDocumentFragment();
    for (let i = from; i < to; i++) {
      const unknown = tok && !tok.bytes(view[i]);
      frag.append(h(unknown ? 'span.unk' : 'span', { title: unknown ? `[${i}] not in the vocabulary` : `[${i}]`, dataset: { k: String(i - from) } }, view[i].toString()));
    }
    setChildren(list, frag);
    if (tok) setChildren(text, decodedText(tok, view.subarray(from, to), { id: 'decoded' }));
    pagerControls(pager, page, Math.ceil(n / PAGE_TOKENS), `tokens ${fmtInt(from)}–${fmtInt(to - 1)} of ${fmtInt(n)}`, (p) => { page = p; draw(); });
  };
  let lit = null;
  text.addEventListener('mouseover', (e) => {
    const piece = e.target.closest('.piece');
    if (!piece) return;
    lit?.classList.remove('lit');
    lit = list.querySelector(`span[data-k="${piece.dataset.k}"]`);
    lit?.classList.add('lit');
    setChildren(info, piece.title);
  });
  const unknownCount = tok ? Array.prototype.reduce.call(view, (a, id) => a + (tok.bytes(id) ? 0 : 1), 0) : 0;
  setChildren(body,
    tokens ? tokenizerBar(tokens.storeUrl, tok, tokens.onChange) : null,
    h('p.note', `${fmtInt(n)} ${dt.name} ids`, summary ? ` · min ${fmtNum(summary.min)} · max ${fmtNum(summary.max)} · mean ${fmtNum(summary.mean)}` : '',
      tok ? h('span#unknown-count', { class: unknownCount ? 'bad' : '' }, ` · ${fmtInt(unknownCount)} outside the vocabulary`) : ''),
    tok ? h('div.tok-split', h('div', h('div.note', 'ids'), list), h('div', h('div.note', 'text'), text, info)) : list,
    pager);
  draw();
}

function renderValues(body, bytes, shape, dt, summary) {
  const view = typedView(bytes, dt);
  const n = dt.kind === 'c' ? view.length / 2 : view.length;
  const parts = [];
  if (n === 1) parts.push(h('div.big-value', formatItem(bytes, dt, view, 0)));
  if (summary && n > 1) {
    const hc = h('canvas.hist');
    drawHistogram(hc, summary.hist.counts, { lo: summary.hist.lo, hi: summary.hist.hi, width: 300, height: 100 });
    parts.push(h('div.stats-row', statGrid(summary), h('div', hc, summary.of ? h('div.note', `statistics of ${summary.of}`) : null)));
  }
  let page = 0;
  const table = h('table.values#values');
  const pager = h('div.pager');
  const draw = () => {
    const from = page * PAGE_VALUES;
    const to = Math.min(n, from + PAGE_VALUES);
    const rows = [];
    for (let i = from; i < to; i++) {
      const idx = shape.length ? `[${unravel(i, shape).join(', ')}]` : '()';
      rows.push(h('tr', h('th', idx), h('td', formatItem(bytes, dt, view, i))));
    }
    setChildren(table, ...rows);
    pagerControls(pager, page, Math.ceil(n / PAGE_VALUES), `values ${fmtInt(from)}–${fmtInt(to - 1)} of ${fmtInt(n)}`, (p) => { page = p; draw(); });
  };
  setChildren(body, ...parts, table, pager);
  draw();
}

function renderStrings(body, bytes, shape, dt) {
  const n = Math.floor(bytes.length / dt.itemsize);
  const rows = [];
  for (let i = 0; i < Math.min(n, 1000); i++) {
    rows.push(h('tr', h('th', shape.length ? `[${unravel(i, shape).join(', ')}]` : '()'), h('td', { style: { textAlign: 'left' } }, formatItem(bytes, dt, null, i))));
  }
  setChildren(body, h('table.values.strings#values', rows), n > 1000 ? h('p.note', `first 1,000 of ${fmtInt(n)}`) : null);
}

/** Classic 16-bytes-a-line hex dump, paged. */
export function renderHex(body, bytes) {
  let page = 0;
  const pre = h('pre.hex#hexdump');
  const pager = h('div.pager');
  const draw = () => {
    const from = page * PAGE_HEX;
    const to = Math.min(bytes.length, from + PAGE_HEX);
    const frag = document.createDocumentFragment();
    for (let o = from; o < to; o += 16) {
      const line = bytes.subarray(o, Math.min(o + 16, to));
      const ascii = Array.from(line, (c) => (c >= 0x20 && c < 0x7f ? String.fromCharCode(c) : '.')).join('');
      frag.append(h('span.off', o.toString(16).padStart(8, '0')), '  ', hex(line).padEnd(47), '  ', h('span.asc', ascii), '\n');
    }
    setChildren(pre, frag);
    pagerControls(pager, page, Math.ceil(bytes.length / PAGE_HEX), `bytes ${fmtInt(from)}–${fmtInt(to - 1)} of ${fmtInt(bytes.length)}`, (p) => { page = p; draw(); });
  };
  setChildren(body, pre, pager);
  draw();
}

function pagerControls(el, page, pages, label, go) {
  if (pages <= 1) {
    setChildren(el);
    return;
  }
  setChildren(el,
    h('button', { disabled: page === 0, onclick: () => go(page - 1) }, '‹'),
    h('span', label),
    h('button', { disabled: page >= pages - 1, onclick: () => go(page + 1) }, '›'),
  );
}
