// Token ids as text. Two vocabulary formats, both mapping an id to bytes:
//   - a Hugging Face tokenizer.json with a byte-level BPE model (GPT-2 and
//     its descendants): id -> token string -> GPT-2's byte-level
//     unicode-to-byte map -> bytes; added tokens are their content as UTF-8;
//   - a tiktoken rank file: lines `base64(token bytes) rank`, the rank being
//     the id.
// Decoding concatenates the bytes and reads them as UTF-8; a character split
// over several tokens shows in the piece that completes it.
// The tokenizer chosen for a store is remembered per store URL in
// localStorage (its URL, or a local file's text when small enough).

import { h, setChildren, fmtInt } from './dom.js';

/** GPT-2's bytes_to_unicode, inverted: code point -> byte. */
function byteLevelDecoder() {
  const bs = [];
  for (let b = 33; b <= 126; b++) bs.push(b);
  for (let b = 161; b <= 172; b++) bs.push(b);
  for (let b = 174; b <= 255; b++) bs.push(b);
  const cs = bs.slice();
  let n = 0;
  for (let b = 0; b < 256; b++) {
    if (!bs.includes(b)) {
      bs.push(b);
      cs.push(256 + n);
      n++;
    }
  }
  const map = new Map();
  bs.forEach((b, k) => map.set(cs[k], b));
  return map;
}

let BYTE_LEVEL = null;
const utf8 = new TextEncoder();

/** Bytes of a byte-level token string, or null if a character is not in the map. */
function byteLevelBytes(token) {
  BYTE_LEVEL ??= byteLevelDecoder();
  const out = [];
  for (const ch of token) {
    const b = BYTE_LEVEL.get(ch.codePointAt(0));
    if (b === undefined) return null;
    out.push(b);
  }
  return Uint8Array.from(out);
}

/**
 * A vocabulary: `bytes(id)` is a Uint8Array or null for ids outside it.
 * `special(id)` tells added/special tokens apart.
 */
export class Tokenizer {
  constructor({ name, kind, pieces, specials }) {
    this.name = name;
    this.kind = kind;
    this.pieces = pieces; // id -> Uint8Array (sparse Array)
    this.specials = specials || new Set();
    this.size = pieces.reduce((n, p) => n + (p ? 1 : 0), 0);
  }

  bytes(id) {
    const n = Number(id);
    return Number.isInteger(n) && n >= 0 ? this.pieces[n] || null : null;
  }

  special(id) {
    return this.specials.has(Number(id));
  }

  /**
   * Decode `ids` to pieces: [{id, text, bytes, unknown, special}], text being
   * what this token adds to the UTF-8 text (a split character lands in the
   * piece completing it).
   */
  decode(ids) {
    const dec = new TextDecoder('utf-8');
    const out = [];
    for (const raw of ids) {
      const id = Number(raw);
      const bytes = this.bytes(id);
      if (!bytes) {
        const tail = dec.decode();
        if (tail && out.length) out[out.length - 1].text += tail;
        out.push({ id, text: '', bytes: null, unknown: true, special: false });
        continue;
      }
      out.push({ id, text: dec.decode(bytes, { stream: true }), bytes, unknown: false, special: this.special(id) });
    }
    const tail = dec.decode();
    if (tail && out.length) out[out.length - 1].text += tail;
    return out;
  }

  /** The whole text (unknown ids left out). */
  text(ids) {
    return this.decode(ids).map((p) => p.text).join('');
  }
}

/**
 * Parse a vocabulary file's text: JSON -> tokenizer.json (byte-level BPE),
 * otherwise a tiktoken rank file. Throws with the reason when it is neither.
 */
export function parseTokenizer(text, name = 'tokenizer') {
  const trimmed = text.trimStart();
  if (trimmed.startsWith('{')) return parseHf(JSON.parse(text), name);
  return parseTiktoken(text, name);
}

