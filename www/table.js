// The record table: a virtual list (virtual.js) over any number of records.
// Only the rows on screen exist in the DOM; their locations are fetched in
// blocks once the scrolling settles, and fetches for rows that scrolled away
// are cancelled.

import { h, setChildren, fmtBytes, fmtInt, fmtRatio, fmtShape } from './dom.js';
import { isAbort } from './client.js';
import { VirtualRows, RowBlocks } from './virtual.js';

const ROW = 24; // px, matches --row in style.css
const BLOCK = 256; // rows per location fetch
const SETTLE_MS = 70; // wait this long after the last scroll before fetching
const MAX_BLOCKS = 400; // cached location blocks
const SHAPE_BUDGET = 4 << 20; // fetch Ragged shapes for at most this many stored bytes on screen

export class RecordTable {
  /**
   * @param {HTMLElement} el container
   * @param {import('./client.js').StoreClient} client
   * @param {object} summary the open store (len, kind, itemShape, …)
   * @param {(index: number) => void} onSelect
   * @param {(err: Error) => void} onError
   */
  constructor(el, client, summary, onSelect, onError) {
    this.el = el;
    this.client = client;
    this.n = summary.len;
    this.dense = summary.kind === 'dense';
    this.itemShape = summary.itemShape;
    this.onSelect = onSelect;
    this.onError = onError;
    // Locations ({stored, decoded} per block), fetched for the rows on screen.
    this.locs = new RowBlocks(this.n, BLOCK, MAX_BLOCKS, (start, count, signal) => client.locs(start, count, signal), {
      onLoad: () => {
        this.render(false);
        this.fetchShapes();
      },
      onError: (e) => this.onError(e),
    });
    this.shapes = new Map(); // index -> shape
    this.shapeFetch = null; // {ctl, from, to}
    this.selected = -1;
    this.timer = 0;
    this.destroyed = false;
    this.build();
  }

  build() {
    this.jump = h('input', { type: 'number', min: 0, max: Math.max(0, this.n - 1), placeholder: 'Go to #', 'aria-label': 'Go to record' });
    this.jump.addEventListener('keydown', (e) => {
      if (e.key === 'Enter') {
        const i = Number(this.jump.value);
        if (Number.isInteger(i) && i >= 0 && i < this.n) this.select(i, true);
      }
    });
    this.rows = new VirtualRows(this.n, ROW, {
      label: 'Records',
      makeRow: () => h('div.vt-row', h('span.idx'), h('span'), h('span'), h('span'), h('span')),
      fillRow: (row, i) => this.fillRow(row, i),
    });
    this.rowsEl = this.rows.rowsEl;
    this.scroller = this.rows.scroller;
    this.foot = h('div.vt-foot');
    setChildren(this.el,
      h('div.table-bar', h('h2', 'Records'), this.jump, h('button', { onclick: () => this.jumpGo() }, 'Go')),
      h('div.vt-cols', h('span', 'index'), h('span', 'shape'), h('span', 'stored'), h('span', 'decoded'), h('span', 'ratio')),
      this.scroller,
      this.foot,
    );
    this.scroller.addEventListener('scroll', () => this.onScroll(), { passive: true });
    this.scroller.addEventListener('keydown', (e) => this.onKey(e));
    this.rowsEl.addEventListener('click', (e) => {
      const row = e.target.closest('.vt-row');
      if (row && row.dataset.index) this.select(Number(row.dataset.index), false);
    });
    this.resizeObs = new ResizeObserver(() => this.render(true));
    this.resizeObs.observe(this.scroller);
    this.render(true);
  }

  jumpGo() {
    const i = Number(this.jump.value);
    if (Number.isInteger(i) && i >= 0 && i < this.n) this.select(i, true);
  }

  destroy() {
    this.destroyed = true;
    this.resizeObs.disconnect();
    clearTimeout(this.timer);
    this.locs.destroy();
    this.shapeFetch?.ctl.abort();
  }

  visibleRange() {
    return this.rows.visibleRange();
  }

