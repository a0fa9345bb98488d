// Small DOM and formatting helpers shared by the views. No framework: the
// views are few and mostly redraw a handful of nodes, so `h()` and a couple of
// formatters are all the abstraction they need.

/** Create an element: h('div.card#x', {onclick, title, style}, child, ...). */
export function h(tag, attrs, ...children) {
  const [name, ...rest] = tag.split(/(?=[.#])/);
  const el = document.createElement(name || 'div');
  for (const part of rest) {
    if (part[0] === '.') el.classList.add(part.slice(1));
    else el.id = part.slice(1);
  }
  if (attrs && (typeof attrs !== 'object' || attrs instanceof Node || Array.isArray(attrs))) {
    children.unshift(attrs);
    attrs = null;
  }
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v == null || v === false) continue;
    if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else if (k === 'class') el.classList.add(...String(v).split(/\s+/).filter(Boolean));
    else if (k === 'style' && typeof v === 'object') Object.assign(el.style, v);
    else if (k === 'dataset') Object.assign(el.dataset, v);
    else if (k in el && typeof v !== 'string') el[k] = v;
    else el.setAttribute(k, v === true ? '' : v);
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children) {
    if (c == null || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else el.append(c instanceof Node ? c : String(c));
  }
}

/** Replace all children of `el`. */
export function setChildren(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

/** 1536 -> "1.5 KiB" (exact bytes under 1 KiB). */
export function fmtBytes(n) {
  if (n == null || Number.isNaN(n)) return '–';
  n = Number(n);
  if (Math.abs(n) < 1024) return `${n} B`;
  const units = ['KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
  let u = -1;
  do {
    n /= 1024;
    u++;
  } while (Math.abs(n) >= 1024 && u < units.length - 1);
  return `${n >= 100 ? n.toFixed(0) : n >= 10 ? n.toFixed(1) : n.toFixed(2)} ${units[u]}`;
}

/** 1234567 -> "1,234,567". */
export function fmtInt(n) {
  return n == null ? '–' : Number(n).toLocaleString('en-US');
}

/** A number for people: integers as is, others with 6 significant digits. */
export function fmtNum(x) {
  if (typeof x === 'bigint') return x.toString();
  if (x == null) return '–';
  if (Number.isNaN(x)) return 'NaN';
  if (!Number.isFinite(x)) return x > 0 ? '+inf' : '-inf';
  if (Number.isInteger(x) && Math.abs(x) < 1e15) return String(x);
  const a = Math.abs(x);
  if (a !== 0 && (a < 1e-4 || a >= 1e9)) return x.toExponential(4);
  return String(Number(x.toPrecision(6)));
}

/** (3, 16, 16) — NumPy's tuple notation, so (5,) for one dimension. */
export function fmtShape(shape) {
  if (!shape) return '…';
  const dims = Array.from(shape, Number);
  return dims.length === 1 ? `(${dims[0]},)` : `(${dims.join(', ')})`;
}

/** stored vs decoded: "3.2×" (or "–" when nothing is stored). */
export function fmtRatio(decoded, stored) {
  if (!stored) return '–';
  const r = decoded / stored;
  return `${r >= 10 ? r.toFixed(1) : r.toFixed(2)}×`;
}

/** Canvas sized for crisp drawing at the device pixel ratio. */
export function hiDpiCanvas(canvas, width, height) {
  const dpr = window.devicePixelRatio || 1;
  canvas.width = Math.round(width * dpr);
  canvas.height = Math.round(height * dpr);
  canvas.style.width = `${width}px`;
  canvas.style.height = `${height}px`;
  const ctx = canvas.getContext('2d');
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  return ctx;
}

/** Bar chart of `counts` over [lo, hi], with axis labels. */
export function drawHistogram(canvas, counts, { lo, hi, width = 280, height = 110, fmt = fmtNum, color = '#3b6fd4' }) {
  const ctx = hiDpiCanvas(canvas, width, height);
  const css = getComputedStyle(document.documentElement);
  const ink = css.getPropertyValue('--muted').trim() || '#666';
  const pad = { l: 4, r: 4, t: 6, b: 18 };
  const w = width - pad.l - pad.r;
  const hgt = height - pad.t - pad.b;
  ctx.clearRect(0, 0, width, height);
  const max = Math.max(1, ...counts);
  const bw = w / counts.length;
  ctx.fillStyle = color;
  counts.forEach((c, i) => {
    if (!c) return;
    const bh = Math.max(1, (c / max) * hgt);
    ctx.fillRect(pad.l + i * bw + 0.5, pad.t + hgt - bh, Math.max(1, bw - 1), bh);
  });
  ctx.strokeStyle = ink;
  ctx.globalAlpha = 0.5;
  ctx.beginPath();
  ctx.moveTo(pad.l, pad.t + hgt + 0.5);
  ctx.lineTo(pad.l + w, pad.t + hgt + 0.5);
  ctx.stroke();
  ctx.globalAlpha = 1;
  ctx.fillStyle = ink;
  ctx.font = '11px system-ui, sans-serif';
  ctx.textBaseline = 'bottom';
  ctx.textAlign = 'left';
  ctx.fillText(fmt(lo), pad.l, height - 2);
  ctx.textAlign = 'right';
  ctx.fillText(fmt(hi), pad.l + w, height - 2);
  canvas.title = `${counts.reduce((a, b) => a + b, 0)} values; tallest bar ${max}`;
}

/** Equal-width bins of finite values in `xs` (numbers). */
export function histogram(xs, bins = 32) {
  let lo = Infinity;
  let hi = -Infinity;
  for (const x of xs) {
    if (Number.isFinite(x)) {
      if (x < lo) lo = x;
      if (x > hi) hi = x;
    }
  }
  const counts = new Array(bins).fill(0);
  if (lo > hi) return { counts, lo: 0, hi: 0 };
  const span = hi - lo || 1;
  for (const x of xs) {
    if (Number.isFinite(x)) counts[Math.min(bins - 1, Math.floor(((x - lo) / span) * bins))]++;
  }
  return { counts, lo, hi };
}
