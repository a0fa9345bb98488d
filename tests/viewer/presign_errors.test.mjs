// `zrecord presign`: a viewer link carrying presigned GET URLs opens a
// private store (moto) with no credentials, and tells when it expired. And
// each refusal of a private bucket gets its own message naming the fix:
// wrong keys, no such bucket, no CORS rule, an expired link.

import { test } from 'node:test';
import { execFileSync } from 'node:child_process';
import {
  assert, env, withPage, noPageErrors, fixture, expectedBytes, waitRecord, gotoRecord, canvasPixels, assertImage, shot,
} from './helpers.mjs';
import { withMoto, openBucket, VIEWER_CORS, assertDatasetRows } from './moto.mjs';

let page;
withPage((p) => (page = p));

let moto;
withMoto(env.fixtures, (m) => {
  moto = m;
  m.cors(VIEWER_CORS);
});

function presign(expires, path = 'stores/img') {
  const out = execFileSync(env.zrecord, ['presign', moto.url(path), '--expires', expires, '--viewer', env.viewer], { env: moto.env(), encoding: 'utf8' });
  return /^viewer: (\S+)/m.exec(out)[1];
}

async function problem() {
  await page.waitForSelector('#problem:not([hidden]) #problem-title');
  return { kind: await page.getAttribute('#problem', 'data-kind'), title: await page.textContent('#problem-title'), text: await page.textContent('#problem') };
}

test('a presigned link opens a private store with no credentials, every file through its presigned URL', async () => {
  const link = presign('1h');
  assert.ok(!link.includes(moto.secret), 'no secret in the link');
  const bucketReads = [];
  page.on('request', (r) => { if (r.url().startsWith(moto.endpoint)) bucketReads.push(r); });
  await page.goto('about:blank');
  await page.goto(`${link}&i=4`);
  await waitRecord(page, 4);
  const name = 'dense-u8-img-raw';
  assertImage(await canvasPixels(page), expectedBytes(name, 4), fixture(name).records[4].shape, 'CHW');
  await gotoRecord(page, 38);
  assertImage(await canvasPixels(page), expectedBytes(name, 38), fixture(name).records[38].shape, 'CHW');
  await shot(page, 'presigned-store');
  assert.ok(bucketReads.length >= 2);
  for (const r of bucketReads) {
    assert.match(r.url(), /[?&]X-Amz-Signature=/, r.url());
    assert.equal(r.headers().authorization, undefined);
  }
  page.removeAllListeners('request');
  noPageErrors(page);
});

test('a presigned link to a small dataset opens its columns and shards', async () => {
  const link = presign('1h', 'datasets/v1');
  await page.goto('about:blank');
  await page.goto(link);
  await assertDatasetRows(page, [0, 4, 9], assert);
  noPageErrors(page);
});

test('an expired presigned link says so, and how to get a fresh one', async () => {
  const link = presign('1s');
  await new Promise((r) => setTimeout(r, 2500));
  await page.goto('about:blank');
  await page.goto(link);
  const p = await problem();
  assert.equal(p.kind, 'expired', p.text);
  assert.match(p.title, /link has expired/);
  assert.match(p.text, /zrecord presign/);
});

test('wrong keys in the form: the bucket refused these keys', async () => {
  await page.goto('about:blank');
  await page.goto(env.viewer);
  await openBucket(page, { endpoint: moto.endpoint, region: 'us-east-1', bucket: moto.bucket, prefix: 'stores/img', accessKeyId: moto.key, secretAccessKey: 'not-the-secret' });
  const p = await problem();
  assert.equal(p.kind, 'keys', p.text);
  assert.match(p.text, /SignatureDoesNotMatch/);
});

test('a bucket that does not exist: S3 sends no CORS headers for it, so the message names it beside the CORS rule', async () => {
  await page.goto('about:blank');
  await page.goto(env.viewer);
  await openBucket(page, { endpoint: moto.endpoint, region: 'us-east-1', bucket: 'no-such-bucket', prefix: 'stores/img', accessKeyId: moto.key, secretAccessKey: moto.secret });
  const p = await problem();
  assert.equal(p.kind, 'bucketcors', p.text);
  assert.match(p.title, /or no such bucket/);
  assert.match(p.text, /Check the bucket name and the endpoint/);
});

test('a bucket without a CORS rule: the rule to add', async () => {
  moto.cors(null);
  try {
    await page.goto('about:blank');
    await page.goto(env.viewer);
    await openBucket(page, { endpoint: moto.endpoint, region: 'us-east-1', bucket: moto.bucket, prefix: 'stores/img', accessKeyId: moto.key, secretAccessKey: moto.secret });
    const p = await problem();
    assert.equal(p.kind, 'bucketcors', p.text);
    assert.match(p.text, /X-Amz-Content-Sha256/);
  } finally {
    moto.cors(VIEWER_CORS);
  }
});
