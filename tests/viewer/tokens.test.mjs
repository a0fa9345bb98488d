// Token ids as text: a tokenizer attached by URL (a Hugging Face
// tokenizer.json with a byte-level BPE vocabulary) or from a local file (a
// tiktoken rank file), built here, decodes a Ragged int32 record; hovering a
// piece tells its id and bytes; ids outside the vocabulary are marked; the
// choice is remembered per store URL.

import { test } from 'node:test';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { assert, env, withPage, noPageErrors, expectedBytes, openByHash, waitRecord, shot } from './helpers.mjs';

let page;
withPage((p) => (page = p));

const STORE = 'ragged-i32-tokens-zstd';
const INDEX = 3;
const VOCAB = 1000; // ids 0..999 are in the vocabulary, larger ones are not

/** The bytes of token `id`: "é" split over ids 18 and 6 (C3 | A9), else " w<id>". */
function tokenBytes(id) {
  if (id === 18) return Buffer.from([0xc3]);
  if (id === 6) return Buffer.from([0xa9]);
  return Buffer.from(` w${id}`);
}

/** GPT-2's bytes_to_unicode (written out again here, independently of the viewer). */
function byteToChar() {
  const bs = [];
  for (let b = 0x21; b <= 0x7e; b++) bs.push(b);
  for (let b = 0xa1; b <= 0xac; b++) bs.push(b);
  for (let b = 0xae; b <= 0xff; b++) bs.push(b);
  const map = new Array(256);
  bs.forEach((b) => { map[b] = String.fromCodePoint(b); });
  let n = 0;
  for (let b = 0; b < 256; b++) if (map[b] === undefined) map[b] = String.fromCodePoint(256 + n++);
  return map;
}

function hfTokenizer() {
  const chars = byteToChar();
  const vocab = {};
  for (let id = 0; id < VOCAB; id++) vocab[Array.from(tokenBytes(id), (b) => chars[b]).join('')] = id;
  return JSON.stringify({
    version: '1.0',
    added_tokens: [{ id: 1000, content: '<|endoftext|>', special: true }],
    decoder: { type: 'ByteLevel' },
    model: { type: 'BPE', vocab, merges: [] },
  });
}

function tiktokenRanks() {
  const lines = [];
  for (let id = 0; id < VOCAB; id++) lines.push(`${tokenBytes(id).toString('base64')} ${id}`);
  return `${lines.join('\n')}\n`;
}

function recordIds() {
  const b = expectedBytes(STORE, INDEX);
  return Array.from(new Int32Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.length)));
}

/** What the decoded text must read: runs of known ids as UTF-8, unknown ids as ⟨id⟩. */
function expectedText(ids, known = (id) => id < VOCAB) {
  let out = '';
  let run = [];
  const flush = () => {
    out += new TextDecoder().decode(Buffer.concat(run));
    run = [];
  };
  for (const id of ids) {
    if (known(id)) run.push(tokenBytes(id));
    else {
      flush();
      out += `⟨${id}⟩`;
    }
  }
  flush();
  return out;
}

const storeUrl = () => new URL(`/${STORE}/`, env.viewer).href;

test('a tokenizer.json attached by URL shows the ids as text, marks unknown ids and tells each piece', async () => {
  writeFileSync(join(env.scratch, 'tokenizer.json'), hfTokenizer());
  await openByHash(page, `/${STORE}/`, INDEX);
  await waitRecord(page, INDEX);
  assert.match(await page.textContent('#tokenizer-status'), /no tokenizer/);
  await page.fill('#tokenizer-url', `${env.cors}/scratch/tokenizer.json`);
  await page.click('#tokenizer-attach');
  await page.waitForSelector('#decoded');
  const ids = recordIds();
  assert.match(await page.textContent('#tokenizer-status'), /tokenizer\.json.*byte-level BPE.*1,001 tokens/);
  assert.equal(await page.textContent('#decoded'), expectedText(ids));
  // The split character lands in the piece completing it.
  assert.equal(ids[0], 18);
  assert.equal(ids[1], 6);
  assert.equal(await page.textContent('#decoded .piece[data-k="0"]'), '');
  assert.equal(await page.textContent('#decoded .piece[data-k="1"]'), 'é');
  // Unknown ids are marked in the text and among the ids.
  const unknown = ids.filter((id) => id >= VOCAB);
  assert.ok(unknown.length > 0, 'the record holds ids outside the vocabulary');
  assert.deepEqual(await page.$$eval('#decoded .unk', (s) => s.map((x) => Number(x.dataset.id))), unknown);
  assert.deepEqual(await page.$$eval('#tokens span.unk', (s) => s.map((x) => Number(x.textContent))), unknown);
  assert.match(await page.textContent('#unknown-count'), new RegExp(`${unknown.length} outside the vocabulary`));
  // Hovering a piece shows its id and bytes, and lights up its id.
  const k = ids.findIndex((id) => id === 222);
  await page.hover(`#decoded .piece[data-k="${k}"]`);
  assert.equal(await page.textContent('#piece-info'), 'id 222 · bytes 20 77 32 32 32');
  assert.equal(await page.getAttribute(`#tokens span[data-k="${k}"]`, 'class'), 'lit');
  await page.hover('#decoded .piece[data-k="1"]');
  assert.equal(await page.textContent('#piece-info'), 'id 6 · bytes a9');
  await page.hover(`#decoded .unk >> nth=0`);
  assert.match(await page.textContent('#piece-info'), new RegExp(`id ${unknown[0]}: not in the vocabulary`));
  await shot(page, 'tokens-as-text');
  noPageErrors(page);
});

