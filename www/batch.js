// The batch view: one page of records at a glance, as image thumbnails when
// the records are images and as short text tiles otherwise.

import { h, setChildren, fmtInt, fmtShape } from './dom.js';
import { typedView, formatItem } from './dtype.js';
import { imageLayouts, paintImage } from './record.js';
import { isAbort } from './client.js';

export const BATCH = 48;

export class BatchView {
  constructor(el, client, summary, dt, onOpen, onError) {
    this.el = el;
    this.client = client;
    this.n = summary.len;
    this.dt = dt;
    this.onOpen = onOpen;
    this.onError = onError;
    this.start = -1;
    this.ctl = null;
    this.selected = -1;
  }

  /** Show the page holding record `index`. */
  show(index) {
    this.selected = index;
    const start = Math.floor(Math.max(0, index) / BATCH) * BATCH;
    if (start === this.start) {
      for (const t of this.el.querySelectorAll('.thumb')) t.classList.toggle('selected', Number(t.dataset.index) === index);
      return;
    }
    this.load(start);
  }

  destroy() {
    this.ctl?.abort();
  }

  async load(start) {
    this.ctl?.abort();
    const ctl = new AbortController();
    this.ctl = ctl;
    this.start = start;
    const end = Math.min(this.n, start + BATCH);
    const indices = Array.from({ length: end - start }, (_, k) => start + k);
    const grid = h('div.grid#batch-grid');
    setChildren(this.el,
      h('div.batch-bar',
        h('button', { disabled: start === 0, onclick: () => this.load(Math.max(0, start - BATCH)) }, '‹ Previous'),
        h('span.muted', this.n ? `records ${fmtInt(start)}–${fmtInt(end - 1)} of ${fmtInt(this.n)}` : 'no records'),
        h('button', { disabled: end >= this.n, onclick: () => this.load(start + BATCH) }, 'Next ›')),
      grid);
    if (!indices.length) return;
    grid.append(h('div.spinner', 'Loading…'));
    let recs;
    try {
      recs = await this.client.records(indices, { signal: ctl.signal });
    } catch (e) {
      if (!isAbort(e)) {
        setChildren(grid);
        this.onError(e, grid);
      }
      return;
    }
    setChildren(grid, ...recs.map((r) => this.tile(r)));
  }

  tile(rec) {
    if (rec.error) {
      // A record that changed after the store was sealed: marked, not drawn.
      return h('div.thumb.corrupt', {
        dataset: { index: rec.index },
        title: rec.error,
        onclick: () => this.onOpen(rec.index),
      }, h('div.txt', 'checksum mismatch: its bytes changed after the store was sealed'), h('span.cap', `#${fmtInt(rec.index)}`));
    }
    const bytes = new Uint8Array(rec.bytes);
    const layouts = imageLayouts(rec.shape, this.dt);
    let content;
    if (layouts.length) {
      content = paintImage(h('canvas'), bytes, layouts[0]);
    } else {
      const view = typedView(bytes, this.dt);
      const count = Math.floor(bytes.length / this.dt.itemsize);
      const items = [];
      for (let i = 0; i < Math.min(count, 24); i++) items.push(formatItem(bytes, this.dt, view, i));
      content = h('div.txt', items.join(' ') + (count > 24 ? ' …' : ''));
    }
    return h('div.thumb', {
      dataset: { index: rec.index },
      class: rec.index === this.selected ? 'selected' : '',
      title: `record ${rec.index} ${fmtShape(rec.shape)}`,
      onclick: () => this.onOpen(rec.index),
    }, content, h('span.cap', `#${fmtInt(rec.index)} ${fmtShape(rec.shape)}`));
  }
}
