// Smoke test of the committed browser package pkg/ (the artifact users get),
// in Node against the fixture server: `ZRECORD_TEST_URL=http://... node tests/pkg_smoke.mjs`.
// Run by scripts/test-wasm.sh.
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import init, { Store } from "../pkg/zrecord.js";

const base = process.env.ZRECORD_TEST_URL?.replace(/\/$/, "");
if (!base) throw new Error("set ZRECORD_TEST_URL to the fixture server");
await init({ module_or_path: await readFile(new URL("../pkg/zrecord_bg.wasm", import.meta.url)) });

const manifest = await (await fetch(`${base}/manifest.json`)).json();
const entry = (name) => manifest.stores.find((s) => s.name === name);
const expected = async (name) =>
  new Uint8Array(await (await fetch(`${base}/${entry(name).expected}`)).arrayBuffer());
const bytesOf = (t) => new Uint8Array(t.buffer, t.byteOffset, t.byteLength);

let passed = 0;
let failed = 0;
async function check(name, body) {
  try {
    await body();
    passed++;
    console.log(`ok ${name}`);
  } catch (e) {
    failed++;
    console.log(`FAILED ${name}: ${e.stack ?? e}`);
  }
}

await check("dense f32 gather", async () => {
  const s = await Store.open(`${base}/dense-f32-zstd/`);
  assert.equal(s.len, 33);
  assert.equal(s.kind, "dense");
  assert.equal(s.dtype, "<f4");
  assert.equal(s.codec, "zstd");
  assert.deepEqual(s.itemShape, [2, 5]);
  const { data, shape } = await s.gather([3, 0, 3]);
  assert.ok(data instanceof Float32Array);
  assert.deepEqual(shape, [3, 2, 5]);
  const want = await expected("dense-f32-zstd");
  const rec = (i) => want.subarray(i * 40, (i + 1) * 40);
  assert.deepEqual(bytesOf(data), new Uint8Array([...rec(3), ...rec(0), ...rec(3)]));
  assert.equal(s.stats().requests, 2);
  const one = await s.get(32);
  assert.deepEqual(bytesOf(one.data), rec(32));
  const locs = await s.locs(0, 33);
  assert.equal(locs.logic[5], 40);
  assert.ok(s.fileSizes().data > 0);
});

await check("ragged i32 zstd_dict gather", async () => {
  const s = await Store.open(`${base}/ragged-i32-tokens-zstd_dict/meta.zr`);
  assert.equal(s.stats().requests, 2, "open with a dictionary is two requests");
  const idx = new Uint32Array([199, 0, 17]);
  const { values, offsets, shapes } = await s.gather(idx);
  assert.ok(values instanceof Int32Array);
  const want = await expected("ragged-i32-tokens-zstd_dict");
  const recs = entry("ragged-i32-tokens-zstd_dict").records;
  idx.forEach((i, k) => {
    const r = recs[i];
    assert.deepEqual(shapes[k], r.shape);
    assert.deepEqual(
      bytesOf(values.subarray(offsets[k], offsets[k + 1])),
      want.subarray(r.offset, r.offset + r.nbytes),
    );
  });
});

await check("local Blobs", async () => {
  const blob = async (f) => (await fetch(`${base}/dense-u8-img-zstd_dict/${f}`)).blob();
  const s = await Store.openFiles({ meta: await blob("meta.zr"), data: await blob("data.zr"), dict: await blob("dict.zr") });
  const { data } = await s.gather([39]);
  assert.ok(data instanceof Uint8Array);
  assert.deepEqual(data, (await expected("dense-u8-img-zstd_dict")).subarray(39 * 768, 40 * 768));
});

await check("local Blobs pass sums.zr to a checked open", async () => {
  const blob = async (f) => (await fetch(`${base}/dense-u8-img-zstd_dict/${f}`)).blob();
  const files = { meta: await blob("meta.zr"), data: await blob("data.zr"), dict: await blob("dict.zr") };
  await assert.rejects(Store.openFiles(files, { verify: "always" }), (e) => e.code === "NotFound" && /not sealed/.test(e.message));
  // A sidecar given as a Blob is read and checked: this one is not a sidecar at all.
  const sums = new Blob([new Uint8Array(64)]);
  await assert.rejects(Store.openFiles({ ...files, sums }, { verify: "always" }), (e) => {
    assert.equal(e.code, "BadFormat");
    assert.match(e.message, /sums\.zr: not a checksum sidecar/);
    return true;
  });
});

await check("errors are JS Errors", async () => {
  await assert.rejects(Store.open(`${base}/no-such-store/`), (e) => {
    assert.ok(e instanceof Error);
    assert.equal(e.code, "NotFound");
    assert.match(e.message, /no-such-store\/meta\.zr: not found/);
    return true;
  });
  const s = await Store.open(`${base}/dense-f64-raw/`);
  await assert.rejects(s.gather([7]), /out of range/);
  const ac = new AbortController();
  ac.abort();
  await assert.rejects(s.gather([1], { signal: ac.signal }), (e) => e.code === "Cancelled");
});

console.log(`pkg smoke: ${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