test('the tokenizer is remembered for the store URL, and only for it', async () => {
  await page.reload();
  await waitRecord(page, INDEX);
  await page.waitForSelector('#decoded');
  assert.equal(await page.textContent('#decoded'), expectedText(recordIds()));
  const saved = await page.evaluate((u) => localStorage.getItem(`zrecord.tokenizer:${u}`), storeUrl());
  assert.deepEqual(JSON.parse(saved), { url: `${env.cors}/scratch/tokenizer.json` });
  // Another token store has none.
  await openByHash(page, '/ragged-i32-tokens-raw/', 0);
  await waitRecord(page, 0);
  assert.equal(await page.$('#decoded'), null);
  assert.match(await page.textContent('#tokenizer-status'), /no tokenizer/);
  // Detaching forgets it.
  await openByHash(page, `/${STORE}/`, INDEX);
  await waitRecord(page, INDEX);
  await page.waitForSelector('#decoded');
  await page.click('#tokenizer-detach');
  await page.waitForFunction(() => !document.querySelector('#decoded'));
  await page.reload();
  await waitRecord(page, INDEX);
  assert.equal(await page.$('#decoded'), null);
  noPageErrors(page);
});

test('a tiktoken rank file from disk decodes the same text; a file of neither kind is refused with the reason', async () => {
  await openByHash(page, `/${STORE}/`, INDEX);
  await waitRecord(page, INDEX);
  await page.setInputFiles('#tokenizer-file', { name: 'demo.tiktoken', mimeType: 'text/plain', buffer: Buffer.from(tiktokenRanks()) });
  await page.waitForSelector('#decoded');
  assert.match(await page.textContent('#tokenizer-status'), /demo\.tiktoken.*tiktoken ranks.*1,000 tokens/);
  assert.equal(await page.textContent('#decoded'), expectedText(recordIds()));
  // A local file is remembered by its content.
  await page.reload();
  await waitRecord(page, INDEX);
  await page.waitForSelector('#decoded');
  assert.match(await page.textContent('#tokenizer-status'), /demo\.tiktoken/);

  await page.setInputFiles('#tokenizer-file', { name: 'notes.txt', mimeType: 'text/plain', buffer: Buffer.from('hello there\n') });
  await page.waitForFunction(() => document.querySelector('#tokenizer-problem')?.textContent.includes('Could not use'));
  assert.match(await page.textContent('#tokenizer-problem'), /neither a tokenizer\.json nor a tiktoken rank file \(line 1: "hello there"\)/);
  const notByteLevel = JSON.stringify({ model: { type: 'WordPiece', vocab: { hello: 0 } } });
  await page.setInputFiles('#tokenizer-file', { name: 'bert.json', mimeType: 'application/json', buffer: Buffer.from(notByteLevel) });
  await page.waitForFunction(() => document.querySelector('#tokenizer-problem')?.textContent.includes('WordPiece'));
  assert.match(await page.textContent('#tokenizer-problem'), /model type WordPiece, only byte-level BPE is supported/);
  // The tokenizer in use stays.
  assert.equal(await page.textContent('#decoded'), expectedText(recordIds()));
  noPageErrors(page);
});