  onScroll() {
    this.render(false);
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.fetchVisible(), SETTLE_MS);
  }

  onKey(e) {
    const page = this.rows.page();
    const moves = { ArrowDown: 1, ArrowUp: -1, PageDown: page, PageUp: -page, Home: -Infinity, End: Infinity };
    if (!(e.key in moves)) return;
    e.preventDefault();
    const cur = this.selected < 0 ? 0 : this.selected;
    const next = Math.max(0, Math.min(this.n - 1, cur + moves[e.key]));
    this.select(Number.isFinite(next) ? next : 0, 'nearest');
  }

  /**
   * Select record `i`; `reveal` true centres it, 'nearest' scrolls minimally;
   * `notify` false skips onSelect (the record is already on screen).
   */
  select(i, reveal, notify = true) {
    this.selected = i;
    if (reveal) this.rows.reveal(i, reveal);
    this.render(true);
    if (notify) this.onSelect(i);
  }

  /** Draw the rows on screen from what is cached; `fetch` also loads the rest. */
  render(fetch) {
    if (this.destroyed) return;
    const { first, last } = this.rows.render();
    setChildren(this.foot,
      h('span', this.n ? `${fmtInt(first)}–${fmtInt(last - 1)} of ${fmtInt(this.n)}` : 'no records'),
      h('span', this.selected >= 0 ? `selected #${fmtInt(this.selected)}` : ''),
    );
    if (fetch) {
      clearTimeout(this.timer);
      this.timer = setTimeout(() => this.fetchVisible(), 0);
    }
  }

  fillRow(row, i) {
    row.classList.toggle('selected', i === this.selected);
    const [ci, cs, cst, cde, cr] = row.children;
    ci.textContent = fmtInt(i);
    const loc = this.loc(i);
    const shape = this.dense ? this.itemShape : this.shapes.get(i);
    cs.textContent = shape ? fmtShape(shape) : loc ? '' : '…';
    cs.className = shape ? '' : 'pending';
    cst.textContent = loc ? fmtBytes(loc.stored) : '…';
    cde.textContent = loc ? fmtBytes(loc.decoded) : '…';
    cr.textContent = loc ? fmtRatio(loc.decoded, loc.stored) : '';
    for (const c of [cst, cde, cr]) c.className = loc ? '' : 'pending';
  }

  loc(i) {
    const at = this.locs.at(i);
    if (!at) return null;
    const [b, k] = at;
    return { stored: b.stored[k], decoded: b.decoded[k] };
  }

  /** Fetch what the visible rows miss; cancel fetches for rows gone from view. */
  fetchVisible() {
    if (this.destroyed || !this.n) return;
    const { first, last } = this.visibleRange();
    this.locs.want(first, last);
    this.fetchShapes();
  }

  /** Ragged stores: shapes live in each record's prefix, so fetch the visible ones. */
  fetchShapes() {
    if (this.dense || this.destroyed) return;
    const { first, last } = this.visibleRange();
    if (this.shapeFetch) {
      const f = this.shapeFetch;
      if (f.from < last && f.to > first) return; // still useful; let it finish
      f.ctl.abort();
      this.shapeFetch = null;
    }
    const missing = [];
    let bytes = 0;
    for (let i = first; i < last; i++) {
      if (this.shapes.has(i)) continue;
      const loc = this.loc(i);
      if (!loc) return; // wait for the locations: they bound the cost
      bytes += loc.stored;
      missing.push(i);
    }
    if (!missing.length || bytes > SHAPE_BUDGET) return;
    const ctl = new AbortController();
    const fetch = { ctl, from: missing[0], to: missing[missing.length - 1] + 1 };
    this.shapeFetch = fetch;
    this.client.shapes(missing, ctl.signal).then((shapes) => {
      if (this.shapeFetch === fetch) this.shapeFetch = null;
      missing.forEach((i, k) => this.shapes.set(i, shapes[k]));
      if (this.shapes.size > 20000) {
        const drop = [...this.shapes.keys()].slice(0, 10000);
        for (const i of drop) this.shapes.delete(i);
      }
      this.render(false);
      this.fetchShapes();
    }, (e) => {
      if (this.shapeFetch === fetch) this.shapeFetch = null;
      if (!isAbort(e)) this.onError(e);
    });
  }
}
