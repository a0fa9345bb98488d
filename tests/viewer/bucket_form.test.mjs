// "Open private bucket…": the viewer signs every request with SigV4 in the
// browser (aws4fetch, in the reader's worker) against moto with signatures
// checked and a CORS rule. The same records as from a local folder, and the
// keys nowhere but in memory: not in localStorage, sessionStorage, the
// address bar, or any URL the page or its worker requested.

import { test } from 'node:test';
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

const keys = () => ({ endpoint: moto.endpoint, region: 'us-east-1', bucket: moto.bucket, accessKeyId: moto.key, secretAccessKey: moto.secret });

/** Every place a key must not be: storage, the address, request URLs (page and worker). */
async function assertNoKeys(urls) {
  const where = await page.evaluate(() => ({
    local: JSON.stringify({ ...localStorage }),
    session: JSON.stringify({ ...sessionStorage }),
    address: location.href,
    resources: performance.getEntriesByType('resource').map((e) => e.name).join('\n'),
    fields: [...document.querySelectorAll('#bucket-form input')].map((i) => i.value).join(' '),
  }));
  for (const secret of [moto.secret, moto.key]) {
    for (const [place, text] of Object.entries({ ...where, requests: urls.join('\n') })) {
      assert.ok(!text.includes(secret) && !text.includes(encodeURIComponent(secret)), `a key in ${place}`);
    }
  }
}

test('a store in a private bucket opens from the form, signed in the browser, with the stored pixels', async () => {
  const urls = [];
  const signed = [];
  page.on('request', (r) => {
    urls.push(r.url());
    if (r.url().startsWith(moto.endpoint) && r.method() === 'GET') signed.push(r.headers().authorization || '');
  });
  await page.goto('about:blank');
  await page.goto(env.viewer);
  await openBucket(page, { ...keys(), prefix: 'stores/img' });
  await waitRecord(page, 0);
  const name = 'dense-u8-img-raw';
  assert.equal(await page.textContent('#record-count'), '40');
  assertImage(await canvasPixels(page), expectedBytes(name, 0), fixture(name).records[0].shape, 'CHW');
  await gotoRecord(page, 29);
  assertImage(await canvasPixels(page), expectedBytes(name, 29), fixture(name).records[29].shape, 'CHW');
  await shot(page, 'bucket-form-store');
  // The bucket was read, every read signed (moto checks each signature).
  assert.ok(signed.length >= 2, `${signed.length} GETs to the bucket`);
  for (const a of signed) assert.match(a, /^AWS4-HMAC-SHA256 Credential=/);
  await assertNoKeys(urls);
  page.removeAllListeners('request');
  noPageErrors(page);
});

test('a dataset in a private bucket opens from the form: its columns as from a local folder', async () => {
  const urls = [];
  page.on('request', (r) => urls.push(r.url()));
  await page.goto('about:blank');
  await page.goto(env.viewer);
  await openBucket(page, { ...keys(), prefix: 'datasets/v1' });
  await assertDatasetRows(page, [0, 5, 9], assert);
  await assertNoKeys(urls);
  page.removeAllListeners('request');
  noPageErrors(page);
});
