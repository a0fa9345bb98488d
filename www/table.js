// The record table: a virtual list over any number of records. Only the rows
// on screen exist in the DOM; their locations are fetched in blocks once the
// scrolling settles, and fetches for rows that scrolled away are cancelled.
// Past ~600k rows the scrollbar maps proportionally onto the rows, since
// browsers cap an element's height.

import { h, setChildren, fmtBytes, fmtInt, fmtRatio, fmtShape } from './dom.js';
import { isAbort } from './client.js';

const ROW = 24; // px, matches --row in style.css
const BLOCK = 256; // rows per location fetch
const MAX_HEIGHT = 15_000_000; // px; browsers break down past ~33M
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
    this.blocks = new Map(); // block -> {stored, decoded}
    this.loading = new Map(); // block -> AbortController
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
    this.rowsEl = h('div.vt-window');
    this.spacer = h('div.vt-spacer', this.rowsEl);
    this.scroller = h('div.vt-scroll', { tabindex: 0, 'aria-label': 'Records' }, this.spacer);
    this.foot = h('div.vt-foot');
    setChildren(this.el,
      h('div.table-bar', h('h2', 'Records'), this.jump, h('button', { onclick: () => this.jumpGo() }, 'Go')),
      h('div.vt-cols', h('span', 'index'), h('span', 'shape'), h('span', 'stored'), h('span', 'decoded'), h('span', 'ratio')),
      this.scroller,
      this.foot,
    );
    this.virtualHeight = this.n * ROW;
    this.height = Math.min(this.virtualHeight, MAX_HEIGHT);
    this.spacer.style.height = `${this.height}px`;
    this.pool = [];
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
    for (const ctl of this.loading.values()) ctl.abort();
    this.shapeFetch?.ctl.abort();
  }

  /** Pixel offset into the virtual (unscaled) list for the current scroll. */
  virtualTop() {
    const view = this.scroller.clientHeight;
    const st = this.scroller.scrollTop;
    if (this.height === this.virtualHeight || this.height <= view) return st;
    return (st / (this.height - view)) * (this.virtualHeight - view);
  }

  scrollToVirtual(vTop) {
    const view = this.scroller.clientHeight;
    vTop = Math.max(0, Math.min(vTop, this.virtualHeight - view));
    this.scroller.scrollTop = this.height === this.virtualHeight || this.height <= view
      ? vTop
      : (vTop / (this.virtualHeight - view)) * (this.height - view);
  }

  visibleRange() {
    const vTop = this.virtualTop();
    const first = Math.max(0, Math.floor(vTop / ROW));
    const count = Math.ceil(this.scroller.clientHeight / ROW) + 1;
    return { first, last: Math.min(this.n, first + count), offset: vTop - first * ROW };
  }

  onScroll() {
    this.render(false);
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.fetchVisible(), SETTLE_MS);
  }

  onKey(e) {
    const page = Math.max(1, Math.floor(this.scroller.clientHeight / ROW) - 1);
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
    if (reveal) {
      const { first, last } = this.visibleRange();
      if (reveal === 'nearest') {
        if (i < first + 1) this.scrollToVirtual(i * ROW);
        else if (i >= last - 1) this.scrollToVirtual((i + 1) * ROW - this.scroller.clientHeight);
      } else {
        this.scrollToVirtual(i * ROW - this.scroller.clientHeight / 2 + ROW / 2);
      }
    }
    this.render(true);
    if (notify) this.onSelect(i);
  }

  /** Draw the rows on screen from what is cached; `fetch` also loads the rest. */
  render(fetch) {
    if (this.destroyed) return;
    const { first, last, offset } = this.visibleRange();
    this.rowsEl.style.height = `${this.scroller.clientHeight}px`;
    const count = last - first;
    while (this.pool.length < count) {
      const r = h('div.vt-row', h('span.idx'), h('span'), h('span'), h('span'), h('span'));
      this.pool.push(r);
      this.rowsEl.append(r);
    }
    for (let k = 0; k < this.pool.length; k++) {
      const row = this.pool[k];
      if (k >= count) {
        row.hidden = true;
        continue;
      }
      const i = first + k;
      row.hidden = false;
      row.style.transform = `translateY(${k * ROW - offset}px)`;
      row.dataset.index = i;
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
    setChildren(this.foot,
      h('span', this.n ? `${fmtInt(first)}–${fmtInt(last - 1)} of ${fmtInt(this.n)}` : 'no records'),
      h('span', this.selected >= 0 ? `selected #${fmtInt(this.selected)}` : ''),
    );
    if (fetch) {
      clearTimeout(this.timer);
      this.timer = setTimeout(() => this.fetchVisible(), 0);
    }
  }

  loc(i) {
    const b = this.blocks.get(Math.floor(i / BLOCK));
    if (!b) return null;
    const k = i % BLOCK;
    return { stored: b.stored[k], decoded: b.decoded[k] };
  }

  /** Fetch what the visible rows miss; cancel fetches for rows gone from view. */
  fetchVisible() {
    if (this.destroyed || !this.n) return;
    const { first, last } = this.visibleRange();
    const want = new Set();
    for (let b = Math.floor(first / BLOCK); b <= Math.floor((last - 1) / BLOCK); b++) want.add(b);
    for (const [b, ctl] of this.loading) {
      if (!want.has(b)) {
        ctl.abort();
        this.loading.delete(b);
      }
    }
    for (const b of want) {
      if (this.blocks.has(b) || this.loading.has(b)) continue;
      const ctl = new AbortController();
      this.loading.set(b, ctl);
      const start = b * BLOCK;
      const count = Math.min(BLOCK, this.n - start);
      this.client.locs(start, count, ctl.signal).then((locs) => {
        this.loading.delete(b);
        this.blocks.set(b, locs);
        if (this.blocks.size > MAX_BLOCKS) this.blocks.delete(this.blocks.keys().next().value);
        this.render(false);
        this.fetchShapes();
      }, (e) => {
        this.loading.delete(b);
        if (!isAbort(e)) this.onError(e);
      });
    }
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
