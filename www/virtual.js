// A virtual list: a scroller over any number of fixed-height rows with only
// the rows on screen in the DOM (a pool, reused as the view moves). Past
// MAX_HEIGHT pixels the scrollbar maps proportionally onto the rows, since
// browsers cap an element's height. The record table and the dataset view
// draw their rows with it.

import { h } from './dom.js';
import { isAbort } from './client.js';

const MAX_HEIGHT = 15_000_000; // px; browsers break down past ~33M

export class VirtualRows {
  /**
   * @param {number} n rows
   * @param {number} rowHeight px
   * @param {{label: string, makeRow: () => HTMLElement, fillRow: (row: HTMLElement, i: number) => void}} opts
   *   `makeRow` builds a pooled row; `fillRow` draws row `i` into it.
   */
  constructor(n, rowHeight, { label, makeRow, fillRow }) {
    this.n = n;
    this.rowHeight = rowHeight;
    this.makeRow = makeRow;
    this.fillRow = fillRow;
    this.rowsEl = h('div.vt-window');
    this.spacer = h('div.vt-spacer', this.rowsEl);
    this.scroller = h('div.vt-scroll', { tabindex: 0, 'aria-label': label }, this.spacer);
    this.virtualHeight = n * rowHeight;
    this.height = Math.min(this.virtualHeight, MAX_HEIGHT);
    this.spacer.style.height = `${this.height}px`;
    this.pool = [];
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

  /** {first, last (exclusive), offset}: the rows on screen. */
  visibleRange() {
    const vTop = this.virtualTop();
    const first = Math.max(0, Math.floor(vTop / this.rowHeight));
    const count = Math.ceil(this.scroller.clientHeight / this.rowHeight) + 1;
    return { first, last: Math.min(this.n, first + count), offset: vTop - first * this.rowHeight };
  }

  /** Rows on screen minus one: what PageDown moves. */
  page() {
    return Math.max(1, Math.floor(this.scroller.clientHeight / this.rowHeight) - 1);
  }

  /** Scroll row `i` into view: `how` true centres it, 'nearest' scrolls minimally. */
  reveal(i, how) {
    const { first, last } = this.visibleRange();
    const r = this.rowHeight;
    if (how === 'nearest') {
      if (i < first + 1) this.scrollToVirtual(i * r);
      else if (i >= last - 1) this.scrollToVirtual((i + 1) * r - this.scroller.clientHeight);
    } else {
      this.scrollToVirtual(i * r - this.scroller.clientHeight / 2 + r / 2);
    }
  }

  /** Position the pool over the rows on screen and draw each; returns the range. */
  render() {
    const range = this.visibleRange();
    const { first, last, offset } = range;
    this.rowsEl.style.height = `${this.scroller.clientHeight}px`;
    const count = last - first;
    while (this.pool.length < count) {
      const r = this.makeRow();
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
      row.style.transform = `translateY(${k * this.rowHeight - offset}px)`;
      row.dataset.index = i;
      this.fillRow(row, i);
    }
    return range;
  }
}

/**
 * What a virtual list's rows show, fetched a block of rows at a time: only
 * the blocks the rows on screen need, cancelling loads of blocks scrolled
 * away, keeping at most `max` blocks (the oldest go first).
 */
export class RowBlocks {
  /**
   * @param {number} n rows
   * @param {number} size rows per block
   * @param {number} max blocks kept
   * @param {(start: number, count: number, signal: AbortSignal) => Promise<any>} load
   * @param {{onLoad: () => void, onError: (e: Error) => void}} hooks
   */
  constructor(n, size, max, load, { onLoad, onError }) {
    this.n = n;
    this.size = size;
    this.max = max;
    this.load = load;
    this.onLoad = onLoad;
    this.onError = onError;
    this.blocks = new Map(); // block -> what load gave
    this.loading = new Map(); // block -> AbortController
  }

  /** [block value, row's place in it] for row `i`, or null until loaded. */
  at(i) {
    const b = this.blocks.get(Math.floor(i / this.size));
    return b === undefined ? null : [b, i % this.size];
  }

  /** Load what rows `first .. last - 1` need; cancel loads no longer needed. */
  want(first, last) {
    if (!this.n) return;
    const want = new Set();
    for (let b = Math.floor(first / this.size); b <= Math.floor(Math.max(first, last - 1) / this.size); b++) want.add(b);
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
      const start = b * this.size;
      this.load(start, Math.min(this.size, this.n - start), ctl.signal).then((value) => {
        this.loading.delete(b);
        this.blocks.set(b, value);
        if (this.blocks.size > this.max) this.blocks.delete(this.blocks.keys().next().value);
        this.onLoad();
      }, (e) => {
        this.loading.delete(b);
        if (!isAbort(e)) this.onError(e);
      });
    }
  }

  destroy() {
    for (const ctl of this.loading.values()) ctl.abort();
    this.loading.clear();
  }
}
