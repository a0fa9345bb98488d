// A dataset: several stores whose record i belong together (loaderx's
// DataLoader reads them as one: image, label, caption, …). One virtual table
// (virtual.js) whose row i shows every stream's record i — a thumbnail for
// images, the value of a scalar, the text of a caption — fetching only the
// rows on screen, a block at a time per stream. The sidebar lists the streams
// and, for each scalar integer Dense stream, the balance of its values over
// the whole store, counted by streaming coalesced reads (with progress, and a
// Cancel button).

import { h, setChildren, fmtInt, fmtShape, fmtNum } from './dom.js';
import { parseDtype, typedView, formatItem, isInteger } from './dtype.js';
import { imageLayouts, paintImage } from './record.js';
import { isAbort } from './client.js';
import { tokenizerBar, tokenizerFor, decodedText } from './tokenizer.js';
import { VirtualRows, RowBlocks } from './virtual.js';

const ROW = 56; // px
const BLOCK = 64; // rows per fetch, per stream
const MAX_BLOCKS = 64; // cached blocks per stream
const SETTLE_MS = 50;
const THUMB = 48; // px
const TEXT_ITEMS = 64; // items of a non-image record shown in a cell

/** How a stream's record is shown in a cell. */
export function cellKind(summary, dt) {
  const shape = summary.kind === 'dense' ? summary.itemShape : null;
  if (shape && imageLayouts(shape, dt).length) return 'image';
  // 1-D bytes: text, unless the column was written from Arrow binary.
  if (summary.kind === 'ragged' && dt.kind === 'u' && dt.size === 1 && !/binary/.test(summary.arrow || '')) return 'utf8';
  if (shape && shape.length === 0) return 'scalar';
  if (isInteger(dt)) return 'tokens';
  if (dt.kind === 'S' || dt.kind === 'U') return 'strings';
  return 'values';
}

/** Scalar integer Dense streams get a value balance. */
export function isScalarInt(summary, dt) {
  return summary.kind === 'dense' && Array.isArray(summary.itemShape) && summary.itemShape.reduce((a, b) => a * b, 1) === 1 && isInteger(dt);
}

/**
 * Check that streams line up: every one must hold the same number of
 * records. Returns null, or the reason they do not.
 */
export function misaligned(streams) {
  const lens = new Set(streams.map((s) => s.summary.len));
  if (lens.size <= 1) return null;
  return `the streams hold different numbers of records (${streams.map((s) => `${s.name}: ${fmtInt(s.summary.len)}`).join(', ')}), so record i of one does not line up with record i of another`;
}

export class DatasetView {
  /**
   * @param {{table: HTMLElement, side: HTMLElement}} els
   * @param {{name, url?, client, summary}[]} streams opened streams (client: a StreamClient)
   * @param {{onSelect(i), onError(e)}} hooks
   * @param {{shards?: {path, length, start}[], version?: number}} layout a dataset with a
   *   manifest: its shards end to end (each row shows its shard), and its version
   */
  constructor(els, streams, hooks, { shards = null, version = null } = {}) {
    this.shards = shards;
    this.version = version;
    this.els = els;
    this.streams = streams.map((s) => ({ ...s, dt: parseDtype(s.summary.dtype) }));
    for (const s of this.streams) s.kind = cellKind(s.summary, s.dt);
    // Pictures first, then values, then text: the order a person reads a sample in.
    const rank = { image: 0, scalar: 1, values: 2, strings: 3, utf8: 4, tokens: 5 };
    this.streams.sort((a, b) => rank[a.kind] - rank[b.kind] || a.name.localeCompare(b.name));
    this.n = this.streams[0]?.summary.len ?? 0;
    for (const s of this.streams) {
      // Records per block of rows, fetched for the rows on screen.
      s.rows = new RowBlocks(this.n, BLOCK, MAX_BLOCKS, (start, count, signal) => s.client.records(Array.from({ length: count }, (_, k) => start + k), { signal }), {
        onLoad: () => {
          this.render();
          if (!this.first) {
            this.first = true;
            this.hooks.onFirstRows?.();
          }
        },
        onError: (e) => this.hooks.onError?.(e, s),
      });
      s.tok = null;
    }
    this.hooks = hooks;
    this.selected = -1;
    this.destroyed = false;
    this.counts = new Map(); // stream name -> AbortController of a running count
    this.build();
    this.buildSide();
    for (const s of this.streams) {
      s.tokenizerKey ??= s.url;
      if (s.kind === 'tokens' && s.tokenizerKey) {
        tokenizerFor(s.tokenizerKey).then((tok) => this.setTokenizer(s, tok), () => {});
      }
    }
  }

