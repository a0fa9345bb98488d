// A virtual list: a scroller over any number of fixed-height rows with only
// the rows on screen in the DOM (a pool, reused as the view moves). Past
// MAX_HEIGHT pixels the scrollbar maps proportionally onto the rows, since
// browsers cap an element's height. The record table and the dataset view
// draw their rows with it.

import { h } from './dom.js';

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