function parseHf(json, name) {
  const model = json.model;
  const vocab = model?.vocab;
  if (!vocab || typeof vocab !== 'object' || Array.isArray(vocab)) {
    throw new Error(`${name}: not a byte-level BPE tokenizer.json (no model.vocab object${model?.type ? `; model type ${model.type}` : ''})`);
  }
  if (model.type && model.type !== 'BPE') throw new Error(`${name}: model type ${model.type}, only byte-level BPE is supported`);
  const pieces = [];
  let bad = 0;
  let sample = null;
  for (const [token, id] of Object.entries(vocab)) {
    const bytes = byteLevelBytes(token);
    if (!bytes) {
      bad++;
      sample ??= token;
      continue;
    }
    pieces[id] = bytes;
  }
  if (bad > Object.keys(vocab).length / 10) {
    throw new Error(`${name}: the vocabulary is not byte-level (${bad} tokens such as ${JSON.stringify(sample)} use characters outside GPT-2's byte map)`);
  }
  const specials = new Set();
  for (const t of json.added_tokens || []) {
    if (!Number.isInteger(t.id) || typeof t.content !== 'string') continue;
    pieces[t.id] = utf8.encode(t.content);
    if (t.special) specials.add(t.id);
  }
  return new Tokenizer({ name, kind: 'tokenizer.json (byte-level BPE)', pieces, specials });
}

function parseTiktoken(text, name) {
  const pieces = [];
  let lineNo = 0;
  for (const line of text.split('\n')) {
    lineNo++;
    const l = line.trim();
    if (!l) continue;
    const m = /^([A-Za-z0-9+/=]*)\s+(\d+)$/.exec(l);
    if (!m) throw new Error(`${name}: neither a tokenizer.json nor a tiktoken rank file (line ${lineNo}: ${JSON.stringify(l.slice(0, 60))})`);
    pieces[Number(m[2])] = base64Bytes(m[1]);
  }
  if (!pieces.length) throw new Error(`${name}: the file holds no tokens`);
  return new Tokenizer({ name, kind: 'tiktoken ranks', pieces });
}

function base64Bytes(s) {
  const bin = atob(s);
  const out = new Uint8Array(bin.length);
  for (let k = 0; k < bin.length; k++) out[k] = bin.charCodeAt(k);
  return out;
}

// ---------------------------------------------------------------- memory

const KEY = 'zrecord.tokenizer:';
const INLINE_MAX = 2_500_000; // characters of a local file kept in localStorage

/** Loaded tokenizers by source (URL or 'file:' + name), shared by every view. */
const loaded = new Map();

/** Load a tokenizer from a URL (fetch), once per URL. */
export function loadTokenizerUrl(url) {
  if (!loaded.has(url)) {
    const p = fetch(url).then(async (r) => {
      if (!r.ok) throw new Error(`${url}: HTTP ${r.status}`);
      return parseTokenizer(await r.text(), url.split('/').filter(Boolean).pop() || url);
    });
    p.catch(() => loaded.delete(url));
    loaded.set(url, p);
  }
  return loaded.get(url);
}

/** Remember `choice` ({url} or {file, text}) for the store at `storeUrl`; null forgets. */
export function rememberTokenizer(storeUrl, choice) {
  if (!storeUrl) return;
  try {
    if (!choice) localStorage.removeItem(KEY + storeUrl);
    else if (choice.url) localStorage.setItem(KEY + storeUrl, JSON.stringify({ url: choice.url }));
    else if (choice.text.length <= INLINE_MAX) localStorage.setItem(KEY + storeUrl, JSON.stringify({ file: choice.file, text: choice.text }));
    else localStorage.setItem(KEY + storeUrl, JSON.stringify({ file: choice.file }));
  } catch {
    // storage full or disabled: the choice lasts for this page only
  }
}

/** The remembered choice for `storeUrl`, or null. */
export function rememberedTokenizer(storeUrl) {
  if (!storeUrl) return null;
  try {
    return JSON.parse(localStorage.getItem(KEY + storeUrl) || 'null');
  } catch {
    return null;
  }
}

/** Load the tokenizer remembered for `storeUrl` (null when none, or a file too big to keep). */
export async function tokenizerFor(storeUrl) {
  const c = rememberedTokenizer(storeUrl);
  if (!c) return null;
  if (c.url) return loadTokenizerUrl(c.url);
  if (c.text != null) {
    const k = `file:${c.file}:${c.text.length}`;
    if (!loaded.has(k)) loaded.set(k, Promise.resolve(parseTokenizer(c.text, c.file)));
    return loaded.get(k);
  }
  return null;
}