  destroy() {
    this.destroyed = true;
    this.resizeObs?.disconnect();
    clearTimeout(this.timer);
    for (const s of this.streams) s.rows.destroy();
    for (const ctl of this.counts.values()) ctl.abort();
  }

  /** The shard holding row `i` (its position in `shards`). */
  shardOf(i) {
    let lo = 0;
    let hi = this.shards.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (this.shards[mid].start <= i) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  }

  build() {
    const shardCol = this.shards ? ' minmax(90px, 160px)' : '';
    this.cols = `64px${shardCol} ${this.streams.map((s) => (s.kind === 'image' ? `${THUMB + 16}px` : s.kind === 'scalar' ? 'minmax(70px, 110px)' : 'minmax(140px, 1fr)')).join(' ')}`;
    this.rows = new VirtualRows(this.n, ROW, {
      label: 'Dataset rows',
      makeRow: () => {
        const r = h('div.ds-row', { style: { gridTemplateColumns: this.cols } }, h('span.idx'), this.shards ? h('span.shard') : null, this.streams.map(() => h('div.cell')));
        r.drawn = [];
        return r;
      },
      fillRow: (row, i) => this.fillRow(row, i),
    });
    this.rowsEl = this.rows.rowsEl;
    this.scroller = this.rows.scroller;
    this.scroller.classList.add('ds-scroll');
    const head = h('div.ds-cols', { style: { gridTemplateColumns: this.cols } }, h('span', 'index'), this.shards ? h('span', 'shard') : null,
      this.streams.map((s) => h('span', { title: `${s.summary.dtype} ${fmtShape(s.summary.itemShape)} ${s.summary.kind}` }, s.name)));
    this.foot = h('div.vt-foot');
    const about = this.shards ? ` · ${fmtInt(this.shards.length)} shards · version ${this.version}` : '';
    // Jump to any row (a global index: shards are laid end to end).
    const jump = h('input.ds-goto', { type: 'number', min: 0, max: Math.max(0, this.n - 1), placeholder: 'go to row', 'aria-label': 'Go to row' });
    jump.addEventListener('keydown', (e) => {
      const i = Number(jump.value);
      if (e.key === 'Enter' && Number.isInteger(i) && i >= 0 && i < this.n) this.select(i, true);
    });
    setChildren(this.els.table,
      h('div.table-bar', h('h2', `Dataset · ${this.streams.length} streams · ${fmtInt(this.n)} rows${about}`), jump),
      head, this.scroller, this.foot);
    this.els.table.classList.add('dataset');
    this.scroller.addEventListener('scroll', () => {
      this.render();
      clearTimeout(this.timer);
      this.timer = setTimeout(() => this.fetchVisible(), SETTLE_MS);
    }, { passive: true });
    this.rowsEl.addEventListener('click', (e) => {
      const row = e.target.closest('.ds-row');
      if (row?.dataset.index) this.select(Number(row.dataset.index));
    });
    this.resizeObs = new ResizeObserver(() => {
      this.render();
      this.fetchVisible();
    });
    this.resizeObs.observe(this.scroller);
    this.render();
    this.fetchVisible();
  }

  select(i, reveal = false) {
    this.selected = i;
    if (reveal) this.rows.reveal(i, true);
    this.render();
    this.fetchVisible();
    this.hooks.onSelect?.(i);
  }

