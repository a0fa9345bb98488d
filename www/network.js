// The network panel: the reader's live counters (requests, bytes fetched,
// cache hits, …), operations in flight, and the last errors.

import { h, setChildren, fmtBytes, fmtInt } from './dom.js';

const MAX_ERRORS = 8;

/** Pick a counter from stats() whatever its exact name. */
function pick(stats, ...names) {
  for (const n of names) {
    const key = Object.keys(stats).find((k) => k.toLowerCase().replace(/[_-]/g, '') === n);
    if (key !== undefined && typeof stats[key] === 'number') return [key, stats[key]];
  }
  return [null, null];
}

/** metaRequests -> "meta requests". */
function words(key) {
  return key.replace(/([a-z])([A-Z])/g, '$1 $2').replace(/_/g, ' ').toLowerCase();
}

export class NetworkPanel {
  constructor(el) {
    this.el = el;
    this.stats = null;
    this.inflight = 0;
    this.errors = [];
    this.render();
  }

  reset() {
    this.stats = null;
    this.render();
  }

  update(stats, inflight) {
    this.stats = stats;
    this.inflight = inflight;
    this.render();
  }

  error(message) {
    this.errors.unshift({ at: new Date(), message });
    this.errors.length = Math.min(this.errors.length, MAX_ERRORS);
    this.render();
  }

  render() {
    const s = this.stats || {};
    const used = new Set();
    const tile = (label, names, fmt = fmtInt) => {
      const [key, v] = pick(s, ...names);
      if (key) used.add(key);
      return h('div', { dataset: { stat: names[0] } }, h('b', v == null ? '–' : fmt(v)), h('span', label));
    };
    const tiles = [
      tile('requests', ['requests', 'requestcount', 'fetches']),
      tile('bytes fetched', ['bytesfetched', 'bytes', 'fetchedbytes', 'bytesread'], fmtBytes),
      tile('cache hits', ['cachehits', 'pagehits', 'hits']),
      tile('cache misses', ['cachemisses', 'pagemisses', 'misses']),
    ];
    const rest = Object.entries(s).filter(([k, v]) => !used.has(k) && (typeof v === 'number' || typeof v === 'string'));
    setChildren(this.el,
      h('div.card-head',
        h('h2', 'Network'),
        h('span.muted', h(`span.busy-dot${this.inflight ? '.on' : ''}`), this.inflight ? `${this.inflight} in flight` : 'idle')),
      h('div.net-grid#net-stats', tiles),
      rest.length ? h('p.note.net-rest', rest.map(([k, v], i) => [i ? ' · ' : '', `${words(k)} `, h('b', /bytes/i.test(k) ? fmtBytes(v) : typeof v === 'number' ? fmtInt(v) : v)])) : null,
      this.errors.length ? h('ul.errors#net-errors', this.errors.map((e) => h('li', { title: e.message }, h('time', e.at.toLocaleTimeString('en-GB')), e.message))) : null,
    );
  }
}