// ---------------------------------------------------------------- views

/**
 * The tokenizer bar: what is attached, and ways to attach one by URL or from
 * a local file. `onChange(tokenizer | null)` after a change (already
 * remembered for `storeUrl`).
 */
export function tokenizerBar(storeUrl, current, onChange) {
  const remembered = rememberedTokenizer(storeUrl);
  const status = h('span.tok-status#tokenizer-status');
  const problem = h('span.tok-problem#tokenizer-problem');
  if (current) setChildren(status, h('b', current.name), ` · ${current.kind}, ${fmtInt(current.size)} tokens`);
  else if (remembered?.file && remembered.text == null) setChildren(status, `${remembered.file} was too big to remember: choose it again`);
  else setChildren(status, h('span.muted', 'no tokenizer: attach one to read the ids as text'));

  const urlInput = h('input#tokenizer-url', { type: 'text', placeholder: 'tokenizer.json or rank file URL', spellcheck: false, value: remembered?.url || '' });
  const fileInput = h('input#tokenizer-file', { type: 'file', hidden: true });
  const fail = (e) => setChildren(problem, `Could not use this tokenizer: ${e.message}`);
  const attachUrl = async () => {
    const raw = urlInput.value.trim();
    if (!raw) return;
    const url = new URL(raw, location.href).href;
    setChildren(problem, h('span.muted', 'loading…'));
    try {
      const tok = await loadTokenizerUrl(url);
      rememberTokenizer(storeUrl, { url });
      setChildren(problem);
      onChange(tok);
    } catch (e) {
      fail(e);
    }
  };
  urlInput.addEventListener('keydown', (e) => {
    if (e.key === 'Enter') attachUrl();
  });
  fileInput.addEventListener('change', async () => {
    const f = fileInput.files[0];
    if (!f) return;
    try {
      const text = await f.text();
      const tok = parseTokenizer(text, f.name);
      rememberTokenizer(storeUrl, { file: f.name, text });
      loaded.set(`file:${f.name}:${text.length}`, Promise.resolve(tok));
      setChildren(problem);
      onChange(tok);
    } catch (e) {
      fail(e);
    }
  });
  return h('div.tok-bar#tokenizer-bar',
    h('span.tok-label', 'Tokenizer'), status,
    h('span.tok-attach', urlInput, h('button#tokenizer-attach', { onclick: attachUrl }, 'Attach'),
      h('button', { onclick: () => fileInput.click(), title: 'A tokenizer.json or tiktoken rank file from this computer' }, 'File…'), fileInput,
      current ? h('button#tokenizer-detach', { onclick: () => { rememberTokenizer(storeUrl, null); onChange(null); } }, 'Detach') : null),
    problem);
}

/** Bytes as `68 65 6c`. */
function hexBytes(b) {
  return Array.from(b, (x) => x.toString(16).padStart(2, '0')).join(' ');
}

/**
 * The decoded text of `ids` as hoverable pieces: each span's title gives the
 * id and bytes; ids outside the vocabulary are marked `.unk`. `limit` caps
 * the pieces drawn.
 */
export function decodedText(tok, ids, { limit = Infinity, id = null } = {}) {
  const pieces = tok.decode(limit < ids.length ? Array.prototype.slice.call(ids, 0, limit) : ids);
  const el = h(id ? `div.decoded#${id}` : 'div.decoded');
  const frag = document.createDocumentFragment();
  pieces.forEach((p, k) => {
    const title = p.unknown
      ? `id ${p.id}: not in the vocabulary of ${tok.name}`
      : `id ${p.id} · bytes ${hexBytes(p.bytes)}${p.special ? ' · special token' : ''}`;
    const cls = p.unknown ? 'piece unk' : p.special ? 'piece special' : 'piece';
    frag.append(h(`span.${cls.split(' ').join('.')}`, { title, dataset: { k: String(k), id: String(p.id) } }, p.unknown ? `⟨${p.id}⟩` : p.text));
  });
  el.append(frag);
  return el;
}