  visibleRange() {
    return this.rows.visibleRange();
  }

  record(s, i) {
    const at = s.rows.at(i);
    return at ? at[0][at[1]] : null;
  }

  render() {
    if (this.destroyed) return;
    const { first, last } = this.rows.render();
    setChildren(this.foot,
      h('span', this.n ? `${fmtInt(first)}–${fmtInt(last - 1)} of ${fmtInt(this.n)}` : 'no records'),
      h('span', this.selected >= 0 ? `selected #${fmtInt(this.selected)}${this.shards ? ` (shard ${this.shardOf(this.selected)})` : ''}` : ''));
  }

  fillRow(row, i) {
    row.classList.toggle('selected', i === this.selected);
    row.children[0].textContent = fmtInt(i);
    const first = this.shards ? 2 : 1;
    if (this.shards) {
      const k = this.shardOf(i);
      const el = row.children[1];
      el.dataset.shard = String(k);
      el.title = `${this.shards[k].path}: rows ${fmtInt(this.shards[k].start)}–${fmtInt(this.shards[k].start + this.shards[k].length - 1)}`;
      el.textContent = `${k} · ${this.shards[k].path.split('/').pop()}`;
    }
    this.streams.forEach((s, c) => {
      const cell = row.children[c + first];
      const rec = this.record(s, i);
      const key = rec ? `${i}:${s.tok?.name ?? ''}` : `${i}:pending`;
      if (row.drawn[c] === key) return;
      row.drawn[c] = key;
      cell.dataset.stream = s.name;
      cell.className = `cell k-${s.kind}`;
      if (!rec) {
        setChildren(cell, h('span.pending', '…'));
        return;
      }
      this.fill(cell, s, rec);
    });
  }

  /** Draw stream `s`'s record `rec` into `cell`. */
  fill(cell, s, rec) {
    if (rec.error) {
      // Changed after the store was sealed: shown, in red, never drawn.
      setChildren(cell, h('span.corrupt', { title: rec.error }, 'checksum mismatch'));
      return;
    }
    const bytes = new Uint8Array(rec.bytes);
    if (s.kind === 'image') {
      const layout = imageLayouts(rec.shape, s.dt)[0];
      const canvas = paintImage(h('canvas.thumb-img'), bytes, layout);
      const scale = THUMB / Math.max(layout.w, layout.h);
      canvas.style.width = `${Math.round(layout.w * scale)}px`;
      canvas.style.height = `${Math.round(layout.h * scale)}px`;
      setChildren(cell, canvas);
    } else if (s.kind === 'scalar') {
      setChildren(cell, h('b.value', formatItem(bytes, s.dt, typedView(bytes, s.dt), 0)));
    } else if (s.kind === 'utf8') {
      setChildren(cell, h('span.text', new TextDecoder().decode(bytes)));
    } else if (s.kind === 'tokens') {
      const ids = typedView(bytes, s.dt);
      if (s.tok) setChildren(cell, decodedText(s.tok, ids, { limit: 512 }));
      else setChildren(cell, h('span.ids', Array.prototype.slice.call(ids, 0, TEXT_ITEMS).join(' ') + (ids.length > TEXT_ITEMS ? ' …' : '')));
    } else {
      const view = typedView(bytes, s.dt);
      const n = Math.floor(bytes.length / s.dt.itemsize);
      const items = [];
      for (let k = 0; k < Math.min(n, TEXT_ITEMS); k++) items.push(formatItem(bytes, s.dt, view, k));
      setChildren(cell, h('span.ids', items.join(' ') + (n > TEXT_ITEMS ? ' …' : '')));
    }
  }

  /** Fetch the blocks the visible rows need, per stream; cancel what left the screen. */
  fetchVisible() {
    if (this.destroyed) return;
    const { first, last } = this.visibleRange();
    for (const s of this.streams) s.rows.want(first, last);
  }

  setTokenizer(s, tok) {
    s.tok = tok;
    this.render();
    this.renderStream(s);
  }

  // ------------------------------------------------------------ sidebar

  buildSide() {
    this.sideCards = new Map();
    const cards = this.streams.map((s) => {
      const card = h('section.card.stream-card', { dataset: { stream: s.name } });
      this.sideCards.set(s.name, card);
      return card;
    });
    setChildren(this.els.side, cards);
    for (const s of this.streams) {
      this.renderStream(s);
      if (isScalarInt(s.summary, s.dt)) this.countValues(s);
    }
  }

  renderStream(s) {
    const card = this.sideCards.get(s.name);
    if (!card) return;
    const sum = s.summary;
    const parts = [
      h('div.card-head', h('h2', s.name), h('span.pill', sum.kind === 'dense' ? 'Dense' : 'Ragged')),
      h('div.note', h('code', sum.dtype), ` ${sum.kind === 'dense' ? fmtShape(sum.itemShape) : 'per record'} · ${sum.codec} · ${fmtInt(sum.len)} records`),
      s.url ? h('div.note', h('a', { href: `#url=${encodeURIComponent(s.url)}` }, 'open this store alone')) : null,
    ];
    if (s.kind === 'tokens') {
      parts.push(tokenizerBar(s.tokenizerKey, s.tok, (tok) => this.setTokenizer(s, tok)));
    }
    if (isScalarInt(sum, s.dt)) parts.push(s.balanceEl ||= h('div.balance'));
    setChildren(card, parts);
  }

  /** Count every value of a scalar integer stream, drawing the balance as it goes. */
  async countValues(s) {
    this.counts.get(s.name)?.abort();
    const ctl = new AbortController();
    this.counts.set(s.name, ctl);
    const el = s.balanceEl;
    const bar = h('progress', { max: 1, value: 0 });
    const label = h('span.note', 'counting values…');
    setChildren(el, h('div.note', 'value balance, over the whole store'), h('div.balance-progress', bar, label,
      h('button.count-cancel', { onclick: () => ctl.abort() }, 'Cancel')));
    el.dataset.state = 'counting';
    try {
      const res = await s.client.valueCounts({
        signal: ctl.signal,
        onProgress: ({ done, total }) => {
          bar.max = total;
          bar.value = done;
          label.textContent = `${fmtInt(done)} of ${fmtInt(total)} records`;
        },
      });
      if (this.destroyed) return;
      el.dataset.state = 'done';
      drawBalance(el, res);
    } catch (e) {
      if (this.destroyed) return;
      el.dataset.state = isAbort(e) ? 'cancelled' : 'failed';
      setChildren(el, h('div.note', isAbort(e) ? `Counting cancelled after ${label.textContent.replace(' records', '')} records.` : `Counting failed: ${e.message}`),
        h('button.count-again', { onclick: () => this.countValues(s) }, 'Count again'));
    } finally {
      if (this.counts.get(s.name) === ctl) this.counts.delete(s.name);
    }
  }
}

/** A bar per value (the 24 most common when there are more), with counts and shares. */
function drawBalance(el, { entries, overflow, total, min, max }) {
  const top = entries.length > 24 ? [...entries].sort((a, b) => b[1] - a[1]).slice(0, 24).sort((a, b) => Number(a[0]) - Number(b[0])) : entries;
  const most = Math.max(1, ...top.map((e) => e[1]));
  setChildren(el,
    h('div.note', `value balance of all ${fmtInt(total)} records · ${fmtInt(entries.length)} distinct values · ${fmtNum(min)} to ${fmtNum(max)}`),
    h('table.balance-table',
      top.map(([v, c]) => h('tr', { dataset: { value: v } },
        h('th', v),
        h('td.bar-cell', h('span.bar', { style: { width: `${(100 * c) / most}%` } })),
        h('td.count', fmtInt(c)),
        h('td.share', `${((100 * c) / total).toFixed(1)}%`)))),
    entries.length > top.length ? h('div.note', `showing the ${top.length} most common`) : null,
    overflow ? h('div.note', `${fmtInt(overflow)} records hold values beyond the first 4,096 distinct ones`) : null);
}
